"""What the pipeline writes into nbgrader's gradebook, read back through ``nbgrader.api.Gradebook``."""

from __future__ import annotations

import shutil

import nbformat

import gradingkit as gk

PARTS = ["test_stable_softmax", "test_softmax_jacobian", "test_softmax_vjp"]


def _softmax_run(corpus_run):
    """The 01_softmax batch of the corpus: its gradebook URL and its cases."""
    url = f"sqlite:///{corpus_run.out.parent / 'gradebook.db'}"
    return url, [c for c in corpus_run.cases if c.assignment == "01_softmax"]


def _gradebook(url):
    from nbgrader.api import Gradebook

    return Gradebook(url, course_id="attnmath")


def test_the_gradebook_holds_every_submission_with_its_scores(corpus_run):
    url, cases = _softmax_run(corpus_run)
    with _gradebook(url) as gb:
        assignment = gb.find_assignment("01_softmax")
        assert {n.name for n in assignment.notebooks} == {"softmax"}
        assert assignment.max_score == 10.0  # 8 autograded + 2 written, from the release
        for case in cases:
            sub = gb.find_submission_notebook("softmax", "01_softmax", case.name)
            grades = {g.name: g for g in sub.grades}
            assert {g: grades[g].auto_score for g in PARTS} == case.expect, case.name
            assert all(not grades[g].needs_manual_grade for g in PARTS)
            assert grades["jacobian_proof"].max_score == 2.0
            assert sub.flagged == (case.status != "graded"), case.name
            assert sub.score == sum(case.expect.values())


def test_the_autograded_notebooks_are_the_rebuilt_release(corpus_run):
    folder = corpus_run.out / "autograded"
    for case in _softmax_run(corpus_run)[1]:
        path = folder / case.name / "01_softmax" / "softmax.ipynb"
        if case.status in ("missing", "malformed"):
            assert not path.exists()
            continue
        assert "BEGIN HIDDEN TESTS" not in path.read_text()
        nb = nbformat.read(path, as_version=4)
        release = gk.release("01_softmax")
        tracked = [c for c in nb.cells if "nbgrader" in c.metadata]  # the cells a student added show too
        # the release's own cells without nbgrader metadata (a variant's statement) are not tracked
        graded = [c for c in release.cells if "nbgrader" in c.metadata]
        assert [c.metadata.nbgrader for c in tracked] == [c.metadata.nbgrader for c in graded]
        for ours, theirs in zip(tracked, graded):
            if not theirs.metadata.nbgrader.get("solution"):
                assert ours.source == theirs.source and ours.cell_type == theirs.cell_type
    nb = nbformat.read(folder / "39_warnings_and_prints" / "01_softmax" / "softmax.ipynb", as_version=4)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "stable_softmax")
    assert "warnings.warn" in answer.source


def test_regrading_keeps_manual_scores_and_marks_them_for_review(corpus_run, tmp_path):
    db_path = tmp_path / "gradebook.db"
    shutil.copy(_softmax_run(corpus_run)[0].removeprefix("sqlite:///"), db_path)
    url = f"sqlite:///{db_path}"
    with _gradebook(url) as gb:
        grade = gb.find_grade("test_softmax_jacobian", "softmax", "01_softmax", "39_warnings_and_prints")
        grade.manual_score = 1.5
        written = gb.find_grade("jacobian_proof", "softmax", "01_softmax", "39_warnings_and_prints")
        written.manual_score = 2.0
        gb.db.commit()
    submitted = tmp_path / "submitted"
    case = next(c for c in corpus_run.cases if c.name == "39_warnings_and_prints")
    gk.build_case(case, "01_softmax", submitted)
    proc = gk.run_attngrade("01_softmax", submitted, "--out", tmp_path / "out", "--db", url, "--jobs", "1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    with _gradebook(url) as gb:
        grade = gb.find_grade("test_softmax_jacobian", "softmax", "01_softmax", "39_warnings_and_prints")
        assert (grade.auto_score, grade.manual_score, grade.needs_manual_grade) == (2.0, 1.5, True)
        assert grade.score == 1.5
        written = gb.find_grade("jacobian_proof", "softmax", "01_softmax", "39_warnings_and_prints")
        assert written.manual_score == 2.0
        assert len(gb.find_submission("01_softmax", "39_warnings_and_prints").notebooks) == 1
        # The other students are untouched.
        other = gb.find_submission_notebook("softmax", "01_softmax", "02_loop_in_function")
        assert other.score == 5.0



def test_a_written_answer_in_a_cell_of_another_type_still_waits_for_its_grade(corpus_run):
    """Cases whose proof cell became raw or code (a stray key in Jupyter's command mode): the text is
    graded by hand all the same, so its points wait in formgrader and in ``manual_pending``."""
    url, cases = _softmax_run(corpus_run)
    retyped = [c for c in cases if "jacobian_proof" in c.sections
               and any(m[:2] == ["retype", "jacobian_proof"] for m in c.mutations)]
    assert retyped, "the corpus has a written answer in a cell of another type"
    with _gradebook(url) as gb:
        for case in retyped:
            grade = gb.find_grade("jacobian_proof", "softmax", "01_softmax", case.name)
            assert grade.auto_score is None and grade.needs_manual_grade, case.name
            assert corpus_run.rows[case.name]["manual_pending"] == "2", case.name
