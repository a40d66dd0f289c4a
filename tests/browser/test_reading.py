"""Read the built book in headless Chromium: every page of the table of contents, its
mathematics, figures, links, search, downloads and the phone layout.

The tests iterate over ``_toc.yml``; they assume nothing about a chapter beyond what the table
of contents says and whether its source is a notebook. Run them alone with

    python -m pytest tests/browser            # builds the book once (minutes)
    ATTNMATH_BOOK_HTML=_build/html python -m pytest tests/browser   # reuse `make book`
"""

from __future__ import annotations

import json
import re
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

import pytest
from build import is_notebook, toc_files  # tests/book/build.py (put on sys.path by conftest.py)
from conftest import read_with  # tests/browser/conftest.py

pytestmark = pytest.mark.slow

PHONE = {"width": 375, "height": 812}

DOCS = toc_files()
NOTEBOOKS = [d for d in DOCS if is_notebook(d)]

# What one page shows once loaded, collected in the page by a single script.
_INSPECT = r"""() => {
  const text = (root) => {
    const clone = root.cloneNode(true);
    clone.querySelectorAll(
      'pre, code, kbd, samp, script, style, textarea, noscript, svg, mjx-container, mjx-assistive-mml'
    ).forEach((e) => e.remove());
    return clone.textContent;
  };
  const main = document.querySelector('main') || document.body;
  const ids = new Set();
  document.querySelectorAll('[id]').forEach((e) => ids.add(e.id));
  document.querySelectorAll('a[name]').forEach((e) => ids.add(e.getAttribute('name')));
  return {
    title: document.title,
    ids: Array.from(ids),
    links: Array.from(document.querySelectorAll('a[href]')).map((a) => ({
      href: a.href, raw: a.getAttribute('href'), text: a.textContent.trim().slice(0, 80),
    })),
    images: Array.from(document.images).map((img) => ({
      src: img.currentSrc || img.src, alt: img.getAttribute('alt'), complete: img.complete,
      width: img.naturalWidth, inContent: main.contains(img) && !img.closest('.dropdown-menu, nav, header'),
    })),
    mathSource: document.querySelectorAll('.math').length,
    mathUntypeset: Array.from(document.querySelectorAll('.math'))
      .filter((e) => !e.querySelector('mjx-container')).map((e) => e.textContent.trim().slice(0, 80)),
    mjx: document.querySelectorAll('mjx-container').length,
    mathErrors: Array.from(document.querySelectorAll('mjx-merror'))
      .map((e) => e.getAttribute('data-mjx-error') || e.textContent.slice(0, 80)),
    visibleText: text(main),
    equationRefs: Array.from(document.querySelectorAll('a[href*="#equation-"]:not(.headerlink)'))
      .map((a) => a.textContent.trim()),
    equationNumbers: Array.from(document.querySelectorAll('.eqno')).map((e) => e.textContent.trim()),
    notebookLinks: Array.from(document.querySelectorAll('a[href$=".ipynb"]')).map((a) => a.href),
    launchLinks: Array.from(document.querySelectorAll('a[href*="mybinder"], a[href*="binder"]'))
      .map((a) => a.href),
  };
}"""

INSPECT = read_with("reading", _INSPECT)
MAIN_TEXT = read_with("main-text", "() => document.querySelector('main').textContent")
WIDTHS = read_with("widths", """() => ({
  scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
  wide: Array.from(document.querySelectorAll('body *')).filter((e) => {
    const r = e.getBoundingClientRect(); return r.right > document.documentElement.clientWidth + 1
      && getComputedStyle(e).position !== 'fixed' && e.offsetParent !== null; })
    .slice(0, 5).map((e) => e.tagName.toLowerCase() + '.' + e.className)})""")

RAW_TEX = re.compile(r"\$\$|\\\(|\\\)|\\\[|\\\]|\\begin\{|\\end\{|\\[A-Za-z]{2,}")


@dataclass
class Page:
    path: str
    status: int | None
    problems: list[str]
    data: dict
    ids: set[str] = field(default_factory=set)


class Book:
    """Pages of the served book at desktop width, each loaded once (the ``snapshots`` fixture)."""

    def __init__(self, snapshots):
        self.snapshots = snapshots
        self.pages: dict[str, Page] = {}

    def page(self, path: str) -> Page:
        if path not in self.pages:
            shot = self.snapshots.get(path)
            data = shot.data[INSPECT]
            self.pages[path] = Page(path, shot.status, shot.problems, data, set(data["ids"]))
        return self.pages[path]

    def doc(self, doc: str) -> Page:
        return self.page(f"{doc}.html")


@pytest.fixture(scope="session")
def book(snapshots):
    return Book(snapshots)


