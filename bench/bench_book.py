"""Book build time: cold (empty execution cache, every chapter executed) and cached.

The book's sources are copied to a temporary folder so that the repository's own
``_build/`` (and its execution cache) is neither used nor disturbed; the book is built there
twice with the README's flags (``-n -W --keep-going``): first cold, then again with the cache
the first build filled. Prints both wall-clock times and each chapter's execution time (from
the jupyter-cache records), and writes ``bench/results/book.json``.

    python bench/bench_book.py [--out bench/results/book.json]
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

ROOT = Path(__file__).resolve().parents[1]
COPY = ["_config.yml", "_toc.yml", "book", "lib", "tests", "bench/results", "exercises"]


def copy_sources() -> Path:
    """A new temporary folder holding what the book is built from."""
    work = Path(tempfile.mkdtemp(prefix="bench-book-"))
    for rel in COPY:
        src, dst = ROOT / rel, work / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        else:
            shutil.copy2(src, dst)
    return work


def build(root: Path) -> tuple[float, str]:
    """Build the book in ``root`` as ``make book`` does; the seconds it took and its log."""
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    started = time.perf_counter()
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "jupyter-book"), "build", str(root),
                           "-n", "-W", "--keep-going"], cwd=root, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"book build failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    return seconds, proc.stdout


def chapter_times(root: Path) -> dict[str, float]:
    from jupyter_cache import get_cache

    cache = get_cache(root / "_build" / ".jupyter_cache")
    times = {}
    for record in cache.list_cache_records():
        data = record.data or {}
        uri = Path(record.uri).name if record.uri else str(record.pk)
        if "execution_seconds" in data:
            times[uri] = round(float(data["execution_seconds"]), 2)
    return times


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "book.json",
                        help="where the figures are written")
    args = parser.parse_args(argv)
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    work = copy_sources()
    try:
        print("cold build (empty execution cache) ...", flush=True)
        cold, _ = build(work)
        print(f"cold build   : {cold:6.1f} s", flush=True)
        cached, _ = build(work)
        print(f"cached build : {cached:6.1f} s", flush=True)
        chapters = chapter_times(work)
        for name, seconds in sorted(chapters.items()):
            print(f"  {name:24s} executed in {seconds:6.2f} s")
        result = {
            "cold_seconds": round(cold, 1), "cached_seconds": round(cached, 1),
            "chapter_execution_seconds": chapters, "target_cold_seconds": 90,
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
            "load_average_before": load_before,
            "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        }
        out = args.out
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"written: {out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
