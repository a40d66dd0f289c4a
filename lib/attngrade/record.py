"""The record stage: one student's outputs, written inside that student's fault boundary.

:func:`record` writes the gradebook row, the rebuilt notebook for formgrader, the feedback page,
the log and the re-grade state of one result, and returns the student's row of ``grades.csv``
and entry of ``summary.json`` (:class:`Recorded`), so that the class reports written after
everyone (:mod:`attngrade.report`) only put rows together. A failure to write one output is
noted on that student's result; it never stops the class.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from .grader import AssignmentSpec, Result
from .regrade import save_state
from .report import csv_row, summary_row, write_feedback, write_log
from .submissions import Submission

__all__ = ["Recorder", "Recorded", "attach", "record"]


@dataclass
class Recorder:
    """Where one batch's per-student outputs go."""

    spec: AssignmentSpec
    out: Path
    autograded: Path
    policy: object = None  # attngrade.late.LatePolicy or None
    gb: object = None  # an open nbgrader Gradebook, or None (not written)
    submitted: Path | None = None  # where formgrader counts submissions (attngrade.gradebook.submitted_folder)
    keys: dict = field(default_factory=dict)  # student -> fingerprint (attngrade.regrade)
    gb_errors: dict = field(default_factory=dict)  # student -> why the gradebook write failed
    lock: threading.Lock = field(default_factory=threading.Lock)  # the gradebook's session is not thread-safe


@dataclass
class Recorded:
    """A student's result with their rows of the class reports."""

    result: Result
    csv_row: list
    summary_row: dict


def attach(res: Result, sub: Submission, policy) -> None:
    """What discovery knows of the submission, carried onto its result for every report."""
    res.ignored = list(sub.ignored)
    res.lms_late = sub.late
    res.evidence = sub.evidence
    res.timestamp = sub.timestamp
    res.lateness = policy.lateness(sub.timestamp, sub.late, sub.due) if policy else None
    res.late_penalty = round(res.score * res.lateness.fraction, 4) if res.lateness else 0.0
    res.manual = None


def _gradebook(rec: Recorder, res: Result) -> None:
    from .gradebook import manual_scores, write_result

    with rec.lock:
        try:
            write_result(
                rec.gb, rec.spec, res, late_penalty=res.late_penalty,
                deadline=rec.policy.deadline if rec.policy else None,
            )
        except Exception as exc:  # noqa: BLE001 - reported, the batch goes on
            rec.gb_errors[res.student] = f"{type(exc).__name__}: {exc}"[:500]
        try:
            res.manual = manual_scores(rec.gb, rec.spec, [res.student]).get(res.student)
        except Exception as exc:  # noqa: BLE001
            rec.gb_errors.setdefault(res.student, f"manual scores not read: {type(exc).__name__}: {exc}"[:500])


def record(rec: Recorder, res: Result, sub: Submission, *, graded_now: bool = True) -> Recorded:
    """Write one student's outputs (module docstring); ``graded_now=False`` for a result kept from
    the last run, whose gradebook row, notebook, feedback and state are already there."""
    attach(res, sub, rec.policy)
    if graded_now and rec.gb is not None:
        _gradebook(rec, res)
    elif rec.gb is not None:
        with rec.lock:
            from .gradebook import manual_scores

            res.manual = manual_scores(rec.gb, rec.spec, [res.student]).get(res.student)
    if graded_now:
        _outputs(rec, res, sub)
    return Recorded(res, csv_row(rec.spec, res), summary_row(rec.spec, res))


def _outputs(rec: Recorder, res: Result, sub: Submission) -> None:
    from .gradebook import write_autograded_notebook, write_submitted_copy

    try:
        write_autograded_notebook(rec.autograded, rec.spec, res)
        if rec.submitted is not None:
            write_submitted_copy(rec.submitted, rec.spec, res, sub.path)
    except Exception as exc:  # noqa: BLE001 - noted on the student's row
        res.notes.append(f"notebook for formgrader not written: {type(exc).__name__}: {exc}"[:300])
    write_feedback(rec.out / "feedback", rec.spec, res)
    write_log(rec.out / "logs", res)
    if res.student not in rec.gb_errors and res.student in rec.keys:
        save_state(rec.out, res, rec.keys[res.student])
