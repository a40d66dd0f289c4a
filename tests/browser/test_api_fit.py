"""The API pages' display equations fit their column at 1280 px, measured in the browser.

``tests/book/test_api_math.py`` estimates each docstring display's width from its TeX; this test
measures what the reader gets. Every API page (its index and one page per module) is loaded at
1280 px, and every display equation on it, the typeset formula (``mjx-container``) and the block
that holds it (``div.math``, inside a member's description), must be no wider than the box the
page gives it: a formula that needs a sideways scroll or sticks out of its column fails, with
its width and the start of its text.
"""

from __future__ import annotations

import pytest
from build import toc_files  # tests/book/build.py (put on sys.path by conftest.py)
from conftest import DESKTOP, read_with  # tests/browser/conftest.py

pytestmark = pytest.mark.slow

API = [d for d in toc_files() if d == "book/api" or d.startswith("book/api/")]

# Each display equation of the page: the formula's own width against its box, the box of its
# math block against that block's parent, and where the formula ends against the article column.
_DISPLAYS = r"""() => {
  const main = document.querySelector('main') || document.body;
  const article = main.querySelector('article') || main;
  const column = article.getBoundingClientRect().right + 1;
  const text = (e) => (e.getAttribute('aria-label') || e.textContent || '').trim()
    .replace(/\s+/g, ' ').slice(0, 80);
  return Array.from(main.querySelectorAll('mjx-container[display="true"]'))
    .filter((e) => e.offsetParent !== null)
    .map((e) => {
      const block = e.closest('div.math') || e.parentElement;
      const holder = block.parentElement || block;
      return {
        text: text(e),
        width: Math.ceil(e.scrollWidth), box: e.clientWidth,
        blockWidth: Math.ceil(block.scrollWidth), blockBox: block.clientWidth,
        holderBox: holder.clientWidth,
        right: Math.round(e.getBoundingClientRect().right), column: Math.round(column),
      };
    });
}"""

DISPLAYS = read_with("api-displays", _DISPLAYS)


def overflowing(displays: list[dict]) -> list[str]:
    """The displays that do not fit, each as 'N px in M px: text'."""
    bad = []
    for d in displays:
        if d["width"] > d["box"] + 1 or d["blockWidth"] > d["blockBox"] + 1:
            bad.append(f"{max(d['width'], d['blockWidth'])} px in {min(d['box'], d['blockBox'])} px: {d['text']}")
        elif d["right"] > d["column"]:
            bad.append(f"ends at {d['right']} px, column at {d['column']} px: {d['text']}")
    return bad


def test_the_measure_finds_a_wide_display():
    fits = {"text": "a", "width": 500, "box": 500, "blockWidth": 500, "blockBox": 500,
            "holderBox": 700, "right": 900, "column": 1000}
    assert overflowing([fits]) == []
    assert overflowing([{**fits, "width": 800}]) == ["800 px in 500 px: a"]
    assert overflowing([{**fits, "blockWidth": 640}]) == ["640 px in 500 px: a"]
    assert overflowing([{**fits, "right": 1010}]) == ["ends at 1010 px, column at 1000 px: a"]


_PAGE = """<main><article style="width: 700px">
  <div class="math" style="width: 600px"><mjx-container display="true" aria-label="wide"
    style="display: block; overflow-x: auto"><span style="display: inline-block; width: 900px">x</span>
  </mjx-container></div>
  <div class="math" style="width: 600px"><mjx-container display="true" aria-label="narrow"
    style="display: block; overflow-x: auto"><span style="display: inline-block; width: 300px">y</span>
  </mjx-container></div>
  <div class="math" style="width: 600px; overflow-x: auto"><mjx-container display="true" aria-label="block"
    style="display: inline-block; width: 800px"><span>z</span></mjx-container></div>
</article></main>"""


def test_the_script_finds_what_overflows_on_a_page(browser):
    page = browser.new_page(viewport=DESKTOP)
    try:
        page.set_content(_PAGE)
        displays = page.evaluate(_DISPLAYS)
    finally:
        page.close()
    assert [d["text"] for d in displays] == ["wide", "narrow", "block"]
    bad = overflowing(displays)
    assert len(bad) == 2 and bad[0].endswith(": wide") and bad[1].endswith(": block"), bad


@pytest.mark.parametrize("doc", API)
def test_every_display_equation_fits_at_1280px(snapshots, doc):
    snap = snapshots.get(f"{doc}.html", DESKTOP)
    displays = snap.data[DISPLAYS]
    bad = overflowing(displays)
    assert not bad, f"{doc}: {len(bad)} of {len(displays)} display equations overflow:\n" + "\n".join(bad)


def test_the_api_pages_have_displays_to_measure(snapshots):
    counted = {doc: len(snapshots.get(f"{doc}.html", DESKTOP).data[DISPLAYS]) for doc in API}
    assert sum(counted.values()) >= 30, counted  # the modules' docstrings show dozens of formulas
