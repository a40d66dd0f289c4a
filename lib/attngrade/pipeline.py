"""The orchestrator: discover → read → run → check → record → report, for one class.

Each stage is a module with typed inputs and outputs: :mod:`attngrade.submissions` (discover:
``Submission``), :mod:`attngrade.reading` (read: ``Prepared``), :mod:`attngrade.running` (run:
``Plan`` → ``Computed``), :mod:`attngrade.checking` (check: ``Result``), :mod:`attngrade.record`
(record: ``Recorded``) and :mod:`attngrade.report` (the class reports). The fault boundary of
one student is :func:`_one`: whatever a submission does, it ends as that student's row with a
status that names the reason, and the class finishes. Instructor errors (a path that does not
exist, an unknown assignment, a folder of another assignment) stop the run before anything is
written (:class:`InstructorError`).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path

#: The grader never checks IRIs, yet jsonschema (which nbformat imports) builds a grammar for them
#: when ``rfc3987_syntax`` is installed: seconds of every run's start, before anyone is graded.
#: Marked absent here, in the grader's process only (never in a worker), before nbformat loads.
sys.modules.setdefault("rfc3987_syntax", None)

from . import export, returning, sandbox, similarity  # noqa: E402 - after the line above
from .grader import ConfigError, grade_submission, grader_failure, load_assignment, load_course, student_spec
from .late import assign_deadlines, course_zone, load_policy
from .reveal import reveal_policy
from .lms import read_times, unsubmitted
from .names import distinct_ids, shown
from .reading import SubmissionError, read_notebook
from .record import Recorded, Recorder, record
from .regrade import fingerprint, load_state
from .report import copy_mathjax, csv_row, summary_row, write_csv, write_summary
from .sandbox import Limits, detect_isolation
from .submissions import Submission, discover_class, other_assignment

__all__ = ["Options", "InstructorError", "grade_class", "shard_of"]


@dataclass
class Options:
    """What the ``attngrade`` command was asked to do (see ``attngrade --help``)."""

    assignment: str
    submissions: str
    out: Path
    jobs: int = 1
    db: str | None = None
    course: str | None = None
    limits: Limits = field(default_factory=Limits)
    isolation: str = "auto"
    autograded_dir: str | None = None
    shard: str | None = None
    force: bool = False
    no_gradebook: bool = False
    say: Callable = print
    similarity: bool | None = None  # None: on for a class of 3 or more (attngrade.similarity)
    export: str | None = None  # "canvas" or "moodle" (attngrade.export)
    roster: str | None = None  # the LMS's students for export: a CSV (attngrade.export.read_roster)
    column: str | None = None  # --export canvas: the gradebook column (attngrade.export.canvas_column)
    points: float | None = None  # --export: the points the LMS records (attngrade.export.lms_points)
    return_to: str | None = None  # --return: the LMS the feedback pages go back through (attngrade.returning)
    timezone: str | None = None  # --timezone: the course's zone (attngrade.late.course_zone)
    submission_times: str | None = None  # --submission-times: an LMS's CSV of times (attngrade.lms.read_times)
    deadlines: str | None = None  # --deadlines: everyone's and per-student deadlines (attngrade.late)


class InstructorError(Exception):
    """Nothing can be graded as asked; ``code`` is the exit status."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


@dataclass
class Batch:
    """One class ready to grade: what discovery and the read stage found, and where it goes."""

    opts: Options
    course: object
    spec: object
    policy: object
    isolation: object
    hidden: list
    tmp_root: str
    db_url: str
    subs: list
    prepared: dict  # student -> attngrade.reading.Prepared, None, or the grader's own exception
    everyone: int
    shard: tuple | None = None
    roster: list | None = None  # --roster's students (attngrade.export.Person)
    warnings: list = field(default_factory=list)  # what discovery says the instructor must read


def grade_class(opts: Options) -> int:
    """Grade one class; the exit status (0, 1 when gradebook writes failed, 2 instructor error)."""
    tmp_root = tempfile.mkdtemp(prefix="attngrade-run-")
    os.chmod(tmp_root, 0o711)
    try:
        return _grade_class(opts, tmp_root)
    except InstructorError as exc:
        print(f"attngrade: {exc}", file=sys.stderr)
        return exc.code
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)


