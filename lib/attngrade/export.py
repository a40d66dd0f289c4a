"""Grades a learning-management system imports: ``attngrade ... --export canvas|moodle``.

Each file has the columns of that system's own import (below). The grade is ``grades.csv``'s
``total`` (the autograded score less the late penalty, plus the points given by hand) scaled from
the assignment's own points (``total_max``) to the points the LMS records it out of: ``--points``,
else the roster's (Canvas's ``Points Possible`` row, Moodle's ``Maximum Grade``), else unscaled. A
student who submitted nothing (on the roster, not among the submissions), or whose submission was
not graded (``missing``, ``malformed``, ``ambiguous``), gets an empty grade, never a zero: both
systems leave an empty cell alone.

* **Canvas** (Grades > Import): ``Student, ID, SIS User ID, SIS Login ID, Section`` and the
  assignment's column with the ``Points Possible`` row that Canvas's own export has under the
  header, in the dialect of the roster's export (:class:`Roster`): ``;`` and decimal commas and a
  byte-order mark where Canvas wrote them (its importer reads either separator and decimal mark,
  canvas-lms ``lib/gradebook_importer.rb`` ``identify_delimiter``, ``decimal_comma_to_period``; a
  spreadsheet of the teacher's locale opens the file as it opened the export). Canvas's test
  student (Student View) is not exported. Canvas's importer matches a column to an assignment
  by the id in ``Title (id)``, then by its exact title, and otherwise creates a new assignment;
  so the column is ``--column``, or the roster's column for this assignment
  (:func:`canvas_column`). ``ID`` is the Canvas user id,
  the first number of Canvas's download names (``name[_late]_<user id>_<attachment id>_<file>``).
* **Moodle** (assignment, *Upload grading worksheet*; the offline-grading-worksheet feedback
  type): ``Identifier`` (``Participant <id>``, the number of Moodle's download names
  ``Full Name_<id>_assignsubmission_file``), ``Grade`` and ``Last modified (grade)`` are the
  columns Moodle reads (a grade above the assignment's maximum is skipped, hence the scaling);
  the others are those of the worksheet Moodle downloads. Times carry their UTC offset.

The LMS user id comes from the submission's file name, or from a roster (:class:`Roster`): the
system's own export (Canvas's gradebook CSV, Moodle's grading worksheet) or any CSV with a
``student`` column (attngrade's id) and ``id``, ``name``, ``email``, ``section`` columns; the
separator, ``,`` or ``;``, is the one that splits the header line into more columns. Every roster
row is written, graded or not.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .names import base_id, csv_cell, csv_cell_text

__all__ = [
    "CANVAS_HEADER",
    "Roster",
    "canvas_column",
    "people_of",
    "check_options",
    "lms_points",
    "KINDS",
    "MOODLE_HEADER",
    "NOT_GRADED",
    "Person",
    "lms_id_from_filename",
    "read_grades",
    "read_roster",
    "roster_for",
    "write",
    "write_for_class",
    "class_step",
]

KINDS = ("canvas", "moodle")
CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_HEADER = [
    "Identifier",
    "Full name",
    "Email address",
    "Status",
    "Grade",
    "Maximum Grade",
    "Grade can be changed",
    "Last modified (submission)",
    "Last modified (grade)",
    "Feedback comments",
]
MOODLE_PREFIX = "Participant "
NOT_GRADED = ("missing", "malformed", "ambiguous")
#: The columns Canvas's gradebook importer reads as the student's, and the totals it never
#: imports (canvas-lms ``app/models/gradebook_importer.rb``: ``GRADEBOOK_IMPORTER_RESERVED_NAMES``,
#: ``NON_ASSIGNMENT_COLUMN_HEADERS``, which also match their "Unposted ..." forms).
CANVAS_RESERVED = frozenset({"Student", "LastName", "FirstName", "ID", "SIS User ID", "SIS Login ID", "Section",
                             "Integration ID", "Root Account"})
CANVAS_TOTALS = re.compile("Current Score|Current Points|Current Grade|Final Score|Final Points|Final Grade|"
                           "Override Score|Override Grade|Override Status")

@dataclass
class Person:
    """One student as the LMS knows them."""

    student: str = ""  # attngrade's id (from the submission's file name)
    lms_id: str = ""  # Canvas user id, Moodle participant id
    name: str = ""
    email: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    test_student: bool = False  # Canvas's test student (Student View): never exported


def lms_id_from_filename(filename: str, notebook: str, assignment: str, system: str | None = None) -> str | None:
    """The LMS user id in a Canvas or Moodle download's file path (of ``system`` only, when given),
    or None: :func:`attngrade.lms.lms_id_of_path` (Moodle's folder names too)."""
    from .lms import lms_id_of_path

    return lms_id_of_path(str(filename), system)


def read_grades(path: Path) -> list[dict]:
    """The rows of ``grades.csv`` (UTF-8, with or without its byte-order mark), its fields as the
    students wrote them."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return [{k: csv_cell_text(v or "") for k, v in row.items()} for row in csv.DictReader(fh)]


@dataclass
class Roster:
    """``--roster``: the LMS's students, and what its file says of the assignment's column.

    ``columns``: Canvas's assignment columns (header -> its ``Points Possible``), the columns
    Canvas's importer reads as assignments (not its student, total or override columns);
    ``max_grade``: the ``Maximum Grade`` of Moodle's worksheet. ``delimiter``, ``decimal`` and
    ``bom``: the file's dialect (Canvas writes ``;``, decimal commas and a byte-order mark by the
    exporting teacher's features and locale, canvas-lms ``lib/csv_with_i18n.rb``); the Canvas
    import file is written in it. ``columns`` hold their points with a decimal point.
    """

    people: list = field(default_factory=list)
    kind: str = "plain"  # "canvas", "moodle" or "plain"
    columns: dict = field(default_factory=dict)
    max_grade: str = ""
    delimiter: str = ","
    decimal: str = "."
    bom: bool = False


#: Canvas's test student (Student View): its sortable name, no login; Canvas's export lists it
#: after the students (``enrollments_for_csv`` puts ``StudentViewEnrollment`` last).
CANVAS_TEST_STUDENT = "Student, Test"


def _canvas_person(get) -> Person | None:
    """A row of Canvas's gradebook export (``Student`` = the sortable name ``Last, First``, or
    ``LastName`` and ``FirstName``), or None for its ``Manual Posting``/``Points Possible`` rows."""
    name = get("student")
    if name is None:
        name = ", ".join(part for part in (get("lastname") or "", get("firstname") or "") if part)
    if "points possible" in name.lower() or not get("id"):
        return None
    person = Person("", get("id") or "", name, "", get("sis user id") or "", get("sis login id") or "",
                    get("section") or "")
    person.test_student = name == CANVAS_TEST_STUDENT and not person.sis_login_id
    return person


def _roster_row(get, kind: str) -> Person | None:
    if kind == "moodle":  # Moodle's grading worksheet
        ident = get("identifier") or ""
        if not ident.startswith(MOODLE_PREFIX):
            return None
        return Person("", ident[len(MOODLE_PREFIX):].strip(), get("full name") or "", get("email address") or "")
    if kind == "canvas":
        return _canvas_person(get)
    return Person(get("student") or "", get("id") or get("lms_id") or "", get("name") or "",
                  get("email") or "", get("sis_user_id") or "", get("sis_login_id") or "", get("section") or "")


def _getter(row: dict):
    return {k.strip().lower(): csv_cell_text((v or "").strip()) for k, v in row.items() if k}.get


def _roster_kind(header: list[str]) -> str:
    """``moodle`` (an ``Identifier`` column), ``canvas`` (``ID`` and ``SIS Login ID``, which
    Canvas's export always has, with or without ``SIS User ID``) or ``plain``."""
    names = {h.strip() for h in header}
    if "identifier" in {n.lower() for n in names}:
        return "moodle"
    return "canvas" if {"ID", "SIS Login ID"} <= names else "plain"


def _decimal_point(text: str) -> str:
    """A number written with a decimal comma (``12,50``) with a decimal point; other text as is."""
    return text.replace(",", ".") if re.fullmatch(r"-?\d+,\d+", text.strip()) else text


def _points_row(header: list[str], rows: list[dict]) -> dict:
    """Canvas's ``    Points Possible`` row (``{}`` without one)."""
    return next((r for r in rows if header and "points possible" in (r.get(header[0]) or "").lower()), {})


def _canvas_columns(header: list[str], rows: list[dict]) -> dict:
    """Canvas's assignment columns and their points: its importer skips the student columns
    (``GRADEBOOK_IMPORTER_RESERVED_NAMES``) and the totals (``NON_ASSIGNMENT_COLUMN_HEADERS``,
    with their "Unposted" forms) and reads every other column as an assignment
    (canvas-lms ``app/models/gradebook_importer.rb``); custom columns such as ``Notes`` have no
    ``Points Possible`` and are left out here too."""
    points = _points_row(header, rows)
    columns = {}
    for name in header:
        if name.strip() in CANVAS_RESERVED or CANVAS_TOTALS.search(name):
            continue
        value = _decimal_point((points.get(name) or "").strip())
        if value and not value.lower().startswith("(read only"):
            columns[name] = value
    return columns


def _read_csv(path: Path) -> tuple[list[str], list[dict], str, bool]:
    """``(header, rows, delimiter, bom)`` of a UTF-8 CSV: the delimiter, ``,`` or ``;``, is the one
    that splits the header line into more columns (as Canvas's importer decides between them)."""
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
        counts = {d: len(next(csv.reader(io.StringIO(text), delimiter=d), [])) for d in ",;"}
        delimiter = ";" if counts[";"] > counts[","] else ","
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
        rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"--roster {path}: cannot read it as a UTF-8 CSV ({exc})") from exc
    return list(reader.fieldnames or []), rows, delimiter, raw.startswith(codecs.BOM_UTF8)


