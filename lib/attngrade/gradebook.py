"""Writing results into nbgrader's gradebook, through :class:`nbgrader.api.Gradebook`.

The gradebook is whatever SQLAlchemy URL nbgrader is given (SQLite by default, PostgreSQL on a
JupyterHub); the rows written are nbgrader's own (``submitted_assignment``,
``submitted_notebook``, ``grade``, ``comment``), so ``nbgrader formgrader`` shows the autograded
scores and the written answers waiting for manual grading, exactly as after ``nbgrader
autograde``. All writes happen in the main process, one transaction per student.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import nbformat

from .grader import AssignmentSpec, CourseConfig, Result
from .names import shown
from .notebooks import cell_grade_id

__all__ = [
    "open_gradebook",
    "ensure_assignment",
    "write_result",
    "write_autograded_notebook",
    "database_url",
    "has_submission",
    "manual_scores",
    "name_students",
    "split_name",
    "submitted_folder",
    "write_submitted_copy",
]


def database_url(url: str) -> str:
    """``url`` with an installed PostgreSQL driver named when it names none.

    SQLAlchemy 2.1 reads ``postgresql://`` as psycopg 3; the course pins ``psycopg2-binary``, so
    a bare ``postgresql://`` URL becomes ``postgresql+psycopg2://`` when only psycopg2 is there.
    """
    for bare in ("postgresql://", "postgres://"):
        if url.startswith(bare):
            import importlib.util

            if (
                importlib.util.find_spec("psycopg") is None
                and importlib.util.find_spec("psycopg2") is not None
            ):
                return "postgresql+psycopg2://" + url[len(bare) :]
            return "postgresql://" + url[len(bare) :]
    return url


def open_gradebook(db_url: str, course_id: str):
    from nbgrader.api import Gradebook

    return Gradebook(database_url(db_url), course_id=course_id)


def _structure_matches(gb, spec: AssignmentSpec) -> bool:
    from nbgrader.api import MissingEntry

    try:
        notebook = gb.find_notebook(spec.notebook, spec.name)
    except MissingEntry:
        return False
    expected = {}
    for cell in spec.release.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") or meta.get("task"):
            expected[cell_grade_id(cell)] = float(meta.get("points", 0))
    have = {c.name: float(c.max_score) for c in list(notebook.grade_cells) + list(notebook.task_cells)}
    solutions = {c.name for c in notebook.solution_cells}
    want_solutions = {
        cell_grade_id(c) for c in spec.release.cells if c.metadata.get("nbgrader", {}).get("solution")
    }
    return have == expected and solutions == want_solutions


@contextlib.contextmanager
def _recording_alone(db_url: str, assignment: str) -> Iterator[None]:
    """Hold a PostgreSQL advisory lock for ``assignment`` while the block runs (nothing for
    another database). Hosts that grade one class into one PostgreSQL gradebook (``--shard``)
    start at once; nbgrader's ``SaveCells`` deletes and re-creates a notebook's record, so two
    hosts recording the assignment together broke each other's (a foreign-key violation)."""
    url = database_url(db_url)
    if not url.startswith(("postgresql", "postgres")):
        yield
        return
    import sqlalchemy

    digest = hashlib.sha256(f"attngrade {url} {assignment}".encode()).digest()
    key = int.from_bytes(digest[:8], "big", signed=True)  # the lock's id: a signed 64-bit integer
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:key)"), {"key": key})
            try:
                yield
            finally:
                conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:key)"), {"key": key})
    finally:
        engine.dispose()


def ensure_assignment(db_url: str, course: CourseConfig, spec: AssignmentSpec, gb=None) -> str:
    """Make sure the gradebook knows the assignment's notebook and cells (as ``generate_assignment`` does).

    When they are missing (a fresh database) nbgrader's own preprocessors record them from the
    source notebook, one grading host at a time (``_recording_alone``). Returns what was done.
    """
    if gb is not None and _structure_matches(gb, spec):  # an open gradebook: no second connection
        return "assignment already in the gradebook"
    with _recording_alone(db_url, spec.name):
        return _record_assignment(db_url, course, spec)


def _record_assignment(db_url: str, course: CourseConfig, spec: AssignmentSpec) -> str:
    with open_gradebook(db_url, course.course_id) as new:
        if _structure_matches(new, spec):
            return "assignment already in the gradebook"
        new.update_or_create_assignment(spec.name)
    from nbgrader.preprocessors import (
        CheckCellMetadata,
        ClearOutput,
        ClearSolutions,
        ComputeChecksums,
        LockCells,
        SaveCells,
    )

    source = nbformat.read(str(spec.source_path), as_version=4)
    if "AUTOTEST" in json.dumps(source):
        raise RuntimeError(
            "notebooks with AUTOTEST cells must be registered with `nbgrader generate_assignment`"
        )
    resources = {
        "nbgrader": {"notebook": spec.notebook, "assignment": spec.name, "db_url": database_url(db_url)}
    }
    config = course.config
    for pp_class in (LockCells, ClearSolutions, ClearOutput, CheckCellMetadata, ComputeChecksums, SaveCells):
        pp = pp_class(config=config) if config is not None else pp_class()
        source, resources = pp.preprocess(source, resources)
    with open_gradebook(db_url, course.course_id) as gb:
        if not _structure_matches(gb, spec):
            raise RuntimeError(
                f"the gradebook's record of {spec.name} does not match the release; "
                "run `nbgrader generate_assignment` for it"
            )
    return "assignment recorded in the gradebook"