def _grade_class(opts: Options, tmp_root: str) -> int:
    started = time.monotonic()
    sandbox.ABORT.clear()
    batch = _prepare(opts, tmp_root)
    try:
        rec = _recorder(batch)
        try:
            kept, todo = _unchanged(batch, rec)
            recorded = _grade_all(batch, rec, kept, todo)
            _name_students(batch, rec)
        finally:
            if rec.gb is not None:
                rec.gb.close()
    finally:
        batch.isolation.close()  # its worker template, if it has one
    return _report(batch, rec, recorded, time.monotonic() - started, len(todo), len(kept))


def _assignments(course) -> list[str]:
    """The assignments that can be graded: a released notebook and hidden tests."""
    if not course.release.is_dir():
        return []
    return sorted(
        p.name
        for p in course.release.iterdir()
        if p.is_dir() and any(p.glob("*.ipynb")) and (course.source / p.name / "hidden_tests.py").is_file()
    )


def _shard(text: str | None) -> tuple[int, int] | None:
    """``--shard``: I/N, or auto from a Kubernetes Indexed Job or a Slurm array (attngrade.shards)."""
    from .shards import parse_shard, unused

    note = unused(os.environ) if text is None else None
    if note:
        print(f"attngrade: warning: {note}", file=sys.stderr)
    return parse_shard(text, os.environ)


def shard_of(student: str, n: int) -> int:
    """The share (1..n) a student belongs to: a stable hash of the id, the same on every host."""
    return int(hashlib.sha256(student.encode("utf-8")).hexdigest(), 16) % n + 1


def _course(opts: Options):
    try:
        course = load_course(opts.course)
    except ConfigError as exc:
        raise InstructorError(f"{exc}; run attngrade in the course folder or give --course") from exc
    valid = _assignments(course)
    if opts.assignment not in valid:
        raise InstructorError(
            f"unknown assignment {opts.assignment!r}; the course at {course.root} has: "
            + (", ".join(valid) or "none (run `make exercises` to release them)")
        )
    try:
        zone = course_zone(course.config, opts.timezone)
        policy, deadlines = load_policy(course.config, opts.assignment, deadlines=opts.deadlines, zone=zone)
        reveal_policy(course.config, opts.assignment)  # a setting that cannot be read stops here, not per page
        return course, _shard(opts.shard), policy, (zone, deadlines)
    except ValueError as exc:
        raise InstructorError(str(exc)) from exc


def _hidden(opts: Options, course, db_url: str) -> list[str]:
    """Paths the worker must not see (its probe checks them; the Python installation may live
    inside the course, as .venv/, and stays visible)."""
    hidden = [
        str(course.root / "nbgrader_config.py"), str(course.source), str(course.release),
        str(Path(opts.submissions).resolve()), str(opts.out),
    ]
    if db_url.startswith("sqlite:///"):
        hidden.append(str(Path(db_url[len("sqlite:///"):]).resolve()))
    return hidden


def _prepare(opts: Options, tmp_root: str) -> Batch:
    """Discover and read the class while the isolation probe (a worker process) runs."""
    try:
        returning.check_kind(opts.return_to)
        roster = export.roster_for(opts.export or opts.return_to, opts.roster)
    except ValueError as exc:
        raise InstructorError(str(exc)) from exc
    course, shard, policy, timing = _course(opts)
    db_url = opts.db or course.db_url
    hidden = _hidden(opts, course, db_url)
    with ThreadPoolExecutor(max_workers=1) as one:
        probe = one.submit(
            detect_isolation, opts.isolation, jobs=opts.jobs, limits=opts.limits, hidden=hidden, tmp_root=tmp_root
        )
        error, batch = None, None
        try:
            spec = load_assignment(course, opts.assignment)
            export.check_options(opts.export, roster, assignment=spec.name, notebook=spec.notebook,
                                 points=opts.points, column=opts.column)
            subs, warnings = _discover(opts, course, spec, tmp_root, timing)
            everyone = len(subs)
            if shard is not None:
                subs = [s for s in subs if shard_of(s.student, shard[1]) == shard[0]]
            prepared = _read_all(spec, subs, opts.jobs)
            error = _other_assignments(opts, course, spec, subs, prepared)
            batch = Batch(opts, course, spec, policy, None, hidden, tmp_root, db_url, subs, prepared, everyone, shard)
        except (ConfigError, ValueError, OSError) as exc:
            error = str(exc)
        finally:
            try:
                isolation = probe.result()
            except RuntimeError as exc:
                isolation = exc
    if error:
        raise InstructorError(error)
    if isinstance(isolation, RuntimeError):
        raise InstructorError(str(isolation), 1)
    batch.isolation = isolation
    batch.roster = roster
    batch.warnings = warnings
    return batch


