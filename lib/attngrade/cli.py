"""``attngrade``: grade a folder (or zip) of submissions of one assignment, in one command.

::

    attngrade 01_softmax submitted/ --out grading-output --jobs 4 --db postgresql://...

Writes the gradebook (nbgrader's tables), ``grades.csv``, ``feedback/<student>.html``,
``summary.html`` and ``summary.json``, ``logs/<student>.log``, and the rebuilt notebooks for
formgrader. Prints one line per finished student. See the README's instructor quick start.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .export import KINDS
from .returning import KINDS as RETURN_KINDS
from .pipeline import Options, grade_class, shard_of
from .sandbox import MODES, Limits

__all__ = ["main", "shard_of"]


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS
        return os.cpu_count() or 1


def _time_options(p: argparse.ArgumentParser) -> None:
    """When each student submitted and by when they had to (attngrade.late, attngrade.lms)."""
    p.add_argument(
        "--timezone", metavar="ZONE",
        help="the course's time zone (IANA name, e.g. Europe/Berlin) for times that state none: "
        "timestamp.txt, deadlines, LMS file names (default: c.AttnGrade.timezone, else "
        "c.Exchange.timezone, else UTC)",
    )
    p.add_argument(
        "--submission-times", metavar="FILE",
        help="the LMS's submission times: Moodle's grading worksheet, Gradescope's grades CSV, or a CSV with "
        "student (or id) and submitted columns (an LMS download's own file times are never used)",
    )
    p.add_argument(
        "--deadlines", metavar="FILE",
        help="a CSV of deadlines: assignment (optional), student (attngrade's id or the LMS user id; empty: "
        "everyone) and due columns; per-student rows are extensions (see the README)",
    )


def _lms_options(p: argparse.ArgumentParser) -> None:
    """The LMS's grades and feedback (attngrade.export, attngrade.returning)."""
    p.add_argument("--export", choices=KINDS, help="also write OUT/<lms>.csv for that LMS's gradebook import")
    p.add_argument(
        "--roster", metavar="FILE",
        help="the LMS's students for --export and --return: its own gradebook export or grading worksheet, "
        "or a CSV with student,id,name,email,section columns",
    )
    p.add_argument(
        "--column", metavar="NAME",
        help="--export canvas: the gradebook column to fill, e.g. 'Softmax (881)' (default: the roster's "
        "column for this assignment)",
    )
    p.add_argument(
        "--points", type=float, metavar="N",
        help="--export: the points the LMS records the assignment out of; grades are scaled from the "
        "assignment's own (default: the roster's Points Possible or Maximum Grade)",
    )
    p.add_argument(
        "--return", dest="return_to", choices=RETURN_KINDS, metavar="LMS",
        help="also write OUT/return-<lms>.zip, the feedback pages named for that LMS's bulk feedback "
        "upload, and OUT/return-<lms>.csv listing where each page went (canvas or moodle)",
    )


def _run_options(p: argparse.ArgumentParser) -> None:
    """How the class is graded: where, how many at once, with which limits and isolation."""
    p.add_argument(
        "-j", "--jobs", type=int, default=_cpu_count(), help="students graded at once (default: CPUs)"
    )
    p.add_argument("--db", help="gradebook SQLAlchemy URL (default: the course's, from nbgrader_config.py)")
    p.add_argument(
        "--course", help="course root holding nbgrader_config.py (default: found upwards from here)"
    )
    p.add_argument(
        "--timeout", type=float, default=30.0, help="seconds for the answer cells and for each part"
    )
    p.add_argument("--memory-mb", type=int, default=2048, help="address-space limit of a worker (MiB)")
    p.add_argument(
        "--isolation", choices=["auto", *MODES], default="auto", help="isolation level (default: strongest)"
    )
    p.add_argument(
        "--autograded-dir",
        help="where rebuilt notebooks go for formgrader (default: the course's autograded/ folder; "
        "OUT/autograded with --no-gradebook)",
    )
    p.add_argument(
        "--shard",
        metavar="I/N|auto",
        help="grade only share I of N of the students (hosts sharing one gradebook; see the README); auto: "
        "I and N from a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, and JOB_COMPLETIONS, which the Job's "
        "manifest must set) or a Slurm array (SLURM_ARRAY_TASK_ID, _COUNT, _MIN, _STEP)",
    )
    p.add_argument(
        "--force", action="store_true", help="grade every submission again, even those that did not change"
    )
    p.add_argument("--no-gradebook", action="store_true", help="do not write the gradebook")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="attngrade",
        description="Grade submissions of one assignment: isolated, parallel, into nbgrader's gradebook.",
    )
    p.add_argument("assignment", help="assignment name, a folder of solutions/ (e.g. 01_softmax)")
    p.add_argument(
        "submissions", help="nbgrader submitted/ folder, flat folder of notebooks, or a zip of either"
    )
    p.add_argument("-o", "--out", default="grading-output", help="output folder (default: grading-output)")
    _run_options(p)
    p.add_argument(
        "--similarity", action=argparse.BooleanOptionalAction, default=None,
        help="compare every part's code across the class, for the summary (default: on for 3 or more students)",
    )
    _lms_options(p)
    _time_options(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    return p


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments and grade the class (:func:`attngrade.pipeline.grade_class`)."""
    args = _parser().parse_args(argv)
    # nbgrader runs its environment's `alembic` to stamp a new gradebook: make it findable.
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    opts = Options(
        assignment=args.assignment,
        submissions=args.submissions,
        out=Path(args.out).resolve(),
        jobs=max(1, args.jobs),
        db=args.db,
        course=args.course,
        limits=Limits(timeout=args.timeout, memory_mb=args.memory_mb),
        isolation=args.isolation,
        autograded_dir=args.autograded_dir,
        shard=args.shard,
        force=args.force,
        no_gradebook=args.no_gradebook,
        say=(lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True)),
        similarity=args.similarity,
        export=args.export,
        roster=args.roster,
        column=args.column,
        points=args.points,
        return_to=args.return_to,
        timezone=args.timezone,
        submission_times=args.submission_times,
        deadlines=args.deadlines,
    )
    return grade_class(opts)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
