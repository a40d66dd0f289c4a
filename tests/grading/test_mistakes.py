"""Passing the visible checks predicts the grade, measured on mistakes nobody tuned the checks on.

``tests/grading/mistakes/`` holds whole submissions written clean-room from the student's view
(the released notebooks and the book only): each ``# bug:`` file has one mistake in one part,
each ``# honest:`` file is correct in an unusual style. Every file is run as a student runs it
(the release's code cells in order, its answers in place, from the notebook's folder, so the
visible checks draw their cases from the released ``cases.py``), and graded as the hidden tests
grade (the part's hidden cases, ``run_case`` and ``check_outputs``, as stock nbgrader and the
grader decide). A mistake is *predicted* when its part fails visibly exactly when it loses its
hidden points. A *false alarm* is a part that fails visibly and passes hidden, in any file.

``python tests/grading/test_mistakes.py`` prints the table per assignment.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import pytest

import gradingkit as gk
from attngrade.notebooks import cell_grade_id
from attngrade.spec import check_outputs, compute_outputs, load_parts, make_cases

MISTAKES = Path(__file__).resolve().parent / "mistakes"
#: The share of mistakes whose grade the visible checks must predict (issue 38).
REQUIRED = 0.95


@dataclass
class Mistake:
    path: Path
    assignment: str
    part: str | None  # the answer cell holding the bug; None for an honest file
    answers: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.assignment}/{self.path.stem}"


def _read(path: Path) -> Mistake:
    text = path.read_text(encoding="utf-8")
    part = re.search(r"^# part: (\S+)", text, flags=re.M).group(1)
    sections = re.split(r"^# %% grade_id: (\S+)\n", text, flags=re.M)
    answers = dict(zip(sections[1::2], sections[2::2]))
    return Mistake(path, path.parent.name, None if part == "none" else part, answers)


def corpus() -> list[Mistake]:
    return [_read(p) for p in sorted(MISTAKES.glob("*/*.py"))]


@functools.lru_cache(maxsize=None)
def _test_cells(assignment: str) -> dict[str, str]:
    """Each test cell of the release -> the answer cell it checks (the last one before it)."""
    found, answer = {}, None
    for cell in gk.release(assignment).cells:
        gid = cell_grade_id(cell)
        meta = (cell.metadata.get("nbgrader") or {}) if cell.cell_type == "code" else {}
        if meta.get("solution"):
            answer = gid
        elif meta.get("grade") and gid:
            found[gid] = answer
    return found


def _answer_cells(assignment: str) -> set[str]:
    """The grade ids of the release's code answer cells, those a test cell checks and those, like
    17's kernel cell, that only the parts after them use."""
    return {cell_grade_id(c) for c in gk.release(assignment).cells
            if c.cell_type == "code" and (c.metadata.get("nbgrader") or {}).get("solution")}


@functools.lru_cache(maxsize=None)
def _hidden_cases(assignment: str) -> dict:
    parts = load_parts(gk.SOLUTIONS / assignment / "hidden_tests.py")
    return {gid: (part, make_cases(part)) for gid, part in parts.items()}


def _quiet_exec(source: str, label: str, namespace: dict) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(source, label, "exec"), namespace)  # noqa: S102 - the corpus's own code


def visible_verdicts(m: Mistake) -> tuple[dict[str, bool], dict]:
    """Run All as the student: each test cell -> whether its visible checks failed; the namespace."""
    namespace: dict = {}
    failed = {}
    tests = _test_cells(m.assignment)
    # as the grader runs it: ungraded demos (11's training run) skip; the visible checks run either way
    with contextlib.chdir(gk.EXERCISES / m.assignment), mock.patch.dict(os.environ, {"NBGRADER_EXECUTION": "autograde"}):
        for cell in gk.release(m.assignment).cells:
            if cell.cell_type != "code":
                continue
            gid = cell_grade_id(cell)
            try:
                _quiet_exec(m.answers.get(gid, cell.source), gid or "cell", namespace)
            except Exception:  # noqa: BLE001 - a failing check, or the answer's own error
                if gid in tests:
                    failed[gid] = True
                continue
            if gid in tests:
                failed[gid] = False
    return failed, namespace


