"""Where the wall-clock time of ``make test`` goes: each xdist worker's timeline, not just durations.

``--durations`` lists the slowest tests but not how they sit in time: which long set-ups run
side by side, whether a worker waits idle, how long collection takes before the first test,
when the shared builds (the book, the nbgrader course) start and end while tests run, and how
loaded the machine was. This runs the suite as ``make test`` does (``pytest -n auto``) with a
small plugin (this module, loaded with ``-p bench_tests``) that records when each test phase
started and ended on which worker, then prints:

* the run: wall time, CPU seconds of the whole process tree and the load average over the run;
* per worker: when its collection ended, its busy seconds, its idle gaps, when it finished;
* the shared builds under the run's ``--basetemp``: when each started and ended;
* the bound: total busy time over the number of workers, against the wall time (what perfect
  balancing could reach), and the longest single items (what no balancing can split);
* the slowest items (set-up, call and tear-down together) with their start time and worker,
  and the tests that failed.

It writes ``bench/results/tests.json``. Extra arguments go to pytest; ``--from FILE`` analyses a
timeline written by an earlier run instead of running the suite (it takes 5-15 minutes).

    python bench/bench_tests.py [--top 30] [--from timeline.jsonl] [-- pytest args]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = "BENCH_TESTS_TIMELINE"


# --- the plugin (loaded in the controller and in every xdist worker by ``-p bench_tests``) ---

def _record(rec: dict) -> None:
    path = os.environ.get(ENV)
    if path:
        with open(path, "a") as fh:  # one short line per write: appends do not interleave
            fh.write(json.dumps(rec) + "\n")


def _who() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "controller")


def pytest_configure(config) -> None:
    _record({"ev": "configure", "w": _who(), "t": time.time()})


def pytest_collection_finish(session) -> None:
    _record({"ev": "collected", "w": _who(), "t": time.time(), "n": len(session.items)})


def pytest_runtest_logreport(report) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # the controller records every worker's reports, with the worker's name
    node = getattr(report, "node", None)
    worker = getattr(getattr(node, "gateway", None), "id", None) or "main"
    _record({"ev": "phase", "w": worker, "id": report.nodeid, "when": report.when,
             "start": report.start, "stop": report.stop, "outcome": report.outcome})


def pytest_sessionfinish(session) -> None:
    _record({"ev": "finish", "w": _who(), "t": time.time()})


# --- running the suite ---

def run_suite(timeline: Path, basetemp: Path, pytest_args: list[str]) -> dict:
    """Run ``pytest -n auto`` with the plugin; wall seconds, CPU seconds and the load samples."""
    env = dict(os.environ, **{ENV: str(timeline)})
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "bench"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    command = [sys.executable, "-m", "pytest", "-n", "auto", "-p", "bench_tests", "-q",
               f"--basetemp={basetemp}", *pytest_args]
    loads, done = [], threading.Event()

    def sample() -> None:
        while not done.wait(10):
            loads.append(float(Path("/proc/loadavg").read_text().split()[0]))

    threading.Thread(target=sample, daemon=True).start()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    done.set()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = [ln for ln in proc.stdout.splitlines() if " in " in ln and ("passed" in ln or "failed" in ln)]
    return {"command": " ".join(command), "returncode": proc.returncode, "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1), "load_samples": loads, "summary": summary[-1:]}


# --- analysis ---

def shared_builds(basetemp: Path, t0: float) -> dict[str, dict]:
    """Each shared build of ``tests/support.py``: started when its lock file was made, ended when
    its outcome was written (seconds from the start of the run)."""
    builds = {}
    for outcome in sorted(basetemp.glob("shared-*.json")):
        name = outcome.stem.removeprefix("shared-")
        lock = outcome.with_suffix(".lock")
        start = lock.stat().st_ctime if lock.exists() else None
        builds[name] = {"start_s": round(start - t0, 1) if start else None,
                        "end_s": round(outcome.stat().st_mtime - t0, 1),
                        "ok": json.loads(outcome.read_text()).get("ok")}
    return builds


def per_worker(phases: list[dict], collected: dict[str, float], t0: float, gap: float = 2.0) -> dict:
    """Busy seconds, idle gaps longer than ``gap`` and the span of each worker's tests."""
    workers = {}
    by_worker = collections.defaultdict(list)
    for ph in phases:
        by_worker[ph["w"]].append(ph)
    for worker, items in sorted(by_worker.items()):
        items.sort(key=lambda ph: ph["start"])
        gaps = [(round(a["stop"] - t0, 1), round(b["start"] - a["stop"], 1), b["id"])
                for a, b in zip(items, items[1:]) if b["start"] - a["stop"] > gap]
        workers[worker] = {
            "collected_s": round(collected.get(worker, t0) - t0, 1),
            "first_s": round(items[0]["start"] - t0, 1),
            "last_s": round(items[-1]["stop"] - t0, 1),
            "busy_s": round(sum(ph["stop"] - ph["start"] for ph in items), 1),
            "tests": len({ph["id"] for ph in items}),
            "idle_gaps": gaps,
        }
    return workers


