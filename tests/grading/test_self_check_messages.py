"""What a student reads when a visible check fails or a part is not attempted: one short message,
the same in the cell, in Validate's dialog and from ``nbgrader validate``.

IPython shows an exception that has ``_render_traceback_`` as the lines it returns instead of a
traceback; those lines are the cell's error output, which nbgrader's Validate reads back as "The
error was". So the message is decided by the released helper cell (``SelfCheckFailed``),
:class:`attngrade.visible.NotAttempted` and :func:`attngrade.visible.message_lines`, tested here,
and ``tests/browser/test_lab.py`` reads both in a real lab.
"""

from __future__ import annotations

import contextlib
import io
import sys

import nbformat
import numpy as np
import pytest
from nbgrader.validator import Validator

import gradingkit as gk
from attngrade.visible import HELPER_CELL, MESSAGE_WIDTH, NOT_ATTEMPTED, NotAttempted, check_part, message_lines

WRONG = "def stable_softmax(x, axis=-1):\n    e = np.exp(x - np.max(x))\n    return e / e.sum(axis=axis, keepdims=True)\n"
STUB = "def softmax_jacobian(z):\n    raise NotImplementedError()\n"


def _raised(source: str, namespace: dict) -> BaseException:
    with pytest.raises(BaseException) as caught, contextlib.redirect_stdout(io.StringIO()):
        exec(source, namespace)  # noqa: S102 - the helper cell and a test cell of our own release
    return caught.value


@pytest.fixture
def notebook(monkeypatch) -> dict:
    """A namespace that ran the released helper cell, a wrong Part 1 and Part 2's stub, in
    exercise 01's folder (where its ``cases.py`` is)."""
    monkeypatch.chdir(gk.EXERCISES / "01_softmax")
    namespace = {"np": np}
    exec(HELPER_CELL, namespace)  # noqa: S102
    exec(WRONG + STUB, namespace)  # noqa: S102
    return namespace


def test_a_failed_check_shows_its_message_alone_in_short_lines(notebook):
    error = _raised('with self_check("Part 1") as check:\n    check.run("stable_softmax", stable_softmax)', notebook)
    assert isinstance(error, notebook["SelfCheckFailed"]) and isinstance(error, AssertionError)
    text = str(error)
    assert text.startswith("Part 1 failed [float16 input, rows of ±1e4]: the output has NaN")
    shown = error._render_traceback_()
    assert shown == message_lines(text) and len(shown) > 1
    assert all(len(line) <= MESSAGE_WIDTH for line in shown)
    assert " ".join(shown).split() == text.split(), "wrapping lost or added words"
    assert [line for line in shown if line.startswith(("Hint: ", "(case "))] != []
    assert notebook["self_check"].results["Part 1"] == text.removeprefix("Part 1 ")


def test_a_part_not_attempted_shows_one_line(notebook):
    error = _raised('with self_check("Part 2") as check:\n    check.run("softmax_jacobian", softmax_jacobian)', notebook)
    assert isinstance(error, NotAttempted) and isinstance(error, NotImplementedError)
    assert error._render_traceback_() == [f"Part 2 {NOT_ATTEMPTED}"]
    assert notebook["self_check"].results["Part 2"] == NOT_ATTEMPTED
    assert error.__cause__ is None and error.__suppress_context__


def test_check_part_says_not_attempted_in_one_line_to_any_helper(notebook):
    """Students keep their notebooks (``make lab-work`` never replaces one): whatever helper their
    copy carries lets a ``NotImplementedError`` through as it is, so ``check_part`` makes it short."""

    class OldHelper:
        part, kind = "Part 2", ""

    with pytest.raises(NotAttempted) as caught:
        check_part(OldHelper(), "softmax_jacobian", notebook["softmax_jacobian"])
    assert caught.value._render_traceback_() == [f"Part 2 {NOT_ATTEMPTED}"]


def test_the_helper_runs_without_the_course_library(monkeypatch):
    """The grader's worker runs the notebook without ``attngrade``: each check fails at once, and
    ``check`` is bound (an answer cell may use it)."""
    monkeypatch.setitem(sys.modules, "attngrade.visible", None)  # import attngrade.visible fails
    namespace = {}
    exec(HELPER_CELL, namespace)  # noqa: S102
    error = _raised('with self_check("Part 1") as check:\n    check.run("stable_softmax", len)', namespace)
    assert isinstance(error, namespace["SelfCheckFailed"]) and namespace["check"].part == "Part 1"
    assert namespace["self_check"].results["Part 1"].startswith("failed: ModuleNotFoundError")


def test_each_notebook_keeps_its_own_record(notebook):
    other = {}
    exec(HELPER_CELL, other)  # noqa: S102
    _raised('with self_check("Part 2") as check:\n    check.run("softmax_jacobian", softmax_jacobian)', notebook)
    assert notebook["self_check"].results and not other["self_check"].results


@pytest.mark.parametrize("text", ["", "Part 3 failed: x", "Part 1 failed: " + "word " * 60 + "Hint: try " + "y " * 50,
                                  "Part 1 failed: a_long_identifier_" + "x" * 100 + " (case 2 of 9)"])
def test_message_lines_keep_every_word_within_the_width_where_a_word_allows(text):
    lines = message_lines(text)
    assert " ".join(lines).split() == text.split()
    assert all(len(line) <= MESSAGE_WIDTH or " " not in line for line in lines)


def test_nbgrader_validate_prints_the_message_uncut(notebook):
    """Validate's text for a failed test cell is the cell's error output: ``nbgrader validate``
    prints each line indented and cut at its width, which the message's lines stay within."""
    error = _raised('with self_check("Part 1") as check:\n    check.run("stable_softmax", stable_softmax)', notebook)
    cell = nbformat.v4.new_code_cell("...", metadata={"nbgrader": {"grade": True, "grade_id": "t", "points": 1}})
    cell.outputs = [nbformat.v4.new_output("error", ename="SelfCheckFailed", evalue=str(error),
                                           traceback=error._render_traceback_())]
    validator = Validator()
    printed = validator._indent(validator._extract_error(cell))
    assert printed == "\n".join(validator.indent + line for line in message_lines(str(error)))  # nothing cut
