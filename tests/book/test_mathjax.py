"""The book's formulas typeset when it is built (book/_ext/attnmath_mathjax.py): every formula of
a page is found and replaced, a page with TeX left keeps MathJax, and MathJax's server-side
package (Node.js, npm mathjax-full) typesets the book's macros and refuses an undefined one."""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import attnmath_mathjax as mj  # noqa: E402

# TeX without the delimiters that end a formula; HTML-special characters included on purpose.
TEX = st.lists(st.sampled_from(list("abxyz019+-=^_{}&<>' ") + ["\\alpha ", "\\frac", "\\\\"]),
               min_size=1, max_size=30).map("".join).filter(
    lambda t: "\\)" not in t and "\\]" not in t and t.strip() == t and t)


def page_with(formulas) -> str:
    """A page as Sphinx writes it: inline maths in spans, displayed maths (numbered) in divs."""
    parts = ["<html><head><title>t</title>",
             '<script>window.MathJax = {"tex": {}}</script>',
             '<script defer="defer" src="../_static/mathjax/startup.js?v=1"></script>',
             "</head><body><p>Text</p>"]
    for n, (tex, display) in enumerate(formulas):
        if display:
            parts.append(f'<div class="math notranslate nohighlight" id="equation-{n}">'
                         f'<span class="eqno">({n})</span>\\[{html.escape(tex, quote=False)}\\]</div>')
        else:
            parts.append(f'<p>see <span class="math notranslate nohighlight">'
                         f'\\({html.escape(tex, quote=False)}\\)</span> here</p>')
    return "".join(parts) + "<pre>re.escape(r'\\(')</pre></body></html>"


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(TEX, st.booleans()), max_size=6))
def test_every_formula_is_found_unescaped_and_in_order(formulas):
    assert mj.formulas_of(page_with(formulas)) == formulas


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(TEX, st.booleans()), min_size=1, max_size=6))
def test_typeset_page_has_no_tex_left_and_loads_no_mathjax(formulas):
    markup = {f: f"<mjx-container>{i}</mjx-container>" for i, f in enumerate(formulas)}
    page = mj.serve_typeset(mj.replace_formulas(page_with(formulas), markup), "../")
    assert mj.formulas_of(page) == []
    assert not mj.tex_left(page)
    assert "mathjax/startup.js" not in page and "window.MathJax" not in page
    assert '<link rel="stylesheet" type="text/css" href="../_static/mathjax-typeset.css" />' in page
    for code in markup.values():
        assert code in page
    assert "<pre>re.escape(r'\\(')</pre>" in page  # code is never read as TeX


def test_a_formula_without_markup_keeps_mathjax_on_its_page():
    formulas = [("a+b", False), ("x_1", True)]
    page = mj.serve_typeset(mj.replace_formulas(page_with(formulas), {formulas[0]: "<mjx-container/>"}),
                            "")
    assert mj.formulas_of(page) == [formulas[1]]
    assert mj.tex_left(page)
    assert "mathjax/startup.js" in page and "window.MathJax" in page


needs_node = pytest.mark.skipif(not mj.renderer_available(),
                                reason="Node.js with node_modules/mathjax-full (make book installs it) "
                                       "is needed to typeset at build time")


@needs_node
def test_mathjax_typesets_the_books_macros_and_reports_an_undefined_one():
    formulas = [("x \\in \\R^{n}", False), ("\\softmax(z)_i = e^{z_i}", True), ("\\nosuchmacro", False)]
    result = mj.run_mathjax(formulas, {"R": "\\mathbb{R}", "softmax": "\\operatorname{softmax}"})
    inline, display, undefined = result["html"]
    assert inline.startswith("<mjx-container") and 'display="true"' not in inline
    assert display.startswith("<mjx-container") and 'display="true"' in display
    assert "mjx-c211D" in inline  # the double-struck R of \R
    assert undefined is None and "nosuchmacro" in result["errors"][2]
    assert result["errors"][:2] == [None, None]
    assert f"url(\"{mj.FONTS}/MathJax_Main-Regular.woff\")" in result["css"]


