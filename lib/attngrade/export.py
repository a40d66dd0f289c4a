"""Grades a learning-management system imports: ``attngrade ... --export canvas|moodle``.

Each file has the columns of that system's own import (below). The grade is ``grades.csv``'s
``total``: the autograded score less the late penalty, plus the points given by hand. A student
who submitted nothing (on the roster, not among the submissions), or whose submission was not
graded (``missing``, ``malformed``, ``ambiguous``), gets an empty grade, never a zero: both
systems leave an empty cell alone.

* **Canvas** (Grades > Import): ``Student, ID, SIS User ID, SIS Login ID, Section`` and one
  column per assignment, headed by its name (``Name (assignment id)`` matches an existing one),
  with the ``Points Possible`` row that Canvas's own export has under the header. ``ID`` is the
  Canvas user id, the first number of Canvas's download names
  (``name[_late]_<user id>_<submission id>_<file>``).
* **Moodle** (assignment, *Upload grading worksheet*; the offline-grading-worksheet feedback
  type): ``Identifier`` (``Participant <id>``, the number of Moodle's download names
  ``Full Name_<id>_assignsubmission_file_<file>``), ``Grade`` and ``Last modified (grade)`` are
  the columns Moodle reads; the others are those of the worksheet Moodle downloads.

The LMS user id comes from the submission's file name, or from a roster: the system's own
export (Canvas's gradebook CSV, Moodle's grading worksheet) or any CSV with a ``student`` column
(attngrade's id) and ``id``, ``name``, ``email``, ``section`` columns. Every roster row is
written, graded or not.
"""

from __future__ import annotations

import csv
import re
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .names import base_id, csv_cell, csv_cell_text