def analyse(records: list[dict], basetemp: Path | None, top: int) -> dict:
    """The report: workers, shared builds, balance bound and the slowest items."""
    t0 = min(r["t"] for r in records if r["ev"] == "configure")
    phases = [r for r in records if r["ev"] == "phase"]
    collected = {r["w"]: r["t"] for r in records if r["ev"] == "collected"}
    finish = max((r["t"] for r in records if r["ev"] == "finish"), default=max(p["stop"] for p in phases))
    items: dict[str, dict] = {}
    for ph in phases:
        item = items.setdefault(ph["id"], {"id": ph["id"], "w": ph["w"],
                                           "start_s": round(ph["start"] - t0, 1), "seconds": 0.0})
        item["seconds"] = round(item["seconds"] + ph["stop"] - ph["start"], 2)
    slowest = sorted(items.values(), key=lambda it: -it["seconds"])
    workers = per_worker(phases, collected, t0)
    busy = sum(w["busy_s"] for w in workers.values())
    return {
        "session_s": round(finish - t0, 1),
        "workers": workers,
        "shared_builds": shared_builds(basetemp, t0) if basetemp else {},
        "busy_s": round(busy, 1),
        "balanced_bound_s": round(busy / max(len(workers), 1), 1),
        "longest_item_s": slowest[0]["seconds"] if slowest else 0.0,
        "slowest": slowest[:top],
        "failed": sorted({ph["id"] for ph in phases if ph["outcome"] == "failed"}),
    }


def show(run: dict | None, report: dict) -> None:
    if run:
        loads = run["load_samples"] or [0.0]
        print(f"wall {run['wall_s']} s, CPU {run['cpu_s']} s of the process tree "
              f"({run['cpu_s'] / max(run['wall_s'], 1e-9):.2f} cores), "
              f"load {min(loads):.1f}-{max(loads):.1f} (mean {sum(loads) / len(loads):.1f}); "
              f"{' '.join(run['summary'])}")
    print(f"session {report['session_s']} s; busy {report['busy_s']} s over {len(report['workers'])} "
          f"workers: balanced bound {report['balanced_bound_s']} s; "
          f"longest single item {report['longest_item_s']} s")
    for name, w in report["workers"].items():
        idle = sum(g[1] for g in w["idle_gaps"])
        print(f"  {name}: collected at {w['collected_s']} s, tests {w['first_s']}-{w['last_s']} s, "
              f"busy {w['busy_s']} s, {w['tests']} tests, idle {idle:.1f} s in {len(w['idle_gaps'])} gaps")
        for at, seconds, before in w["idle_gaps"][:5]:
            print(f"      idle {seconds} s at {at} s before {before}")
    for name, b in report["shared_builds"].items():
        print(f"  shared build {name}: {b['start_s']}-{b['end_s']} s, ok={b['ok']}")
    for test in report["failed"]:
        print(f"  failed: {test}")
    print("slowest items (set-up + call + tear-down), start, worker:")
    for it in report["slowest"]:
        print(f"  {it['seconds']:7.1f} s  at {it['start_s']:6.1f} s  {it['w']:>4}  {it['id']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--from", dest="source", type=Path, help="a timeline of an earlier run")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "tests.json")
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args(argv)
    if args.top < 1:
        parser.error(f"--top must be at least 1, got {args.top}")
    run, basetemp = None, None
    if args.source is not None:
        timeline = args.source
    else:
        work = Path(tempfile.mkdtemp(prefix="bench-tests-"))
        timeline, basetemp = work / "timeline.jsonl", work / "basetemp"
        run = run_suite(timeline, basetemp, args.pytest_args)
    records = [json.loads(line) for line in timeline.read_text().splitlines() if line.strip()]
    report = analyse(records, basetemp, args.top)
    show(run, report)
    if run is not None and basetemp is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"run": run, **report}, indent=2) + "\n")
        shutil.rmtree(basetemp.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