def _discover(opts: Options, course, spec, tmp_root: str, timing: tuple) -> tuple[list, list]:
    """The class's submissions (:func:`attngrade.submissions.discover_class`), their own deadlines
    (``--deadlines``), and the warnings the instructor must read (printed, and kept for the summary)."""
    zone, deadlines = timing
    times = read_times(opts.submission_times, zone) if opts.submission_times else None
    found = discover_class(opts.submissions, spec.name, spec.notebook, workdir=tmp_root, zone=zone, times=times,
                           assignments=_assignments(course))
    found.subs += _unsubmitted(times, found.subs, found.warnings)
    warnings = [shown(w) for w in found.warnings + assign_deadlines(found.subs, deadlines)]
    for warning in warnings:
        print(f"attngrade: warning: {warning}", file=sys.stderr)
    return found.subs, warnings


def _unsubmitted(times, subs: list, warnings: list) -> list[Submission]:
    """A ``missing`` row for each student the LMS's worksheet lists and the download does not
    hold (:func:`attngrade.lms.unsubmitted`), with an id no other row has."""
    rows = unsubmitted(times, subs)
    taken = {("taken", s.student): s.student for s in subs}
    ids = distinct_ids({**taken, **{("moodle", pid): label for label, _, pid, _ in rows}})
    if rows:
        named = ", ".join(ids[("moodle", r[2])] for r in rows[:10]) + (", ..." if len(rows) > 10 else "")
        warnings.append(f"--submission-times {shown(times.path)}: {len(rows)} student(s) it lists have "
                        f"nothing in the download; each has a missing row ({named})")
    return [Submission(ids[("moodle", pid)], None, "moodle", problem=("missing", why), name=name,
                       lms="moodle", lms_id=pid) for _, name, pid, why in rows]


def _read_one(spec, sub: Submission):
    """The read stage for one student: a ``Prepared``, None (the problem is on ``sub``), or the
    grader's own exception (that student's ``crashed``, never the class's)."""
    if sub.problem is not None or sub.path is None:
        return None
    try:
        return read_notebook(sub.path, reference=spec.reference, module_names=spec.module_names)
    except SubmissionError as exc:
        sub.problem = (exc.status, str(exc))
        return None
    except Exception as exc:  # noqa: BLE001
        return exc


def _read_all(spec, subs: list, jobs: int) -> dict:
    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="attngrade-read") as pool:
        return dict(zip([s.student for s in subs], pool.map(lambda s: _read_one(spec, s), subs)))


def _release_ids(course, names) -> dict[str, set]:
    from .notebooks import cell_grade_id

    ids = {}
    for name in names:
        for nb_path in sorted((course.release / name).glob("*.ipynb")):
            try:
                nb = json.loads(nb_path.read_text(encoding="utf-8"))
                ids[name] = {g for g in map(cell_grade_id, nb["cells"]) if g}
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return ids


def _other_assignments(opts: Options, course, spec, subs: list, prepared: dict) -> str | None:
    """An instructor error when most notebooks are another assignment's; else None, and a
    stray notebook of another assignment is its student's ``malformed``."""
    ids = _release_ids(course, _assignments(course))
    readable = [s for s in subs if s.problem is None and hasattr(prepared.get(s.student), "grade_ids")]
    others = {}
    for sub in readable:
        other = other_assignment(prepared[sub.student].grade_ids(), spec.name, ids)
        if other is not None:
            others[sub.student] = other
    if readable and len(others) * 2 > len(readable):
        names = sorted(set(others.values()))
        return (
            f"{len(others)} of the {len(readable)} notebooks in {opts.submissions} are notebooks of "
            f"{', '.join(names)}, not of {spec.name}; nothing was graded or written. "
            f"Grade them as their assignment (attngrade {names[0]} {opts.submissions}) "
            f"or check the folder."
        )
    for sub in readable:
        if sub.student in others:
            sub.problem = ("malformed", f"a notebook of {others[sub.student]}, not of {spec.name}")
    return None


