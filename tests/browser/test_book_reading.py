"""Reading the book: code that reads as code and text that is there at first paint.

* No line of code or output wraps back to column 0, at 1280 px or at 375 px: a block wider than
  its column scrolls sideways, and shows a shadow on its right edge that says so (the
  ``attnmath-scrolls`` mark, book/_static/attnmath.js and attnmath.css).
* At 1280 px the text column holds the 88 columns that listings are laid out to
  (book/_ext/attnmath_listing.py), measured in the browser; a folded cell's box holds the two
  fewer that its code is laid out to.
* A chapter's text is visible when the page is first painted, and where the book was built
  with MathJax's server-side package (book/_ext/attnmath_mathjax.py) its formulas are already
  typeset then, and the page loads no MathJax.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from build import toc_files  # tests/book/build.py (put on sys.path by conftest.py)
from conftest import read_with  # tests/browser/conftest.py

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book" / "_ext"))
from attnmath_listing import FOLD_COLUMNS, WIDTH  # noqa: E402  (book/_ext)

pytestmark = pytest.mark.slow

DOCS = toc_files()
CHAPTERS = [d for d in DOCS if re.match(r"book/\d\d_", d)]
PHONE = {"width": 375, "height": 812}
DESKTOP = {"width": 1280, "height": 900}

# Each visible code block of the article: whether it is taller than it would be with no line
# wrapped, whether it scrolls and carries the mark, and how many characters of its font fit in
# its content box. What it adds to a block to measure it (a probe, a style) it takes away again,
# to the attribute: the page is read in the dark theme after it (tests/browser/conftest.py).
_CODE = r"""() => {
  const blocks = Array.from(document.querySelectorAll('.bd-article pre'))
    .filter((pre) => pre.offsetParent !== null && pre.textContent.trim());
  return blocks.map((pre) => {
    const style = getComputedStyle(pre);
    const pad = (a, b) => parseFloat(style[a]) + parseFloat(style[b]);
    const probe = document.createElement('span');
    probe.textContent = 'x'.repeat(200);
    probe.style.whiteSpace = 'pre';
    pre.appendChild(probe);
    const charWidth = probe.getBoundingClientRect().width / 200;
    probe.remove();
    const lines = pre.textContent.replace(/\n+$/, '').split('\n');
    const height = pre.scrollHeight;  // as shown; then as it would be with no line wrapped
    const whiteSpace = style.whiteSpace, inline = pre.getAttribute('style');
    pre.setAttribute('style', `${inline || ''}; white-space: pre`);
    const unwrapped = pre.scrollHeight;
    if (inline === null) pre.removeAttribute('style'); else pre.setAttribute('style', inline);
    return {
      text: lines.reduce((a, b) => (b.length > a.length ? b : a), '').slice(0, 100),
      wraps: height > unwrapped + 1, whiteSpace,
      scrolls: pre.scrollWidth > pre.clientWidth + 1,
      marked: pre.classList.contains('attnmath-scrolls'),
      input: !!pre.closest('.cell_input, .highlight-python, .highlight-ipython3'),
      folded: !!pre.closest('details'),
      columns: (pre.clientWidth - pad('paddingLeft', 'paddingRight')) / charWidth,
    };
  });
}"""
CODE = read_with("code lines", _CODE)


def _blocks(snapshots, doc, viewport):
    return snapshots.get(f"{doc}.html", viewport).data[CODE]


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280px", "375px"])
@pytest.mark.parametrize("doc", DOCS)
def test_no_code_line_wraps(snapshots, doc, viewport):
    blocks = _blocks(snapshots, doc, viewport)
    wrapped = [b["text"] for b in blocks if b["wraps"]]
    assert not wrapped, f"{doc} at {viewport['width']} px: code that wraps: {wrapped[:5]}"
    assert all(b["whiteSpace"] == "pre" for b in blocks), f"{doc}: a code block may wrap"


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280px", "375px"])
@pytest.mark.parametrize("doc", CHAPTERS)
def test_code_wider_than_its_column_scrolls_with_a_cue(snapshots, doc, viewport):
    blocks = _blocks(snapshots, doc, viewport)
    unmarked = [b["text"] for b in blocks if b["scrolls"] != b["marked"]]
    assert not unmarked, f"{doc} at {viewport['width']} px: scrolling without its cue: {unmarked[:5]}"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_listings_fit_the_column_at_1280px(snapshots, doc):
    blocks = [b for b in _blocks(snapshots, doc, DESKTOP) if b["input"]]
    assert blocks, f"{doc} shows no code"
    def width(b):  # a folded cell's box takes FOLD_COLUMNS, and its code is laid out for that
        return WIDTH - FOLD_COLUMNS if b["folded"] else WIDTH

    narrow = [(b["columns"], width(b)) for b in blocks if b["columns"] < width(b)]
    assert not narrow, f"{doc}: (columns that fit at 1280 px, columns needed): {narrow[:5]}"
    wide = [b["text"] for b in blocks if b["scrolls"] and len(b["text"]) <= width(b)]
    assert not wide, f"{doc}: code of at most {WIDTH} columns that does not fit: {wide[:5]}"


# Recorded at the first frame after the HTML is parsed, by a script that runs before any of the
# page's own (in the snapshot's load of the page), and read once the page has loaded.
_FIRST_PAINT = """
document.addEventListener('DOMContentLoaded', () => requestAnimationFrame(() => {
  const article = document.querySelector('.bd-article');
  const style = article && getComputedStyle(article);
  const math = document.querySelectorAll('.bd-article .math');
  window.__attnmathFirstPaint = {
    article: !!article,
    visible: !!article && style.visibility === 'visible' && style.opacity === '1'
             && !!article.closest('html:not(.attnmath-typesetting)'),
    words: article ? article.innerText.split(/\\s+/).length : 0,
    formulas: math.length,
    typeset: document.querySelectorAll('.bd-article .math mjx-container').length,
    mathjax: !!document.querySelector('script[src*="mathjax/startup.js"]'),
  };
}));
"""
FIRST_PAINT = read_with("first paint", "() => window.__attnmathFirstPaint || null", before=_FIRST_PAINT)


@pytest.mark.parametrize("doc", CHAPTERS)
def test_text_is_visible_at_first_paint(snapshots, site, doc):
    first = snapshots.get(f"{doc}.html").data[FIRST_PAINT]
    assert first is not None, f"{doc}: no frame was painted after the HTML was parsed"
    assert first["article"] and first["visible"], f"{doc}: the article is hidden at first paint"
    assert first["words"] > 200, f"{doc}: only {first['words']} words at first paint"
    typeset_at_build = "mathjax-typeset.css" in (site.root / f"{doc}.html").read_text()
    if typeset_at_build and first["formulas"]:
        assert first["typeset"] == first["formulas"], (
            f"{doc}: {first['formulas'] - first['typeset']} of {first['formulas']} formulas are "
            "not typeset at first paint")
        assert not first["mathjax"], f"{doc}: typeset at build time, and still loads MathJax"
