"""The book as a reader sees it at 1280 px, at 375 px and in the dark theme: nothing wider than
its column, nothing clipped, chapters numbered and closed by their takeaways and exercise.

Every page of ``_toc.yml`` is loaded once at each width and once in the dark theme (the
``snapshots`` fixture), and every check reads that load. When a check fails, a screenshot of the
page it looked at (the first screen at 375 px and in dark mode, the whole page at 1280 px) is
written to the artifacts folder (``tests/browser/artifacts/`` or ``$ATTNMATH_ARTIFACTS``).
"""

from __future__ import annotations

import json
import re

import pytest
from build import is_notebook, toc_files  # tests/book/build.py (put on sys.path by conftest.py)
from conftest import read_with  # tests/browser/conftest.py

pytestmark = pytest.mark.slow

DOCS = toc_files()
CHAPTERS = [d for d in DOCS if re.match(r"book/\d\d_", d)]
# The API reference: its index and a page per module (book/_ext/attnmath_listing.py)
API = [d for d in DOCS if d == "book/api" or d.startswith("book/api/")]
PHONE = {"width": 375, "height": 812}
DESKTOP = {"width": 1280, "height": 900}

# What is wider than its column, and what overlaps or is cut off, in one page. A block "fits"
# when its content is no wider than the box the page gives it; a box that scrolls by itself
# (a formula on a phone) still shows all of its content.
_MEASURE = r"""() => {
  const main = document.querySelector('main') || document.body;
  const label = (e) => (e.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 70);
  const wide = (sel) => Array.from(main.querySelectorAll(sel))
    .filter((e) => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
    .map((e) => `${e.scrollWidth}px in ${e.clientWidth}px: ${label(e)}`);
  const block = (e) => e.parentElement.closest('p, li, dd, dt, td, th, div, figcaption') || main;
  const scrollsItself = (e) => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
  const article = main.querySelector('article') || main;
  const right = article.getBoundingClientRect().right + 1;
  const overlaps = [];
  main.querySelectorAll('div.math').forEach((m) => {
    const eq = m.querySelector('mjx-container'), no = m.querySelector('.eqno');
    if (!eq || !no) return;
    const a = eq.getBoundingClientRect(), b = no.getBoundingClientRect();
    if (a.right > b.left + 1 && a.left < b.right - 1 && a.bottom > b.top && a.top < b.bottom)
      overlaps.push(label(m));
  });
  const clipped = Array.from(main.querySelectorAll('mjx-container[display="true"], pre, table'))
    .filter((e) => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1 && !scrollsItself(e)
            && !(e.parentElement && scrollsItself(e.parentElement)))
    .map((e) => `${e.tagName.toLowerCase()} ${e.scrollWidth}px in ${e.clientWidth}px: ${label(e)}`)
    .concat(Array.from(main.querySelectorAll('mjx-container:not([display])'))  // inline formulas
      .filter((e) => e.offsetParent !== null && !scrollsItself(e)
              && e.getBoundingClientRect().width > block(e).clientWidth + 1)
      .map((e) => `inline formula ${Math.round(e.getBoundingClientRect().width)}px in a ${block(e).clientWidth}px line: ${label(e)}`));
  const outside = Array.from(main.querySelectorAll('img, mjx-container[display="true"], table, pre'))
    .filter((e) => e.offsetParent !== null && e.getBoundingClientRect().right > right
            && !e.closest('[style*="overflow"], .pst-scrollable-table-container'))
    .map((e) => `${e.tagName.toLowerCase()} ends at ${Math.round(e.getBoundingClientRect().right)}px, column at ${Math.round(right)}px: ${label(e)}`);
  return {
    pageScroll: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    // code wider than its column scrolls with a cue (tests/browser/test_book_reading.py)
    code: wide('div.highlight pre:not(.attnmath-scrolls)'),
    math: wide('mjx-container[display="true"]'),
    tables: wide('table').concat(wide('.pst-scrollable-table-container')),
    overlaps, clipped, outside,
    title: document.title,
    h1: (main.querySelector('section > h1') || main.querySelector('h1') || {}).textContent || '',
    sectionNumber: !!main.querySelector('section > h1 .section-number'),
    eqnos: Array.from(main.querySelectorAll('.eqno')).map((e) => e.textContent.trim()),
    captions: Array.from(main.querySelectorAll('.caption-number')).map((e) => e.textContent.trim()),
    takeaways: Array.from(main.querySelectorAll('.admonition.takeaways')).map((e) => ({
      last: (() => {  // nothing of the chapter follows it, at any level of its sections
        for (let n = e; n && !n.matches('article, main'); n = n.parentElement)
          if (n.nextElementSibling && !n.nextElementSibling.matches('script, style')) return false;
        return true;
      })(),
      links: Array.from(e.querySelectorAll('a[href$=".ipynb"]')).map((a) => a.href)})),
    sidebar: Array.from(document.querySelectorAll('.bd-sidebar-primary a')).map((a) => a.textContent.trim()),
    background: getComputedStyle(document.body).backgroundColor,
  };
}"""


MEASURE = read_with("layout", _MEASURE)


def _measure(snapshots, doc, viewport, dark=False) -> dict:
    return snapshots.get(f"{doc}.html", viewport, dark).data[MEASURE]