def _recorder(batch: Batch) -> Recorder:
    opts, spec = batch.opts, batch.spec
    opts.out.mkdir(parents=True, exist_ok=True)
    if opts.autograded_dir:
        autograded = Path(opts.autograded_dir).resolve()
    elif opts.no_gradebook:
        autograded = opts.out / "autograded"
    else:
        autograded = batch.course.autograded  # where formgrader looks, whatever the gradebook
    rec = Recorder(spec, opts.out, autograded, batch.policy)
    share = f" (share {batch.shard[0]}/{batch.shard[1]} of {batch.everyone})" if batch.shard else ""
    opts.say(
        f"attngrade: {spec.name} ({spec.notebook}.ipynb, {len(spec.parts)} autograded parts, "
        f"{spec.max_auto:g} points), {len(batch.subs)} submissions{share}, {opts.jobs} jobs, "
        f"isolation {batch.isolation.mode}"
    )
    if not opts.no_gradebook:
        from .gradebook import submitted_folder

        rec.gb = _open_gradebook(batch)
        folder, given = submitted_folder(batch.course, autograded).resolve(), Path(opts.submissions).resolve()
        if not (folder == given or folder in given.parents or given in folder.parents):
            rec.submitted = folder  # else formgrader already counts the submissions where they are
    return rec


def _name_students(batch: Batch, rec: Recorder) -> None:
    """Formgrader's names of the students: the roster's, else the submissions' own."""
    if rec.gb is None:
        return
    from .gradebook import name_students

    students = [(s.student, s.source, s.name) for s in batch.subs]
    people = export.people_of(students, batch.roster, notebook=batch.spec.notebook, assignment=batch.spec.name)
    with rec.lock:
        try:
            name_students(rec.gb, people)
        except Exception as exc:  # noqa: BLE001 - the grades are in; formgrader shows ids
            rec.gb.db.rollback()
            rec.gb_errors.setdefault("(student names)", f"{type(exc).__name__}: {exc}"[:500])


def _open_gradebook(batch: Batch):
    from .gradebook import ensure_assignment, open_gradebook

    url = batch.db_url
    try:
        gb = _retry(lambda: open_gradebook(url, batch.course.course_id))
        what = _retry(lambda: ensure_assignment(url, batch.course, batch.spec, gb))
        gb.db.commit()  # end the read transaction: what ensure_assignment wrote becomes visible
        gb.db.expire_all()
    except Exception as exc:  # noqa: BLE001
        raise InstructorError(f"cannot use the gradebook {url.split('@')[-1]}: {exc}", 1) from exc
    batch.opts.say(f"gradebook: {url.split('@')[-1]} ({what})")
    return gb


def _retry(action, tries: int = 6):
    """``action()``, again after a pause when another grading host changed the gradebook at once."""
    import random

    for attempt in range(tries):
        try:
            return action()
        except Exception as exc:  # noqa: BLE001
            text = type(exc).__name__ + " " + str(exc)[:300]
            racing = any(w in text for w in ("Integrity", "UniqueViolation", "already exists"))
            if attempt == tries - 1 or not racing:
                raise
            time.sleep(0.5 + random.random())


def _unchanged(batch: Batch, rec: Recorder) -> tuple[list, list]:
    """Re-grade only what changed: the same fingerprint, a kept result, and the gradebook's row."""
    from .gradebook import has_submission

    kept, todo = [], []
    for s in batch.subs:
        prepared = batch.prepared.get(s.student)
        notebook = getattr(prepared, "notebook", None)
        rec.keys[s.student] = fingerprint(batch.spec, s, limits=batch.opts.limits, policy=batch.policy, notebook=notebook)
        old = None if batch.opts.force else load_state(rec.out, s.student, rec.keys[s.student])
        if old is not None and (rec.gb is None or has_submission(rec.gb, batch.spec, s.student)):
            kept.append((old, s))
        else:
            todo.append(s)
    if kept:
        batch.opts.say(f"unchanged since the last run, not graded again: {len(kept)} (use --force to grade them)")
    return kept, todo


def _one(batch: Batch, rec: Recorder, sub: Submission, slots: queue.Queue) -> Recorded:
    """One student's fault boundary: grade and record; any failure is this student's row."""
    started = time.monotonic()
    slot = slots.get()
    try:
        prepared = batch.prepared.pop(sub.student, None)  # not held after this student is graded
        spec = student_spec(batch.spec, sub.student)  # the cases of the student's variant, if any
        if isinstance(prepared, BaseException):
            res = grader_failure(spec, sub, prepared, started)
        else:
            res = grade_submission(
                spec, sub, batch.isolation, batch.opts.limits, slot=slot, hidden=batch.hidden,
                tmp_root=batch.tmp_root, prepared=prepared,
            )
        return record(rec if spec is batch.spec else replace(rec, spec=spec), res, sub)
    except Exception as exc:  # noqa: BLE001 - the grader's own failure: this student's row says so
        res = grader_failure(batch.spec, sub, exc, started)
        try:
            return record(rec, res, sub)
        except Exception:  # noqa: BLE001
            return Recorded(res, csv_row(batch.spec, res), summary_row(batch.spec, res))
    finally:
        slots.put(slot)


