"""The claims appendix as a tool (book/_ext/attnmath_claims.py writes the form and marks the rows,
book/_static/claims_filter.js runs it, book/_static/claims.css prints it): the filter by chapter,
verdict and source shows exactly the rows the claim registry has for the choice, from the
keyboard, keeps the choice in the page's address, and the printed form is compact."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from claims import collect_claims, is_book_source, paper_source  # noqa: E402  (tests/claims.py)

pytestmark = pytest.mark.slow

CLAIMS = collect_claims()
_SHOWN = """() => ({
  rows: document.querySelectorAll('tr.claim-row').length,
  shown: Array.from(document.querySelectorAll('tr.claim-row')).filter((r) => r.offsetParent).length,
  chapters: Array.from(document.querySelectorAll('div.claims-chapter'))
    .filter((box) => box.offsetParent).length,
  said: document.querySelector('form.claims-filter output').textContent,
})"""


def _expected(chapter=None, verdict=None, source=None) -> int:
    def kind(c):
        return "book" if is_book_source(c.source) else "paper" if paper_source(c.source) else c.source[:3]
    return sum((chapter is None or c.chapter == chapter) and (verdict is None or c.verdict == verdict)
               and (source is None or kind(c) == source) for c in CLAIMS)


def _choose_by_keyboard(page, menu: str, value: str) -> None:
    """Focus a menu and move through its options with the arrow key until ``value`` is chosen."""
    page.focus(f"form.claims-filter select[name={menu}]")
    for _ in range(40):
        if page.eval_on_selector(f"form.claims-filter select[name={menu}]", "s => s.value") == value:
            return
        page.keyboard.press("ArrowDown")
    raise AssertionError(f"the {menu} menu has no option {value!r}")


def test_the_filter_shows_the_rows_that_match(reader, artifacts):
    visit = reader.open("book/claims.html")
    page = visit.page
    assert not visit.problems, visit.problems
    everything = page.evaluate(_SHOWN)
    assert everything["rows"] == everything["shown"] == len(CLAIMS) > 100
    assert everything["said"] == f"{len(CLAIMS)} rows"

    _choose_by_keyboard(page, "verdict", "corrected")
    got = page.evaluate(_SHOWN)
    assert got["shown"] == _expected(verdict="corrected") > 0
    assert got["said"] == f"{got['shown']} of {len(CLAIMS)} rows shown"

    _choose_by_keyboard(page, "chapter", "08_flash")
    got = page.evaluate(_SHOWN)
    assert got["shown"] == _expected(chapter="08_flash", verdict="corrected") > 0
    assert got["chapters"] == 1, "a chapter without a matching row is still shown"
    assert "chapter=08_flash" in page.url and "verdict=corrected" in page.url
    page.screenshot(path=str(artifacts / "claims-filter-1280.png"))

    page.reload(wait_until="load")  # the address keeps the choice
    assert page.evaluate(_SHOWN)["shown"] == _expected(chapter="08_flash", verdict="corrected")

    page.focus("form.claims-filter button[type=reset]")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('form.claims-filter output').textContent"
                           f" === '{len(CLAIMS)} rows'")
    assert page.evaluate(_SHOWN)["shown"] == len(CLAIMS) and "verdict=" not in page.url

    for source in ("paper", "book", "003"):
        key = {"003": "textbook-chapter"}.get(source, source)
        page.select_option("form.claims-filter select[name=source]", key)
        assert page.evaluate(_SHOWN)["shown"] == _expected(source=source) > 0, source


def test_the_filter_reads_on_a_phone(reader, artifacts):
    visit = reader.open("book/claims.html?verdict=clarified", viewport={"width": 375, "height": 812})
    page = visit.page
    assert page.evaluate(_SHOWN)["shown"] == _expected(verdict="clarified")
    wide = page.evaluate("() => document.querySelector('form.claims-filter').scrollWidth"
                         " - document.querySelector('form.claims-filter').clientWidth")
    assert wide <= 1, "the filter is wider than a phone's column"
    page.locator("form.claims-filter").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "claims-filter-375.png"))


def test_the_appendix_prints_compactly(reader):
    page = reader.open("book/claims.html").page
    page.emulate_media(media="print")
    measured = page.evaluate("""() => {
      const form = getComputedStyle(document.querySelector('form.claims-filter')).display;
      const lines = Array.from(document.querySelectorAll(
        'table.claims-table .claim-domain, table.claims-table .claim-test'));
      const tall = lines.filter((el) => el.getBoundingClientRect().height
        > 1.8 * parseFloat(getComputedStyle(el).lineHeight)).length;
      const names = Array.from(document.querySelectorAll('div.claims-tests summary'));
      const long = names.filter((el) => el.getBoundingClientRect().height
        > 1.8 * parseFloat(getComputedStyle(el).lineHeight)).length;
      return {form, lines: lines.length, tall, names: names.length, long};
    }""")
    assert measured["form"] == "none", "the filter is printed"
    assert measured["lines"] > 100 and measured["tall"] == 0, \
        f"{measured['tall']} of {measured['lines']} tests or domains take more than one printed line"
    assert measured["names"] > 100 and measured["long"] == 0, \
        f"{measured['long']} of the {measured['names']} test names at the end take more than one line"
