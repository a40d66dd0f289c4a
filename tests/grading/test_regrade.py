"""A re-grade grades only the submissions that changed, and keeps every manual grade; a written
answer waits for manual grading, an unanswered one gets zero and "No response." at once."""

from __future__ import annotations

import json

import nbformat

import gradingkit as gk


def _gradebook(url):
    from nbgrader.api import Gradebook

    return Gradebook(url, course_id="attnmath")


def test_a_one_notebook_change_regrades_one_student_and_keeps_manual_grades(tmp_path, empty_gradebook):
    rel = gk.release("01_softmax")
    right = gk.solution_answers("01_softmax")
    writer = dict(right, jacobian_proof="Differentiate $\\sum_i p_i = 1$: the rows of $J$ sum to zero.")
    folder = tmp_path / "flat"
    folder.mkdir()
    for student, nb in {
        "alice": gk.fill_any(rel, right),
        "bob": rel,
        "carol": gk.fill_any(rel, writer),
        "dave": gk.fill_any(rel, right),
    }.items():
        nbformat.write(nb, folder / f"{student}.ipynb")
    url = gk.copy_gradebook(empty_gradebook, tmp_path / "gradebook.db")
    out = tmp_path / "out"
    args = ("01_softmax", folder, "--out", out, "--db", url, "--jobs", "2")
    first = gk.run_attngrade(*args)
    assert first.returncode == 0, first.stderr[-2000:]
    rows = gk.read_grades(out)
    # Unanswered written parts are no pending work; carol's answer is.
    pending = {s: r["manual_pending"] for s, r in rows.items()}
    assert pending == {"alice": "0", "bob": "0", "carol": "2", "dave": "0"}
    with _gradebook(url) as gb:  # carol's written answer waits for manual grading; alice wrote none
        written = gb.find_grade("jacobian_proof", "softmax", "01_softmax", "carol")
        assert written.auto_score is None and written.needs_manual_grade
        assert gb.find_comment("jacobian_proof", "softmax", "01_softmax", "carol").auto_comment is None
        assert gb.find_submission_notebook("softmax", "01_softmax", "carol").needs_manual_grade
        silent = gb.find_grade("jacobian_proof", "softmax", "01_softmax", "alice")
        assert silent.auto_score == 0 and not silent.needs_manual_grade
        comment = gb.find_comment("jacobian_proof", "softmax", "01_softmax", "alice")
        assert comment.auto_comment == "No response."
    with _gradebook(url) as gb:  # the instructor grades carol's proof and overrides one of bob's parts
        proof = gb.find_grade("jacobian_proof", "softmax", "01_softmax", "carol")
        proof.manual_score, proof.needs_manual_grade = 1.5, False
        part = gb.find_grade("test_softmax_jacobian", "softmax", "01_softmax", "bob")
        part.manual_score, part.needs_manual_grade = 1.0, False
        gb.db.commit()

    nbformat.write(rel, folder / "dave.ipynb")  # dave's answers change; nobody else's
    # Re-saving a notebook with new outputs only is no change.
    touched = nbformat.read(folder / "alice.ipynb", as_version=4)
    for cell in touched.cells:
        if cell.cell_type == "code":
            cell.execution_count = 7
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="passed\n")]
    nbformat.write(touched, folder / "alice.ipynb")
    second = gk.run_attngrade(*args)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "not graded again: 3" in second.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["graded_now"], summary["unchanged"]) == (1, 3)
    rows = gk.read_grades(out)
    assert rows["dave"]["score"] == "0" and rows["alice"]["score"] == "8"
    carol = rows["carol"]
    assert (carol["manual"], carol["manual_pending"], carol["total"]) == ("1.5", "0", "9.5")
    assert (rows["bob"]["score"], rows["bob"]["manual"], rows["bob"]["total"]) == ("0", "1", "1")
    with _gradebook(url) as gb:
        proof = gb.find_grade("jacobian_proof", "softmax", "01_softmax", "carol")
        assert (proof.manual_score, proof.needs_manual_grade) == (1.5, False)
        part = gb.find_grade("test_softmax_jacobian", "softmax", "01_softmax", "bob")
        assert (part.manual_score, part.needs_manual_grade) == (1.0, False)
        assert gb.find_submission_notebook("softmax", "01_softmax", "dave").score == 0.0

    third = gk.run_attngrade(*args, "--force")
    assert third.returncode == 0 and "not graded again" not in third.stdout


def test_the_fingerprint_changes_with_whatever_can_change_a_grade_and_with_nothing_else(tmp_path, monkeypatch):
    """After the instructor fixes the library, a hidden test, the points or the limits, a re-grade
    without ``--force`` grades again; loading the same course twice changes nothing."""
    import dataclasses
    import shutil

    from attngrade import regrade
    from attngrade.grader import load_assignment, load_course
    from attngrade.sandbox import Limits
    from attngrade.submissions import Submission

    course = load_course(gk.ROOT)
    sub = Submission("alice", None, "flat", source="alice.ipynb")
    nb = {"cells": [{"cell_type": "code", "source": "x = 1", "metadata": {}}]}

    def key(spec=None, limits=Limits()):
        return regrade.fingerprint(spec or load_assignment(course, "01_softmax"), sub, limits=limits, notebook=nb)

    base = key()
    assert key() == base, "the same course, loaded again"
    assert key(limits=Limits(timeout=31)) != base
    spec = load_assignment(course, "01_softmax")
    spec.parts[0].points += 1
    assert key(spec) != base, "a part's points"
    spec = load_assignment(course, "01_softmax")
    first = spec.parts[0].cases[0]
    first.expected = None if first.expected is not None else 0.0
    assert key(spec) != base, "an expected value, as a fix of the library gives"
    hidden = tmp_path / "solutions" / "01_softmax"
    shutil.copytree(gk.SOLUTIONS / "01_softmax", hidden)
    moved = dataclasses.replace(load_assignment(course, "01_softmax"), source_path=hidden / spec.source_path.name)
    assert key(moved) == base, "the same hidden tests elsewhere"
    (hidden / "hidden_tests.py").write_text((hidden / "hidden_tests.py").read_text() + "\n# fixed\n")
    moved = dataclasses.replace(moved)
    assert key(moved) != base, "a hidden test's source"
    library = tmp_path / "attnmath"
    shutil.copytree(regrade._library_root(), library, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(regrade, "_library_root", lambda: library)
    assert key() == base, "the same library elsewhere"
    (library / "softmax.py").write_text((library / "softmax.py").read_text() + "\n# a fix\n")
    assert key() != base, "the library's code"
