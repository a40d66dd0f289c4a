"""LMS exports (attngrade.export): each file has its system's documented columns, and a roster
exported by the system comes back through the file with every student and the right grade."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attngrade import export as X
from attngrade.names import csv_cell, csv_cell_text, shown

NB, ASSIGNMENT = "softmax", "01_softmax"


def _row(student, file, status="graded", total="8", timestamp="2026-12-01 10:00:00.000000 UTC"):
    return {"student": student, "status": status, "total": total, "total_max": "10", "file": file,
            "timestamp": timestamp}


def _read(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return path


# What Canvas's gradebook export looks like (Grades > Export): the identity columns, one column
# per assignment named "Name (assignment id)", and a "Points Possible" row under the header.
CANVAS_EXPORT = [
    ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Softmax (881)"],
    ["    Points Possible", "", "", "", "", "10"],
    ["Smith, John", "12345", "s1", "jsmith", "Sec A", ""],
    ["Müller, Anna", "4711", "s2", "amuller", "Sec A", ""],
    ["Doe, Jane", "555", "s3", "jdoe", "Sec B", ""],
    ["=cmd|' /C calc'!A0", "999", "s4", "evil", "Sec B", ""],
]
CANVAS_GRADES = [
    _row("smithjohn", "smithjohn_12345_67890_softmax.ipynb", total="7.2"),  # late: 8 less 0.8
    _row("mullerann", "mullerann_late_4711_222_softmax.ipynb", status="ambiguous", total="0"),
    _row("evil", "evil_999_333_softmax.ipynb", total="10"),
]


def test_canvas_file_has_the_documented_header_and_points_row(tmp_path):
    out = tmp_path / "canvas.csv"
    X.write("canvas", CANVAS_GRADES, None, out, notebook=NB, assignment=ASSIGNMENT, column="Softmax (881)")
    rows = _read(out)
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Softmax (881)"]
    assert rows[1] == ["Points Possible", "", "", "", "", "10"]
    assert {r[1]: r[5] for r in rows[2:]} == {"12345": "7.2", "4711": "", "999": "10"}


def test_canvas_round_trip_through_its_own_export(tmp_path):
    roster = X.read_roster(_write_csv(tmp_path / "export.csv", CANVAS_EXPORT))
    assert [p.lms_id for p in roster.people] == ["12345", "4711", "555", "999"]  # the points row is no student
    assert roster.kind == "canvas" and roster.columns == {"Softmax (881)": "10"}
    out = tmp_path / "import.csv"
    problems = X.write("canvas", CANVAS_GRADES, roster, out, notebook=NB, assignment=ASSIGNMENT)
    assert problems == []  # the roster's one assignment column, out of its 10 points
    rows = _read(out)
    assert rows[0] == CANVAS_EXPORT[0]
    assert rows[2:] == [
        ["Smith, John", "12345", "s1", "jsmith", "Sec A", "7.2"],  # the total, late penalty included
        ["Müller, Anna", "4711", "s2", "amuller", "Sec A", ""],  # ambiguous: not graded, no zero
        ["Doe, Jane", "555", "s3", "jdoe", "Sec B", ""],  # submitted nothing: empty, no zero
        ["'=cmd|' /C calc'!A0", "999", "s4", "evil", "Sec B", "10"],  # never a formula
    ]
    again = X.read_roster(out)
    assert [(p.lms_id, p.name, p.sis_user_id, p.sis_login_id, p.section) for p in again.people] == [
        (p.lms_id, p.name, p.sis_user_id, p.sis_login_id, p.section) for p in roster.people
    ]


# What Moodle's assignment downloads as its grading worksheet (offline grading worksheet).
MOODLE_WORKSHEET = [
    X.MOODLE_HEADER,
    ["Participant 4711", "Anna Müller", "anna@example.org", "Submitted for grading", "", "10.00", "Yes",
     "Tuesday, 1 December 2026, 10:00 AM", "-", ""],
    ["Participant 4712", "Bo Chen", "bo@example.org", "No submission", "", "10.00", "Yes", "-", "-", ""],
    ["Participant 4713", "Cy Dee", "cy@example.org", "Submitted for grading", "", "10.00", "Yes", "-", "-", ""],
]
MOODLE_GRADES = [
    _row("Anna_Müller", "Anna Müller_4711_assignsubmission_file_softmax.ipynb", total="9.5"),
    _row("Cy_Dee", "Cy Dee_4713_assignsubmission_file_softmax.ipynb", status="malformed", total="0"),
]


def test_moodle_file_has_the_worksheet_columns_moodle_reads(tmp_path):
    out = tmp_path / "moodle.csv"
    when = datetime(2026, 12, 2, 15, 30, tzinfo=timezone.utc)
    X.write("moodle", MOODLE_GRADES, None, out, notebook=NB, assignment=ASSIGNMENT, when=when)
    rows = _read(out)
    assert rows[0] == X.MOODLE_HEADER
    # Moodle's importer requires these three columns by these names (assignfeedback_offline).
    assert {"Identifier", "Grade", "Last modified (grade)"} <= set(rows[0])
    by_id = {r[0]: dict(zip(rows[0], r)) for r in rows[1:]}
    assert by_id["Participant 4711"]["Grade"] == "9.5"
    assert by_id["Participant 4711"]["Last modified (grade)"] == "Wednesday, 2 December 2026, 3:30 PM +0000"
    assert by_id["Participant 4711"]["Last modified (submission)"] == "Tuesday, 1 December 2026, 10:00 AM +0000"
    assert by_id["Participant 4713"]["Grade"] == ""  # malformed: not graded, never a zero


def test_moodle_round_trip_through_its_worksheet(tmp_path):
    roster = X.read_roster(_write_csv(tmp_path / "worksheet.csv", MOODLE_WORKSHEET))
    out = tmp_path / "upload.csv"
    assert X.write("moodle", MOODLE_GRADES, roster, out, notebook=NB, assignment=ASSIGNMENT) == []
    rows = [dict(zip(X.MOODLE_HEADER, r)) for r in _read(out)[1:]]
    assert [(r["Identifier"], r["Full name"], r["Email address"], r["Grade"], r["Maximum Grade"]) for r in rows] == [
        ("Participant 4711", "Anna Müller", "anna@example.org", "9.5", "10"),
        ("Participant 4712", "Bo Chen", "bo@example.org", "", "10"),
        ("Participant 4713", "Cy Dee", "cy@example.org", "", "10"),
    ]
    assert [r["Status"] for r in rows] == ["Submitted for grading", "No submission", "Submitted for grading"]
    again = X.read_roster(out)
    assert [(p.lms_id, p.name, p.email) for p in again.people] == [(p.lms_id, p.name, p.email) for p in roster.people]


def test_a_student_with_no_graded_file_is_matched_by_the_lms_id_of_their_files_or_their_id(tmp_path):
    """A `missing` or `ambiguous` row has no graded file: it was "not on the roster and no LMS id
    in the file name ''" (clean-room Moodle download). Its LMS id comes from the files it lists as
    ignored, else from its own id where the roster holds that id; it is exported with no grade."""
    roster = X.read_roster(_write_csv(tmp_path / "worksheet.csv", MOODLE_WORKSHEET))
    grades = [
        {**_row("Anna_Müller", "", status="ambiguous", total="0"),
         "ignored_files": "Anna Müller_4711_assignsubmission_file/a.ipynb (ambiguous: not graded); "
                          "Anna Müller_4711_assignsubmission_file/b (2).ipynb (ambiguous: not graded)"},
        {**_row("Bo_Chen_4712", "", status="missing", total="0"), "ignored_files": ""},
        {**_row("Cy_Dee", "", status="missing", total="0"),
         "ignored_files": "Cy Dee_4713_assignsubmission_onlinetext/onlinetext.html (not a notebook)"},
        {**_row("zed_99", "", status="missing", total="0"), "ignored_files": ""},
    ]
    pairs, problems = X.match(grades, roster.people, NB, ASSIGNMENT, "moodle")
    assert {p.lms_id: (row or {}).get("student") for p, row in pairs} == {
        "4711": "Anna_Müller", "4712": "Bo_Chen_4712", "4713": "Cy_Dee"}
    assert problems == ["zed_99: not on the roster and no LMS id in the file name ''; not exported"]


def test_plain_roster_matches_by_student_id_and_names_the_unmatched(tmp_path):
    roster = X.read_roster(_write_csv(tmp_path / "r.csv", [
        ["student", "id", "name", "email", "section"],
        ["alice", "101", "Alice A", "a@x.org", "1"],
        ["bob", "102", "Bob B", "b@x.org", "1"],
    ]))
    grades = [_row("alice", "submitted/alice/01_softmax/softmax.ipynb", total="6"),
              _row("zed", "submitted/zed/01_softmax/softmax.ipynb", total="5")]
    out = tmp_path / "c.csv"
    problems = X.write("canvas", grades, roster, out, notebook=NB, assignment=ASSIGNMENT)
    assert [r[1:2] + r[5:] for r in _read(out)[2:]] == [["101", "6"], ["102", ""]]
    assert len(problems) == 2 and problems[1].startswith("zed: not on the roster")
    # No Canvas column in the roster: the assignment's name, and the instructor is told what Canvas does.
    assert _read(out)[0][-1] == ASSIGNMENT and "creates a new assignment" in problems[0]


def test_without_a_roster_only_students_with_an_lms_id_are_written(tmp_path):
    grades = [_row("alice", "alice.ipynb"), _row("bob", "bob_12_34_softmax.ipynb", total="3")]
    out = tmp_path / "m.csv"
    problems = X.write("moodle", grades, None, out, notebook=NB, assignment=ASSIGNMENT)
    assert problems and "alice" in problems[0]
    assert _read(out)[1:] == []  # bob's is a Canvas id: Moodle has no participant id for him
    problems = X.write("canvas", grades, None, out, notebook=NB, assignment=ASSIGNMENT)
    assert [r[1] for r in _read(out)[2:]] == ["12"]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("alice_12345_67890_softmax.ipynb", "12345"),
        ("smithjohn_late_12345_67890_softmax.ipynb", "12345"),
        ("bob_12345_67890_01_softmax.ipynb", "12345"),
        ("Anna Müller_4711_assignsubmission_file_softmax.ipynb", "4711"),
        ("alice.ipynb", None),
        ("s_1001.ipynb", None),
        ("alice_2_softmax.ipynb", None),
    ],
)
def test_lms_id_from_download_names(name, expected):
    assert X.lms_id_from_filename(name, NB, ASSIGNMENT) == expected
    system = "moodle" if "assignsubmission" in name else "canvas"
    assert X.lms_id_from_filename(name, NB, ASSIGNMENT, system) == expected
    other = "canvas" if system == "moodle" else "moodle"
    assert X.lms_id_from_filename(name, NB, ASSIGNMENT, other) is None


@given(st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=20))
def test_grades_and_roster_fields_come_back_as_written(text):
    """What ``grades.csv`` and the exports escape (a leading ``= + - @``) reads back as written."""
    assert csv_cell_text(csv_cell(text)) == shown(text)


def test_bad_input_names_the_argument(tmp_path):
    with pytest.raises(ValueError, match="kind"):
        X.write("blackboard", [], None, tmp_path / "x.csv", notebook=NB, assignment=ASSIGNMENT, points=1)
    with pytest.raises(TypeError, match="rows"):
        X.write("canvas", None, None, tmp_path / "x.csv", notebook=NB, assignment=ASSIGNMENT, points=1)
    with pytest.raises(ValueError, match="points"):
        X.write("canvas", [], None, tmp_path / "x.csv", notebook=NB, assignment=ASSIGNMENT)
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ValueError, match="--roster"):
        X.read_roster(bad)
    with pytest.raises(ValueError, match="no student column"):
        X.read_roster(_write_csv(tmp_path / "r.csv", [["who", "what"], ["a", "b"]]))


def test_write_for_class_reads_grades_csv(tmp_path):
    with open(tmp_path / "grades.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(CANVAS_GRADES[0]))
        w.writeheader()
        w.writerows(CANVAS_GRADES)
    path, problems = X.write_for_class("canvas", tmp_path, None, notebook=NB, assignment=ASSIGNMENT)
    assert path == tmp_path / "canvas.csv" and len(problems) == 1 and "new assignment" in problems[0]
    assert {r[1]: r[5] for r in _read(path)[2:]} == {"12345": "7.2", "4711": "", "999": "10"}


def test_class_step_writes_the_file_and_names_each_student_not_exported(tmp_path, capsys):
    from types import SimpleNamespace

    rows = CANVAS_GRADES + [_row("zed", "zed.ipynb")]
    with open(tmp_path / "grades.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    said = []
    spec = SimpleNamespace(notebook=NB, name=ASSIGNMENT)
    path = X.class_step("canvas", tmp_path, None, spec, say=said.append)
    assert path == tmp_path / "canvas.csv" and said == [f"canvas import file: {path}"]
    assert "zed: not on the roster" in capsys.readouterr().err


def test_roster_for_checks_the_option_pair(tmp_path):
    assert X.roster_for("canvas", None) is None
    with pytest.raises(ValueError, match="--roster goes with --export"):
        X.roster_for(None, str(tmp_path / "r.csv"))
    with pytest.raises(ValueError, match="--roster"):
        X.roster_for("moodle", str(tmp_path / "absent.csv"))
    path = _write_csv(tmp_path / "r.csv", MOODLE_WORKSHEET)
    assert [p.lms_id for p in X.roster_for("moodle", str(path)).people] == ["4711", "4712", "4713"]


# ---- the column the roster names, on its scale (issue 37) ---------------------------------------

# Canvas's gradebook export of a course with two assignments, its totals and a custom column; the
# importer reads "Title (id)" columns as assignments and skips the student columns and totals.
CANVAS_TWO = [
    ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Notes", "Softmax (881)", "Attention (882)",
     "Current Score", "Unposted Current Score", "Final Score", "Final Grade"],
    ["    Points Possible", "", "", "", "", "", "100", "50", "(read only)", "(read only)", "(read only)",
     "(read only)"],
    ["Smith, John", "12345", "s1", "jsmith", "Sec A", "", "", "", "", "", "", ""],
    ["Doe, Jane", "555", "s3", "jdoe", "Sec B", "", "", "", "", "", "", ""],
]


def test_canvas_fills_the_column_of_this_assignment_out_of_its_points(tmp_path):
    roster = X.read_roster(_write_csv(tmp_path / "export.csv", CANVAS_TWO))
    assert roster.columns == {"Softmax (881)": "100", "Attention (882)": "50"}
    out = tmp_path / "import.csv"
    grades = [_row("smithjohn", "smithjohn_12345_67890_softmax.ipynb", total="6"),
              _row("doejane", "doejane_555_1_softmax.ipynb", total="7.25")]
    assert X.write("canvas", grades, roster, out, notebook=NB, assignment=ASSIGNMENT) == []
    rows = _read(out)
    assert rows[0][-1] == "Softmax (881)" and rows[1][-1] == "100"  # the notebook's title, its points
    assert {r[1]: r[-1] for r in rows[2:]} == {"12345": "60", "555": "72.5"}  # 6/10 is 60/100
    X.write("canvas", grades, roster, out, notebook=NB, assignment=ASSIGNMENT, column="Attention (882)")
    assert _read(out)[0][-1] == "Attention (882)" and {r[1]: r[-1] for r in _read(out)[2:]} == {"12345": "30",
                                                                                               "555": "36.25"}
    X.write("canvas", grades, roster, out, notebook=NB, assignment=ASSIGNMENT, points=8)
    assert _read(out)[1][-1] == "8" and {r[1]: r[-1] for r in _read(out)[2:]} == {"12345": "4.8", "555": "5.8"}


@pytest.mark.parametrize("column, notebook, message", [
    ("Softmx (881)", NB, "not an assignment column of the roster"),  # a typo
    (None, "attention_rows", "name the one for 01_softmax with --column"),  # two columns, neither named so
    ("  ", NB, "--column: give the column's header"),
])
def test_a_column_the_roster_cannot_settle_is_an_error_naming_column(tmp_path, column, notebook, message):
    roster = X.read_roster(_write_csv(tmp_path / "export.csv", CANVAS_TWO))
    with pytest.raises(ValueError, match="--column") as err:
        X.check_options("canvas", roster, assignment=ASSIGNMENT, notebook=notebook, column=column)
    assert message in str(err.value)
    X.check_options("canvas", roster, assignment=ASSIGNMENT, notebook=NB)  # the notebook's column: fine


def test_moodle_grades_are_scaled_to_the_worksheets_maximum_grade(tmp_path):
    sheet = [X.MOODLE_HEADER] + [r[:5] + ["100.00"] + r[6:] for r in MOODLE_WORKSHEET[1:]]
    roster = X.read_roster(_write_csv(tmp_path / "worksheet.csv", sheet))
    assert roster.kind == "moodle" and roster.max_grade == "100.00"
    out = tmp_path / "upload.csv"
    grades = [_row("Anna_Müller", "Anna Müller_4711_assignsubmission_file_softmax.ipynb", total="6")]
    X.write("moodle", grades, roster, out, notebook=NB, assignment=ASSIGNMENT)
    rows = {r["Identifier"]: r for r in (dict(zip(X.MOODLE_HEADER, x)) for x in _read(out)[1:])}
    assert (rows["Participant 4711"]["Grade"], rows["Participant 4711"]["Maximum Grade"]) == ("60", "100")
    scale = [X.MOODLE_HEADER] + [r[:5] + ["Scale"] + r[6:] for r in MOODLE_WORKSHEET[1:]]
    with pytest.raises(ValueError, match="--points"):
        X.write("moodle", grades, X.read_roster(_write_csv(tmp_path / "s.csv", scale)), out, notebook=NB,
                assignment=ASSIGNMENT)
    with pytest.raises(ValueError, match="--column"):
        X.check_options("moodle", roster, assignment=ASSIGNMENT, notebook=NB, column="Grade")
    with pytest.raises(ValueError, match="--points must be more than 0"):
        X.check_options("moodle", roster, assignment=ASSIGNMENT, notebook=NB, points=0)
    with pytest.raises(ValueError, match="go with --export"):
        X.check_options(None, None, assignment=ASSIGNMENT, notebook=NB, points=10)


@pytest.mark.skipif(not shutil.which("php"), reason="needs PHP, whose strtotime Moodle's import uses")
def test_moodles_strtotime_reads_the_times_at_their_instant():
    """Moodle's worksheet import reads "Last modified (grade)" with PHP's strtotime; with the UTC
    offset written, the server's own zone plays no part."""
    when = datetime(2026, 12, 2, 0, 5, tzinfo=timezone(timedelta(hours=-5)))
    text = X._moodle_time(when)
    script = f"date_default_timezone_set('Australia/Perth'); echo strtotime({json.dumps(text)});"
    done = subprocess.run(["php", "-r", script], capture_output=True, text=True, timeout=60, check=True)
    assert int(done.stdout) == int(when.timestamp()), text


