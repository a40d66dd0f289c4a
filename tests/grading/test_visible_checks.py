"""The released notebooks' visible self-checks catch the common mistakes, and give no answer away."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

import gradingkit as gk
from attngrade.notebooks import cell_grade_id


def _run_visible(assignment: str, change: dict[str, tuple[str, str]] | None = None) -> str:
    """Run the release's code cells with the solution's answers (``change``: grade id -> (old, new)
    in that answer); return ``"passed"`` or the first failing check's cell and message."""
    answers = gk.solution_answers(assignment)
    for gid, (old, new) in (change or {}).items():
        assert answers[gid].count(old) == 1, (gid, old)
        answers[gid] = answers[gid].replace(old, new)
    namespace: dict = {}
    for cell in gk.release(assignment).cells:
        if cell.cell_type != "code":
            continue
        gid = cell_grade_id(cell)
        source = answers.get(gid, cell.source)
        source = re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", "", source, flags=re.S)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(source, gid or "cell", "exec"), namespace)  # noqa: S102 - our own notebooks
        except AssertionError as exc:
            return f"{gid}: {exc}"
    return "passed"


MISTAKES = [
    ("01_softmax", "softmax without keepdims", "test_stable_softmax",
     {"stable_softmax": ("np.max(work, axis=axis, keepdims=True)", "np.max(work, axis=axis)")}),
    ("01_softmax", "the Jacobian with its sign flipped", "test_softmax_jacobian",
     {"softmax_jacobian": ("np.diag(p) - np.outer(p, p)", "np.outer(p, p) - np.diag(p)")}),
    ("05_multihead", "heads scaled by sqrt(C) instead of sqrt(D)", "test_mha_forward",
     {"mha_forward": ("np.sqrt(q.shape[-1])", "np.sqrt(C)")}),
    ("05_multihead", "a backward missing 1/sqrt(D)", "gradient_check",
     {"mha_backward": ("scale = 1.0 / np.sqrt(q.shape[-1])", "scale = 1.0")}),
    ("07_efficiency", "a FLOP count off by a factor", "test_attention_costs",
     {"attention_costs": ("softmax_flops = 2 * n * n * d + 2 * n * n * d", "softmax_flops = 2 * n * n * d")}),
]


@pytest.mark.parametrize("assignment", ["01_softmax", "05_multihead", "07_efficiency"])
def test_the_solution_passes_every_visible_check(assignment):
    assert _run_visible(assignment) == "passed"


@pytest.mark.parametrize("assignment, mistake, cell, change", MISTAKES, ids=[m[1] for m in MISTAKES])
def test_a_common_mistake_fails_a_visible_check(assignment, mistake, cell, change):
    assert _run_visible(assignment, change).startswith(f"{cell}: "), mistake


def test_no_visible_message_gives_the_flop_count_away():
    release = next(c for c in gk.release("07_efficiency").cells if cell_grade_id(c) == "test_attention_costs")
    for number in ("1_280_000", "1280000", "100_000_000", "100000000", "4 n^2 d", "422400", "422_400"):
        assert number not in release.source