def read_roster(path: Path) -> Roster:
    """The students of a roster CSV (``,`` or ``;``, with or without a byte-order mark): Canvas's
    gradebook export (``Student`` or ``LastName``/``FirstName``, decimal points or commas),
    Moodle's grading worksheet, or a CSV with ``student``, ``id``, ``name``, ``email``,
    ``section`` columns."""
    header, rows, delimiter, bom = _read_csv(path)
    kind = _roster_kind(header)
    people = [p for p in (_roster_row(_getter(r), kind) for r in rows) if p is not None]
    if rows and not any(p.student or p.lms_id for p in people):
        raise ValueError(
            f"--roster {path}: no student column found; give Canvas's gradebook export, Moodle's "
            "grading worksheet, or a CSV with a 'student' or 'id' column, separated by ',' or ';'"
        )
    roster = Roster(people, kind, delimiter=delimiter, bom=bom)
    if kind == "moodle":
        grades = {(_getter(r)("maximum grade") or "").strip() for r in rows} - {""}
        roster.max_grade = grades.pop() if len(grades) == 1 else ""
    elif kind == "canvas":
        roster.columns = _canvas_columns(header, rows)
        cells = [v for v in _points_row(header, rows).values() if isinstance(v, str)]
        roster.decimal = "," if any(_decimal_point(v) != v for v in cells) else "."
    return roster


