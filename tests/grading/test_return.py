"""Feedback returned through the LMS (attngrade.returning): each page is named so that the LMS's
own bulk upload of feedback finds its student, and every page that cannot be placed is listed.

The LMS side is read from their sources, independently of attngrade's code: Canvas
(canvas-lms ``app/models/abstract_assignment.rb``, ``infer_comment_context_from_filename``) and
Moodle (``mod/assign/feedback/file/importziplib.php``, ``is_valid_filename_for_import``); the
download names come from the clean-room LMS fixtures (``tests/grading/lms``).
"""

from __future__ import annotations

import csv
import re
import zipfile

import pytest

from attngrade import returning as R
from attngrade.export import read_roster
from attngrade.names import csv_cell

from .lms.classes import DOWNLOADED_AT, DUE_AT, ordinary_class
from .lms.downloads import (ASSIGNMENT, NOTEBOOK, canvas_download, moodle_download, moodle_grading_worksheet,
                            moodle_participant_ids)

NB = NOTEBOOK[: -len(".ipynb")]
HEADER = ["student", "status", "total", "total_max", "file"]


def canvas_reads(name: str):
    """``(user id or anonymous id, attachment id)`` as Canvas's comment upload reads a file name."""
    base = name.rsplit("/", 1)[-1]
    if base.startswith("._"):
        return None
    pieces = [p for p in base.split("_") if p != "LATE"]
    if pieces[0] == "anon":
        return tuple(pieces[1:3])
    numbers = [p for p in pieces if re.fullmatch(r"[0-9]+", p)][:2]
    return tuple(numbers) if len(numbers) == 2 else None


def moodle_reads(path: str):
    """``(participant id, the file's name)`` as Moodle's "upload multiple feedback files" reads a zip path."""
    if path.rsplit("/", 1)[-1].startswith((".", "~")):
        return None
    parts = path.split("/")
    while parts:
        info = parts.pop(0).split("_", 4)
        if len(info) < 4 or not info[1].isdigit() or (info[2], info[3]) not in {
                ("assignsubmission", "file"), ("assignfeedback", "file")}:
            continue
        return info[1], "/".join([info[4] if len(info) == 5 else ""] + parts)
    return None


def _class_output(tmp_path, entries, extra=()):
    """``OUT`` with grades.csv and a page for every downloaded student (and ``extra`` rows)."""
    out = tmp_path / "out"
    (out / "feedback").mkdir(parents=True)
    rows = [[f"s{e['user_id']}", "graded", "5", "10", e["member"]] for e in entries if e["member"]]
    rows += [list(r) for r in extra]
    with open(out / "grades.csv", "w", newline="", encoding="utf-8-sig") as fh:
        csv.writer(fh).writerows([HEADER] + [[csv_cell(x) for x in r] for r in rows])
    for r in rows:
        (out / "feedback" / f"{r[0]}.html").write_text(f"<p>page of {r[0]}</p>", encoding="utf-8")
    return out


def _zip(path):
    with zipfile.ZipFile(path) as zf:
        return {info.filename: zf.read(info).decode() for info in zf.infolist()}


def _listing(out, kind):
    with open(out / f"return-{kind}.csv", newline="", encoding="utf-8-sig") as fh:
        return {r["student"]: r for r in csv.DictReader(fh)}


@pytest.fixture(scope="module")
def students():
    return ordinary_class(lambda key: key.encode(), notebook=NOTEBOOK)


def test_canvas_finds_every_student_and_attachment_of_the_download(tmp_path, students):
    entries = canvas_download(students, due_at=DUE_AT, downloaded_at=DOWNLOADED_AT, path=tmp_path / "c.zip")
    out = _class_output(tmp_path, entries, extra=[("nb_alice", "graded", "5", "10", "nb_alice/02_attention/")])
    path, missing = R.write_zip("canvas", out, None, notebook=NB, assignment=ASSIGNMENT)
    pages = _zip(path)
    assert len(pages) == len(students)
    for e in entries:
        entry = next(n for n, text in pages.items() if f"page of s{e['user_id']}<" in text)
        assert canvas_reads(entry) == canvas_reads(e["member"]) and canvas_reads(entry)[0] == str(e["user_id"])
        assert entry.endswith("_feedback.html") and "/" not in entry
    # nbgrader's layout carries no Canvas ids: that page is listed, never dropped in silence.
    assert [s for s, _ in missing] == ["nb_alice"] and "no Canvas user and attachment id" in missing[0][1]
    listing = _listing(out, "canvas")
    assert listing["nb_alice"]["in the zip as"] == "" and listing["nb_alice"]["not placed because"]
    assert len(listing) == len(students) + 1


