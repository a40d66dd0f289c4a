"""One class from its grading hosts' outputs: ``python -m attngrade.merge OUT-1 ... --out DIR``.

Hosts that graded one class in shares (``attngrade ... --shard i/n`` or ``--shard auto``) each
wrote their share's ``OUT``; the gradebook they share already holds the whole class. Once every
host is done, this step writes into ``DIR`` what one host grading the whole class writes:

* ``grades.csv``: every host's rows (each student's row as its host wrote it), in one order;
* ``feedback/``, ``logs/`` and ``state/``: every student's files, copied;
* ``summary.json`` and ``summary.html`` with the statistics (``statistics.csv``,
  ``statistics.png``, :mod:`attngrade.statistics`), made from every student's result as the hosts
  recorded it (``statistics.json``) by the same code that writes one host's;
* the similarity of the whole class (``similarity.csv`` and the summary's section, as
  ``python -m attngrade.similarity`` compares it), where the hosts kept their answers;
* with ``--export`` / ``--return``, the LMS's files, as the grading command writes them.

It refuses (exit status 2, nothing written) folders of two assignments, a share given twice or
missing, and a student graded by two hosts. It needs the course (``--course``, default: found
upwards from the working directory), for the assignment's parts.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import sys
import types
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Host", "read_host", "check_shares", "merge", "main"]

_SHARE = re.compile(r"share (\d+)/(\d+) of (\d+)")
#: Per-student folders that are copied as they are.
STUDENT_FOLDERS = ("feedback", "logs", "state")


@dataclass
class Host:
    """One host's ``OUT``: its summary, its students' results and its rows of ``grades.csv``."""

    out: Path
    summary: dict
    records: list  # attngrade.statistics.records
    header: list
    rows: dict  # student -> row of grades.csv

    @property
    def share(self) -> tuple[int, int, int]:
        m = _SHARE.fullmatch(self.summary.get("shard") or "")
        if m is None:
            raise ValueError(f"{self.out} was not graded with --shard (its summary says no share)")
        return int(m.group(1)), int(m.group(2)), int(m.group(3))


def _json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from exc


def read_host(out: Path) -> Host:
    """What :func:`merge` needs of one host's ``OUT``; ValueError names what is missing."""
    out = Path(out)
    if not out.is_dir():
        raise ValueError(f"{out} is not a folder (give each host's OUT)")
    summary, stats = _json(out / "summary.json"), _json(out / "statistics.json")
    if stats.get("assignment") != summary.get("assignment"):
        raise ValueError(f"{out}: statistics.json and summary.json are of two assignments")
    try:
        with open(out / "grades.csv", newline="", encoding="utf-8-sig") as fh:
            header, *lines = list(csv.reader(fh))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {out / 'grades.csv'}: {exc}") from exc
    students = [row["student"] for row in summary["results"]]
    if len(lines) != len(students) or len(stats["results"]) != len(students):
        raise ValueError(f"{out}: grades.csv, summary.json and statistics.json hold different students")
    # grades.csv's rows are in the order of summary.json's (pipeline._report), which holds the raw ids
    return Host(out, summary, stats["results"], header, dict(zip(students, lines)))


def check_shares(hosts: list[Host]) -> tuple[str, int]:
    """``(assignment, shares)``: one assignment, every share of one split exactly once, no
    student twice; ValueError otherwise."""
    if not hosts:
        raise ValueError("give every host's OUT folder")
    assignment = hosts[0].summary["assignment"]
    for h in hosts[1:]:
        if h.summary["assignment"] != assignment:
            raise ValueError(f"{h.out} holds {h.summary['assignment']}, {hosts[0].out} holds {assignment}")
    shares = [h.share for h in hosts]
    counts = {(n, everyone) for _, n, everyone in shares}
    if len(counts) != 1:
        raise ValueError("the hosts split different classes or into different numbers of shares: "
                         + ", ".join(f"{h.out}: {h.summary['shard']}" for h in hosts))
    (n, everyone), = counts
    given = sorted(i for i, _, _ in shares)
    if given != list(range(1, n + 1)):
        missing = sorted(set(range(1, n + 1)) - set(given))
        twice = sorted({i for i in given if given.count(i) > 1})
        raise ValueError(f"shares of {n}: " + "; ".join(
            ([f"missing {', '.join(map(str, missing))}"] if missing else [])
            + ([f"given twice {', '.join(map(str, twice))}"] if twice else [])))
    seen: dict = {}
    for h in hosts:
        for student in h.rows:
            if student in seen:
                raise ValueError(f"{student} was graded by two hosts: {seen[student]} and {h.out}")
            seen[student] = h.out
    if len(seen) != everyone:
        raise ValueError(f"the hosts graded {len(seen)} students of a class of {everyone}")
    return assignment, n


def _copy_students(hosts: list[Host], target: Path) -> None:
    for h in hosts:
        for name in STUDENT_FOLDERS:
            if (h.out / name).is_dir():
                shutil.copytree(h.out / name, target / name, dirs_exist_ok=True)


def _write_grades(hosts: list[Host], spec, target: Path) -> None:
    from .report import csv_header

    header = csv_header(spec)
    for h in hosts:
        if h.header != header:
            raise ValueError(f"{h.out}/grades.csv has other columns than {spec.name} has now: was the course "
                             "changed after grading? grade again")
    rows = {s: row for h in hosts for s, row in h.rows.items()}
    with open(target / "grades.csv", "w", newline="", encoding="utf-8-sig", errors="backslashreplace") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows[s] for s in sorted(rows))


