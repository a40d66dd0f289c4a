"""Figures and tables as a phone 375 px wide shows them.

Every chapter is read at 375 px (the ``snapshots`` load that tests/browser/test_layout.py reads
too). For each figure the page shows, the measure takes the drawing the browser chose (the
``<picture>``'s phone drawing, book/_ext/attnmath_phone.py), reads that SVG file as the browser
got it, and computes the size on the screen of every text it draws: matplotlib draws a text's
glyphs as paths 100 units to the em, scaled by the transforms of their groups, and the SVG's
view box is scaled to the width the image is shown at. The smallest must be no smaller than the
page's caption type. ``test_the_measure_reads_type_as_drawn`` checks the measure on figures of
known type shown at known widths.

A chapter's table keeps each row to at most two lines of its type: a cell of a few words on one
line, the table scrolling sideways in its box; only cells of running text wrap.
"""

from __future__ import annotations

import base64
import io
import re

import pytest
from build import toc_files  # tests/book/build.py (put on sys.path by conftest.py)
from conftest import read_with  # tests/browser/conftest.py

pytestmark = pytest.mark.slow

CHAPTERS = [d for d in toc_files() if re.match(r"book/\d\d_", d)]
PHONE = {"width": 375, "height": 812}
#: Rounding in the browser's layout: type within this many CSS pixels of the caption's passes.
SLACK_PX = 0.25

_MEASURE = r"""() => {
  if (window.innerWidth > 640) return null;
  const main = document.querySelector('main') || document.body;
  const caption = main.querySelector('figcaption') || main.querySelector('p') || main;
  const figures = [];
  main.querySelectorAll('article img').forEach((img) => {
    const url = img.currentSrc || img.src;
    if (!/\.svg($|\?)|^data:image\/svg\+xml/.test(url) || img.offsetParent === null || img.closest('.attn-interactive')) return;
    const request = new XMLHttpRequest();
    request.open('GET', url, false);  // from the cache: the page has loaded it
    request.send();
    const svg = new DOMParser().parseFromString(request.responseText, 'image/svg+xml').documentElement;
    const box = svg.viewBox.baseVal;
    const perUnit = img.getBoundingClientRect().width / (box && box.width ? box.width : svg.width.baseVal.value);
    const scaleOf = (e) => {
      let m = new DOMMatrix();
      for (let n = e; n && n !== svg; n = n.parentElement) {
        const t = n.transform && n.transform.baseVal.consolidate();
        if (t) m = DOMMatrix.fromMatrix(t.matrix).multiply(m);
      }
      return Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
    };
    // a text's size is its largest glyph's (a superscript is set smaller on purpose)
    const texts = Array.from(svg.querySelectorAll('g[id^="text_"]')).map((g) => ({
      px: 100 * perUnit * Math.max(0, ...Array.from(g.querySelectorAll('use')).map(scaleOf)),
      tick: !!g.closest('[id^="xtick_"], [id^="ytick_"]'),
      text: Array.from(g.childNodes).filter((n) => n.nodeType === Node.COMMENT_NODE)
        .map((n) => n.nodeValue.trim()).join(' ')})).filter((t) => t.px > 0);
    const smallest = texts.reduce((a, t) => (!a || t.px < a.px ? t : a), null);
    const ticks = texts.filter((t) => t.tick);
    figures.push({file: url.split('/').pop(), shown: img.getBoundingClientRect().width,
                  texts: texts.length, smallest: smallest,
                  tickPx: ticks.length ? Math.min(...ticks.map((t) => t.px)) : null});
  });
  const rows = [];
  main.querySelectorAll('article table').forEach((table, t) => {
    if (table.closest('.attn-interactive')) return;
    table.querySelectorAll('tbody tr').forEach((tr, r) => {
      if (tr.querySelector('.attnmath-prose')) return;
      const cell = tr.cells[0];
      if (!cell) return;
      const style = getComputedStyle(cell);
      const line = parseFloat(style.lineHeight) || 1.2 * parseFloat(style.fontSize);
      const pad = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom);
      rows.push({table: t, row: r, height: tr.getBoundingClientRect().height, line, pad,
                 text: tr.textContent.trim().replace(/\s+/g, ' ').slice(0, 60)});
    });
  });
  return {captionPx: parseFloat(getComputedStyle(caption).fontSize), figures, rows};
}"""
PHONE_FIGURES = read_with("figures and tables at a phone's width", _MEASURE)


def _read(snapshots, doc: str) -> dict:
    shot = snapshots.get(f"{doc}.html", viewport=PHONE)
    assert not shot.problems, shot.problems
    return shot.data[PHONE_FIGURES]


@pytest.mark.parametrize("doc", CHAPTERS)
def test_figure_type_at_375px_is_at_least_the_caption_size(snapshots, doc):
    read = _read(snapshots, doc)
    small = [(f["file"][:12], round(f["smallest"]["px"], 2), f["smallest"]["text"], round(f["shown"]))
             for f in read["figures"] if f["smallest"]["px"] < read["captionPx"] - SLACK_PX]
    assert all(f["texts"] for f in read["figures"]), f"{doc}: a figure without text to measure"
    assert not small, (f"{doc}: figures whose type is smaller than the captions' "
                       f"{read['captionPx']} px at 375 px (file, px, text, shown width): {small}")
    assert all(f["file"].endswith("-narrow.svg") for f in read["figures"]), \
        f"{doc}: figures shown at 375 px without their phone drawing: {read['figures']}"


@pytest.mark.parametrize("doc", CHAPTERS)
def test_table_rows_at_375px_are_at_most_two_lines(snapshots, doc):
    tall = [(r["table"], r["row"], round(r["height"]), r["text"]) for r in _read(snapshots, doc)["rows"]
            if r["height"] > 2 * r["line"] + r["pad"] + 1]
    assert not tall, f"{doc}: table rows taller than two lines at 375 px (table, row, px, text): {tall}"


def test_the_measure_reads_type_as_drawn(browser):
    """The measure gives a figure's type as shown: 12 pt (16 px at 96 px per inch) and 9 pt
    drawn by matplotlib, shown at its own width and at half of it, with a rotated label."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2), dpi=96)
    ax.plot([0, 1], [0, 1])
    ax.tick_params(labelsize=12)
    ax.set_ylabel("rotated $x^2$", fontsize=9)
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    plt.close(fig)
    svg = base64.b64encode(buffer.getvalue().encode()).decode()
    page = browser.new_page(viewport=PHONE)
    try:
        page.set_content(f"""<main><article>
          <img src="data:image/svg+xml;base64,{svg}" style="width: 288px">
          <img src="data:image/svg+xml;base64,{svg}" style="width: 144px">
          <figcaption style="font-size: 15px">caption</figcaption></article></main>""")
        page.wait_for_function("() => Array.from(document.images).every((i) => i.complete)")
        read = page.evaluate(_MEASURE)
    finally:
        page.close()
    assert read["captionPx"] == 15
    full, half = read["figures"]
    assert full["tickPx"] == pytest.approx(16, abs=0.05) and half["tickPx"] == pytest.approx(8, abs=0.05)
    assert full["smallest"]["px"] == pytest.approx(12, abs=0.05)  # the 9-point label
    assert full["smallest"]["text"] == "rotated $x^2$"
    assert half["smallest"]["px"] == pytest.approx(6, abs=0.05)
