"""Page weight, MathJax time and layout shift of the built book, read as a reader's browser would.

Serves a built book (``ATTNMATH_BOOK_HTML`` or ``_build/html``) on loopback and opens every page
of the table of contents in headless Chromium (``/usr/bin/chromium`` or ``$ATTNMATH_CHROMIUM``),
each in a fresh browser context (an empty cache: a first visit). For each page it records

* the bytes and the number of requests of the first load, counted by the server (which, like
  Python's http.server, does not compress), and the bytes a server that gzips its responses
  (level 6) would send;
* when the page's mathematics is readable, in seconds after navigation start: the latest of its
  first contentful paint, the moment its fonts (MathJax's among them) have loaded and, on a page
  that still runs MathJax in the browser, the moment MathJax has typeset it. The book's formulas
  are typeset when it is built (book/_ext/attnmath_mathjax.py), and no page hides its text;
* the cumulative layout shift (CLS) until then and one second after;
* what the bytes are: the sums by kind of resource (the page, stylesheets, scripts, fonts,
  MathJax, figures, ...) and the largest resources, raw and gzipped.

Prints a table and the breakdown of the heaviest chapter, and writes ``bench/results/pages.json``
(or ``--out``). Targets: a chapter's first load at most 1.5 MB, readable mathematics within 1 s
on a quiet machine, CLS at most 0.1. Figures load lazily (``loading="lazy"``), so the first load counts only
those near the top of the page.

    python bench/bench_pages.py [--html _build/html] [--repeat 3] [--out FILE] [--pages DOC ...]
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import json
import os
import platform
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "book"))
from build import toc_files  # noqa: E402  (tests/book/build.py: the table of contents)
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from headless_chromium import ARGS, HOW_TO_GET, find_chromium  # noqa: E402  (book/_ext)

TARGETS = {"chapter_bytes": 1_500_000, "readable_seconds": 1.0, "cls": 0.1}
LARGEST = 12  # resources listed one by one for each page (all are summed by kind)

# Runs before the page's own scripts: note when MathJax finishes and add up the layout shifts.
_PROBE = """
window.__cls = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (!e.hadRecentInput) window.__cls += e.value;
}).observe({type: 'layout-shift', buffered: true});
const __poll = setInterval(() => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    clearInterval(__poll);
    MathJax.startup.promise.then(() => { window.__mathjaxDone = performance.now(); });
  }
}, 2);
document.addEventListener('DOMContentLoaded', () => {
  document.fonts.ready.then(() => { window.__fontsReady = performance.now(); });
});
"""
# When the page's mathematics is readable (milliseconds after navigation start), and what that
# waited for: the page's HTML parsed (DOMContentLoaded), its first contentful paint, its fonts.
_READABLE = """() => {
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  const nav = performance.getEntriesByType('navigation')[0];
  const fcp = paint ? paint.startTime : 0;
  return {readable: Math.max(fcp, window.__fontsReady || 0, window.__mathjaxDone || 0), fcp,
          fonts: window.__fontsReady || 0, parsed: nav ? nav.domContentLoadedEventStart : 0,
          html: nav ? nav.responseEnd : 0};
}"""
#: The moments :data:`_READABLE` reports besides the readable time, as named in the results.
PHASES = {"html": "html_seconds", "parsed": "parsed_seconds", "fcp": "fcp_seconds",
          "fonts": "fonts_seconds"}


def kind(path: str) -> str:
    """The kind of a resource of a page, for the breakdown of its weight."""
    path = path.split("?")[0]
    if "/mathjax/" in path:
        return "MathJax fonts" if "/fonts/woff" in path else "MathJax scripts"
    if path.endswith((".woff", ".woff2", ".ttf", ".otf")):
        return "fonts"
    if path.startswith("/_images/") or path.endswith((".svg", ".png", ".jpg", ".gif")):
        return "figures and images"
    if "search" in path or "language_data" in path:
        return "search"
    if path.endswith(".css"):
        return "stylesheets"
    if path.endswith(".js"):
        return "scripts"
    if path.endswith(".html"):
        return "page"
    return "other"


def breakdown(resources: list) -> dict:
    """Raw and gzipped bytes of a page's first load, summed by kind of resource."""
    kinds: dict = {}
    for path, raw, gz in resources:
        entry = kinds.setdefault(kind(path), {"bytes": 0, "gzip_bytes": 0, "requests": 0})
        entry["bytes"] += raw
        entry["gzip_bytes"] += gz
        entry["requests"] += 1
    return dict(sorted(kinds.items(), key=lambda item: -item[1]["bytes"]))