def _grade_all(batch: Batch, rec: Recorder, kept: list, todo: list) -> list[Recorded]:
    """Every student through :func:`_one`, ``jobs`` at a time, with one progress line each."""
    recorded = [record(rec, old, s, graded_now=False) for old, s in kept]
    slots: queue.Queue = queue.Queue()
    for i in range(max(1, batch.opts.jobs)):
        slots.put(i)
    copy_mathjax(rec.out / "feedback")  # the book's MathJax, once per batch: feedback renders maths offline
    width, total = len(str(len(todo))), batch.spec.max_auto
    pool = ThreadPoolExecutor(max_workers=max(1, batch.opts.jobs), thread_name_prefix="attngrade")
    futures = [pool.submit(_one, batch, rec, s, slots) for s in todo]
    try:
        for i, fut in enumerate(as_completed(futures), 1):
            done = fut.result()
            recorded.append(done)
            res = done.result
            extra = f"  {shown(res.reason[:100])}" if res.reason else ""
            batch.opts.say(
                f"[{i:>{width}}/{len(todo)}] {res.student:<28} {res.status:<14} "
                f"{res.score:>4g}/{total:g}  {res.seconds:6.2f}s{extra}"
            )
    except KeyboardInterrupt:
        sandbox.ABORT.set()
        pool.shutdown(wait=True, cancel_futures=True)
        raise InstructorError("interrupted; the grades so far are in the gradebook, no report was written", 130)
    finally:
        pool.shutdown(wait=True)
    return recorded


def _isolation_info(isolation, limits: Limits) -> dict:
    return {
        "mode": isolation.mode,
        **isolation.enforced,
        "fallbacks": isolation.notes,
        "limits": {
            "timeout_s": limits.timeout, "memory_mb": limits.memory_mb, "output_bytes": limits.output_bytes,
            "nproc": limits.nproc, "fsize_mb": limits.fsize_mb, "nofile": limits.nofile, "tmp_mb": limits.tmp_mb,
        },
    }


def _report(batch: Batch, rec: Recorder, recorded: list, seconds: float, graded: int, unchanged: int) -> int:
    """The class reports, after every student's own outputs; the exit status."""
    opts, spec = batch.opts, batch.spec
    recorded.sort(key=lambda r: r.result.student)
    results = [r.result for r in recorded]
    write_csv(opts.out / "grades.csv", spec, [r.csv_row for r in recorded])
    share = f"share {batch.shard[0]}/{batch.shard[1]} of {batch.everyone}" if batch.shard else ""
    html_path, json_path = write_summary(
        opts.out, spec, results, [r.summary_row for r in recorded],
        isolation=_isolation_info(batch.isolation, opts.limits), seconds=seconds, jobs=opts.jobs,
        db_url=batch.db_url if rec.gb is not None else "(not written)", gradebook_errors=rec.gb_errors,
        regraded=graded, shard=share, policy=batch.policy, warnings=batch.warnings,
    )
    similarity.class_step(opts.out, spec, results, batch.prepared, everyone=batch.everyone, shard=batch.shard,
                          enabled=opts.similarity, say=opts.say)
    if opts.export:
        export.class_step(opts.export, opts.out, batch.roster, spec, say=opts.say, points=opts.points,
                          column=opts.column)
    if opts.return_to:
        returning.class_step(opts.return_to, opts.out, batch.roster, spec, say=opts.say)
    counts: dict = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    opts.say(
        f"done: {graded} graded, {unchanged} unchanged, in {seconds:.1f} s; "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    )
    opts.say(f"grades: {opts.out / 'grades.csv'}\nsummary: {html_path}\nfeedback: {opts.out / 'feedback'}")
    if rec.autograded != opts.out / "autograded":
        opts.say(f"rebuilt notebooks (formgrader): {rec.autograded}")
    if rec.gb_errors:
        print(f"attngrade: {len(rec.gb_errors)} gradebook writes failed; see {json_path}", file=sys.stderr)
        return 1
    return 0
