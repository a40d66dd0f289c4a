"""The whole book as one PDF: ``make pdf`` (``python book/_ext/make_pdf.py``).

It prints the HTML book that ``make book`` built (``_build/html``; ``--html`` names another
build, as the tests do with theirs), so the book is built and executed once for both. Headless
Chromium, driven by Playwright, opens the first page of ``_toc.yml`` that typesets mathematics
from a loopback server; a script in that page fetches every page of the table of contents in
reading order and puts their articles one after the other into it (each page from a new sheet,
its ids prefixed with its name so that links between pages become links within the PDF, its
stylesheets added), MathJax typesets the whole, the figures load, and Chromium prints it to PDF
with the book's print styles (``book/_static/attnmath.css``: no navigation, code wrapped rather
than clipped) and an outline of its headings. No LaTeX is needed; Chromium is the same one the
browser tests use (``/usr/bin/chromium``, Debian's ``chromium`` package, or
``$ATTNMATH_CHROMIUM``).

    python book/_ext/make_pdf.py [--out _build/pdf/book.pdf] [--html FOLDER_OF_THE_HTML_BUILD]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from headless_chromium import ARGS, HOW_TO_GET, find_chromium  # noqa: E402  (book/_ext)

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "_build" / "pdf" / "book.pdf"
DEFAULT_HTML = ROOT / "_build" / "html"

# In the page of the first chapter with mathematics: every page of the book in reading order,
# in place of that page's own article. Ids get the page's key as prefix ("book-03_gradients--x"),
# links to a page of the book become links to its part, other links absolute URLs.
_ASSEMBLE = r"""async (docs) => {
  const key = (doc) => doc.replace(/[^A-Za-z0-9_-]/g, '-');
  const at = (doc) => new URL('/' + doc + '.html', location.origin);
  const byPath = new Map(docs.map((d) => [at(d).pathname, key(d)]));
  const styles = new Set(Array.from(document.querySelectorAll('link[rel=stylesheet]')).map((l) => l.href));
  const main = document.querySelector('article.bd-article');
  const parts = [];
  for (const doc of docs) {
    const url = at(doc);
    const response = await fetch(url);
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    const page = new DOMParser().parseFromString(await response.text(), 'text/html');
    page.querySelectorAll('link[rel=stylesheet]').forEach((link) => {
      const href = new URL(link.getAttribute('href'), url).href;
      if (!styles.has(href)) {
        styles.add(href);
        const copy = document.createElement('link');
        copy.rel = 'stylesheet'; copy.href = href;
        document.head.appendChild(copy);
      }
    });
    const article = page.querySelector('article.bd-article');
    if (!article) throw new Error(`${url}: no article`);
    const prefix = key(doc) + '--';
    article.querySelectorAll('[id]').forEach((e) => { e.id = prefix + e.id; });
    article.querySelectorAll('[src]').forEach((e) => { e.src = new URL(e.getAttribute('src'), url).href; });
    article.querySelectorAll('img[loading]').forEach((e) => { e.loading = 'eager'; });
    article.querySelectorAll('a[href]').forEach((a) => {
      const target = new URL(a.getAttribute('href'), url);
      const part = target.origin === location.origin ? byPath.get(target.pathname) : undefined;
      if (part === undefined) a.href = target.href;
      else a.href = '#' + part + (target.hash ? '--' + decodeURIComponent(target.hash.slice(1)) : '');
    });
    const section = document.createElement('section');
    section.id = key(doc);
    if (parts.length) section.style.breakBefore = 'page';
    section.append(...article.childNodes);
    parts.push(section);
  }
  main.replaceChildren(...parts);
  // The theme prints the page's title above its article and hides the article's first heading;
  // here every part's title is its own heading, in the outline too.
  document.querySelectorAll('#jb-print-docs-body').forEach((e) => e.remove());
  main.querySelectorAll('h1').forEach((h) => { h.style.display = 'block'; });
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
    if (MathJax.typesetClear) MathJax.typesetClear();
    await MathJax.typesetPromise([main]);
  }
  document.documentElement.classList.remove('attnmath-typesetting');
  if (document.fonts) await document.fonts.ready;
  await Promise.all(Array.from(document.images).map((img) => img.complete ? null :
    new Promise((done) => { img.onload = img.onerror = done; })));
  return parts.length;
}"""


def toc_files(root: Path = ROOT) -> list[str]:
    """Every document of ``_toc.yml`` in reading order, as paths without suffix (``book/intro``)."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


def chromium() -> str:
    path = find_chromium()
    if path is None:
        raise SystemExit(f"Chromium not found: make pdf prints with it ({HOW_TO_GET})")
    return path


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def host_page(html: Path, docs: list[str]) -> str:
    """The page the book is assembled in: the first document that loads MathJax."""
    missing = [d for d in docs if not (html / f"{d}.html").is_file()]
    if missing:
        raise SystemExit(f"{html} is not a build of this book: no page for {missing[:5]} (run `make book`)")
    for doc in docs:
        if "mathjax" in (html / f"{doc}.html").read_text():
            return doc
    return docs[0]


def print_pdf(html: Path, out: Path) -> Path:
    """Print every page of ``_toc.yml`` from the HTML build ``html``, in order, to ``out``."""
    from playwright.sync_api import sync_playwright

    docs = toc_files()
    host = host_page(html, docs)
    handler = functools.partial(_QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium(), headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/{host}.html",
                      wait_until="load", timeout=300_000)
            page.emulate_media(media="print")
            page.evaluate(_ASSEMBLE, docs)
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
    parser.add_argument("--html", type=Path, default=DEFAULT_HTML,
                        help="the HTML build to print (default: _build/html, from `make book`)")
    args = parser.parse_args(argv)
    print(f"The book is at {print_pdf(args.html.resolve(), args.out)}")


if __name__ == "__main__":
    main()