@pytest.mark.parametrize("doc", DOCS)
def test_page_loads_without_console_errors(book, doc):
    page = book.doc(doc)
    assert page.status == 200, f"{doc}.html answered HTTP {page.status}"
    assert not page.problems, f"{doc}.html:\n" + "\n".join(page.problems)


def test_front_page_leads_to_every_page_of_the_toc(reader, book):
    visit = reader.open("index.html", expect=f"{DOCS[0]}.html")
    assert not visit.problems, "\n".join(visit.problems)
    intro = book.doc(DOCS[0])
    linked = {unquote(urlsplit(link["href"]).path).lstrip("/") for link in intro.data["links"]}
    missing = [d for d in DOCS if f"{d}.html" not in linked]
    assert not missing, f"the navigation of {DOCS[0]}.html does not link to {missing}"


@pytest.mark.parametrize("doc", DOCS)
def test_math_is_rendered(book, doc):
    data = book.doc(doc).data
    assert not data["mathUntypeset"], f"{doc}: math that MathJax did not typeset: {data['mathUntypeset'][:5]}"
    assert not data["mathErrors"], f"{doc}: TeX errors shown to the reader: {data['mathErrors'][:5]}"
    if data["mathSource"]:
        assert data["mjx"] >= data["mathSource"], f"{doc}: {data['mathSource']} formulas, {data['mjx']} rendered"
    raw = sorted({m.group(0) for m in RAW_TEX.finditer(data["visibleText"])})
    if raw:
        where = [data["visibleText"][max(0, m.start() - 40):m.end() + 40].replace("\n", " ")
                 for m in RAW_TEX.finditer(data["visibleText"])][:3]
        pytest.fail(f"{doc}: raw TeX {raw} in the visible text, e.g. {where}")


def test_equations_are_numbered_and_references_show_numbers(book):
    numbers, refs = [], []
    for doc in DOCS:
        data = book.doc(doc).data
        numbers += [(doc, n) for n in data["equationNumbers"]]
        refs += [(doc, r) for r in data["equationRefs"]]
    assert numbers, "no numbered equation anywhere in the book"
    assert all(re.search(r"\d", n) for _, n in numbers), f"equation numbers without a number: {numbers}"
    unnumbered = [(doc, r) for doc, r in refs if not re.search(r"\d", r)]
    assert not unnumbered, f"equation references that show no number: {unnumbered[:10]}"


@pytest.mark.parametrize("doc", DOCS)
def test_images_load_and_have_alt_text(book, doc):
    images = book.doc(doc).data["images"]
    broken = [i["src"] for i in images if not (i["complete"] and i["width"] > 0)]
    assert not broken, f"{doc}: images that did not load: {broken}"
    if doc in NOTEBOOKS or "_images/" in " ".join(i["src"] for i in images):
        bad = [i["src"].rsplit("/", 1)[-1] for i in images if i["inContent"] and not _describes(i)]
        assert not bad, (f"{doc}: figures without a descriptive alt text (give code cells "
                         f"`mystnb: image: alt:` or figures `:alt:`): {bad}")


def _describes(image) -> bool:
    alt = (image["alt"] or "").strip()
    name = image["src"].rsplit("/", 1)[-1]
    return bool(alt) and alt != name and not re.fullmatch(r"\S+\.(png|jpe?g|svg|gif|webp)", alt)


def test_every_internal_link_and_anchor_resolves(book, site):
    """Crawl every page reachable from the table of contents, within the site."""
    queue = [f"{d}.html" for d in DOCS] + [p for p in ("search.html", "genindex.html") if (site.root / p).exists()]
    seen, links, broken = set(), [], []
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        page = book.page(path)
        if page.status != 200 or page.problems:
            broken += [f"{path}: HTTP {page.status}"] + [f"{path}: {p}" for p in page.problems]
        for link in page.data["links"]:
            target = site.file_for(link["href"])
            if target is None:
                assert urlsplit(link["href"]).scheme in ("http", "https", "mailto", "javascript"), link
                continue
            links.append((path, link, target))
            rel = target.relative_to(site.root).as_posix()
            # index.html only redirects to the first page (test_front_page_leads_to_every_page_of_the_toc)
            if target.suffix == ".html" and target.exists() and rel not in seen and rel != "index.html":
                queue.append(rel)
    for path, link, target in links:
        if not target.exists():
            broken.append(f"{path}: {link['raw']!r} -> missing {target.relative_to(site.root)}")
            continue
        fragment = unquote(urlsplit(link["href"]).fragment)
        if fragment and target.suffix == ".html":
            ids = book.page(target.relative_to(site.root).as_posix()).ids
            if fragment not in ids:
                broken.append(f"{path}: {link['raw']!r} ({link['text']!r}) -> no id {fragment!r}")
    assert not broken, f"{len(set(broken))} broken links or pages:\n" + "\n".join(sorted(set(broken))[:40])


