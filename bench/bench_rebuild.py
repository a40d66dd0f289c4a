"""The book loop: a cold ``make book`` and one edited chapter back on screen.

The book's sources are copied to a temporary folder (as ``bench_book.py`` does, with the test
settings and MathJax's ``node_modules`` as ``make book`` has them; the chapters import the copy's
library) and built as ``make book`` builds them (``book/_ext/build_book.py``): once cold (empty
``_build``, the environment installed), or not when ``--work`` names a folder that a previous
run kept with ``--keep``. Then, for one chapter, four rebuilds are timed from the start of the
command to the rebuilt page on disk, each checked to show the edit:

* ``touch``: the chapter saved again unchanged (what an editor's save without a change does);
* ``prose``: a sentence added to the chapter's text (nothing is executed again);
* ``code``: a comment added to the chapter's first code cell (the chapter is executed again);
* ``nothing``: no change at all (``make book`` itself skips this build; timed for reference).

Every build runs with ``ATTNMATH_BUILD_TRACE`` (``book/_ext/attnmath_trace.py``), so each
result also has the time of each phase of the build: start-up until the extensions load,
deciding what is outdated (the chapters executed ahead, the claim tests started), reading,
waiting for the claim tests, writing, and what runs after writing. It prints the seconds, the
phases, how many claim tests the build ran and which chapters it executed, and writes
``bench/results/rebuild.json``.

Each build's CPU seconds (user and system time of the build and every process it started, the
chapters' kernels included) are reported beside its wall-clock seconds: on a shared machine the
wall-clock time depends on the other work running, the CPU time much less. ``--cold-only`` stops
after the cold build (and writes ``bench/results/rebuild-cold.json`` unless ``--out`` is given),
with each chapter's execution seconds from the execution cache.

    python bench/bench_rebuild.py [--chapter book/04_masking.md] [--commit REV] [--work DIR] [--keep]
                                  [--cold-only]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
from bench_book import COPY, ROOT, chapter_times, copy_sources  # noqa: E402  (bench/bench_book.py)
from build_book import COMMAND  # noqa: E402  (book/_ext/build_book.py: make book's build)

TARGET_SECONDS = 20
TARGET_COLD_SECONDS = 90
MARK = "bench-rebuild-edit"
#: Besides what bench_book.py copies: the test settings (the claim tests run in the copy) and
#: the GPU benchmark, whose FLOP count and shapes chapter 8 imports (where the sources have it).
EXTRA = ["pyproject.toml", "bench/bench_flash_gpu.py"]
_TRACE = re.compile(r"^\[trace\]\s+([\d.]+) s\s+\(\+\s*([\d.]+) s\)\s+(.*?)(?:  (.*))?$")


def prepare(commit: str | None = None) -> Path:
    """A temporary copy of the book's sources (of the working tree, or of ``commit``), built as
    ``make book`` builds the repository."""
    work = copy_sources()
    if commit is not None:  # the same files, as committed
        for rel in COPY:
            shutil.rmtree(work / rel) if (work / rel).is_dir() else (work / rel).unlink()
        extra = [rel for rel in EXTRA if subprocess.run(["git", "cat-file", "-e", f"{commit}:{rel}"],
                                                        cwd=ROOT, capture_output=True).returncode == 0]
        archive = subprocess.run(["git", "archive", commit, *COPY, *extra], cwd=ROOT, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)
    for rel in EXTRA if commit is None else []:
        if (ROOT / rel).exists():
            shutil.copy2(ROOT / rel, work / rel)
    if (ROOT / "node_modules").is_dir():
        (work / "node_modules").symlink_to(ROOT / "node_modules")
    return work


def phases(stderr: str) -> list[dict]:
    """The build's trace lines: seconds since the start, seconds since the previous line, what."""
    out = []
    for line in stderr.splitlines():
        match = _TRACE.match(line)
        if match:
            out.append({"at": float(match[1]), "took": float(match[2]), "phase": match[3],
                        **({"detail": match[4][:160]} if match[4] else {})})
    return out