def roster_for(kind: str | None, path: str | None) -> Roster | None:
    """``--roster``'s students for ``--export kind`` (or ``--return``), or None without one;
    ValueError names the problem."""
    if path is None:
        return None
    if kind is None:
        raise ValueError("--roster goes with --export canvas|moodle or --return canvas|moodle")
    return read_roster(Path(path))


def _number(value: float) -> str:
    """A grade as the LMS reads it: at most 4 decimals, no trailing zeros (``60``, ``7.25``)."""
    text = f"{value:.4f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _grade(row: dict | None, points: float | None = None) -> str:
    """``grades.csv``'s total on the LMS's scale (``points`` for the assignment's own
    ``total_max``), or empty: no submission, or one that was not graded."""
    if row is None or row.get("status") in NOT_GRADED:
        return ""
    total = (row.get("total") or "").strip()
    if not total or points is None:
        return total
    own = float(row.get("total_max") or 0)
    return _number(float(total) * points / own) if own > 0 else total


def _id_of_name(name: str) -> str | None:
    """The id a file named after ``name`` gives (``Anna Müller`` -> ``Anna_Müller``)."""
    return base_id(name) if name.strip() else None


def _row_lms_id(row: dict, notebook: str, assignment: str, kind: str | None) -> str | None:
    """The LMS id of a grades row: in its graded file's path, else in a path it lists as ignored
    (a `missing` or `ambiguous` student's files: ``path (why)``, separated by ``; ``)."""
    paths = [row.get("file", "")] + [p.rsplit(" (", 1)[0] for p in row.get("ignored_files", "").split("; ")]
    for path in paths:
        lms = lms_id_from_filename(path, notebook, assignment, kind) if path else None
        if lms:
            return lms
    return None