@pytest.mark.parametrize("term", ["softmax", "RoPE"])
def test_search_finds(reader, site, term):
    visit = reader.open(f"search.html?q={term}")
    page = visit.page
    page.wait_for_function(
        "() => { const s = document.querySelector('#search-results .search-summary');"
        " return s && /Search finished|did not match/.test(s.textContent); }", timeout=30_000)
    results = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(a => a.href)")
    summary = page.inner_text("#search-results .search-summary")
    assert results, f"searching {term!r}: {summary}"
    pages = {site.file_for(url.split("#")[0]) for url in results}
    assert all(p is not None and p.exists() for p in pages), f"search results that do not exist: {results}"
    assert any(p.relative_to(site.root).as_posix()[:-5] in DOCS for p in pages), results
    assert not visit.problems, "\n".join(visit.problems)


@pytest.mark.parametrize("doc", NOTEBOOKS)
def test_chapter_offers_its_executed_notebook(snapshots, doc):
    shot = snapshots.get(f"{doc}.html")
    data = shot.data[INSPECT]
    own = [u for u in data["notebookLinks"] if u.split("?")[0].endswith(f"{doc}.ipynb")]
    assert own, f"{doc}: the download menu offers no {doc}.ipynb (links: {data['notebookLinks']})"
    with urllib.request.urlopen(own[0], timeout=30) as response:  # the book's loopback server
        assert response.status == 200, f"{own[0]}: HTTP {response.status}"
        nb = json.loads(response.read().decode())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert nb["nbformat"] == 4 and code, f"{own[0]} is not a notebook with code"
    assert nb["metadata"].get("kernelspec", {}).get("language") == "python", f"{own[0]}: no Python kernel"
    assert any(c.get("outputs") for c in code), f"{own[0]} has no outputs: the reader would not see the results"
    # The notebook is this chapter's: the code the page shows is the notebook's code.
    shown = shot.data[MAIN_TEXT]
    visible = [c for c in code if not {"remove-cell", "remove-input"} & set(c["metadata"].get("tags", []))]
    lines = [line.strip() for c in visible for line in "".join(c["source"]).splitlines() if line.strip()]
    assert all(line in shown for line in lines[:20]), (
        f"{own[0]} is not the notebook of {doc}: {[x for x in lines[:20] if x not in shown][:3]} not on the page")
    # No repository is configured (_config.yml), so no launch button may point to one.
    assert not data["launchLinks"], f"{doc}: launch buttons to a repository that does not exist"


@pytest.mark.parametrize("doc", DOCS)
def test_phone_width_has_no_horizontal_overflow(snapshots, doc):
    shot = snapshots.get(f"{doc}.html", PHONE)
    widths = shot.data[WIDTHS]
    assert widths["scroll"] <= widths["client"] + 1, (
        f"{doc} at {PHONE['width']} px scrolls sideways: scrollWidth {widths['scroll']} > "
        f"clientWidth {widths['client']}; too wide: {widths['wide']}")
    assert not shot.problems, "\n".join(shot.problems)


def test_status_page_lists_every_executed_chapter(book):
    status = [d for d in DOCS if d.endswith("/status")]
    assert status, "no execution status page in the table of contents"
    text = book.doc(status[0]).data["visibleText"]
    missing = [d for d in NOTEBOOKS if d not in text]
    assert not missing, f"the execution status page does not list {missing}"
    assert "❌" not in text, "a chapter failed to execute"


def test_screenshots(reader, artifacts):
    """Pictures of the book as a reader sees it, kept as test artifacts."""
    out = artifacts
    shots = {"intro-desktop": (f"{DOCS[0]}.html", None), "search-softmax": ("search.html?q=softmax", None)}
    notation = [d for d in DOCS if d.endswith("/notation")]
    if notation:
        shots["notation-desktop"] = (f"{notation[0]}.html", None)
    if NOTEBOOKS:
        shots["chapter-desktop"] = (f"{NOTEBOOKS[0]}.html", None)
        shots["chapter-phone"] = (f"{NOTEBOOKS[0]}.html", PHONE)
    written = []
    for name, (path, viewport) in shots.items():
        visit = reader.open(path, **({"viewport": viewport} if viewport else {}))
        if path.startswith("search"):
            visit.page.wait_for_selector("#search-results ul.search li", timeout=30_000)
        visit.page.screenshot(path=str(out / f"{name}.png"))
        written.append(out / f"{name}.png")
        if name == "chapter-phone":  # the same load, the whole page
            visit.page.screenshot(path=str(out / f"{name}-full.png"), full_page=True)
            written.append(out / f"{name}-full.png")
    assert all(f.stat().st_size > 10_000 for f in written), [(f.name, f.stat().st_size) for f in written]