def _children_cpu() -> float:
    """CPU seconds (user and system) of the waited-for child processes of this one, so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build(work: Path) -> tuple[float, float, str, list[dict]]:
    """Build the book in ``work`` as ``make book`` does: the seconds, the CPU seconds, the log and
    the phases."""
    started, cpu = time.time(), _children_cpu()
    env = dict(os.environ, ATTNMATH_BUILD_TRACE=repr(started), PYTHONPATH=str(work / "lib"),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run([sys.executable, str(work / "book" / "_ext" / "build_book.py"), *COMMAND],
                          cwd=work, env=env, capture_output=True, text=True)
    seconds, cpu = time.time() - started, _children_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit(f"book build failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return seconds, cpu, proc.stdout, phases(proc.stderr)


def edit_prose(text: str, n: int) -> str:
    """``text`` with a sentence after its title (the first line starting with ``# ``)."""
    return re.sub(r"^(# .+)$", rf"\1\n\nA sentence added by the rebuild benchmark ({MARK}-{n}).", text,
                  count=1, flags=re.M)


def edit_code(text: str, n: int) -> str:
    """``text`` with a comment at the end of its first code cell."""
    start = text.index("```{code-cell}")
    end = text.index("\n```", start + 3)
    return text[:end] + f"\n# {MARK}-{n}" + text[end:]


def touch(text: str, n: int) -> str:
    """``text`` as it is (saved again: a newer time stamp, the same text)."""
    return text


def rebuild(work: Path, chapter: str, edit, n: int) -> dict:
    source = work / chapter
    if edit is not None:
        time.sleep(0.01)  # a time stamp newer than the last build's pages
        source.write_text(edit(source.read_text(), n))
    seconds, cpu, log, trace = build(work)
    page = (work / "_build" / "html" / chapter).with_suffix(".html").read_text()
    claims = re.search(r"running (\d+) of (\d+) claim tests", log)
    return {
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
        "page_shows_the_edit": edit not in (edit_prose, edit_code) or f"{MARK}-{n}" in page,
        "claim_tests_run": f"{claims.group(1)} of {claims.group(2)}" if claims else "none",
        "executed": sorted({Path(m).name for m in re.findall(r"(\S+?)\.md: Executing notebook", log)}),
        "phases": trace,
    }


def show(name: str, result: dict, target: int) -> None:
    print(f"{name:8s}: {result['seconds']:6.1f} s (target {target} s), {result['cpu_seconds']:6.1f} CPU s; "
          f"claim tests run: "
          f"{result.get('claim_tests_run', 'all')}; executed again: {result.get('executed') or 'none'}; "
          f"page shows the edit: {result.get('page_shows_the_edit', True)}", flush=True)
    for chapter, seconds in result.get("chapters_executed_seconds", {}).items():
        print(f"    executed {chapter}: {seconds:6.2f} s", flush=True)
    for p in result["phases"]:
        print(f"    {p['at']:7.2f} s  (+{p['took']:6.2f})  {p['phase']}"
              f"{'  ' + p['detail'][:90] if 'detail' in p else ''}", flush=True)


def cold(work: Path) -> dict:
    """The cold build of ``work``: seconds, CPU seconds, phases and each chapter's execution seconds."""
    seconds, cpu, _, trace = build(work)
    chapters = chapter_times(work)
    return {"seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1),
            "chapters_executed_seconds": dict(sorted(chapters.items(), key=lambda item: -item[1])),
            "phases": trace}


def rebuilds(work: Path, chapter: str) -> dict:
    """The four timed rebuilds after editing ``chapter`` (touch, prose, code, nothing)."""
    stamp, results = int(time.time()), {}
    for name, edit in (("touch", touch), ("prose", edit_prose), ("code", edit_code), ("nothing", None)):
        results[name] = rebuild(work, chapter, edit, stamp)
        show(name, results[name], TARGET_SECONDS)
    return results


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapter", default="book/04_masking.md", help="the chapter to edit")
    parser.add_argument("--work", type=Path, help="a folder kept by an earlier run (--keep): no cold build")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder, for --work")
    parser.add_argument("--commit", help="build the sources of this commit, not of the working tree")
    parser.add_argument("--cold-only", action="store_true", help="only the cold build (not with --work)")
    parser.add_argument("--out", type=Path, help="the report (default bench/results/rebuild.json, "
                        "or rebuild-cold.json with --cold-only)")
    args = parser.parse_args(argv)
    if args.cold_only and args.work is not None:
        parser.error("--cold-only builds cold, --work does not: give one of them")
    out = args.out or ROOT / "bench" / "results" / ("rebuild-cold.json" if args.cold_only else "rebuild.json")
    report = {"chapter": args.chapter, "target_seconds": TARGET_SECONDS,
              "target_cold_seconds": TARGET_COLD_SECONDS, "cpus": os.cpu_count(),
              "load_average_before": os.getloadavg(),
              "command": ["python", "book/_ext/build_book.py", *COMMAND]}
    work = args.work or prepare(args.commit)
    try:
        if args.work is None:
            report["cold"] = cold(work)
            show("cold", report["cold"], TARGET_COLD_SECONDS)
        if not args.cold_only:
            report["rebuilds"] = rebuilds(work, args.chapter)
        report.update(load_average=os.getloadavg(), date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"written: {out}")
    finally:
        if args.keep:
            print(f"kept: {work} (rerun with --work {work})")
        elif args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