def _parse_time(text: str | None):
    if not text:
        return None
    from nbgrader.utils import parse_utc

    try:
        return parse_utc(text)
    except Exception:  # noqa: BLE001
        return None


def write_result(gb, spec: AssignmentSpec, result: Result, *, late_penalty: float | None = None,
                 deadline=None) -> None:
    """Record one student's grades in one transaction (rolled back on any error).

    ``late_penalty`` (points) goes into nbgrader's ``late_submission_penalty``, ``deadline``
    (a UTC datetime) into the assignment's due date, so formgrader shows both.
    """
    db = gb.db
    try:
        notebook, sub_nb = _submission_notebook(gb, spec, result, deadline)
        cells = _encodable(result.notebook.cells) if result.notebook is not None else []
        rebuilt = {cell_grade_id(c): c for c in cells}
        _set_grades(db, notebook, sub_nb, result, rebuilt)
        _set_comments(db, notebook, sub_nb, rebuilt)
        sub_nb.flagged = result.status != "graded"
        sub_nb.late_submission_penalty = late_penalty if late_penalty else None
        db.commit()
    except Exception:
        db.rollback()
        raise


def _encodable(value):
    """``value`` with every unpaired surrogate (a broken paste) replaced, so that it can be
    stored and checksummed as UTF-8; dicts keep their type (nbformat's nodes included)."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8") if _has_surrogate(value) else value
    if isinstance(value, dict):
        return type(value)({k: _encodable(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_encodable(v) for v in value]
    return value


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def _submission_notebook(gb, spec: AssignmentSpec, result: Result, deadline):
    """The release's notebook row and the student's submitted notebook row (made when new)."""
    from nbgrader.api import Student, SubmittedAssignment, SubmittedNotebook

    db = gb.db
    assignment = gb.find_assignment(spec.name)
    student = db.get(Student, result.student)
    if student is None:
        student = Student(id=result.student)
        db.add(student)
    submission = (
        db.query(SubmittedAssignment)
        .filter(
            SubmittedAssignment.assignment_id == assignment.id,
            SubmittedAssignment.student_id == result.student,
        )
        .one_or_none()
    )
    if submission is None:
        submission = SubmittedAssignment(assignment=assignment, student=student)
        db.add(submission)
    timestamp = _parse_time(result.timestamp)
    if timestamp is not None:
        submission.timestamp = timestamp
    if deadline is not None:
        assignment.duedate = deadline.replace(tzinfo=None)
    notebook = next(n for n in assignment.notebooks if n.name == spec.notebook)
    sub_nb = next((n for n in submission.notebooks if n.notebook_id == notebook.id), None)
    if sub_nb is None:
        sub_nb = SubmittedNotebook(notebook=notebook, assignment=submission)
        db.add(sub_nb)
    return notebook, sub_nb


def _rows(db, sub_nb, rows, cells: list, make) -> dict:
    """The submitted notebook's rows (grades or comments) by cell id, made where missing."""
    by_id = {r.cell_id: r for r in rows}
    for cell in cells:
        if cell.id not in by_id:
            by_id[cell.id] = make(cell_id=cell.id, notebook=sub_nb)
            db.add(by_id[cell.id])
    return by_id


def _set_grades(db, notebook, sub_nb, result: Result, rebuilt: dict) -> None:
    from nbgrader.api import Grade
    from nbgrader.utils import determine_grade

    grades = _rows(db, sub_nb, sub_nb.grades, list(notebook.grade_cells) + list(notebook.task_cells), Grade)
    by_name = {c.name: c.id for c in list(notebook.grade_cells) + list(notebook.task_cells)}
    for name, cell_id in by_name.items():
        grade = grades[cell_id]
        if name in result.parts:
            grade.auto_score = float(result.parts[name].score)
        elif result.notebook is None:
            grade.auto_score = 0.0  # nothing readable was submitted: nothing to grade by hand
        elif name in rebuilt:
            cell = rebuilt[name]
            grade.auto_score = determine_grade(cell)[0] if cell.metadata.nbgrader.get("grade") else None
        else:
            grade.auto_score = None
        grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None


def _set_comments(db, notebook, sub_nb, rebuilt: dict) -> None:
    from nbgrader.api import Comment
    from nbgrader.utils import compute_checksum

    cells = list(notebook.solution_cells) + list(notebook.task_cells)
    comments = _rows(db, sub_nb, sub_nb.comments, cells, Comment)
    sol_names = {c.id: c.name for c in list(notebook.solution_cells) + list(notebook.task_cells)}
    for cell_id, name in sol_names.items():
        cell = rebuilt.get(name)
        unanswered = cell is None or (
            cell.metadata.nbgrader.get("checksum") == compute_checksum(cell)
            and not cell.metadata.nbgrader.get("task")
        )
        comments[cell_id].auto_comment = "No response." if unanswered else None