@needs_node
def test_typeset_book_rewrites_each_page_and_writes_one_stylesheet(tmp_path):
    (tmp_path / "_static").mkdir()
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "a.html").write_text(page_with([("a < b", False), ("\\frac{1}{2}", True)]))
    (tmp_path / "index.html").write_text("<html><head></head><body>no maths</body></html>")
    warnings = []
    assert mj.typeset_book(tmp_path, {}, warnings.append) == 1
    page = (tmp_path / "book" / "a.html").read_text()
    assert page.count("<mjx-container") == 2 and not mj.tex_left(page) and not warnings
    assert "mathjax/startup.js" not in page
    assert "mjx-container" in (tmp_path / "_static" / mj.STYLESHEET).read_text()
    assert (tmp_path / "index.html").read_text() == "<html><head></head><body>no maths</body></html>"
    (tmp_path / "book" / "b.html").write_text(page_with([("\\undefinedmacro", False)]))
    mj.typeset_book(tmp_path, {}, warnings.append)
    assert len(warnings) == 1 and "book/b.html" in warnings[0]


def _build(root: Path, pages: dict[str, list]) -> None:
    """Sphinx writing ``pages`` (path: formulas) into the HTML build ``root``."""
    (root / "_static").mkdir(parents=True, exist_ok=True)
    for rel, formulas in pages.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(page_with(formulas))


A_PAGE = [("x \\in \\R^{n}", False), ("\\sum_i \\alpha_i", True)]
B_PAGE = [("\\beta + \\gamma", False)]


@needs_node
def test_a_rebuild_typesets_only_the_rewritten_pages_and_keeps_the_whole_books_stylesheet(tmp_path):
    clean, incremental = tmp_path / "clean", tmp_path / "incremental"
    _build(clean, {"book/a.html": A_PAGE, "book/b.html": B_PAGE})
    mj.typeset_book(clean, {"R": "\\mathbb{R}"}, pytest.fail)
    _build(incremental, {"book/a.html": A_PAGE, "book/b.html": [("\\delta", False)]})
    mj.typeset_book(incremental, {"R": "\\mathbb{R}"}, pytest.fail)
    a_before = (incremental / "book" / "a.html").read_text()
    _build(incremental, {"book/b.html": B_PAGE})  # an edit: Sphinx writes b again, not a
    assert mj.typeset_book(incremental, {"R": "\\mathbb{R}"}, pytest.fail) == 1
    assert (incremental / "book" / "a.html").read_text() == a_before
    for rel in ("book/a.html", "book/b.html", f"_static/{mj.STYLESHEET}"):
        assert (incremental / rel).read_text() == (clean / rel).read_text(), rel
    assert "mjx-c211D" in (incremental / "_static" / mj.STYLESHEET).read_text()  # a's \R, kept


def test_a_rewritten_page_of_known_formulas_is_typeset_without_node(tmp_path, monkeypatch):
    key = mj.renderer_key({})
    markup = {f: f"<mjx-container>{i}</mjx-container>" for i, f in enumerate(A_PAGE + B_PAGE)}
    unique = sorted(markup)
    record = {"renderer": key, "stylesheet_for": mj._digest(unique),
              "pages": {"book/a.html": [list(f) for f in A_PAGE], "book/b.html": [list(f) for f in B_PAGE]},
              "markup": {mj._formula_key(f): code for f, code in markup.items()}}
    _build(tmp_path, {"book/a.html": A_PAGE, "book/b.html": B_PAGE})
    (tmp_path / mj.RECORD).write_text(json.dumps(record))
    (tmp_path / "_static" / mj.STYLESHEET).write_text("/* the book's */")
    monkeypatch.setattr(mj, "run_mathjax", lambda *a: pytest.fail("Node.js ran for known formulas"))
    assert mj.typeset_book(tmp_path, {}, pytest.fail) == 2
    for rel, formulas in (("book/a.html", A_PAGE), ("book/b.html", B_PAGE)):
        page = (tmp_path / rel).read_text()
        assert all(markup[f] in page for f in formulas) and not mj.tex_left(page)
    # another renderer (other macros): the record does not apply
    assert mj.load_record(tmp_path, mj.renderer_key({"R": "\\mathbb{R}"}))["markup"] == {}


@needs_node
def test_a_formula_mathjax_cannot_typeset_is_reported_by_every_build_until_it_is_fixed(tmp_path):
    _build(tmp_path, {"book/a.html": A_PAGE, "book/b.html": [("\\nosuchmacro", False)]})
    for _ in range(2):  # the second build writes no page again
        warnings = []
        mj.typeset_book(tmp_path, {"R": "\\mathbb{R}"}, warnings.append)
        assert len(warnings) == 1 and "book/b.html" in warnings[0] and "nosuchmacro" in warnings[0]
    _build(tmp_path, {"book/b.html": B_PAGE})
    warnings = []
    mj.typeset_book(tmp_path, {"R": "\\mathbb{R}"}, warnings.append)
    assert warnings == [] and not mj.tex_left((tmp_path / "book" / "b.html").read_text())