@pytest.mark.parametrize("folders", [True, False])
def test_moodle_puts_each_page_in_its_participants_folder(tmp_path, students, folders):
    entries = moodle_download(students, assignment_cmid=77, downloaded_at=DOWNLOADED_AT, path=tmp_path / "m.zip",
                              folders=folders)
    pids = moodle_participant_ids(students)
    out = _class_output(tmp_path, entries)
    path, missing = R.write_zip("moodle", out, None, notebook=NB, assignment=ASSIGNMENT)
    pages = _zip(path)
    assert missing == [] and len(pages) == len(students)
    for e in entries:
        entry = next(n for n, text in pages.items() if f"page of s{e['user_id']}<" in text)
        assert moodle_reads(entry) == (str(pids[e["user_id"]]), "/feedback.html"), entry
        if folders:  # the download's own folder
            assert entry == e["member"].split("/")[0] + "/feedback.html"


def test_moodle_places_a_student_the_worksheet_names(tmp_path, students):
    moodle_grading_worksheet(students, max_grade=10, path=tmp_path / "worksheet.csv", due_at=DUE_AT)
    roster = read_roster(tmp_path / "worksheet.csv")
    pids = moodle_participant_ids(students)
    jonas = next(s for s in students if s.full_name == "Jonas Müller")
    out = _class_output(tmp_path, [], extra=[("Jonas_Müller", "graded", "5", "10", "Jonas_Müller/02_attention/"),
                                             ("nobody", "missing", "0", "10", "")])
    path, missing = R.write_zip("moodle", out, roster, notebook=NB, assignment=ASSIGNMENT)
    assert list(_zip(path)) == [f"Jonas Müller_{pids[jonas.user_id]}_assignsubmission_file_/feedback.html"]
    assert moodle_reads(next(iter(_zip(path)))) == (str(pids[jonas.user_id]), "/feedback.html")
    assert [s for s, _ in missing] == ["nobody"]


def test_a_name_moodle_would_misread_is_made_safe():
    entry = R.moodle_entry("", type("P", (), {"lms_id": "42", "name": "Ana_Lu / X"})())
    assert entry == "Ana Lu X_42_assignsubmission_file_/feedback.html" and moodle_reads(entry) == ("42", "/feedback.html")
    assert R.canvas_entry("._smith_1_2_x.ipynb") is None and R.canvas_entry("anon_x7Q_99_a.ipynb") == "anon_x7Q_99_feedback.html"


def test_lmss_without_a_known_upload_rule_are_refused_by_name():
    for kind in ("blackboard", "brightspace", "gradescope"):
        with pytest.raises(ValueError, match=f"--return {kind}: attngrade knows no documented rule"):
            R.check_kind(kind)
    with pytest.raises(ValueError, match="--return must be one of"):
        R.check_kind("sakai")
    R.check_kind(None)
    R.check_kind("canvas")


def test_class_step_says_where_the_zip_is_and_names_each_page_left_out(tmp_path, capsys):
    from types import SimpleNamespace

    out = _class_output(tmp_path, [], extra=[("ann", "graded", "5", "10", "ann_12_34_softmax.ipynb"),
                                             ("bob", "graded", "5", "10", "bob.ipynb")])
    (out / "feedback" / "ann.html").unlink()  # a page that was not written is listed too
    said = []
    path = R.class_step("canvas", out, None, SimpleNamespace(notebook=NB, name=ASSIGNMENT), say=said.append)
    assert path == out / "return-canvas.zip" and _zip(path) == {}
    assert said == [f"canvas feedback upload: {path} (list: {out / 'return-canvas.csv'})"]
    err = capsys.readouterr().err
    assert "ann: not in the zip: no feedback page was written" in err and "bob: not in the zip" in err


# ---- one grading run: the options reach every output, and formgrader counts and names the class --

@pytest.fixture(scope="module")
def graded(tmp_path_factory, empty_gradebook):
    """One ``attngrade`` run of three students (two as Canvas downloads them, one renamed by hand)
    with ``--export canvas --roster <Canvas's gradebook export> --return canvas`` and a gradebook."""
    import nbformat

    import gradingkit as gk
    from .lms.downloads import Student, canvas_gradebook_csv

    root = tmp_path_factory.mktemp("graded")
    subs = root / "subs"
    subs.mkdir()
    release, right = gk.release("01_softmax"), gk.solution_answers("01_softmax")
    wrong = dict(right, stable_softmax="def stable_softmax(x, axis=-1):\n    return x\n")
    for name, answers in (("nguyenminh_40101_71000001_softmax.ipynb", right),
                          ("mullerjonas_LATE_40109_71000002_softmax.ipynb", wrong), ("carol.ipynb", right)):
        nbformat.write(gk.fill_any(release, answers), subs / name)
    people = [Student("Minh Nguyen", "Nguyen, Minh", 40101, "mnguyen", [], False),
              Student("Jonas Müller", "Müller, Jonas", 40109, "jmuller", [], False),
              Student("Dee Dee", "Dee, Dee", 40120, "ddee", [], False)]
    canvas_gradebook_csv(people, assignment_column="Softmax (2201)", points_possible=100, path=root / "gradebook.csv")
    out, db = root / "out", gk.copy_gradebook(empty_gradebook, root / "gradebook.db")
    proc = gk.run_attngrade("01_softmax", subs, "--out", out, "--db", db, "--jobs", "2", "--export", "canvas",
                            "--roster", root / "gradebook.csv", "--return", "canvas")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, db, proc, gk.read_grades(out)


