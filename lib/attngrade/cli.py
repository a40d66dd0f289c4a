"""``attngrade``: grade a folder (or zip) of submissions of one assignment, in one command.

::

    attngrade 01_softmax submitted/ --out grading-output --jobs 4 --db postgresql://...

Writes the gradebook (nbgrader's tables), ``grades.csv``, ``feedback/<student>.html``,
``summary.html`` and ``summary.json``, ``logs/<student>.log``, and the rebuilt notebooks for
formgrader. Prints one line per finished student. See the README's instructor quick start.
"""

from __future__ import annotations

import argparse
import hashlib
import json
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
from .late import late_policy
from .regrade import fingerprint, load_state, save_state
from .report import copy_mathjax, write_csv, write_feedback, write_log, write_summary
from .sandbox import MODES, Limits, detect_isolation
from .submissions import discover, other_assignment

__all__ = ["main", "shard_of"]


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
        help="where rebuilt notebooks go for formgrader (default: the course's autograded/ folder; "
        "OUT/autograded with --no-gradebook)",
    )
    p.add_argument(
        "--shard",
        metavar="I/N",
        help="grade only share I of N of the students (hosts sharing one gradebook; see the README)",
    )
    p.add_argument(
        "--force", action="store_true", help="grade every submission again, even those that did not change"
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


def _assignments(course) -> list[str]:
    """The assignments that can be graded: a released notebook and hidden tests."""
    if not course.release.is_dir():
        return []
    return sorted(
        p.name
        for p in course.release.iterdir()
        if p.is_dir() and any(p.glob("*.ipynb")) and (course.source / p.name / "hidden_tests.py").is_file()
    )


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


def _shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard {text!r}: give i/n, e.g. 1/2 (this host grades the first of two shares)")
    if not 1 <= i <= n:
        raise ValueError(f"--shard {text!r}: i must be from 1 to n")
    return i, n


def shard_of(student: str, n: int) -> int:
    """The share (1..n) a student belongs to: a stable hash of the id, the same on every host."""
    return int(hashlib.sha256(student.encode("utf-8")).hexdigest(), 16) % n + 1


def _check_submissions(args, course, spec, subs) -> str | None:
    """An instructor error in the submissions, or None; strays of other assignments are marked."""
    ids = _release_ids(course, _assignments(course))
    readable = [s for s in subs if s.path is not None and s.problem is None]
    others = {}
    for sub in readable:
        other = other_assignment(sub.path, spec.name, ids)
        if other is not None:
            others[sub.student] = other
    if readable and len(others) * 2 > len(readable):
        names = sorted(set(others.values()))
        return (
            f"{len(others)} of the {len(readable)} notebooks in {args.submissions} are notebooks of "
            f"{', '.join(names)}, not of {spec.name}; nothing was graded or written. "
            f"Grade them as their assignment (attngrade {names[0]} {args.submissions}) "
            f"or check the folder."
        )
    for sub in readable:
        if sub.student in others:
            sub.problem = ("malformed", f"a notebook of {others[sub.student]}, not of {spec.name}")
    return None


def _run(args, jobs, out, limits, tmp_root, say) -> int:
    started = time.monotonic()
    sandbox.ABORT.clear()

    def fail(message: str, code: int = 2) -> int:
        print(f"attngrade: {message}", file=sys.stderr)
        return code

    try:
        course = load_course(args.course)
    except ConfigError as exc:
        return fail(f"{exc}; run attngrade in the course folder or give --course")
    valid = _assignments(course)
    if args.assignment not in valid:
        return fail(
            f"unknown assignment {args.assignment!r}; the course at {course.root} has: "
            + (", ".join(valid) or "none (run `make exercises` to release them)")
        )
    try:
        shard = _shard(args.shard)
        policy = late_policy(course.config, args.assignment)
    except ValueError as exc:
        return fail(str(exc))
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
        error = None
        try:
            spec = load_assignment(course, args.assignment)
            subs = discover(args.submissions, spec.name, spec.notebook, workdir=tmp_root)
            error = _check_submissions(args, course, spec, subs)
        except (ConfigError, ValueError, OSError) as exc:
            error = str(exc)
        finally:
            try:
                isolation = probe.result()
            except RuntimeError as exc:
                isolation = exc
    if error:
        return fail(error)
    if isinstance(isolation, RuntimeError):
        return fail(str(isolation), 1)
    everyone = len(subs)
    if shard is not None:
        subs = [s for s in subs if shard_of(s.student, shard[1]) == shard[0]]
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
    share = f" (share {shard[0]}/{shard[1]} of {everyone})" if shard else ""
    say(
        f"attngrade: {spec.name} ({spec.notebook}.ipynb, {len(spec.parts)} autograded parts, "
        f"{spec.max_auto:g} points), {len(subs)} submissions{share}, {jobs} jobs, isolation {isolation.mode}"
    )
    from .gradebook import ensure_assignment, has_submission, manual_scores, open_gradebook

    gb = None
    if not args.no_gradebook:
        try:
            gb = _retry(lambda: open_gradebook(db_url, course.course_id))
            what = _retry(lambda: ensure_assignment(db_url, course, spec, gb))
            gb.db.commit()  # end the read transaction: what ensure_assignment wrote becomes visible
            gb.db.expire_all()
        except Exception as exc:  # noqa: BLE001
            return fail(f"cannot use the gradebook {db_url.split('@')[-1]}: {exc}", 1)
        say(f"gradebook: {db_url.split('@')[-1]} ({what})")
    # Re-grade only what changed: the same fingerprint, a kept result, and the gradebook's row.
    keys = {s.student: fingerprint(spec, s, limits=limits, policy=policy) for s in subs}
    kept, todo = [], []
    for s in subs:
        old = None if args.force else load_state(out, s.student, keys[s.student])
        if old is not None and (gb is None or has_submission(gb, spec, s.student)):
            kept.append(old)
        else:
            todo.append(s)
    if kept:
        say(f"unchanged since the last run, not graded again: {len(kept)} (use --force to grade them)")

    slots: queue.Queue = queue.Queue()
    for i in range(jobs):
        slots.put(i)

    def work(sub):
        slot = slots.get()
        try:
            return grade_submission(spec, sub, isolation, limits, slot=slot, hidden=hidden, tmp_root=tmp_root)
        finally:
            slots.put(slot)

    by_student = {s.student: s for s in subs}
    results, gb_errors = list(kept), {}
    for r in kept:
        _attach(r, by_student[r.student], spec, policy)
    width = len(str(len(todo)))
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="attngrade")
    futures = {pool.submit(work, s): s for s in todo}
    if args.autograded_dir:
        autograded = Path(args.autograded_dir).resolve()
    elif args.no_gradebook:
        autograded = out / "autograded"
    else:
        autograded = course.autograded  # where formgrader looks, whatever the gradebook
    from .gradebook import write_autograded_notebook, write_result

    copy_mathjax(out / "feedback")  # the book's MathJax, once per batch: feedback renders maths offline
    try:
        for i, fut in enumerate(as_completed(futures), 1):
            res = fut.result()
            sub = futures[fut]
            _attach(res, sub, spec, policy)
            results.append(res)
            if gb is not None:
                try:
                    write_result(
                        gb, spec, res, late_penalty=res.late_penalty,
                        deadline=policy.deadline if policy else None,
                    )
                except Exception as exc:  # noqa: BLE001 - reported, the batch goes on
                    gb_errors[res.student] = f"{type(exc).__name__}: {exc}"[:500]
            try:
                write_autograded_notebook(autograded, spec, res)
            except OSError as exc:
                res.notes.append(f"autograded notebook not written: {exc}")
            write_feedback(out / "feedback", spec, res)
            write_log(out / "logs", res)
            if res.student not in gb_errors:
                save_state(out, res, keys[res.student])
            extra = f"  {res.reason[:100]}" if res.reason else ""
            say(
                f"[{i:>{width}}/{len(todo)}] {res.student:<28} {res.status:<14} "
                f"{res.score:>4g}/{spec.max_auto:g}  {res.seconds:6.2f}s{extra}"
            )
        manual = manual_scores(gb, spec, [r.student for r in results]) if gb is not None else {}
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
    for r in results:
        r.manual = manual.get(r.student)
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
        regraded=len(todo),
        shard=share.strip(" ()"),
        policy=policy,
    )
    counts = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    say(
        f"done: {len(todo)} graded, {len(kept)} unchanged, in {seconds:.1f} s; "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    )
    say(f"grades: {out / 'grades.csv'}\nsummary: {html_path}\nfeedback: {out / 'feedback'}")
    if autograded != out / "autograded":
        say(f"rebuilt notebooks (formgrader): {autograded}")
    if gb_errors:
        print(f"attngrade: {len(gb_errors)} gradebook writes failed; see {json_path}", file=sys.stderr)
        return 1
    return 0


def _attach(res, sub, spec, policy) -> None:
    """What discovery knows of the submission, carried onto its result for every report."""
    res.ignored = list(sub.ignored)
    res.lms_late = sub.late
    res.evidence = sub.evidence
    res.timestamp = sub.timestamp
    res.lateness = policy.lateness(sub.timestamp, sub.late) if policy else None
    res.late_penalty = round(res.score * res.lateness.fraction, 4) if res.lateness else 0.0
    res.manual = None


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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
