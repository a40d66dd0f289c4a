"""The whole book as one PDF: ``make pdf`` (``python book/_ext/make_pdf.py``).

Jupyter Book builds the book as a single HTML page (the ``singlehtml`` builder, every chapter
executed, with the same execution cache as ``make book``); headless Chromium, driven by
Playwright, opens that page from a loopback server, waits until MathJax has typeset every formula
and the figures are loaded, and prints it to PDF with the book's print styles
(``book/_static/attnmath.css``: no navigation, code wrapped rather than clipped). No LaTeX is
needed; Chromium is the same one the browser tests use (``/usr/bin/chromium``, Debian's
``chromium`` package, or ``$ATTNMATH_CHROMIUM``).

    python book/_ext/make_pdf.py [--out _build/pdf/book.pdf] [--html FOLDER_WITH_INDEX_HTML]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from headless_chromium import ARGS, HOW_TO_GET, find_chromium  # noqa: E402  (book/_ext)

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "_build" / "pdf" / "book.pdf"

_SETTLE = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  if (document.fonts) await document.fonts.ready;
  await Promise.all(Array.from(document.images).map((img) => img.complete ? null :
    new Promise((done) => { img.onload = img.onerror = done; })));
  return true;
}"""


def chromium() -> str:
    path = find_chromium()
    if path is None:
        raise SystemExit(f"Chromium not found: make pdf prints with it ({HOW_TO_GET})")
    return path


def build_single_page(folder: Path) -> Path:
    """Build the book as one HTML page under ``folder``; return the folder with index.html."""
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run([os.path.join(bindir, "jupyter-book"), "build", str(ROOT), "--builder",
                           "singlehtml", "--path-output", str(folder), "-n", "--keep-going"],
                          env=env, capture_output=True, text=True, check=False)
    html = folder / "_build" / "singlehtml"
    if proc.returncode != 0 or not (html / "index.html").exists():
        raise SystemExit(f"the single-page build failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    return html


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def single_page(html: Path) -> str:
    """The single page's file name, at the top of ``html``.

    The single-page builder writes the book into the root document's file (``book/intro.html``)
    but links its assets relative to the top folder (``_static/...``); a copy at the top level
    (``book.html``) finds them."""
    import yaml

    root = yaml.safe_load((ROOT / "_toc.yml").read_text())["root"]
    source = html / f"{root}.html"
    if not source.exists():
        raise SystemExit(f"the single-page build has no {source}")
    shutil.copy(source, html / "book.html")
    return "book.html"


def print_pdf(html: Path, out: Path) -> Path:
    """Print ``html/index.html``, served on loopback, to ``out`` with headless Chromium."""
    from playwright.sync_api import sync_playwright

    page_file = single_page(html)
    handler = functools.partial(_QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium(), headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/{page_file}",
                      wait_until="load", timeout=300_000)
            page.emulate_media(media="print")
            page.evaluate(_SETTLE)
            page.pdf(path=str(out), format="A4", print_background=True, outline=True,
                     tagged=True, margin={"top": "18mm", "bottom": "18mm", "left": "16mm",
                                          "right": "16mm"})
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the PDF to write")
    parser.add_argument("--html", type=Path, help="an existing single-page build to print")
    args = parser.parse_args(argv)
    html = args.html or build_single_page(args.out.parent / "singlehtml-build")
    print(f"The book is at {print_pdf(html, args.out)}")


if __name__ == "__main__":
    main()
