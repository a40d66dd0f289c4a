"""Every assignment: the release is in sync and clean, and autograding gives the right scores."""

from __future__ import annotations

import json

import nbformat
import pytest

from attngrade.notebooks import answer_cells, hidden_test_blocks
from conftest import ASSIGNMENTS, EXERCISES, SOLUTIONS, notebook_name

pytestmark = pytest.mark.slow


def _normalised(path):
    nb = json.loads(path.read_text())
    return json.dumps(nb, sort_keys=True, indent=1)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_is_in_sync_with_solutions(assignment, nbgrader_course):
    # the release nbgrader generated in this run from solutions/ as it is now (not the autograded copy)
    course = nbgrader_course
    generated = sorted(p.relative_to(course / "release" / assignment)
                       for p in (course / "release" / assignment).rglob("*") if p.is_file())
    committed = sorted(p.relative_to(EXERCISES / assignment)
                       for p in (EXERCISES / assignment).rglob("*") if p.is_file())
    assert generated == committed, ("exercises/ lists other files than a fresh release "
                                    "(course authors: regenerate it with `make exercises`)")
    for rel in generated:
        fresh, ours = course / "release" / assignment / rel, EXERCISES / assignment / rel
        if rel.suffix == ".ipynb":
            assert _normalised(fresh) == _normalised(ours), \
                f"{rel} is out of date (course authors: regenerate exercises/ with `make exercises`)"
        else:
            assert fresh.read_bytes() == ours.read_bytes(), \
                f"{rel} is out of date (course authors: regenerate exercises/ with `make exercises`)"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_contains_no_hidden_tests_and_no_solutions(assignment):
    name = notebook_name(assignment)
    source = nbformat.read(SOLUTIONS / assignment / name, as_version=4)
    text = (EXERCISES / assignment / name).read_text()
    blocks = hidden_test_blocks(source)
    assert blocks, "the source notebook has no hidden tests"
    for block in blocks:
        for line in block.splitlines():
            if len(line.strip()) > 12:
                assert json.dumps(line.strip())[1:-1] not in text, \
                    f"hidden test text leaked: {line.strip()!r}"
    # the visible checks' runner (attngrade.visible) is public; the hidden tests' entry is not
    for marker in ("BEGIN HIDDEN TESTS", "BEGIN SOLUTION", "END SOLUTION", "run_hidden_tests", "attngrade.spec"):
        assert marker not in text
    assert not list((EXERCISES / assignment).rglob("hidden_tests.py")), "hidden tests were released"
    assert (SOLUTIONS / assignment / "hidden_tests.py").is_file(), "the assignment has no hidden_tests.py"
    for gid, src in answer_cells(source).items():
        body = [ln for ln in src.splitlines() if ln.strip() and "###" not in ln and not ln.startswith("def ")]
        for line in body:
            assert json.dumps(line)[1:-1] not in text, f"solution line of {gid} leaked: {line!r}"
    release = nbformat.read(EXERCISES / assignment / name, as_version=4)
    for gid, src in answer_cells(release).items():
        assert "raise NotImplementedError()" in src, f"answer cell {gid} has no failing stub"
    for cell in release.cells:
        assert cell.cell_type != "code" or not cell.get("outputs"), "the release carries outputs"


def test_every_assignment_has_at_least_three_autograded_parts():
    for assignment in ASSIGNMENTS:
        source = nbformat.read(SOLUTIONS / assignment / notebook_name(assignment), as_version=4)
        graded = [c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")
                  and c.cell_type == "code"]
        assert len(graded) >= 3, f"{assignment} has {len(graded)} autograded parts"


def test_solution_scores_full_marks(graded):
    assert graded.scores["solution"] == graded.max_scores
    assert sum(graded.max_scores.values()) > 0


def test_release_scores_zero(graded):
    assert set(graded.scores["release"]) == set(graded.max_scores)
    assert sum(graded.scores["release"].values()) == 0


def test_sample_submissions_get_the_expected_scores(graded):
    assert graded.expected, f"{graded.assignment} has no sample submissions"
    for student, expect in graded.expected.items():
        got = {k: v for k, v in graded.scores[student].items() if k in expect}
        assert set(expect) == set(graded.max_scores), f"{student}: expectations must name every graded part"
        assert got == expect, f"sample {student!r}: got {got}, expected {expect}"


def test_written_answers_wait_for_manual_grading(graded):
    source = nbformat.read(SOLUTIONS / graded.assignment / graded.notebook, as_version=4)
    written = sorted(c.metadata["nbgrader"]["grade_id"] for c in source.cells
                     if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade"))
    assert graded.manual_parts == written
    if graded.assignment == "01_softmax":  # practice problem 1: the written Jacobian proof
        assert written == ["jacobian_proof"]