def test_the_run_exports_into_the_rosters_column_and_returns_each_page(graded):
    out, _, proc, grades = graded
    rows = list(csv.reader((out / "canvas.csv").open(newline="", encoding="utf-8")))
    assert rows[0][5:] == ["Softmax (2201)"] and rows[1][5] == "100"
    by_id = {r[1]: r[5] for r in rows[2:]}
    minh = next(r for s, r in grades.items() if "40101" in r["file"])
    assert by_id["40101"] == f"{float(minh['total']) * 100 / float(minh['total_max']):g}" and by_id["40120"] == ""
    pages = _zip(out / "return-canvas.zip")
    assert sorted(map(canvas_reads, pages)) == [("40101", "71000001"), ("40109", "71000002")]
    listing = _listing(out, "canvas")
    carol = next(r for s, r in listing.items() if r["in the zip as"] == "")
    assert "carol" in carol["student"] and "carol" in proc.stderr and "not in the zip" in proc.stderr


def test_formgrader_counts_the_submissions_and_shows_the_rosters_names(graded):
    from nbgrader.apps.api import NbGraderAPI
    from traitlets.config import Config

    out, db, _, grades = graded
    (out / "source" / "01_softmax").mkdir(parents=True)  # formgrader lists the assignments of source/
    config = Config()
    config.CourseDirectory.root, config.CourseDirectory.db_url = str(out), db
    config.CourseDirectory.course_id = "attnmath"
    config.Exchange.root = str(out / "exchange")
    api = NbGraderAPI(config=config)
    assert api.get_assignment("01_softmax")["num_submissions"] == 3  # was 0: nothing in submitted/
    submissions = {s["student"]: s for s in api.get_submissions("01_softmax")}
    assert set(submissions) == set(grades) and all(s["autograded"] for s in submissions.values())
    names = {(s["first_name"], s["last_name"]) for s in submissions.values()}
    assert names == {("Minh", "Nguyen"), ("Jonas", "Müller"), (None, None)}  # carol: a login, no name
    lms = {s["id"]: s["lms_user_id"] for s in api.get_students()}
    assert sorted(filter(None, lms.values())) == ["40101", "40109"]


@pytest.mark.skipif(not __import__("shutil").which("make"), reason="needs make")
def test_make_grade_passes_every_option_as_the_shell_reads_it():
    import shlex
    import subprocess

    from gradingkit import ROOT

    args = "--export canvas --roster 'my roster.csv' --column 'Softmax (2201)' --points 100 --return canvas"
    done = subprocess.run(["make", "-n", "-s", "grade", "ASSIGNMENT=01_softmax", "SUBMISSIONS=sub dir", "JOBS=3",
                           f"ARGS={args}"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    line = next(x for x in done.stdout.splitlines() if "/attngrade " in x)
    assert shlex.split(line)[1:] == ["01_softmax", "sub dir", "--out", "grading-output", "--jobs", "3",
                                     *shlex.split(args)]


def test_the_submitted_copy_goes_beside_the_rebuilt_notebooks_and_never_over_itself(tmp_path):
    from types import SimpleNamespace

    from attngrade.gradebook import split_name, submitted_folder, write_submitted_copy

    course = SimpleNamespace(root=tmp_path / "course", autograded=tmp_path / "course" / "autograded", config=None)
    assert submitted_folder(course, course.autograded) == tmp_path / "course" / "submitted"
    assert submitted_folder(course, tmp_path / "out" / "autograded") == tmp_path / "out" / "submitted"
    spec = SimpleNamespace(name="01_softmax", notebook="softmax")
    own = tmp_path / "course" / "submitted" / "ana" / "01_softmax" / "softmax.ipynb"
    own.parent.mkdir(parents=True)
    own.write_text("{}")
    (own.parent / "timestamp.txt").write_text("2026-01-01 10:00:00 UTC")
    result = SimpleNamespace(student="ana", timestamp=None)
    assert write_submitted_copy(own.parents[2], spec, result, own) == own  # already there: left alone
    assert (own.parent / "timestamp.txt").read_text() == "2026-01-01 10:00:00 UTC"
    copy = write_submitted_copy(tmp_path / "out" / "submitted", spec, SimpleNamespace(student="ana", timestamp="T"), own)
    assert copy.read_text() == "{}" and (copy.parent / "timestamp.txt").read_text() == "T"
    assert write_submitted_copy(tmp_path / "x", spec, result, None) is None
    assert [split_name(n) for n in ("Nguyen, Minh", "Minh Van Nguyen", "alice", " , ")] == [
        ("Minh", "Nguyen"), ("Minh Van", "Nguyen"), None, None]
