"""The instructor's ordinary day, end to end, for Canvas and for Moodle.

Each day starts from a download built by the clean-room LMS fixtures (``tests/grading/lms``:
namesakes, Jupyter's copies, renames, a resubmission, late work, an extension), written as that
LMS writes it, and the LMS's own roster file. One ``attngrade`` command grades it, exports the
grades into the roster's column on the roster's scale and writes the feedback for the LMS's bulk
upload. Every student must come out right: one row per LMS user, the right file, the right late
verdict and time, the right grade in the right cell, and a feedback page the LMS will place.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import zipfile
from datetime import timezone
from types import SimpleNamespace

import nbformat
import pytest

import gradingkit as gk
from lms import downloads as lms
from lms.classes import DOWNLOADED_AT, DUE_AT, ordinary_class

pytestmark = pytest.mark.slow  # two attngrade runs (about 8 CPU seconds)

ASSIGNMENT = "02_attention"
ZONE = "America/Regina"  # the fixtures keep UTC-6 all March (Chicago moves to UTC-5 on 10 March 2024)
COLUMN = "Attention (4321)"
#: Uploads whose answer to Part 1 is wrong: namesake 40102's only upload, and the first of
#: 40105's two uploads (which Canvas leaves out of its zip, and Moodle's download too).
WRONG = {"40102-1", "40105-1"}
WRONG_ATTENTION = (
    "def attention(q, k, v, mask=None):\n"
    "    # every query gets the mean of the values\n"
    "    return v.mean(axis=-2, keepdims=True).repeat(q.shape[-2], axis=-2)\n"
)


def _class():
    release, right = gk.release(ASSIGNMENT), gk.solution_answers(ASSIGNMENT)
    wrong = dict(right, attention=WRONG_ATTENTION)

    def content(key: str) -> bytes:
        return nbformat.writes(gk.fill_any(release, wrong if key in WRONG else right)).encode()

    return ordinary_class(content)


def _score(student) -> float:
    """The fair score out of 10: Part 1 (4 points) is lost where the graded upload is wrong."""
    return 6.0 if f"{student.user_id}-{len(student.uploads)}" in WRONG else 10.0


def _grade(tmp_path_factory, empty_gradebook, lms_name: str, build, *options) -> SimpleNamespace:
    base = tmp_path_factory.mktemp(f"day-{lms_name}")
    students = _class()
    expected = build(students, base)
    url = gk.copy_gradebook(empty_gradebook, base / "gradebook.db")
    out = base / "out"
    proc = gk.run_attngrade(ASSIGNMENT, base / f"{lms_name}.zip", "--out", out, "--db", url, "--jobs", "2",
                            "--roster", base / "roster.csv", "--export", lms_name, "--return", lms_name,
                            "--timezone", ZONE, *(base / "roster.csv" if o == "ROSTER" else o for o in options))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = gk.read_grades(out)
    by_uid = {}
    for exp in expected:
        found = [r for r in rows.values() if r["file"] == exp["member"]]
        assert len(found) == 1, (exp["full_name"], exp["member"], sorted(r["file"] for r in rows.values()))
        by_uid[exp["user_id"]] = found[0]
    return SimpleNamespace(out=out, url=url, rows=rows, by_uid=by_uid, expected=expected, proc=proc,
                           students={s.user_id: s for s in students})


@pytest.fixture(scope="module")
def canvas_day(tmp_path_factory, empty_gradebook):
    def build(students, base):
        lms.canvas_gradebook_csv(students, assignment_column=COLUMN, points_possible=100, path=base / "roster.csv")
        return lms.canvas_download(students, due_at=DUE_AT, downloaded_at=DOWNLOADED_AT, path=base / "canvas.zip")

    return _grade(tmp_path_factory, empty_gradebook, "canvas", build)


@pytest.fixture(scope="module")
def moodle_day(tmp_path_factory, empty_gradebook):
    def build(students, base):
        lms.moodle_grading_worksheet(students, max_grade=100, due_at=DUE_AT, path=base / "roster.csv")
        return lms.moodle_download(students, assignment_cmid=77, downloaded_at=DOWNLOADED_AT,
                                   path=base / "moodle.zip", folders=True)

    # the worksheet is also the evidence of when each participant submitted
    return _grade(tmp_path_factory, empty_gradebook, "moodle", build, "--submission-times", "ROSTER")


def _lms_file(out, name: str) -> list[list[str]]:
    text = (out / name).read_text(encoding="utf-8-sig")
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("day", ["canvas_day", "moodle_day"])
def test_every_student_is_one_row_with_the_file_the_lms_graded_and_a_fair_score(day, request):
    day = request.getfixturevalue(day)
    assert len(day.rows) == len(day.expected) == 12, sorted(day.rows)
    for uid, row in day.by_uid.items():
        student = day.students[uid]
        assert row["status"] == "graded", (student.full_name, row["status"], row["reason"])
        assert float(row["score"]) == _score(student), (student.full_name, row["score"])
    namesakes = [day.by_uid[40101], day.by_uid[40102]]
    assert namesakes[0]["student"] != namesakes[1]["student"], "two students of one name stay two"
    assert not any(r["ignored_files"] for r in day.rows.values()), "the LMS's download holds the latest attempts only"


@pytest.mark.parametrize("day", ["canvas_day", "moodle_day"])
def test_late_is_the_lms_verdict_and_no_download_time_is_a_submission_time(day, request):
    day = request.getfixturevalue(day)
    for exp in day.expected:
        row = day.by_uid[exp["user_id"]]
        assert bool(row["late"]) == exp["late"], (exp["full_name"], row["late"], exp["evidence"])
        download = DOWNLOADED_AT.strftime("%Y-%m-%d %H:%M")
        assert download not in row["timestamp"], (exp["full_name"], "the zip's time is the download's")


def test_moodles_worksheet_gives_each_submission_time_read_in_the_course_zone(moodle_day):
    """The worksheet writes times to the minute in the course's zone, without the zone."""
    for uid, row in moodle_day.by_uid.items():
        uploaded = moodle_day.students[uid].uploads[-1].uploaded_at.replace(second=0)
        utc = uploaded.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M")
        assert row["timestamp"].startswith(utc), (moodle_day.students[uid].full_name, row["timestamp"], utc)


