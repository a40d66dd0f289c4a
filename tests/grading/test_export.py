"""LMS exports (attngrade.export): each file has its system's documented columns, and a roster
exported by the system comes back through the file with every student and the right grade."""

from __future__ import annotations

import csv
from datetime import datetime, timezone

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
    assert [p.lms_id for p in roster] == ["12345", "4711", "555", "999"]  # the points row is no student
    out = tmp_path / "import.csv"
    problems = X.write("canvas", CANVAS_GRADES, roster, out, notebook=NB, assignment=ASSIGNMENT,
                       column="Softmax (881)")
    assert problems == []
    rows = _read(out)
    assert rows[0] == CANVAS_EXPORT[0]
    assert rows[2:] == [
        ["Smith, John", "12345", "s1", "jsmith", "Sec A", "7.2"],  # the total, late penalty included
        ["Müller, Anna", "4711", "s2", "amuller", "Sec A", ""],  # ambiguous: not graded, no zero
        ["Doe, Jane", "555", "s3", "jdoe", "Sec B", ""],  # submitted nothing: empty, no zero
        ["'=cmd|' /C calc'!A0", "999", "s4", "evil", "Sec B", "10"],  # never a formula
    ]
    again = X.read_roster(out)
    assert [(p.lms_id, p.name, p.sis_user_id, p.sis_login_id, p.section) for p in again] == [
        (p.lms_id, p.name, p.sis_user_id, p.sis_login_id, p.section) for p in roster
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
    assert by_id["Participant 4711"]["Last modified (grade)"] == "Wednesday, 02 December 2026, 03:30 PM"
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
    assert [(p.lms_id, p.name, p.email) for p in again] == [(p.lms_id, p.name, p.email) for p in roster]


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
    assert len(problems) == 1 and problems[0].startswith("zed: not on the roster")
    assert _read(out)[0][-1] == ASSIGNMENT  # the column is the assignment's name by default


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
        X.write("blackboard", [], None, tmp_path / "x.csv", notebook=NB, assignment=ASSIGNMENT, max_points=1)
    with pytest.raises(TypeError, match="rows"):
        X.write("canvas", None, None, tmp_path / "x.csv", notebook=NB, assignment=ASSIGNMENT, max_points=1)
    with pytest.raises(ValueError, match="max_points"):
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
    assert path == tmp_path / "canvas.csv" and problems == []
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
    assert [p.lms_id for p in X.roster_for("moodle", str(path))] == ["4711", "4712", "4713"]