def match(rows: list, roster: list, notebook: str, assignment: str, kind: str) -> tuple[list, list]:
    """``([(Person, grades row or None)], problems)``: every roster row, in the roster's order,
    then the graded students the roster lacks whose file names carry an LMS id."""
    by_student = {p.student: p for p in roster if p.student}
    by_lms = {p.lms_id: p for p in roster if p.lms_id}
    by_name = {}
    for p in roster:
        key = _id_of_name(p.name)
        if key:
            by_name.setdefault(key, p)
    graded: dict = {}
    extra, problems = [], []
    for row in rows:
        sid, file = row.get("student", ""), row.get("file", "")
        lms = _row_lms_id(row, notebook, assignment, kind)
        person = by_student.get(sid) or (by_lms.get(lms) if lms else None) or by_name.get(sid)
        if person is None and not lms:  # nothing handed in: the id's own LMS id, where the roster has it
            tail = re.fullmatch(r".+_(\d{3,})", sid)
            person = by_lms.get(tail.group(1)) if tail else None
        if person is None:
            if lms:
                extra.append((Person(sid, lms, sid), row))
            else:
                problems.append(f"{sid}: not on the roster and no LMS id in the file name {file!r}; not exported")
            continue
        if id(person) in graded:
            problems.append(
                f"{sid} and {graded[id(person)]['student']} both match {person.name or person.lms_id}; "
                f"{sid} not exported"
            )
            continue
        if lms and not person.lms_id:
            person.lms_id = lms
        graded[id(person)] = row
    pairs = [(p, graded.get(id(p))) for p in roster] + extra
    return pairs, problems


def people_of(students: list, roster: Roster | None, *, notebook: str, assignment: str) -> dict:
    """``{student: Person}`` for ``students`` (``(student id, file, name from the submission)``):
    the roster's row matched as the exports match it, else the name the submission gave and the
    LMS id of its file name (formgrader's names: :func:`attngrade.gradebook.name_students`)."""
    rows = [{"student": sid, "file": file} for sid, file, _ in students]
    pairs, _ = match(rows, roster.people if roster is not None else [], notebook, assignment, None)
    found = {row["student"]: person for person, row in pairs if row is not None}
    people = {}
    for sid, file, name in students:
        person = found.get(sid)
        if person is None:
            lms = lms_id_from_filename(file, notebook, assignment) if file else None
            person = Person(sid, lms or "", name)
        elif person.name in ("", sid) and name:
            person = Person(person.student, person.lms_id, name, person.email)
        people[sid] = person
    return people


_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")


def _moodle_time(when: datetime) -> str:
    """Moodle's own date format (``userdate``'s ``strftimedaydatetime``, ``Friday, 8 March 2024,
    9:05 PM``: no leading zeros; in English whatever the locale) with the UTC offset after it: the worksheet import reads the time with PHP's
    ``strtotime`` (``assignfeedback_offline_grade_importer::next``), which takes the offset and
    otherwise reads the time in the server's zone. ``when`` without a zone is local time."""
    when = when if when.tzinfo is not None else when.astimezone()
    return (f"{_DAYS[when.weekday()]}, {when.day} {_MONTHS[when.month - 1]} {when.year}, "
            f"{(when.hour + 11) % 12 + 1}:{when.minute:02d} {'AM' if when.hour < 12 else 'PM'} "
            f"{when.strftime('%z')}")


def _submitted_time(text: str) -> str:
    """``grades.csv``'s submission time (nbgrader's ``... UTC``) in Moodle's format, or as written."""
    try:
        return _moodle_time(datetime.fromisoformat(text.strip().replace(" UTC", "+00:00")))
    except ValueError:
        return text