class CountingHandler(http.server.SimpleHTTPRequestHandler):
    log: list  # (path, bytes), shared by the server's threads

    def copyfile(self, source, outputfile):
        data = source.read()
        outputfile.write(data)
        self.log.append((self.path, len(data), len(gzip.compress(data, compresslevel=6))))

    def log_message(self, *args):
        pass


def measure(html: Path, repeat: int, docs: list[str]) -> dict:
    from playwright.sync_api import sync_playwright

    log: list = []
    handler = functools.partial(type("H", (CountingHandler,), {"log": log}), directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    chromium = find_chromium()
    if chromium is None:
        raise SystemExit(f"Chromium not found: the page benchmark needs it ({HOW_TO_GET})")
    pages = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
            for doc in docs:
                runs = []
                for _ in range(repeat):
                    context = browser.new_context(viewport={"width": 1280, "height": 900})
                    context.add_init_script(_PROBE)
                    page = context.new_page()
                    log.clear()
                    page.goto(base + f"{doc}.html", wait_until="load", timeout=60_000)
                    page.wait_for_function("() => (window.__mathjaxDone !== undefined || !window.MathJax)"
                                           " && window.__fontsReady !== undefined", timeout=60_000)
                    done = page.evaluate("() => window.__mathjaxDone")
                    moments = page.evaluate(_READABLE)
                    cls_at_mathjax = page.evaluate("() => window.__cls")
                    page.wait_for_timeout(1000)
                    resources = sorted(log, key=lambda r: -r[1])
                    runs.append({"bytes": sum(n for _, n, _ in log), "requests": len(log),
                                 "gzip_bytes": sum(g for _, _, g in log),
                                 "by_kind": breakdown(resources),
                                 "largest_resources": [
                                     {"path": p.split("?")[0], "bytes": n, "gzip_bytes": g}
                                     for p, n, g in resources[:LARGEST]],
                                 "mathjax_seconds": None if done is None else round(done / 1000, 3),
                                 "readable_seconds": round(moments["readable"] / 1000, 3),
                                 **{name: round(moments[key] / 1000, 3) for key, name in PHASES.items()},
                                 "cls": round(max(cls_at_mathjax, page.evaluate("() => window.__cls")), 4)})
                    context.close()
                median = sorted(runs, key=lambda r: r["readable_seconds"])[len(runs) // 2]
                pages[doc] = {**median, "readable_seconds_all": [r["readable_seconds"] for r in runs]}
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return pages


def _arguments(argv) -> tuple[argparse.Namespace, list[str]]:
    """The command line, and the pages it asks for (every page of the table of contents)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path,
                        default=Path(os.environ.get("ATTNMATH_BOOK_HTML") or ROOT / "_build" / "html"))
    parser.add_argument("--repeat", type=int, default=3, help="loads per page (the median is kept)")
    parser.add_argument("--out", type=Path,
                        help="where the figures are written (default: bench/results/pages.json, "
                             "or nowhere with --pages)")
    parser.add_argument("--pages", nargs="+", metavar="DOC",
                        help="only these pages of the table of contents (book/08_flash, ...); the "
                             "figures then go to --out only if it is given")
    args = parser.parse_args(argv)
    docs = toc_files()
    if args.pages:
        unknown = sorted(set(args.pages) - set(docs))
        if unknown:
            parser.error(f"--pages: not in the table of contents: {', '.join(unknown)}")
        docs = [d for d in docs if d in args.pages]
    elif args.out is None:
        args.out = ROOT / "bench" / "results" / "pages.json"
    if not (args.html / "index.html").exists():
        raise SystemExit(f"no built book at {args.html}: run `make book` or pass --html")
    return args, docs


def print_pages(pages: dict) -> None:
    """One line per page: weight, requests, readable time, MathJax, CLS and what 'readable' waited for."""
    print(f"{'page':28} {'KB':>7} {'KB gzip':>7} {'requests':>8} {'readable s':>10} {'MathJax s':>9} "
          f"{'CLS':>6}  {'HTML in':>7} {'parsed':>6} {'FCP':>5} {'fonts':>5}")
    for doc, r in pages.items():
        mj = "-" if r["mathjax_seconds"] is None else f"{r['mathjax_seconds']:.2f}"
        print(f"{doc:28} {r['bytes'] / 1000:7.0f} {r['gzip_bytes'] / 1000:7.0f} {r['requests']:8d} "
              f"{r['readable_seconds']:10.2f} {mj:>9} {r['cls']:6.3f}  {r['html_seconds']:7.2f} "
              f"{r['parsed_seconds']:6.2f} {r['fcp_seconds']:5.2f} {r['fonts_seconds']:5.2f}")


def summarise(pages: dict, chapters: dict, api: dict) -> dict:
    """The figures the targets are about, over all pages, the chapters and the API pages."""
    return {
        "chapter_bytes_max": max(r["bytes"] for r in chapters.values()),
        "chapter_gzip_bytes_max": max(r["gzip_bytes"] for r in chapters.values()),
        "api_pages": len(api),
        "api_bytes_max": max((r["bytes"] for r in api.values()), default=None),
        "api_mathjax_seconds_max": max((r["mathjax_seconds"] or 0 for r in api.values()), default=None),
        "mathjax_seconds_max": max(r["mathjax_seconds"] or 0 for r in pages.values()),
        "readable_seconds_max": max(r["readable_seconds"] for r in pages.values()),
        "pages_running_mathjax": sum(r["mathjax_seconds"] is not None for r in pages.values()),
        "cls_max": max(r["cls"] for r in pages.values()),
    }


def print_summary(summary: dict, chapters: dict, api: dict) -> None:
    """The summary in words, and the weight of the heaviest chapter by kind of resource."""
    print("worst chapter load {:.2f} MB ({:.2f} MB gzipped), readable maths within {:.2f} s, {} pages "
          "running MathJax in the browser, largest CLS {:.3f}".format(
              summary["chapter_bytes_max"] / 1e6, summary["chapter_gzip_bytes_max"] / 1e6,
              summary["readable_seconds_max"], summary["pages_running_mathjax"], summary["cls_max"]))
    if api:
        print("API reference, {} pages: heaviest load {:.2f} MB, slowest MathJax {:.2f} s, largest CLS "
              "{:.3f}".format(len(api), summary["api_bytes_max"] / 1e6, summary["api_mathjax_seconds_max"],
                              max(r["cls"] for r in api.values())))
    heaviest = max(chapters, key=lambda d: chapters[d]["bytes"])
    print(f"\nweight of {heaviest} by kind of resource:")
    for name, k in chapters[heaviest]["by_kind"].items():
        print(f"  {name:24} {k['bytes'] / 1000:7.0f} KB {k['gzip_bytes'] / 1000:7.0f} KB gzip "
              f"{k['requests']:4d} requests")
    print("  largest resources:")
    for r in chapters[heaviest]["largest_resources"][:8]:
        print(f"  {r['path']:60.60} {r['bytes'] / 1000:7.0f} KB {r['gzip_bytes'] / 1000:7.0f} KB gzip")


def main(argv=None) -> None:
    args, docs = _arguments(argv)
    started, load_before = time.time(), os.getloadavg()
    pages = measure(args.html, args.repeat, docs)
    load_after = os.getloadavg()
    print("load {} before, {} after the run (1, 5, 15 min)".format(
        *(" ".join(f"{x:.2f}" for x in load) for load in (load_before, load_after))))
    print_pages(pages)
    chapters = {d: r for d, r in pages.items() if Path(d).name[:2].isdigit()}
    if args.out is None or not chapters:
        print("no summary written" + ("" if chapters else ": no chapter among the pages measured"))
        return
    # the API reference: its index and a page per library module (book/api/<module>)
    api = {d: r for d, r in pages.items() if d == "book/api" or d.startswith("book/api/")}
    summary = summarise(pages, chapters, api)
    print_summary(summary, chapters, api)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "pages": pages, "summary": summary, "targets": TARGETS,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_average_before": load_before, "load_average_after": load_after},
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))}, indent=2) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
