"""Grading throughput: stock ``nbgrader autograde`` against ``attngrade`` on the same submissions.

A throw-away course is generated from ``solutions/01_softmax`` with nbgrader; 50 submissions are
made from the solution and the samples of ``tests/exercises/samples/01_softmax`` (repeated) in
nbgrader's ``submitted/`` layout. Both graders grade all of them into copies of the same fresh
gradebook; the figures are wall-clock seconds for the whole command, so start-up costs count.
The scores of the two must agree. Prints the throughput of each and the ratio, and writes
``bench/results/grading.json``.

    python bench/bench_grading.py [--n 50] [--jobs N] [--skip-serial]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "01_softmax"
def _env():
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def _run(cmd, cwd) -> float:
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return seconds


def _scores(db: Path, students: list[str]) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db}", course_id="attnmath-bench") as gb:
        return {
            s: {g.name: g.auto_score for g in gb.find_submission_notebook("softmax", ASSIGNMENT, s).grades}
            for s in students
        }


def _submissions(course: Path, n: int) -> list[str]:
    sys.path.insert(0, str(ROOT / "lib"))
    from attngrade.notebooks import answer_cells, fill_answers, read_answer_script

    release = nbformat.read(course / "release" / ASSIGNMENT / "softmax.ipynb", as_version=4)
    source = nbformat.read(course / "source" / ASSIGNMENT / "softmax.ipynb", as_version=4)
    kinds = [("solution", fill_answers(release, answer_cells(source)))]
    for sample in sorted((ROOT / "tests" / "exercises" / "samples" / ASSIGNMENT).glob("*.py")):
        kinds.append((sample.stem, fill_answers(release, read_answer_script(sample)[0])))
    students = []
    for i in range(n):
        kind, nb = kinds[i % len(kinds)]
        student = f"s{i:03d}_{kind}"
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / "softmax.ipynb")
        (folder / "timestamp.txt").write_text("2026-11-22 10:00:00.000000 UTC")
        students.append(student)
    return students


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument(
        "--jobs",
        type=int,
        default=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1),
    )
    parser.add_argument("--skip-serial", action="store_true", help="skip the one-job pipeline run")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    try:
        sys.path.insert(0, str(ROOT / "lib"))
        from attngrade.course import make_course

        course = make_course(work, ASSIGNMENT, ROOT / "solutions", course_id="attnmath-bench")
        students = _submissions(course, args.n)
        fresh = work / "fresh.db"
        shutil.copy(course / "gradebook.db", fresh)
        load_before = os.getloadavg() if hasattr(os, "getloadavg") else None

        stock_db = work / "stock.db"
        shutil.copy(fresh, stock_db)
        print(f"stock nbgrader autograde: {args.n} submissions, one at a time ...", flush=True)
        stock_s = _run(
            [
                sys.executable,
                "-m",
                "nbgrader",
                "autograde",
                ASSIGNMENT,
                "--force",
                f"--CourseDirectory.db_url=sqlite:///{stock_db}",
            ],
            course,
        )

        runs = {}
        for jobs in [args.jobs] if args.skip_serial or args.jobs == 1 else [args.jobs, 1]:
            db = work / f"attngrade-{jobs}.db"
            shutil.copy(fresh, db)
            print(f"attngrade --jobs {jobs}: {args.n} submissions ...", flush=True)
            seconds = _run(
                [
                    sys.executable,
                    "-m",
                    "attngrade",
                    ASSIGNMENT,
                    course / "submitted",
                    "--course",
                    course,
                    "--db",
                    f"sqlite:///{db}",
                    "--out",
                    work / f"out-{jobs}",
                    "--jobs",
                    str(jobs),
                    "-q",
                ],
                ROOT,
            )
            summary = json.loads((work / f"out-{jobs}" / "summary.json").read_text())
            runs[jobs] = {
                "seconds": seconds,
                "db": db,
                "isolation": summary["isolation"]["mode"],
                "memory": summary["isolation"].get("memory_measured_by", "?"),
                "statuses": {k: v for k, v in summary["statuses"].items() if v},
            }

        stock_scores = _scores(stock_db, students)
        agree = {jobs: _scores(r["db"], students) == stock_scores for jobs, r in runs.items()}
        main_run = runs[args.jobs]
        result = {
            "benchmark": "grading throughput, stock nbgrader autograde vs attngrade",
            "assignment": ASSIGNMENT,
            "submissions": args.n,
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
                "load_average_before": [round(x, 2) for x in load_before] if load_before else None,
                "load_average_after": [round(x, 2) for x in os.getloadavg()] if load_before else None,
            },
            "stock_nbgrader": {"seconds": round(stock_s, 2), "per_s": round(args.n / stock_s, 3)},
            "attngrade": {
                "jobs": args.jobs,
                "seconds": round(main_run["seconds"], 2),
                "per_s": round(args.n / main_run["seconds"], 3),
                "isolation": main_run["isolation"],
                "memory_measured_by": main_run["memory"],
                "statuses": main_run["statuses"],
            },
            "ratio": round(stock_s / main_run["seconds"], 2),
            "scores_agree_with_stock": all(agree.values()),
        }
        if 1 in runs and args.jobs != 1:
            result["attngrade_one_job"] = {
                "seconds": round(runs[1]["seconds"], 2),
                "per_s": round(args.n / runs[1]["seconds"], 3),
                "ratio": round(stock_s / runs[1]["seconds"], 2),
            }
        print(f"stock nbgrader autograde : {stock_s:7.1f} s  {args.n / stock_s:6.2f} submissions/s")
        if "attngrade_one_job" in result:
            r1 = result["attngrade_one_job"]
            print(
                f"attngrade --jobs 1       : {r1['seconds']:7.1f} s  {r1['per_s']:6.2f} submissions/s  "
                f"({r1['ratio']:.1f}x)"
            )
        print(
            f"attngrade --jobs {args.jobs:<8}: {main_run['seconds']:7.1f} s  {args.n / main_run['seconds']:6.2f} "
            f"submissions/s  ({result['ratio']:.1f}x, isolation {main_run['isolation']})"
        )
        print(f"scores agree with stock nbgrader: {result['scores_agree_with_stock']}")
        out = ROOT / "bench" / "results" / "grading.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"written: {out.relative_to(ROOT)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
