"""The whole book as one PDF: ``make pdf`` (``python book/_ext/make_pdf.py``).

It prints the HTML book that ``make book`` built (``_build/html``; ``--html`` names another
build, as the tests do with theirs), so the book is built and executed once for both, and its
mathematics, typeset when the book was built, prints as the reader sees it. The print pipeline is
a CSS paged-media engine made for books, paged.js (npm ``pagedjs``, installed with the build's
MathJax by ``npm ci`` from ``package-lock.json``), run in headless Chromium driven by Playwright:
``print_book.js`` puts every page of ``_toc.yml`` in reading order behind a title page and a
table of contents, paged.js lays them out as A4 pages following ``print_book.css`` (page numbers
and running heads in the margins, contents numbered by ``target-counter()``, each chapter from a
new page, the text in Source Serif 4 from npm ``@fontsource/source-serif-4``), and Chromium
prints those pages, with an outline of the headings. The API reference is the one page that lists
the library's modules; the modules' own pages stay online. No LaTeX is needed; Chromium is the
same one the browser tests use (``/usr/bin/chromium``, Debian's ``chromium`` package, or
``$ATTNMATH_CHROMIUM``).

    python book/_ext/make_pdf.py [--out _build/pdf/book.pdf] [--html FOLDER_OF_THE_HTML_BUILD]
"""

from __future__ import annotations

import argparse
import functools
import html as html_text
import http.server
import re
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from headless_chromium import ARGS, HOW_TO_GET, find_chromium  # noqa: E402  (book/_ext)

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
DEFAULT_OUT = ROOT / "_build" / "pdf" / "book.pdf"
DEFAULT_HTML = ROOT / "_build" / "html"
NODE_MODULES = ROOT / "node_modules"
PAGED_JS = NODE_MODULES / "pagedjs" / "dist" / "paged.js"
FONT = NODE_MODULES / "@fontsource" / "source-serif-4"
#: The weights and styles of the book face that the print styles use.
FONT_FACES = ("400.css", "400-italic.css", "600.css", "600-italic.css", "700.css", "700-italic.css")
#: Pages of the table of contents under this folder are not printed: the API reference's index
#: page (``book/api``) lists their modules and stands for them in the PDF.
OMITTED_UNDER = "book/api/"
#: What a reader of paper cannot use, left out of the printed pages (print_book.js removes it,
#: and the tests know the printed text by it): permalink signs, copy buttons, the links from
#: listings to the online API pages, code cells the HTML folds away (imports and set-up),
#: what a closed dropdown holds (the claim tests' code; its summary is printed), the figures'
#: drawings for a phone's screen (book/_ext/attnmath_phone.py), and the interactive figures
#: (the static figure beside each is printed).
UNPRINTED = ("a.headerlink", "button", ".copybtn", ".listing-api", ".toggle-details__summary",
             "details.hide", ".cell.tag_hide-input > .cell_input", ".cell.tag_hide-cell",
             "details:not([open]) > :not(summary)", "picture > source", ".attn-interactive")
#: What the print server serves under /_print/ besides the HTML build.
PRINT_FILES = {"paged.js": PAGED_JS, "print_book.js": HERE / "print_book.js",
               "print_book.css": HERE / "print_book.css"}


def toc_files(root: Path = ROOT) -> list[str]:
    """Every document of ``_toc.yml`` in reading order, as paths without suffix (``book/intro``)."""
    return [doc for part in toc_parts(root) for doc in part["docs"]]