def _column_key(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", re.sub(r"\s*\(\d+\)\s*$", "", text).lower())


def canvas_column(roster: Roster | None, assignment: str, notebook: str, column: str | None = None):
    """``(column, notes)``: the Canvas gradebook column the grades go to. ``--column`` when given
    (one of the roster's assignment columns when the roster is Canvas's export); else the
    roster's only assignment column, or the one titled like the assignment or its notebook
    (``Softmax (881)`` for ``softmax``); else the assignment's name, with a note that Canvas's
    import then creates a new assignment. ValueError when the roster leaves the choice open."""
    columns = roster.columns if roster is not None and roster.kind == "canvas" else {}
    if column is not None:
        if not column.strip():
            raise ValueError("--column: give the column's header, e.g. 'Softmax (881)'")
        if columns and column not in columns:
            raise ValueError(f"--column {column!r} is not an assignment column of the roster; it has: "
                             + ", ".join(map(repr, columns)))
        return column, []
    if len(columns) == 1:
        return next(iter(columns)), []
    hits = [c for c in columns if _column_key(c) in {_column_key(assignment), _column_key(notebook)}]
    if len(hits) == 1:
        return hits[0], []
    if columns:
        raise ValueError(f"--column: the roster has {len(columns)} assignment columns ("
                         + ", ".join(map(repr, columns)) + f"); name the one for {assignment} with --column")
    return assignment, [f"no Canvas column for {assignment} in a roster: Canvas's import creates a new "
                        f"assignment named {assignment!r}; give --roster (Canvas's gradebook export) or "
                        "--column 'Title (id)' to fill the existing one"]


def lms_points(kind: str, roster: Roster | None, column: str | None, points: float | None = None) -> float | None:
    """The points the LMS records the assignment out of: ``--points``, else the roster's (Canvas:
    the column's ``Points Possible``; Moodle: the worksheet's ``Maximum Grade``), else None (the
    assignment's own points). ValueError names a value that is not a number of points."""
    if points is not None:
        if not points > 0:
            raise ValueError(f"--points must be more than 0, got {points:g}")
        return float(points)
    text = ""
    if roster is not None and roster.kind == "canvas" == kind:
        text = roster.columns.get(column, "")
    elif roster is not None and roster.kind == "moodle" == kind:
        text = roster.max_grade
    if not text:
        return None
    try:
        value = float(text.replace(",", "."))
    except ValueError:
        raise ValueError(f"--roster: the assignment is out of {text!r}, not a number of points "
                         "(a scale or letter grade); give --points") from None
    if not value > 0:
        raise ValueError(f"--roster: the assignment is out of {text!r}; give --points")
    return value


def _canvas_rows(pairs, column: str, points: float | None, own: float, problems: list, decimal: str = "."):
    """The rows of Canvas's import file; numbers with the roster's ``decimal`` mark."""
    def mark(text: str) -> str:
        return text.replace(".", decimal) if re.fullmatch(r"-?\d+\.\d+", text) else text

    yield [*CANVAS_HEADER, column]
    yield ["Points Possible", "", "", "", "", mark(_number(points if points is not None else own))]
    for person, row in pairs:
        if person.test_student:
            problems.append(f"{person.name}: Canvas's test student (Student View); not exported")
            continue
        if not (person.lms_id or person.sis_user_id or person.sis_login_id):
            problems.append(f"{person.student or person.name}: no Canvas id; not exported")
            continue
        yield [person.name or person.student, person.lms_id, person.sis_user_id, person.sis_login_id,
               person.section, mark(_grade(row, points))]


def _moodle_rows(pairs, points: float | None, own: float, when: datetime, problems: list):
    yield list(MOODLE_HEADER)
    for person, row in pairs:
        if not person.lms_id:
            problems.append(f"{person.student or person.name}: no Moodle participant id; not exported")
            continue
        submitted = _submitted_time((row or {}).get("timestamp") or "")
        yield [f"{MOODLE_PREFIX}{person.lms_id}", person.name or person.student, person.email,
               "Submitted for grading" if row is not None and row.get("status") != "missing" else "No submission",
               _grade(row, points), _number(points if points is not None else own), "Yes", submitted,
               _moodle_time(when), ""]


def _own_points(rows: list, points: float | None) -> float:
    """The assignment's own points (``grades.csv``'s ``total_max``)."""
    own = next((float(r["total_max"]) for r in rows if (r.get("total_max") or "").strip()), None)
    if own is None:
        if points is None:
            raise ValueError("points is needed when rows give no total_max")
        return points
    return own


def write(
    kind: str,
    rows: list,
    roster: Roster | list | None,
    path: Path,
    *,
    notebook: str,
    assignment: str,
    points: float | None = None,
    column: str | None = None,
    when: datetime | None = None,
) -> list[str]:
    """Write the ``kind`` (``canvas`` or ``moodle``) import file of ``rows`` (``grades.csv``'s
    rows) for everyone on ``roster`` (a :class:`Roster`, a list of :class:`Person`, or None) to
    ``path``: into ``column`` (:func:`canvas_column`), each total scaled from the assignment's own
    points to ``points`` (:func:`lms_points`). Canvas's file takes the roster's separator, decimal
    mark and byte-order mark; Moodle's is always ``,`` and ``.``.

    Returns the problems (students that could not be exported, and why), for the instructor.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(rows, list):
        raise TypeError(f"rows must be a list of grades.csv rows, got {type(rows).__name__}")
    if not isinstance(roster, Roster):
        roster = Roster(list(roster or []))
    if kind == "moodle" and column is not None:
        raise ValueError("--column: Moodle's grading worksheet has one Grade column; --column is for Canvas")
    column, notes = canvas_column(roster, assignment, notebook, column) if kind == "canvas" else (None, [])
    points = lms_points(kind, roster, column, points)
    own = _own_points(rows, points)
    pairs, problems = match(rows, roster.people, notebook, assignment, kind)
    if kind == "canvas":
        out = _canvas_rows(pairs, column, points, own, problems, roster.decimal)
        dialect = roster  # Canvas's import reads what its export wrote
    else:
        out = _moodle_rows(pairs, points, own, when or datetime.now().astimezone(), problems)
        dialect = Roster()
    with open(path, "w", newline="", encoding="utf-8-sig" if dialect.bom else "utf-8") as fh:
        w = csv.writer(fh, delimiter=dialect.delimiter)
        for line in out:
            w.writerow([csv_cell(x) for x in line])
    return notes + problems


def write_for_class(kind: str, out: Path, roster: Roster | None, *, notebook: str, assignment: str,
                    points: float | None = None, column: str | None = None) -> tuple[Path, list]:
    """The grading command's step: ``out/<kind>.csv`` from ``out/grades.csv``; returns its path
    and the problems (students not exported, and why)."""
    path = Path(out) / f"{kind}.csv"
    problems = write(kind, read_grades(Path(out) / "grades.csv"), roster, path, notebook=notebook,
                     assignment=assignment, points=points, column=column)
    return path, problems


def class_step(kind: str, out: Path, roster: Roster | None, spec, say=print, *, points: float | None = None,
               column: str | None = None) -> Path | None:
    """The grading command's export step (``--export``), after ``grades.csv`` is written."""
    try:
        path, problems = write_for_class(kind, out, roster, notebook=spec.notebook, assignment=spec.name,
                                         points=points, column=column)
    except (OSError, ValueError) as exc:
        print(f"attngrade: --export {kind}: not written ({exc}); grades.csv is", file=sys.stderr)
        return None
    say(f"{kind} import file: {path}")
    for problem in problems:
        print(f"attngrade: --export {kind}: {problem}", file=sys.stderr)
    return path


def check_options(kind: str | None, roster: Roster | None, *, assignment: str, notebook: str,
                  points: float | None = None, column: str | None = None) -> None:
    """``--export``'s ``--column`` and ``--points`` checked against the roster before anything is
    graded; ValueError names the option."""
    if kind is None:
        if column is not None or points is not None:
            raise ValueError("--column and --points go with --export canvas|moodle")
        return
    if kind == "moodle" and column is not None:
        raise ValueError("--column: Moodle's grading worksheet has one Grade column; --column is for Canvas")
    roster = roster if isinstance(roster, Roster) else Roster(list(roster or []))
    chosen = canvas_column(roster, assignment, notebook, column)[0] if kind == "canvas" else None
    lms_points(kind, roster, chosen, points)