def has_submission(gb, spec: AssignmentSpec, student: str) -> bool:
    """Whether the gradebook holds ``student``'s notebook of ``spec`` (a re-grade may skip it)."""
    from nbgrader.api import MissingEntry

    try:
        gb.find_submission_notebook(spec.notebook, spec.name, student)
        return True
    except MissingEntry:
        return False


def manual_scores(gb, spec: AssignmentSpec, students) -> dict:
    """Per student, from the gradebook: ``manual`` (points given by hand, on any cell),
    ``pending`` (points of cells that still need a manual grade) and ``total`` (nbgrader's score:
    the manual score of a cell where there is one, else its autograded score)."""
    from nbgrader.api import MissingEntry

    gb.db.expire_all()
    table = {}
    for student in students:
        try:
            nb = gb.find_submission_notebook(spec.notebook, spec.name, student)
        except MissingEntry:
            continue
        manual = sum(g.manual_score for g in nb.grades if g.manual_score is not None)
        pending = sum(g.max_score for g in nb.grades if g.needs_manual_grade)
        total = sum(g.score or 0.0 for g in nb.grades)
        table[student] = {"manual": float(manual), "pending": float(pending), "total": float(total)}
    return table


def write_autograded_notebook(folder: Path, spec: AssignmentSpec, result: Result) -> Path | None:
    """The rebuilt notebook where formgrader looks for it: ``<autograded>/<student>/<assignment>/``."""
    if result.notebook is None:
        return None
    target = folder / result.student / spec.name
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"{spec.notebook}.ipynb"
    # Unpaired surrogates (a broken paste) stay JSON escapes: the file is valid UTF-8 JSON.
    path.write_bytes(nbformat.writes(result.notebook).encode("utf-8", "backslashreplace"))
    if result.timestamp:
        (target / "timestamp.txt").write_text(result.timestamp, encoding="utf-8")
    return path


def submitted_folder(course: CourseConfig, autograded: Path) -> Path:
    """Where formgrader looks for what was handed in: the course's ``submitted/`` when the rebuilt
    notebooks go to the course's ``autograded/``, else a ``submitted/`` beside ``autograded``."""
    if Path(autograded).resolve() != Path(course.autograded).resolve():
        return Path(autograded).parent / "submitted"
    cd = course.config.CourseDirectory if course.config is not None else {}
    return course.root / (cd["submitted_directory"] if "submitted_directory" in cd else "submitted")


def write_submitted_copy(folder: Path, spec: AssignmentSpec, result: Result, source: Path | None) -> Path | None:
    """The student's notebook, as handed in, where formgrader counts submissions:
    ``<submitted>/<student>/<assignment>/<notebook>.ipynb`` with ``timestamp.txt`` (as ``nbgrader
    zip_collect`` leaves them). Formgrader's "# Submissions" counts these folders, and it takes a
    submission for autograded only when this ``timestamp.txt`` reads as the gradebook's time
    (``NbGraderAPI.get_autograded_students``). Nothing when no file was handed in or the file is
    already there (the submissions are the course's own ``submitted/``)."""
    if source is None or not Path(source).is_file():
        return None
    target = folder / result.student / spec.name
    path = target / f"{spec.notebook}.ipynb"
    if path.exists() and path.resolve() == Path(source).resolve():
        return path
    target.mkdir(parents=True, exist_ok=True)
    path.write_bytes(Path(source).read_bytes())
    stamp = target / "timestamp.txt"
    if result.timestamp:
        stamp.write_text(result.timestamp, encoding="utf-8")
    elif stamp.exists():
        stamp.unlink()
    return path


def split_name(name: str) -> tuple[str, str] | None:
    """``(first, last)`` of a person's name: ``Nguyen, Minh`` (an LMS's sortable name) or ``Minh
    Nguyen``; None for a name of one word (an id, a login), which formgrader then shows as it is."""
    name = " ".join(name.split())
    if "," in name:
        last, _, first = name.partition(",")
        return (first.strip(), last.strip()) if first.strip() and last.strip() else None
    first, _, last = name.rpartition(" ")
    return (first, last) if first and last else None


def name_students(gb, people: dict) -> int:
    """Give formgrader the students' names: ``people`` maps a student id to an object with
    ``name``, ``email`` and ``lms_id`` (:class:`attngrade.export.Person`). Only empty fields of
    students already in the gradebook are filled (a name set in formgrader stays). Returns how
    many students changed."""
    from nbgrader.api import Student

    changed = 0
    for student_id, person in people.items():
        row = gb.db.get(Student, student_id)
        if row is None:
            continue
        names = split_name(person.name or "")
        fields = {"first_name": names[0] if names else None, "last_name": names[1] if names else None,
                  "email": person.email or None, "lms_user_id": person.lms_id or None}
        # a name that is not UTF-8 (a Windows zip's) is written as it is shown: with \xNN escapes
        new = {k: shown(v)[:128] for k, v in fields.items() if v and not getattr(row, k)}
        for key, value in new.items():
            setattr(row, key, value)
        changed += bool(new)
    gb.db.commit()
    return changed
