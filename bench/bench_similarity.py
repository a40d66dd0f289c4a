"""Similarity evidence for a large class: seconds to compare N students on one part.

The class is built from the 37 answers of ``tests/grading/similarity/`` (30 honest answers to
``01_softmax`` Part 1 and 7 planted copies), each used again with its own names renamed
(so about every 37th student is a renamed copy of another: many pairs reach the threshold,
which makes the report as large as it gets). Measures the comparison (fingerprints and every
pair), and the section and CSV written, separately; prints the figures and writes
``bench/results/similarity.json``.

    python bench/bench_similarity.py [--n 300] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "grading" / "similarity"))

from similarity_class import ANSWERS, PART, rename  # noqa: E402

from attngrade import similarity  # noqa: E402


def make_class(n: int) -> dict:
    """``n`` students' answers to Part 1, from the fixture class, renamed after the first round."""
    base = [ANSWERS[s][PART] for s in sorted(ANSWERS)]
    return {f"student{i:04d}": {PART: base[i % len(base)] if i < len(base) else rename(base[i % len(base)], i)}
            for i in range(n)}


def course() -> dict:
    release = json.loads((ROOT / "exercises/01_softmax/softmax.ipynb").read_text())
    solution = json.loads((ROOT / "solutions/01_softmax/softmax.ipynb").read_text())
    return similarity.course_code(release, solution)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="students (default 300)")
    ap.add_argument("--repeat", type=int, default=3, help="runs; the best is reported (default 3)")
    args = ap.parse_args()
    answers, code = make_class(args.n), course()
    compare, report, result = [], [], None
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        result = similarity.run(answers, code)
        t1 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            similarity.write_report(Path(tmp), result, "bench")
        t2 = time.perf_counter()
        compare.append(t1 - t0)
        report.append(t2 - t1)
    pairs = args.n * (args.n - 1) // 2
    figures = {
        "students": args.n,
        "part": PART,
        "pairs_compared": pairs,
        "pairs_listed": len(result.pairs),
        "compare_s_best": round(min(compare), 3),
        "report_s_best": round(min(report), 3),
        "total_s_best": round(min(c + r for c, r in zip(compare, report)), 3),
        "runs": len(compare),
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "loadavg": open("/proc/loadavg").read().split()[:3] if Path("/proc/loadavg").exists() else None,
        "python": platform.python_version(),
    }
    print(
        f"similarity of {args.n} students on {PART}: {pairs} pairs compared in {figures['compare_s_best']:.2f} s, "
        f"{len(result.pairs)} listed, section and CSV written in {figures['report_s_best']:.2f} s "
        f"(best of {len(compare)}; load {figures['loadavg']})"
    )
    out = ROOT / "bench" / "results" / "similarity.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=1) + "\n")
    print(f"written: {out}")


if __name__ == "__main__":
    main()