def test_canvas_import_fills_the_rosters_column_on_its_scale(canvas_day):
    rows = _lms_file(canvas_day.out, "canvas.csv")
    header = rows[0]
    assert COLUMN in header, header
    column = header.index(COLUMN)
    grades = {r[1]: r[column] for r in rows[1:] if r[1].isdigit()}
    assert set(grades) == {str(uid) for uid in canvas_day.students}, grades
    for uid, student in canvas_day.students.items():
        assert float(grades[str(uid)]) == pytest.approx(10 * _score(student)), (student.full_name, grades[str(uid)])


def test_moodle_worksheet_gets_each_grade_out_of_its_maximum(moodle_day):
    rows = _lms_file(moodle_day.out, "moodle.csv")
    head = rows[0]
    grade, maximum, ident = head.index("Grade"), head.index("Maximum Grade"), head.index("Identifier")
    participants = lms.moodle_participant_ids(moodle_day.students.values())
    got = {r[ident]: (float(r[grade]), float(r[maximum])) for r in rows[1:]}
    for uid, student in moodle_day.students.items():
        assert got[f"Participant {participants[uid]}"] == (10 * _score(student), 100.0), student.full_name


def test_canvas_feedback_zip_names_each_page_as_canvas_places_it(canvas_day):
    """Canvas reads the user id and attachment id from the first two all-digit pieces of a file
    name, ``LATE`` pieces left out (canvas-lms ``infer_comment_context_from_filename``)."""
    with zipfile.ZipFile(canvas_day.out / "return-canvas.zip") as zf:
        names = zf.namelist()
    placed = {}
    for name in names:
        digits = [p for p in name.split("_") if p != "LATE" and p.isdigit()]
        placed[int(digits[0])] = int(digits[1])
    for exp in canvas_day.expected:
        attachment = int([p for p in exp["member"].split("_") if p.isdigit()][1])
        assert placed.get(exp["user_id"]) == attachment, (exp["full_name"], sorted(names))
    assert len(names) == 12


def test_moodle_feedback_zip_puts_each_page_in_the_participants_folder(moodle_day):
    with zipfile.ZipFile(moodle_day.out / "return-moodle.zip") as zf:
        folders = {name.split("/")[0] for name in zf.namelist()}
    assert folders == {exp["member"].split("/")[0] for exp in moodle_day.expected}


def test_a_feedback_page_shows_code_as_code_and_its_maths_typeset(canvas_day):
    page = (canvas_day.out / "feedback" / f"{canvas_day.by_uid[40102]['student']}.html").read_text()
    assert "\\x0a" not in page
    code = re.search(r"<pre[^>]*>(.*?every query gets the mean.*?)</pre>", page, flags=re.S)
    assert code and "\n" in code.group(1), "the student's code keeps its line breaks"
    typeset = "<mjx-container" in page
    assert typeset or "typeset" in page.lower(), "maths typeset, or a note that says why not"
    if shutil.which("node") and (gk.ROOT / "node_modules").is_dir():
        assert typeset, "with Node.js and MathJax installed, the page carries its maths typeset"


def test_formgrader_knows_the_class_by_name(canvas_day):
    from nbgrader.api import Gradebook

    with Gradebook(canvas_day.url, course_id="attnmath") as gb:
        students = {s.id: s for s in gb.students}
        assert len(students) == 12
        for uid, student in canvas_day.students.items():
            row = students[canvas_day.by_uid[uid]["student"]]
            assert (row.first_name, row.last_name) == tuple(student.sortable_name.split(", ")[::-1])
            assert row.lms_user_id == str(uid)


def test_the_summary_says_first_that_the_download_times_are_no_evidence(canvas_day):
    import json

    summary = json.loads((canvas_day.out / "summary.json").read_text())
    assert any("one time" in w and "not used as a submission time" in w for w in summary["warnings"])
    page = (canvas_day.out / "summary.html").read_text()
    assert page.index("Read first") < page.index("Statuses")
