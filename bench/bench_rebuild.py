"""One edited chapter back on screen: ``make book``'s build after an author edits one chapter.

The book's sources are copied to a temporary folder (as ``bench_book.py`` does) and built once
(cold, or ``--work`` names a folder a previous run kept with ``--keep``). Then, for one chapter,
three rebuilds with the README's flags are timed from the start of the build to the rebuilt page
on disk, each checked to show the edit:

* ``prose``: a sentence added to the chapter's text (nothing is executed again);
* ``code``: a comment added to the chapter's first code cell (the chapter is executed again);
* ``nothing``: no change at all (``make book`` itself would skip this build).

For each it prints the seconds, how many claim tests the build ran (the log line of
``book/_ext/attnmath_claims.py``) and which chapters were executed again, and writes
``bench/results/rebuild.json``.

    python bench/bench_rebuild.py [--chapter book/04_masking.md] [--work DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_book import ROOT, build, copy_sources  # noqa: E402  (bench/bench_book.py)

TARGET_SECONDS = 20
MARK = "bench-rebuild-edit"


def edit_prose(text: str, n: int) -> str:
    """``text`` with a sentence after its title (the first line starting with ``# ``)."""
    return re.sub(r"^(# .+)$", rf"\1\n\nA sentence added by the rebuild benchmark ({MARK}-{n}).", text,
                  count=1, flags=re.M)


def edit_code(text: str, n: int) -> str:
    """``text`` with a comment at the end of its first code cell."""
    start = text.index("```{code-cell}")
    end = text.index("\n```", start + 3)
    return text[:end] + f"\n# {MARK}-{n}" + text[end:]


def rebuild(work: Path, chapter: str, edit, n: int) -> dict:
    source = work / chapter
    if edit is not None:
        source.write_text(edit(source.read_text(), n))
    else:
        os.utime(source)
    seconds, log = build(work)
    page = (work / "_build" / "html" / chapter).with_suffix(".html").read_text()
    claims = re.search(r"running (\d+) of (\d+) claim tests", log)
    return {
        "seconds": round(seconds, 1),
        "page_shows_the_edit": edit is None or f"{MARK}-{n}" in page,
        "claim_tests_run": f"{claims.group(1)} of {claims.group(2)}" if claims else "none",
        "executed": sorted({Path(m).name for m in re.findall(r"(\S+?)\.md: Executing notebook", log)}),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapter", default="book/04_masking.md", help="the chapter to edit")
    parser.add_argument("--work", type=Path, help="a folder kept by an earlier run (--keep): no cold build")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder, for --work")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "rebuild.json")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    work = args.work or copy_sources()
    try:
        if args.work is None:
            print("cold build ...", flush=True)
            print(f"cold build   : {build(work)[0]:6.1f} s", flush=True)
        stamp = int(time.time())
        results = {}
        for name, edit in (("prose", edit_prose), ("code", edit_code), ("nothing", None)):
            results[name] = rebuild(work, args.chapter, edit, stamp)
            r = results[name]
            print(f"{name:8s} edit: {r['seconds']:6.1f} s to the rebuilt page (target {TARGET_SECONDS} s); "
                  f"claim tests run: {r['claim_tests_run']}; executed again: {r['executed'] or 'none'}; "
                  f"page shows the edit: {r['page_shows_the_edit']}", flush=True)
        report = {"chapter": args.chapter, "rebuilds": results, "target_seconds": TARGET_SECONDS,
                  "cpus": os.cpu_count(), "load_average_before": load_before,
                  "load_average": os.getloadavg(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"written: {args.out}")
    finally:
        if args.keep:
            print(f"kept: {work} (rerun with --work {work})")
        elif args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
