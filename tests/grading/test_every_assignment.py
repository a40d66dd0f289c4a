"""Every assignment in solutions/ grades through the pipeline with no code of its own.

The samples' ``# expect:`` lines are what stock ``nbgrader autograde`` gives them
(``tests/exercises`` checks that); here the pipeline must give the same, plus full marks for the
solution and zero for the untouched release.
"""

from __future__ import annotations

import pytest

import gradingkit as gk
from attngrade.grader import grade_submission, load_assignment, load_course
from attngrade.sandbox import Limits
from attngrade.submissions import Submission


@pytest.mark.parametrize("assignment", gk.ASSIGNMENTS)
def test_solution_release_and_samples_get_the_scores_nbgrader_gives(assignment, isolation, tmp_path):
    spec = load_assignment(load_course(gk.ROOT), assignment)
    expected = gk.submit_samples(assignment, tmp_path / "flat", layout="flat")
    full = {p.grade_id: p.points for p in spec.parts}
    expected["solution"] = full
    expected["release"] = {g: 0.0 for g in full}
    limits = Limits(timeout=60)
    for student, expect in sorted(expected.items()):
        path = tmp_path / "flat" / f"{student}.ipynb"
        res = grade_submission(
            spec,
            Submission(student, path, "flat", source=path.name),
            isolation,
            limits,
            tmp_root=str(tmp_path),
        )
        got = {g: p.score for g, p in res.parts.items()}
        assert got == expect, f"{assignment}/{student}: {res.status} {res.reason} " + "; ".join(
            f"{g}: {p.detail}" for g, p in res.parts.items()
        )
        assert res.status in ("graded", "flagged"), (student, res.reason)
        if student in ("solution", "release", "alternative", "partial", "raising"):
            assert res.status == "graded", (student, res.reason)
        if student == "delegating":
            assert res.status == "flagged" and "calls reference" in res.reason


@pytest.mark.parametrize("assignment", gk.ASSIGNMENTS)
def test_every_task_states_the_precision_contract_its_hidden_tests_follow(assignment):
    from attngrade.notebooks import cell_grade_id
    from attngrade.spec import load_parts, precision_contract

    parts = load_parts(gk.SOLUTIONS / assignment / "hidden_tests.py")
    cells = gk.release(assignment).cells
    for i, cell in enumerate(cells):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            task = next(
                c for c in reversed(cells[:i])
                if c.cell_type == "markdown" and (cell_grade_id(c) or "").startswith("task")
            )
            line = precision_contract(parts[cell_grade_id(cell)])
            assert line in task.source, f"{assignment}: the task of {cell_grade_id(cell)} must say: {line}"
