"""Similarity evidence for a large class: seconds to compare N students, and the page it makes.

The class is built from the 43 answers to ``01_softmax`` Part 1 of ``tests/grading/similarity/``
(30 honest answers and 13 planted copies): student ``i`` hands in answer ``i % 43``, renamed
after the first round, with a comment added and, every other round, a line of its own. So every
answer is shared by about N/43 students (a class of copiers: the most groups, and the largest
page, the method makes). Every student also answers Part 3 (``softmax_vjp``) with one of four
two-line answers that the task nearly forces (the answers that filled the old report): none of
them may be listed.

Measures the comparison and the page and CSV written (best of ``--repeat``), the page's bytes
and, with Chromium (``/usr/bin/chromium`` or ``$ATTNMATH_CHROMIUM``), its height in CSS pixels at
1400 px wide, as it opens and with every "show more" open. Prints the figures and writes
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
sys.path.insert(0, str(ROOT / "book" / "_ext"))

from similarity_class import ANSWERS, PART, rename  # noqa: E402

from attngrade import similarity  # noqa: E402

FORCED = [  # two-line answers to softmax_vjp that the task nearly forces
    "def softmax_vjp(p, g):\n    return p * (g - (p * g).sum(axis=-1, keepdims=True))\n",
    "def softmax_vjp(p, g):\n    s = np.sum(g * p, axis=-1, keepdims=True)\n    return p * (g - s)\n",
    "def softmax_vjp(p, g):\n    dot = (p * g).sum(-1, keepdims=True)\n    return p * g - p * dot\n",
    "def softmax_vjp(p, g):\n    return p * g - p * np.sum(p * g, axis=-1)[..., None]\n",
]


def make_class(n: int) -> dict:
    """``n`` students' answers to Parts 1 and 3 (see the module's text)."""
    base = [ANSWERS[s][PART] for s in sorted(ANSWERS)]
    out = {}
    for i in range(n):
        code, round_ = base[i % len(base)], i // len(base)
        if round_:
            code = f"# student {i}\n" + rename(code, i)
            if round_ % 2:
                code = code.replace("\n", f"\n    unused_{i} = {i}\n", 1) if code.count("\n") > 2 else code
        out[f"student{i:04d}"] = {PART: code, "softmax_vjp": FORCED[i % len(FORCED)]}
    return out


def course() -> dict:
    release = json.loads((ROOT / "exercises/01_softmax/softmax.ipynb").read_text())
    solution = json.loads((ROOT / "solutions/01_softmax/softmax.ipynb").read_text())
    return similarity.course_code(release, solution)


def page_heights(path: Path) -> dict | None:
    """The page's height in CSS pixels at 1400 px wide: as it opens, and with every group shown."""
    from headless_chromium import ARGS, find_chromium

    chromium = find_chromium()
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=ARGS[1:])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(path.as_uri())
        opened = page.evaluate("document.documentElement.scrollHeight")
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        everything = page.evaluate("document.documentElement.scrollHeight")
        browser.close()
    return {"as_opened_px": opened, "all_shown_px": everything}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="students (default 300)")
    ap.add_argument("--repeat", type=int, default=3, help="runs; the best is reported (default 3)")
    args = ap.parse_args()
    answers, code = make_class(args.n), course()
    compare, report, result = [], [], None
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(max(1, args.repeat)):
            t0 = time.perf_counter()
            result = similarity.run(answers, code)
            t1 = time.perf_counter()
            html_path, csv_path = similarity.write_report(Path(tmp), result, "bench")
            t2 = time.perf_counter()
            compare.append(t1 - t0)
            report.append(t2 - t1)
        heights = page_heights(html_path)
        page_bytes, csv_bytes = html_path.stat().st_size, csv_path.stat().st_size
    forced = [g for g in result.groups if g.part == "softmax_vjp"]
    figures = {
        "students": args.n,
        "parts": [PART, "softmax_vjp"],
        "pairs_compared": args.n * (args.n - 1),
        "groups": len(result.groups),
        "pairs_listed": len(result.pairs),
        "forced_answer_groups": len(forced),
        "page_bytes": page_bytes,
        "csv_bytes": csv_bytes,
        "page_height": heights,
        "compare_s_best": round(min(compare), 3),
        "report_s_best": round(min(report), 3),
        "runs": len(compare),
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "loadavg": open("/proc/loadavg").read().split()[:3] if Path("/proc/loadavg").exists() else None,
        "python": platform.python_version(),
    }
    print(
        f"similarity of {args.n} students on 2 parts: compared in {figures['compare_s_best']:.2f} s, "
        f"{len(result.groups)} groups ({len(result.pairs)} pairs, {len(forced)} of forced answers) listed; "
        f"page {page_bytes / 1024:.0f} KiB and CSV {csv_bytes / 1024:.0f} KiB written in "
        f"{figures['report_s_best']:.2f} s; page height {heights} (best of {len(compare)}; load {figures['loadavg']})"
    )
    out = ROOT / "bench" / "results" / "similarity.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=1) + "\n")
    print(f"written: {out}")


if __name__ == "__main__":
    main()