def hidden_verdicts(m: Mistake, namespace: dict) -> dict[str, bool]:
    """Each test cell -> whether its hidden cases fail (as stock nbgrader and the grader decide)."""
    failed = {}
    for gid, (part, cases) in _hidden_cases(m.assignment).items():
        fn = namespace.get(part.function)
        if not callable(fn):
            failed[gid] = True
            continue
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            failed[gid] = not check_outputs(part, cases, compute_outputs(fn, cases))[0]
    return failed


@dataclass
class Measured:
    mistake: Mistake
    visible: dict
    hidden: dict

    @property
    def test_cell(self) -> str | None:
        return next((t for t, a in _test_cells(self.mistake.assignment).items() if a == self.mistake.part), None)

    @property
    def predicted(self) -> bool:
        """The part's visible verdict is its hidden one; for an answer cell that no test cell checks
        on its own (17's kernel, which Parts 1 and 2 launch), every test cell's is."""
        cell = self.test_cell
        if cell is None:
            return all(self.visible.get(t) == self.hidden.get(t) for t in _test_cells(self.mistake.assignment))
        return self.visible.get(cell) == self.hidden.get(cell)

    @property
    def loses_points(self) -> bool:
        return any(self.hidden.values())

    @property
    def false_alarms(self) -> list[str]:
        return [gid for gid, failed in self.visible.items() if failed and not self.hidden.get(gid)]


def measure(m: Mistake) -> Measured:
    visible, namespace = visible_verdicts(m)
    return Measured(m, visible, hidden_verdicts(m, namespace))


@functools.lru_cache(maxsize=1)
def measured_corpus() -> tuple[Measured, ...]:
    return tuple(measure(m) for m in corpus())


def table(rows) -> list[str]:
    by: dict = {}
    for r in rows:
        a = by.setdefault(r.mistake.assignment, [0, 0, 0, 0, 0])
        if r.mistake.part is not None:
            a[0] += 1
            a[1] += r.predicted
            a[2] += not r.predicted
        a[3] += len(r.false_alarms)
        a[4] += r.mistake.part is None
    lines = ["| assignment | mistakes | predicted | missed | false alarms | honest files |", "|---|---|---|---|---|---|"]
    lines += [f"| {a} | {v[0]} | {v[1]} | {v[2]} | {v[3]} | {v[4]} |" for a, v in sorted(by.items())]
    total = [sum(v[i] for v in by.values()) for i in range(5)]
    lines.append(f"| all | {total[0]} | {total[1]} | {total[2]} | {total[3]} | {total[4]} |")
    return lines


@pytest.mark.slow
def test_the_corpus_is_whole_and_fresh():
    files = corpus()
    bugs = [m for m in files if m.part is not None]
    assert len(bugs) >= 60 and {m.assignment for m in bugs} == set(gk.ASSIGNMENTS), len(bugs)
    for m in files:
        answers = _answer_cells(m.assignment)
        assert set(m.answers) == answers, (m.name, sorted(answers ^ set(m.answers)))
        assert m.part is None or m.part in answers, m.name


@pytest.mark.slow
def test_the_visible_checks_predict_the_grade_of_fresh_mistakes():
    rows = measured_corpus()
    bugs = [r for r in rows if r.mistake.part is not None]
    missed = [(r.mistake.name, r.visible.get(r.test_cell), r.hidden.get(r.test_cell)) for r in bugs if not r.predicted]
    share = 1 - len(missed) / len(bugs)
    assert share >= REQUIRED, "\n".join(table(rows) + [f"missed (visible failed, hidden failed): {missed}"])


@pytest.mark.slow
def test_no_visible_check_fails_a_part_the_hidden_tests_pass():
    alarms = [(r.mistake.name, r.false_alarms) for r in measured_corpus() if r.false_alarms]
    assert not alarms, alarms
    honest = [r for r in measured_corpus() if r.mistake.part is None]
    assert honest and not [r.mistake.name for r in honest if r.loses_points]


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    rows = measured_corpus()
    print("\n".join(table(rows)))
    for r in rows:
        if (r.mistake.part is not None and not r.predicted) or r.false_alarms:
            print(f"{r.mistake.name}: part {r.mistake.part} visible={r.visible.get(r.test_cell)} "
                  f"hidden={r.hidden.get(r.test_cell)} false alarms={r.false_alarms}", file=sys.stderr)