__all__ = [
    "CANVAS_HEADER",
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


def lms_id_from_filename(filename: str, notebook: str, assignment: str, system: str | None = None) -> str | None:
    """The LMS user id in a Canvas or Moodle download name (of ``system`` only, when given), or None.

    Uses :func:`attngrade.submissions.parse_filename`'s reading: a Canvas name is recognised by
    the submission id it keeps, and the user id is the number just before it.
    """
    from .submissions import parse_filename

    name = Path(str(filename)).name
    parsed = parse_filename(name, notebook, assignment)
    if parsed.student is None:
        return None
    moodle = re.search(r"_(\d+)_assignsubmission_", name)
    if moodle:
        return moodle.group(1) if system in (None, "moodle") else None
    if parsed.submission_id is not None and system in (None, "canvas"):
        canvas = re.search(rf"_(\d+)_{parsed.submission_id}(?!\d)", name)
        if canvas:
            return canvas.group(1)
    return None


def read_grades(path: Path) -> list[dict]:
    """The rows of ``grades.csv``, its fields as the students wrote them."""
    with open(path, newline="", encoding="utf-8") as fh:
        return [{k: csv_cell_text(v or "") for k, v in row.items()} for row in csv.DictReader(fh)]


def _roster_row(row: dict) -> Person | None:
    get = {k.strip().lower(): csv_cell_text((v or "").strip()) for k, v in row.items() if k}.get
    if get("identifier") is not None:  # Moodle's grading worksheet
        ident = get("identifier") or ""
        if not ident.startswith(MOODLE_PREFIX):
            return None
        return Person("", ident[len(MOODLE_PREFIX):].strip(), get("full name") or "", get("email address") or "")
    if get("sis user id") is not None:  # Canvas's gradebook export
        if (get("student") or "").strip().lower() == "points possible" or not get("id"):
            return None
        return Person("", get("id") or "", get("student") or "", "", get("sis user id") or "",
                      get("sis login id") or "", get("section") or "")
    return Person(get("student") or "", get("id") or get("lms_id") or "", get("name") or "",
                  get("email") or "", get("sis_user_id") or "", get("sis_login_id") or "", get("section") or "")


def read_roster(path: Path) -> list[Person]:
    """The students of a roster CSV: Canvas's gradebook export, Moodle's grading worksheet, or a
    CSV with ``student``, ``id``, ``name``, ``email``, ``section`` columns."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"--roster {path}: cannot read it as a UTF-8 CSV ({exc})") from exc
    people = [p for p in map(_roster_row, rows) if p is not None]
    if rows and not any(p.student or p.lms_id for p in people):
        raise ValueError(
            f"--roster {path}: no student column found; give Canvas's gradebook export, Moodle's "
            "grading worksheet, or a CSV with a 'student' or 'id' column"
        )
    return people


def roster_for(kind: str | None, path: str | None) -> list | None:
    """``--roster``'s students for ``--export kind``, or None without one; ValueError names the problem."""
    if path is None:
        return None
    if kind is None:
        raise ValueError("--roster goes with --export canvas|moodle")
    return read_roster(Path(path))


def _grade(row: dict | None) -> str:
    """``grades.csv``'s total, or empty: no submission, or one that was not graded."""
    if row is None or row.get("status") in NOT_GRADED:
        return ""
    return (row.get("total") or "").strip()


def _id_of_name(name: str) -> str | None:
    """The id a file named after ``name`` gives (``Anna Müller`` -> ``Anna_Müller``)."""
    return base_id(name) if name.strip() else None


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
        lms = lms_id_from_filename(file, notebook, assignment, kind) if file else None
        person = by_student.get(sid) or (by_lms.get(lms) if lms else None) or by_name.get(sid)
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


def _moodle_time(when: datetime) -> str:
    """Moodle's own date format (``userdate``), which its worksheet import reads with ``strtotime``."""
    return when.strftime("%A, %d %B %Y, %I:%M %p")


def _canvas_rows(pairs, column: str, max_points: str, problems: list):
    yield [*CANVAS_HEADER, column]
    yield ["Points Possible", "", "", "", "", max_points]
    for person, row in pairs:
        if not (person.lms_id or person.sis_user_id or person.sis_login_id):
            problems.append(f"{person.student or person.name}: no Canvas id; not exported")
            continue
        yield [person.name or person.student, person.lms_id, person.sis_user_id, person.sis_login_id,
               person.section, _grade(row)]


def _moodle_rows(pairs, max_points: str, when: datetime, problems: list):
    yield list(MOODLE_HEADER)
    for person, row in pairs:
        if not person.lms_id:
            problems.append(f"{person.student or person.name}: no Moodle participant id; not exported")
            continue
        submitted = (row or {}).get("timestamp") or ""
        yield [f"{MOODLE_PREFIX}{person.lms_id}", person.name or person.student, person.email,
               "Submitted for grading" if row is not None and row.get("status") != "missing" else "No submission",
               _grade(row), max_points, "Yes", submitted, _moodle_time(when), ""]


def write(
    kind: str,
    rows: list,
    roster: list | None,
    path: Path,
    *,
    notebook: str,
    assignment: str,
    max_points: float | None = None,
    column: str | None = None,
    when: datetime | None = None,
) -> list[str]:
    """Write the ``kind`` (``canvas`` or ``moodle``) import file of ``rows`` (``grades.csv``'s rows)
    for everyone on ``roster`` (a list of :class:`Person`, or None) to ``path``.

    Returns the problems (students that could not be exported, and why), for the instructor.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(rows, list):
        raise TypeError(f"rows must be a list of grades.csv rows, got {type(rows).__name__}")
    if max_points is None:
        max_points = float(rows[0]["total_max"]) if rows and rows[0].get("total_max") else None
    if max_points is None:
        raise ValueError("max_points is needed when rows give no total_max")
    pairs, problems = match(rows, list(roster or []), notebook, assignment, kind)
    points = f"{float(max_points):g}"
    if kind == "canvas":
        out = _canvas_rows(pairs, column or assignment, points, problems)
    else:
        out = _moodle_rows(pairs, points, when or datetime.now().astimezone(), problems)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        for line in out:
            w.writerow([csv_cell(x) for x in line])
    return problems


def write_for_class(kind: str, out: Path, roster: list | None, *, notebook: str, assignment: str) -> tuple[Path, list]:
    """The grading command's step: ``out/<kind>.csv`` from ``out/grades.csv``; returns its path
    and the problems (students not exported, and why)."""
    path = Path(out) / f"{kind}.csv"
    problems = write(kind, read_grades(Path(out) / "grades.csv"), roster, path, notebook=notebook,
                     assignment=assignment)
    return path, problems


def class_step(kind: str, out: Path, roster: list | None, spec, say=print) -> Path | None:
    """The grading command's export step (``--export``), after ``grades.csv`` is written."""
    try:
        path, problems = write_for_class(kind, out, roster, notebook=spec.notebook, assignment=spec.name)
    except OSError as exc:
        print(f"attngrade: --export {kind}: not written ({exc}); grades.csv is", file=sys.stderr)
        return None
    say(f"{kind} import file: {path}")
    for problem in problems:
        print(f"attngrade: --export {kind}: {problem}", file=sys.stderr)
    return path