@pytest.fixture
def shoot_on_failure(request, reader, artifacts):
    """``shoot(doc, viewport, dark, full)``: when the test fails, a screenshot of that page goes
    to the artifacts folder (named after the page, width and theme), for whoever reads the failure."""
    wanted = []
    yield lambda *args: wanted.append(args)
    call = getattr(request.node, "rep_call", None)
    if call is not None and call.failed:
        for doc, viewport, dark, full in wanted:
            name = f"{doc.replace('/', '_')}-{'dark' if dark else viewport['width']}.png"
            request.getfixturevalue("snapshots").get(f"{doc}.html", viewport, dark).shoot(
                reader, artifacts / name, full)


@pytest.mark.parametrize("doc", DOCS)
def test_nothing_is_wider_than_its_column_at_1280px(snapshots, shoot_on_failure, doc):
    shoot_on_failure(doc, DESKTOP, False, doc not in API)  # the API pages are long
    m = _measure(snapshots, doc, DESKTOP)
    assert m["pageScroll"] <= 0, f"{doc}: the page scrolls sideways by {m['pageScroll']} px"
    assert not m["code"], f"{doc}: code blocks that scroll sideways: {m['code'][:5]}"
    if doc not in API:  # the API pages' formulas are the docstrings' own; there they scroll
        assert not m["math"], f"{doc}: display equations wider than the column: {m['math'][:5]}"
    assert not m["tables"], f"{doc}: tables wider than the column: {m['tables'][:5]}"
    assert not m["overlaps"], f"{doc}: equation numbers on top of their equation: {m['overlaps'][:5]}"
    assert not m["outside"], f"{doc}: content past the column: {m['outside'][:5]}"


@pytest.mark.parametrize("doc", DOCS)
def test_nothing_is_lost_at_375px(snapshots, shoot_on_failure, doc):
    shoot_on_failure(doc, PHONE, False, False)
    m = _measure(snapshots, doc, PHONE)
    assert m["pageScroll"] <= 0, f"{doc}: the page scrolls sideways by {m['pageScroll']} px at 375 px"
    assert not m["clipped"], f"{doc}: content cut off at 375 px: {m['clipped'][:5]}"
    assert not m["overlaps"], f"{doc}: equation numbers on top of their equation: {m['overlaps'][:5]}"


@pytest.mark.parametrize("doc", DOCS)
def test_dark_theme(snapshots, shoot_on_failure, doc):
    shoot_on_failure(doc, DESKTOP, True, False)
    m = _measure(snapshots, doc, DESKTOP, dark=True)
    rgb = [int(x) for x in re.findall(r"\d+", m["background"])[:3]]
    assert sum(rgb) < 3 * 100, f"{doc}: the dark theme has a light background {m['background']}"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_chapter_is_numbered_and_ends_with_takeaways_and_its_exercise(snapshots, site, doc):
    m = _measure(snapshots, doc, DESKTOP)
    assert m["sectionNumber"], f"{doc}: the chapter title has no number: {m['h1']!r}"
    number = re.match(r"\s*(\d+)", m["h1"]).group(1)
    wrong = [n for n in m["eqnos"] + m["captions"] if not re.search(rf"\b{number}\.\d+", n)]
    assert not wrong, f"{doc}: numbers not within chapter {number}: {wrong[:5]}"
    assert len(m["takeaways"]) == 1 and m["takeaways"][0]["last"], \
        f"{doc}: the chapter must close with one 'Key takeaways' box"
    links = m["takeaways"][0]["links"]
    assert links, f"{doc}: the takeaways box does not link to the exercise notebook"
    for href in links:
        path = site.file_for(href)
        assert path is not None and path.exists(), f"{doc}: the exercise link {href} is not served"
        assert json.loads(path.read_text()).get("nbformat") == 4, f"{doc}: {href} is not a notebook"


@pytest.mark.parametrize("doc", DOCS)
def test_titles_show_no_raw_tex(snapshots, doc):
    m = _measure(snapshots, doc, DESKTOP)
    for where, text in [("tab title", m["title"])] + [("sidebar", s) for s in m["sidebar"]]:
        prose = re.sub(r"\battnmath(\.\w+)+", "", text)  # module names (API pages) are no TeX
        assert not re.search(r"[\\$]|\b\w+_\w+\b", prose), f"{doc}: raw TeX in the {where}: {text!r}"


def test_no_repository_or_launch_button_without_a_repository(reader):
    visit = reader.open(f"{CHAPTERS[0]}.html", viewport=DESKTOP)
    hrefs = visit.page.evaluate("() => Array.from(document.querySelectorAll('a[href]')).map((a) => a.href)")
    off = [h for h in hrefs if re.search(r"github\.com|mybinder|colab|binder", h)]
    assert not off, f"links to a repository or service the book does not have: {off}"


def test_landing_page_is_a_way_in(reader):
    visit = reader.open(f"{DOCS[0]}.html", viewport=DESKTOP)
    text = visit.page.evaluate("() => (document.querySelector('main') || document.body).innerText")
    for heading in ("Who it is for", "Prerequisites", "What you will learn", "Chapter map"):
        assert heading in text, f"the landing page has no {heading!r}"
    for start in ("Read.", "Run.", "Grade yourself."):
        assert start in text, f"the landing page does not offer the start {start!r}"
    hrefs = visit.page.evaluate("() => Array.from(document.querySelectorAll('main table a')).map((a) => a.href)")
    missing = [c for c in CHAPTERS if not any(h.endswith(f"{c}.html") for h in hrefs)]
    assert not missing, f"the chapter map does not list {missing}"


def test_every_notebook_chapter_is_in_the_chapter_map():
    assert set(CHAPTERS) <= {d for d in DOCS if is_notebook(d)}
