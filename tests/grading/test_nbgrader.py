"""Against stock nbgrader: same scores on honest submissions, and formgrader sees the results."""

from __future__ import annotations

import shutil

import pytest

from attngrade.course import run_nbgrader
from support import course_copy  # tests/support.py

import gradingkit as gk

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def course(tmp_path_factory, nbgrader_course):
    """01_softmax as nbgrader generated it for this run, in a course of its own, with the samples submitted."""
    root = course_copy(nbgrader_course, tmp_path_factory.mktemp("course"), "01_softmax")
    expected = gk.submit_samples("01_softmax", root / "submitted")
    return root, expected


@pytest.fixture(scope="module")
def pipeline_run(course, tmp_path_factory):
    """One ``attngrade --course`` run (two jobs) over the course's submissions, into its gradebook
    and its ``autograded/``: what the comparison with stock nbgrader and formgrader's view read."""
    root, _expected = course
    out = tmp_path_factory.mktemp("pipeline") / "out"
    proc = gk.run_attngrade("01_softmax", root / "submitted", "--course", root, "--out", out, "--jobs", "2")
    return proc, out


def _scores(db_url, students):
    from nbgrader.api import Gradebook

    with Gradebook(db_url, course_id="attnmath-test") as gb:
        return {
            s: {g.name: g.auto_score for g in gb.find_submission_notebook("softmax", "01_softmax", s).grades}
            for s in students
        }


def test_same_scores_as_stock_nbgrader_autograde_on_honest_submissions(course, pipeline_run, nbgrader_course,
                                                                       tmp_path):
    root, expected = course
    students = ["solution", "release", *expected]
    # stock nbgrader grades the same submissions in a course of its own, with the gradebook as generated
    stock_root = course_copy(nbgrader_course, tmp_path, "01_softmax")
    assert gk.submit_samples("01_softmax", stock_root / "submitted") == expected
    run_nbgrader(stock_root, "autograde", "01_softmax", "--force")
    stock = _scores(f"sqlite:///{stock_root / 'gradebook.db'}", students)

    proc, out = pipeline_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    ours = _scores(f"sqlite:///{root / 'gradebook.db'}", students)
    assert ours == stock
    rows = gk.read_grades(out)
    for student, expect in expected.items():
        assert {g: float(rows[student][g]) for g in expect} == expect


def test_formgrader_sees_the_pipeline_results(course, pipeline_run):
    root, expected = course
    proc, _out = pipeline_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (root / "autograded" / "solution" / "01_softmax" / "softmax.ipynb").is_file()
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    subs = {s["student"]: s for s in api.get_submissions("01_softmax")}
    assert subs["solution"]["autograded"] and subs["solution"]["score"] == 8.0
    assert subs["solution"]["max_score"] == 10.0
    assert subs["delegating"]["score"] == 3.0
    notebooks = {n["student"]: n for n in api.get_notebook_submissions("01_softmax", "softmax")}
    assert notebooks["delegating"]["flagged"] and not notebooks["solution"]["flagged"]
    assert notebooks["solution"]["needs_manual_grade"] is False


def test_formgrader_sees_every_submission_whatever_the_db_says(course, tmp_path):
    """With ``--db`` naming another gradebook, the rebuilt notebooks still go where nbgrader looks."""
    root, expected = course
    other_db = f"sqlite:///{tmp_path / 'other.db'}"
    proc = gk.run_attngrade(
        "01_softmax", root / "submitted", "--course", root, "--out", tmp_path / "out", "--db", other_db
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.db_url = other_db
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    subs = {s["student"]: s for s in api.get_submissions("01_softmax")}
    students = {p.name for p in (root / "submitted").iterdir()}
    assert set(subs) == students
    assert all(subs[s]["autograded"] for s in students), {s: subs[s]["autograded"] for s in students}


def test_the_late_policy_is_applied_from_the_timestamps(course, nbgrader_course, tmp_path):
    root, expected = course
    late = tmp_path / "course"
    shutil.copytree(root, late, ignore=shutil.ignore_patterns("autograded", "gradebook.db"))
    shutil.copy2(nbgrader_course / "gradebook.db", late / "gradebook.db")  # as generated: no grades yet
    config = (late / "nbgrader_config.py").read_text().replace(str(root), str(late))
    config += (
        'c.AttnGrade.late_policy = {"01_softmax": {"deadline": "2026-11-21 12:00:00 UTC",'
        ' "penalty_per_day": 0.25, "max_penalty": 0.5}}\n'
    )
    (late / "nbgrader_config.py").write_text(config)
    submitted = late / "submitted"
    stamps = {"solution": "2026-11-21 11:00:00 UTC", "alternative": "2026-11-21 13:00:00 UTC"}
    for student, stamp in stamps.items():
        (submitted / student / "01_softmax" / "timestamp.txt").write_text(stamp)
    for folder in submitted.iterdir():
        if folder.name not in ("solution", "alternative"):
            shutil.rmtree(folder)
    # "solution" is on time; "alternative" is 1 h late (one started day: 25 %); the default
    # timestamp of the others is 1 day 22 h late (two days: 50 %, the maximum).
    proc = gk.run_attngrade("01_softmax", submitted, "--course", late, "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = gk.read_grades(tmp_path / "out")
    assert (rows["solution"]["late_penalty"], rows["solution"]["total"]) == ("0", "8")
    assert rows["solution"]["late"] == "on time"
    assert (rows["alternative"]["late_penalty"], rows["alternative"]["total"]) == ("2", "6")
    assert rows["alternative"]["late"].startswith("late by 1 day: 25%")
    page = (tmp_path / "out" / "feedback" / "alternative.html").read_text()
    assert "late by 1 day: 25%" in page and "after the late penalty <b>6</b>" in page
    summary = (tmp_path / "out" / "summary.html").read_text()
    assert "Late policy: deadline 2026-11-21 12:00:00+00:00" in summary and "(−2)" in summary
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{late / 'gradebook.db'}", course_id="attnmath-test") as gb:
        nb = gb.find_submission_notebook("softmax", "01_softmax", "alternative")
        assert nb.late_submission_penalty == 2.0
