"""What ``book/_ext/attnmath_weight.py`` does to the built pages, without building the book:
stylesheets keep the rules that can match, code blocks lose only spans that change nothing a
reader sees, and the icon font keeps the glyphs the stylesheet names."""

from __future__ import annotations

import html
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from attnmath_weight import (  # noqa: E402
    lighten_static,
    plain_tokens,
    selector_can_match,
    subset_icon_font,
    trim_css,
    unwrap_plain_tokens,
)

WORDS = {"admonition", "note", "bd-article", "highlight", "main-content"}

PYGMENTS = """
html[data-theme="light"] .highlight pre { line-height: 125%; }
html[data-theme="light"] .highlight { background: #fefefe; color: #080808 }
html[data-theme="light"] .highlight .k { color: #C34E00; font-weight: bold } /* Keyword */
html[data-theme="light"] .highlight .n { color: #080808 } /* Name */
html[data-theme="light"] .highlight .o { color: #00622F } /* Operator */
html[data-theme="light"] .highlight .p { color: #080808 } /* Punctuation */
html[data-theme="light"] .highlight .s { color: #080808 } /* String: plain in light only */
html[data-theme="dark"] .highlight { background: #2b2b2b; color: #F8F8F2 }
html[data-theme="dark"] .highlight .k { color: #FF79C6 } /* Keyword */
html[data-theme="dark"] .highlight .n { color: #F8F8F2 } /* Name */
html[data-theme="dark"] .highlight .o { color: #ABE338 } /* Operator */
html[data-theme="dark"] .highlight .p { color: #F8F8F2 } /* Punctuation */
html[data-theme="dark"] .highlight .s { color: #ABE338 } /* String */
"""


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data):
        self.parts.append(data)


def text_of(markup: str) -> str:
    parser = _Text()
    parser.feed(markup)
    parser.close()
    return "".join(parser.parts)


@pytest.mark.parametrize("selector, kept", [
    (".admonition > .admonition-title", False),  # admonition-title is not among WORDS
    (".admonition.note", True),
    ("#main-content p", True),
    ("#nowhere p", False),
    (".carousel-item", False),
    (".bd-article:not(.carousel) a", True),  # inside :not(): never a reason to drop
    (":is(.carousel, .admonition) p", True),
    ('a[href^="http"]', True),  # attribute selectors and elements stay
    ("p:hover", True),
    (".show", True),  # a state that scripts set (KEEP_PREFIXES)
    (".fa-download", True),  # an icon a page uses
    (".fa-rocket", False),  # an icon no page uses, although a script names it
])
def test_selector_kept_exactly_when_it_can_match(selector, kept):
    assert selector_can_match(selector, WORDS | {"fa-rocket"}, {"fa-download"}) is kept


def test_trim_css_keeps_what_can_match_and_every_at_rule_that_matters():
    css = """
    :root { --pst-icon-bell: "\\f0f3"; }
    @font-face { font-family: X; src: url(x.woff) format("woff"); }
    .admonition.note, .carousel-item { color: red; }
    .carousel-item { color: blue; }
    @media (max-width: 600px) { .carousel-item { top: 0 } .highlight { margin: 0 } }
    @media print { .carousel { display: none } }
    @keyframes spin { to { transform: rotate(1turn) } }
    """
    out = trim_css(css, WORDS, set())
    assert ".admonition.note{color: red;}" in out.replace("{ ", "{").replace("; }", ";}")
    assert "carousel" not in out
    assert "@font-face" in out and "@keyframes spin" in out and "--pst-icon-bell" in out
    assert "@media (max-width: 600px)" in out and ".highlight" in out
    assert "@media print" not in out  # nothing left in it
    assert "\\f0f3" in out and out.isascii()  # the icon's escape survives, as ASCII


def test_plain_tokens_are_those_drawn_like_the_code_in_every_theme():
    assert plain_tokens(PYGMENTS) == {"n", "p"}
    assert plain_tokens("") == set()


_TOKENS = st.lists(st.tuples(st.sampled_from(["k", "n", "o", "p", "s", "w"]),
                             st.text(alphabet="ab(){}<>&= \n_.", min_size=1, max_size=6)),
                   max_size=30)


@given(_TOKENS, _TOKENS)
def test_unwrapping_code_spans_keeps_the_text_and_the_styled_spans(tokens, outside):
    def spans(items):
        return "".join(f'<span class="{c}">{html.escape(t, quote=False)}</span>' for c, t in items)

    block = f'<div class="highlight"><pre><span></span>{spans(tokens)}</pre></div>'
    page = f"<p>{spans(outside)}</p>{block}<p>after</p>"
    out = unwrap_plain_tokens(page, {"n", "p"})
    assert text_of(out) == text_of(page)
    assert out.count('<span class="k">') == page.count('<span class="k">')  # styled: kept
    assert out.count('<span class="n">') == sum(c == "n" for c, _ in outside)  # outside code: kept
    assert f"<p>{spans(outside)}</p>" in out


def test_icon_font_keeps_the_glyphs_the_stylesheet_names(tmp_path):
    from fontTools.ttLib import TTFont

    theme = ROOT / ".venv" / "lib"
    fonts = sorted(theme.glob("python*/site-packages/pydata_sphinx_theme/theme/pydata_sphinx_theme/"
                              "static/vendor/fontawesome/webfonts/fa-solid-900.ttf"))
    if not fonts:
        pytest.skip("pydata-sphinx-theme's Font Awesome font is not installed here")
    static = tmp_path / "_static"
    webfonts = static / "vendor" / "fontawesome" / "webfonts"
    webfonts.mkdir(parents=True)
    (webfonts / "fa-solid-900.ttf").write_bytes(fonts[0].read_bytes())
    css = static / "styles" / "theme.css"
    css.parent.mkdir()
    css.write_text('@font-face{font-family:FA;src:url(../vendor/fontawesome/webfonts/'
                   'fa-solid-900.woff2) format("woff2")}:root{--a:"\\f0f3 ";--b:"\\f019 "}')
    subset_icon_font(static, css)
    subset = webfonts / "fa-solid-900.book.woff"
    assert set(TTFont(str(subset)).getBestCmap()) == {0xF0F3, 0xF019}
    assert subset.stat().st_size < 10_000
    assert 'fa-solid-900.book.woff) format("woff")' in css.read_text()


@pytest.mark.parametrize("page", ["book/01_softmax.html", "book/api/softmax.html"])
def test_lighten_static_covers_pages_in_every_folder(tmp_path, page):
    """A page in a subfolder (the API reference's module pages) is lightened, and the rules that
    only it uses are kept."""
    static = tmp_path / "_static"
    static.mkdir()
    (static / "pygments.css").write_text(PYGMENTS)
    (static / "basic.css").write_text(".only-here { color: red }\n.nowhere { color: blue }\n")
    (tmp_path / "index.html").write_text("<p>front</p>")
    written = tmp_path / page
    written.parent.mkdir(parents=True, exist_ok=True)
    code = '<div class="highlight"><pre><span class="k">def</span> <span class="n">f</span></pre></div>'
    written.write_text(f'<dl class="only-here">{code}</dl>')
    lighten_static(tmp_path)
    out = written.read_text()
    assert '<span class="n">' not in out and '<span class="k">def</span>' in out
    assert text_of(out) == text_of(code)
    css = (static / "basic.css").read_text()
    assert ".only-here" in css and ".nowhere" not in css