def test_grades_csv_opens_in_excel_with_its_accents_and_never_as_a_formula(tmp_path):
    from attngrade.report import write_csv

    spec = SimpleNamespace(parts=[], manual={})
    header_len = len(__import__("attngrade.report", fromlist=["csv_header"]).csv_header(spec))
    rows = [["Anna_Müller"] + [""] * (header_len - 1), [csv_cell("=HYPERLINK(1)")] + [""] * (header_len - 1)]
    write_csv(tmp_path / "grades.csv", spec, rows)
    raw = (tmp_path / "grades.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # UTF-8's byte-order mark: Excel reads UTF-8, not ANSI
    assert "Anna_Müller".encode() in raw and b"\n'=HYPERLINK(1)" in raw.replace(b"\r\n", b"\n")
    assert [r["student"] for r in X.read_grades(tmp_path / "grades.csv")] == ["Anna_Müller", "=HYPERLINK(1)"]


# ---- against the LMSs' own files (tests/grading/lms: written from their sources) ----------------

def _lms_class(tmp_path):
    from .lms.classes import DOWNLOADED_AT, DUE_AT, ordinary_class
    from .lms.downloads import NOTEBOOK, canvas_download, moodle_download

    students = ordinary_class(lambda key: key.encode(), notebook=NOTEBOOK)
    canvas = canvas_download(students, due_at=DUE_AT, downloaded_at=DOWNLOADED_AT, path=tmp_path / "c.zip")
    moodle = moodle_download(students, assignment_cmid=77, downloaded_at=DOWNLOADED_AT, path=tmp_path / "m.zip")
    return students, canvas, moodle, NOTEBOOK[: -len(".ipynb")]


def test_canvas_import_of_a_class_fills_the_gradebooks_column_out_of_100(tmp_path):
    from .lms.downloads import ASSIGNMENT as LMS_ASSIGNMENT, canvas_gradebook_csv

    students, canvas, _, notebook = _lms_class(tmp_path)
    canvas_gradebook_csv(students, assignment_column="Attention (2201)", points_possible=100,
                         path=tmp_path / "gradebook.csv")
    roster = X.read_roster(tmp_path / "gradebook.csv")
    # Out of 10 in attngrade: the user id n scores n % 11 (40109 scores 3, 3 of 10 is 30 of 100).
    grades = [_row(f"s{e['user_id']}", e["member"], total=str(e["user_id"] % 11)) for e in canvas if e["member"]]
    out = tmp_path / "import.csv"
    assert X.write("canvas", grades, roster, out, notebook=notebook, assignment=LMS_ASSIGNMENT) == []
    rows = _read(out)
    assert rows[0][5:] == ["Attention (2201)"] and rows[1][5] == "100"
    assert {r[1]: r[5] for r in rows[2:]} == {str(s.user_id): X._number(s.user_id % 11 * 10) for s in students}


def test_moodle_worksheet_of_a_class_takes_each_grade_out_of_its_maximum(tmp_path):
    from .lms.classes import DUE_AT
    from .lms.downloads import ASSIGNMENT as LMS_ASSIGNMENT, moodle_grading_worksheet, moodle_participant_ids

    students, _, moodle, notebook = _lms_class(tmp_path)
    moodle_grading_worksheet(students, max_grade=100, path=tmp_path / "worksheet.csv", due_at=DUE_AT)
    pids = moodle_participant_ids(students)
    grades = [_row(f"s{e['user_id']}", e["member"], total=str(e["user_id"] % 11)) for e in moodle if e["member"]]
    out = tmp_path / "upload.csv"
    assert X.write("moodle", grades, X.read_roster(tmp_path / "worksheet.csv"), out, notebook=notebook,
                   assignment=LMS_ASSIGNMENT) == []
    rows = [dict(zip(X.MOODLE_HEADER, r)) for r in _read(out)[1:]]
    assert {r["Identifier"]: (r["Grade"], r["Maximum Grade"]) for r in rows} == {
        f"Participant {pids[s.user_id]}": (X._number(s.user_id % 11 * 10), "100") for s in students}


# ---- Canvas's export in its other dialects (canvas-lms lib/gradebook_exporter.rb, csv_with_i18n.rb) --
# A teacher with the "semicolon separators" and "byte-order mark" features and a German locale,
# the "separate first and last names" view and no SIS permission (no SIS User ID column); the
# Manual Posting row before the Points Possible row; Canvas's test student (Student View) last.
CANVAS_SEMICOLON = (
    "\ufeffLastName;FirstName;ID;SIS Login ID;Section;Softmax (881);Attention (882);Current Score\r\n"
    ";;;;;Manual Posting;;\r\n"
    "    Points Possible;;;;;12,50;10,00;(read only)\r\n"
    "Müller;Anna;4711;amuller;ATTN 101, Lecture A;;7,50;75,00\r\n"
    "Smith;John;12345;jsmith;ATTN 101, Lecture A;;;0,00\r\n"
    "Student;Test;99;;ATTN 101, Lecture A;;;0,00\r\n"
)
CANVAS_COMMA = (
    "Student,ID,SIS User ID,SIS Login ID,Section,Softmax (881),Attention (882),Current Score\r\n"
    ",,,,,Manual Posting,,\r\n"
    "    Points Possible,,,,,12.50,10.00,(read only)\r\n"
    '"Müller, Anna",4711,s2,amuller,"ATTN 101, Lecture A",,7.50,75.00\r\n'
    '"Smith, John",12345,s1,jsmith,"ATTN 101, Lecture A",,,0.00\r\n'
    '"Student, Test",99,,,"ATTN 101, Lecture A",,,0.00\r\n'
)
DIALECT_GRADES = [
    _row("mullerann", "mullerann_4711_222_softmax.ipynb", total="7.25"),  # 7.25 of 10 is 9.0625 of 12.5
    _row("testerst", "studenttest_99_333_softmax.ipynb", total="10"),  # the teacher's own try
]


@pytest.mark.parametrize("text, sis", [(CANVAS_SEMICOLON, ("", "")), (CANVAS_COMMA, ("s2", "s1"))],
                         ids=["semicolon", "comma"])
def test_canvas_export_in_either_dialect_is_the_same_roster(tmp_path, text, sis):
    path = tmp_path / "Grades export.csv"
    path.write_bytes(text.encode())
    roster = X.read_roster(path)
    assert roster.kind == "canvas"
    assert roster.columns == {"Softmax (881)": "12.50", "Attention (882)": "10.00"}  # no totals
    # Manual Posting and Points Possible are no students; the test student is marked, not dropped.
    assert [(p.lms_id, p.name, p.sis_user_id, p.sis_login_id, p.test_student) for p in roster.people] == [
        ("4711", "Müller, Anna", sis[0], "amuller", False),
        ("12345", "Smith, John", sis[1], "jsmith", False),
        ("99", "Student, Test", "", "", True)]
    assert X.lms_points("canvas", roster, "Softmax (881)") == 12.5


def test_canvas_import_file_is_written_in_the_dialect_of_its_roster(tmp_path):
    (tmp_path / "semi.csv").write_bytes(CANVAS_SEMICOLON.encode())
    roster = X.read_roster(tmp_path / "semi.csv")
    out = tmp_path / "canvas.csv"
    problems = X.write("canvas", DIALECT_GRADES, roster, out, notebook=NB, assignment="softmax")
    assert problems == ["Student, Test: Canvas's test student (Student View); not exported"]
    raw = out.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # the roster had Canvas's byte-order mark
    rows = list(csv.reader(raw.decode("utf-8-sig").splitlines(), delimiter=";"))
    assert rows == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Softmax (881)"],
        ["Points Possible", "", "", "", "", "12,5"],
        ["Müller, Anna", "4711", "", "amuller", "ATTN 101, Lecture A", "9,0625"],  # decimal comma
        ["Smith, John", "12345", "", "jsmith", "ATTN 101, Lecture A", ""],  # submitted nothing
    ]
    assert [p.lms_id for p in X.read_roster(out).people] == ["4711", "12345"]  # reads back as written
    (tmp_path / "comma.csv").write_bytes(CANVAS_COMMA.encode())
    comma = X.read_roster(tmp_path / "comma.csv")
    X.write("canvas", DIALECT_GRADES, comma, out, notebook=NB, assignment="softmax")
    assert not out.read_bytes().startswith(b"\xef\xbb\xbf")
    assert _read(out)[1:3] == [["Points Possible", "", "", "", "", "12.5"],
                               ["Müller, Anna", "4711", "s2", "amuller", "ATTN 101, Lecture A", "9.0625"]]


def test_roster_delimiter_comes_from_the_header_line_not_the_data(tmp_path):
    # A comma file whose names and sections hold semicolons, and a plain roster separated by ';'.
    comma = "Student,ID,SIS Login ID,Section,Softmax (881)\n    Points Possible,,,,10.00\nA;B,7,ab,S;1,\n"
    (tmp_path / "c.csv").write_text(comma, encoding="utf-8")
    roster = X.read_roster(tmp_path / "c.csv")
    assert [(p.name, p.lms_id, p.section) for p in roster.people] == [("A;B", "7", "S;1")]
    (tmp_path / "p.csv").write_text("student;id;name\nanna;4711;Anna Müller\n", encoding="utf-8")
    assert [(p.student, p.lms_id, p.name) for p in X.read_roster(tmp_path / "p.csv").people] == [
        ("anna", "4711", "Anna Müller")]
    (tmp_path / "t.csv").write_text("student\tid\nanna\t4711\n", encoding="utf-8")  # tabs: neither
    with pytest.raises(ValueError, match=r"--roster .*t\.csv: no student column .*';'"):
        X.read_roster(tmp_path / "t.csv")