def _first(values: list):
    """The hosts' common value, or all of them where they differ."""
    return values[0] if all(v == values[0] for v in values) else {"differs by host": values}


def _write_summary(hosts: list[Host], spec, target: Path, n: int) -> list:
    """The class's summary and statistics from every student's result; the results."""
    from .report import write_summary
    from .statistics import results_from

    results = sorted(results_from([r for h in hosts for r in h.records]), key=lambda r: r.student)
    rows = sorted((row for h in hosts for row in h.summary["results"]), key=lambda row: row["student"])
    summaries = [h.summary for h in hosts]
    policy = summaries[0].get("late_policy")
    write_summary(
        target, spec, results, rows,
        isolation=_first([s["isolation"] for s in summaries]),
        seconds=max(s["seconds"] for s in summaries), jobs=sum(s["jobs"] for s in summaries),
        db_url=str(_first([s["gradebook"] for s in summaries])),
        gradebook_errors={k: v for s in summaries for k, v in s["gradebook_errors"].items()},
        regraded=sum(s["graded_now"] for s in summaries), shard=f"{n} shares merged",
        policy=types.SimpleNamespace(**policy) if policy else None,
        warnings=list(dict.fromkeys(w for s in summaries for w in s["warnings"])),
    )
    return results


def _similarity(hosts: list[Host], target: Path, say) -> None:
    """The whole class's similarity, where the hosts kept their answers (all or none)."""
    from . import similarity

    kept = [h.out for h in hosts if (h.out / "similarity" / similarity.ANSWERS_FILE).is_file()]
    if not kept:
        say("similarity: no host kept its answers (a class below the size it starts at, or --no-similarity)")
        return
    if len(kept) != len(hosts):
        missing = ", ".join(str(h.out) for h in hosts if h.out not in kept)
        raise ValueError(f"some hosts kept no answers for the similarity step: {missing}")
    assignment, course, answers = similarity.load_answers(kept)
    result = similarity.run(answers, course)
    similarity.write_answers(target / "similarity", assignment, answers, course)
    similarity.add_to_summary(target, result)
    say(f"similarity: {len(result.groups)} groups of similar answers, {len(result.pairs)} pairs listed")


def merge(outs: list, target: Path, *, course: str | None = None, say=print, lms: dict | None = None) -> int:
    """Merge the hosts' ``outs`` into ``target`` (module docstring); the number of students.
    ``lms``: the grading command's ``--export``/``--return`` options (:func:`_lms`)."""
    from .grader import load_assignment, load_course

    hosts = [read_host(Path(o)) for o in outs]
    assignment, n = check_shares(hosts)
    target = Path(target)
    if any(target.resolve() == h.out.resolve() for h in hosts):
        raise ValueError(f"--out {target} is one of the hosts' folders: give a new folder")
    spec = load_assignment(load_course(course), assignment)
    roster = _roster(lms or {}, spec)
    target.mkdir(parents=True, exist_ok=True)
    _write_grades(hosts, spec, target)
    _copy_students(hosts, target)
    results = _write_summary(hosts, spec, target, n)
    _similarity(hosts, target, say)
    _lms(lms or {}, roster, spec, target, say)
    return len(results)


def _roster(lms: dict, spec):
    """``--roster`` read and the LMS options checked before anything is written (as the
    grading command does)."""
    from . import export, returning

    if not lms:
        return None
    returning.check_kind(lms.get("return_to"))
    roster = export.roster_for(lms.get("export") or lms.get("return_to"), lms.get("roster"))
    export.check_options(lms.get("export"), roster, assignment=spec.name, notebook=spec.notebook,
                         points=lms.get("points"), column=lms.get("column"))
    return roster


def _lms(lms: dict, roster, spec, target: Path, say) -> None:
    from . import export, returning

    if lms.get("export"):
        export.class_step(lms["export"], target, roster, spec, say=say, points=lms.get("points"),
                          column=lms.get("column"))
    if lms.get("return_to"):
        returning.class_step(lms["return_to"], target, roster, spec, say=say)


def main(argv: list[str] | None = None) -> int:
    """Merge every grading host's OUT into one class's (module docstring)."""
    from .cli import _lms_options

    p = argparse.ArgumentParser(
        prog="python -m attngrade.merge",
        description="Merge the OUT folders of hosts that graded one class in shares (--shard) into one.",
    )
    p.add_argument("outs", nargs="+", help="every host's OUT folder")
    p.add_argument("--out", required=True, help="the class's folder: grades.csv, summary.html, statistics.csv ...")
    p.add_argument("--course", help="course root holding nbgrader_config.py (default: found upwards from here)")
    _lms_options(p)
    args = p.parse_args(argv)
    lms = {k: getattr(args, k) for k in ("export", "roster", "column", "points", "return_to")}
    try:
        count = merge(args.outs, Path(args.out), course=args.course, lms=lms)
    except (ValueError, KeyError, TypeError) as exc:
        print(f"attngrade.merge: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - a course that cannot be loaded, a folder that cannot be written
        print(f"attngrade.merge: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    print(f"{count} students of {len(args.outs)} hosts: {out / 'grades.csv'}\nsummary: {out / 'summary.html'}\n"
          f"statistics: {out / 'statistics.csv'}\nfeedback: {out / 'feedback'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