def toc_parts(root: Path = ROOT) -> list[dict]:
    """The parts of ``_toc.yml`` in reading order, each ``{"caption", "docs"}``; the root page
    (the landing page) is a part of its own without a caption."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    parts = [{"caption": "", "docs": [toc["root"]]}]

    def walk(entries, docs):
        for entry in entries or []:
            if "file" in entry:
                docs.append(entry["file"])
            walk(entry.get("sections"), docs)
        return docs

    for part in toc.get("parts", []):
        parts.append({"caption": part.get("caption", ""), "docs": walk(part.get("chapters"), [])})
    if toc.get("chapters"):
        parts.append({"caption": "", "docs": walk(toc.get("chapters"), [])})
    return parts


def printed_docs(docs: list[str]) -> list[str]:
    """The pages of ``docs`` that the PDF prints (all but the API reference's module pages)."""
    return [doc for doc in docs if not doc.startswith(OMITTED_UNDER)]


def book_facts(root: Path = ROOT) -> dict:
    """What the title page and the layout script need: title, author, year and content licence
    from ``_config.yml``, the parts, the pages left out with the page that stands for each, and
    what is left out of every printed page (a CSS selector)."""
    import yaml

    config = yaml.safe_load((root / "_config.yml").read_text())
    footer = (config.get("html") or {}).get("extra_footer", "")
    licence = html_text.unescape(re.sub(r"<[^>]+>", "", footer)).strip()
    docs = toc_files(root)
    omitted = {doc: OMITTED_UNDER.rstrip("/") for doc in docs if doc not in printed_docs(docs)}
    return {"title": str(config.get("title", "")), "author": str(config.get("author", "")),
            "year": str(config.get("copyright", "")), "licence": licence,
            "parts": toc_parts(root), "omitted": omitted, "unprinted": ", ".join(UNPRINTED),
            "css": "/_print/print_book.css"}


def chromium() -> str:
    path = find_chromium()
    if path is None:
        raise SystemExit(f"Chromium not found: make pdf prints with it ({HOW_TO_GET})")
    return path


def _blank_page(title: str) -> bytes:
    """The page the book is laid out in: the book face, paged.js and the layout script; its
    ``title`` is the PDF's title."""
    faces = "".join(f'<link rel="stylesheet" href="/_print/font/{face}">' for face in FONT_FACES)
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<title>{html_text.escape(title)}</title>'
            f'<link rel="icon" href="data:,">{faces}<script src="/_print/paged.js"></script>'
            '<script src="/_print/print_book.js"></script></head><body></body></html>').encode()


class _PrintHandler(http.server.SimpleHTTPRequestHandler):
    """The HTML build, and under /_print/ the blank page, paged.js, the print styles and the
    book face's files from node_modules."""

    def log_message(self, *args):
        pass

    def translate_path(self, path):
        name = unquote(urlsplit(path).path)
        if name.startswith("/_print/font/"):
            found = (FONT / name[len("/_print/font/"):]).resolve()
            return str(found) if FONT in found.parents else str(FONT / "missing")
        if name.startswith("/_print/") and name[len("/_print/"):] in PRINT_FILES:
            return str(PRINT_FILES[name[len("/_print/"):]])
        return super().translate_path(path)

    def do_GET(self):
        if urlsplit(self.path).path != "/_print/book.html":
            return super().do_GET()
        body = _blank_page(book_facts()["title"])
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def check_inputs(html: Path, docs: list[str]) -> None:
    """A build of this book at ``html``, and paged.js and the book face in node_modules."""
    missing = [d for d in docs if not (html / f"{d}.html").is_file()]
    if missing:
        raise SystemExit(f"{html} is not a build of this book: no page for {missing[:5]} (run `make book`)")
    absent = [str(p.relative_to(ROOT)) for p in (PAGED_JS, FONT / "files") if not p.exists()]
    if absent:
        raise SystemExit(f"{', '.join(absent)} not found: make pdf lays the book out with paged.js "
                         "and the npm packages of package-lock.json (install Node.js with npm, then "
                         "run `npm ci` in the repository root, as `make book` does)")


def print_pdf(html: Path, out: Path) -> Path:
    """Print every page of ``_toc.yml`` but the API modules' own, from the HTML build ``html``,
    in order, as a book to ``out``."""
    from playwright.sync_api import sync_playwright

    book = book_facts()
    check_inputs(html, printed_docs(toc_files()))
    handler = functools.partial(_PrintHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium(), headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(600_000)
            page.emulate_media(media="print")
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/_print/book.html", wait_until="load")
            pages = page.evaluate("(book) => attnmathPrintBook(book)", book)
            page.pdf(path=str(out), prefer_css_page_size=True, print_background=True, outline=True,
                     tagged=True, margin={"top": "0", "bottom": "0", "left": "0", "right": "0"})
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    print(f"{pages} pages laid out")
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
