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
import queue
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from . import sandbox
from .grader import ConfigError, grade_submission, load_assignment, load_course
from .report import write_csv, write_feedback, write_log, write_summary
from .sandbox import MODES, Limits, detect_isolation
from .submissions import discover

__all__ = ["main"]


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS
        return os.cpu_count() or 1


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
        help="where rebuilt notebooks go for formgrader "
        "(default: the course's autograded/ with its own gradebook, else OUT/autograded)",
    )
    p.add_argument("--no-gradebook", action="store_true", help="do not write the gradebook")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # nbgrader runs its environment's `alembic` to stamp a new gradebook: make it findable.
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    jobs = max(1, args.jobs)
    out = Path(args.out).resolve()
    limits = Limits(timeout=args.timeout, memory_mb=args.memory_mb)
    tmp_root = tempfile.mkdtemp(prefix="attngrade-run-")
    os.chmod(tmp_root, 0o711)
    try:
        return _run(args, jobs, out, limits, tmp_root, say)
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)


def _run(args, jobs, out, limits, tmp_root, say) -> int:
    started = time.monotonic()
    sandbox.ABORT.clear()
    try:
        course = load_course(args.course)
    except ConfigError as exc:
        print(f"attngrade: {exc}", file=sys.stderr)
        return 2
    db_url = args.db or course.db_url
    # Paths the worker must not see (its probe checks them; the Python installation may live
    # inside the course, as .venv/, and stays visible).
    hidden = [
        str(course.root / "nbgrader_config.py"),
        str(course.source),
        str(course.release),
        str(Path(args.submissions).resolve()),
        str(out),
    ]
    if db_url.startswith("sqlite:///"):
        hidden.append(str(Path(db_url[len("sqlite:///") :]).resolve()))
    # The isolation probe (a worker process) runs while this process loads the assignment.
    with ThreadPoolExecutor(max_workers=1) as one:
        probe = one.submit(
            detect_isolation, args.isolation, jobs=jobs, limits=limits, hidden=hidden, tmp_root=tmp_root
        )
        try:
            spec = load_assignment(course, args.assignment)
            subs = discover(args.submissions, spec.name, spec.notebook, workdir=tmp_root)
        except ConfigError as exc:
            print(f"attngrade: {exc}", file=sys.stderr)
            return 2
        except (ValueError, OSError) as exc:
            print(f"attngrade: {exc}", file=sys.stderr)
            return 2
        finally:
            try:
                isolation = probe.result()
            except RuntimeError as exc:
                isolation = exc
    if isinstance(isolation, RuntimeError):
        print(f"attngrade: {isolation}", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    iso_info = {
        "mode": isolation.mode,
        **isolation.enforced,
        "fallbacks": isolation.notes,
        "limits": {
            "timeout_s": limits.timeout,
            "memory_mb": limits.memory_mb,
            "output_bytes": limits.output_bytes,
            "nproc": limits.nproc,
            "fsize_mb": limits.fsize_mb,
            "nofile": limits.nofile,
            "tmp_mb": limits.tmp_mb,
        },
    }
    say(
        f"attngrade: {spec.name} ({spec.notebook}.ipynb, {len(spec.parts)} autograded parts, "
        f"{spec.max_auto:g} points), {len(subs)} submissions, {jobs} jobs, isolation {isolation.mode}"
    )

    slots: queue.Queue = queue.Queue()
    for i in range(jobs):
        slots.put(i)

    def work(sub):
        slot = slots.get()
        try:
            return grade_submission(spec, sub, isolation, limits, slot=slot, hidden=hidden, tmp_root=tmp_root)
        finally:
            slots.put(slot)

    results, gb_errors = [], {}
    width = len(str(len(subs)))
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="attngrade")
    futures = {pool.submit(work, s): s for s in subs}  # grading starts now; the gradebook is set up meanwhile
    gb = None
    try:
        if not args.no_gradebook:
            from .gradebook import ensure_assignment, open_gradebook

            try:
                what = ensure_assignment(db_url, course, spec)
                gb = open_gradebook(db_url, course.course_id)
            except Exception as exc:  # noqa: BLE001
                sandbox.ABORT.set()
                pool.shutdown(wait=True, cancel_futures=True)
                print(f"attngrade: cannot use the gradebook {db_url.split('@')[-1]}: {exc}", file=sys.stderr)
                return 1
            say(f"gradebook: {db_url.split('@')[-1]} ({what})")
        if args.autograded_dir:
            autograded = Path(args.autograded_dir).resolve()
        elif not args.db and gb is not None:
            autograded = course.autograded
        else:
            autograded = out / "autograded"
        from .gradebook import write_autograded_notebook, write_result

        for i, fut in enumerate(as_completed(futures), 1):
            res = fut.result()
            results.append(res)
            if gb is not None:
                try:
                    write_result(gb, spec, res)
                except Exception as exc:  # noqa: BLE001 - reported, the batch goes on
                    gb_errors[res.student] = f"{type(exc).__name__}: {exc}"[:500]
            try:
                write_autograded_notebook(autograded, spec, res)
            except OSError as exc:
                res.notes.append(f"autograded notebook not written: {exc}")
            write_feedback(out / "feedback", spec, res)
            write_log(out / "logs", res)
            extra = f"  {res.reason[:100]}" if res.reason else ""
            say(
                f"[{i:>{width}}/{len(subs)}] {res.student:<28} {res.status:<14} "
                f"{res.score:>4g}/{spec.max_auto:g}  {res.seconds:6.2f}s{extra}"
            )
    except KeyboardInterrupt:
        sandbox.ABORT.set()
        pool.shutdown(wait=True, cancel_futures=True)
        print(
            "attngrade: interrupted; the grades so far are in the gradebook, no report was written",
            file=sys.stderr,
        )
        return 130
    finally:
        pool.shutdown(wait=True)
        if gb is not None:
            gb.close()
    results.sort(key=lambda r: r.student)
    seconds = time.monotonic() - started
    write_csv(out / "grades.csv", spec, results)
    html_path, json_path = write_summary(
        out,
        spec,
        results,
        isolation=iso_info,
        seconds=seconds,
        jobs=jobs,
        db_url=db_url if gb is not None else "(not written)",
        gradebook_errors=gb_errors,
    )
    counts = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    say(
        f"done: {len(results)} submissions in {seconds:.1f} s ({len(results) / max(seconds, 1e-9):.2f}/s); "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    )
    say(f"grades: {out / 'grades.csv'}\nsummary: {html_path}\nfeedback: {out / 'feedback'}")
    if gb_errors:
        print(f"attngrade: {len(gb_errors)} gradebook writes failed; see {json_path}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
