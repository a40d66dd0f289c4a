"""The book's mathematics typeset when the book is built, so that a page shows its text and its
formulas at first paint.

After the HTML build, :func:`typeset_book` gathers the TeX of every formula of every page (the
``\\(...\\)`` and ``\\[...\\]`` that Sphinx writes into elements of class ``math``), has MathJax's
own server-side package typeset them all in one run of Node.js (:mod:`mathjax_node`, shared with
attngrade's feedback pages: ``lib/mathjax_node/typeset_math.cjs``, npm ``mathjax-full`` at the
version of ``package.json``, installed into ``node_modules/`` by ``make book``), and puts the
CommonHTML markup in place of the TeX. One stylesheet,
``_static/mathjax-typeset.css``, draws every character used in the book from MathJax's own fonts
(``_static/mathjax/output/chtml/fonts/woff-v2``). A page whose formulas are all typeset no longer
loads MathJax; a page with TeX left elsewhere (in a cell's output, say) keeps it, and MathJax
typesets only what is left.

A rebuild after an edit typesets only the pages Sphinx wrote again. A record beside the pages
(``.mathjax-typeset.json``) keeps each page's formulas and each formula's markup, so that Node.js
runs only when the book has a formula it has not typeset yet (then over every formula of the
book, so that the stylesheet, which has a rule for each character used, stays the one a clean
build writes).

Without Node.js or without ``node_modules/mathjax-full`` nothing changes: MathJax typesets the
pages in the browser as before (``book/_static/attnmath.js`` never hides the text meanwhile).
A formula that MathJax cannot typeset (an undefined macro) is a build warning, which the book's
``-W`` build turns into an error.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from pathlib import Path

import mathjax_node
from mathjax_node import SCRIPT, node_modules, renderer_available  # noqa: F401 - this module's API

STYLESHEET = "mathjax-typeset.css"
FONTS = "mathjax/output/chtml/fonts/woff-v2"  # relative to _static, where the stylesheet is
#: The fonts of nearly every formula, fetched with the page rather than when the text is laid out.
PRELOADED_FONTS = ("MathJax_Main-Regular.woff", "MathJax_Math-Italic.woff")

_MATH_ELEMENT = re.compile(r'(<(span|div) class="math notranslate nohighlight"[^>]*>)(.*?)(</\2>)', re.S)
_DELIMITED = re.compile(r"\\\((?P<inline>.*?)\\\)|\\\[(?P<display>.*?)\\\]", re.S)
_CONFIG_SCRIPT = re.compile(r"\s*<script>window\.MathJax = .*?</script>", re.S)
_LOADER_SCRIPT = re.compile(r'\s*<script\b[^>]*src="[^"]*mathjax/startup\.js[^"]*"[^>]*>\s*</script>')
_CODE_OR_SCRIPT = re.compile(r"<(pre|script|style|textarea)\b.*?</\1>", re.S)


def formulas_of(page: str) -> list[tuple[str, bool]]:
    """Every formula of a page, as (TeX, displayed), in the order they appear."""
    found = []
    for element in _MATH_ELEMENT.finditer(page):
        for match in _DELIMITED.finditer(element.group(3)):
            display = match["display"] is not None
            found.append((html.unescape(match["display"] if display else match["inline"]), display))
    return found


def run_mathjax(formulas: list[tuple[str, bool]], macros: dict) -> dict:
    """Typeset ``formulas`` with MathJax in Node.js: their markup, errors and stylesheet, whose
    fonts load from the book's ``_static`` (:func:`mathjax_node.run_mathjax`)."""
    return mathjax_node.run_mathjax(formulas, macros, FONTS)


def replace_formulas(page: str, markup: dict[tuple[str, bool], str]) -> str:
    """The page with each formula that has markup in ``markup`` replaced by it."""
    def element(match):
        def formula(m):
            display = m["display"] is not None
            key = (html.unescape(m["display"] if display else m["inline"]), display)
            return markup.get(key) or m.group(0)
        return match.group(1) + _DELIMITED.sub(formula, match.group(3)) + match.group(4)

    return _MATH_ELEMENT.sub(element, page)


def tex_left(page: str) -> bool:
    """Whether TeX that MathJax would typeset in the browser is still on the page."""
    text = _CODE_OR_SCRIPT.sub("", page)
    return bool(re.search(r"\\\(|\\\[|\$\$", text))


def serve_typeset(page: str, prefix: str) -> str:
    """A typeset page: MathJax's stylesheet instead of its scripts (kept if TeX is left)."""
    links = [f'<link rel="stylesheet" type="text/css" href="{prefix}_static/{STYLESHEET}" />']
    links += [f'<link rel="preload" href="{prefix}_static/{FONTS}/{font}" as="font" type="font/woff" '
              'crossorigin />' for font in PRELOADED_FONTS]
    page = page.replace("</head>", "".join(f"    {link}\n" for link in links) + "  </head>", 1)
    if not tex_left(page):
        page = _LOADER_SCRIPT.sub("", _CONFIG_SCRIPT.sub("", page))
    return page


#: What the last typesetting of an HTML build knew, kept beside its pages (as Sphinx's
#: ``.buildinfo``): the formulas of each page and the markup of each formula.
RECORD = ".mathjax-typeset.json"


def renderer_key(macros: dict) -> str:
    """A digest of everything the markup depends on besides the formula: the script, MathJax's
    version, the macros and the fonts' address."""
    h = mathjax_node.renderer_digest()
    h.update(json.dumps([macros, FONTS], sort_keys=True).encode())
    return h.hexdigest()


def _formula_key(formula: tuple[str, bool]) -> str:
    return json.dumps(list(formula))


def _digest(formulas) -> str:
    return hashlib.sha256(json.dumps([list(f) for f in formulas]).encode()).hexdigest()


def load_record(outdir: Path, key: str) -> dict:
    """The record of the last typesetting of ``outdir`` by the same renderer, or an empty one."""
    try:
        record = json.loads((outdir / RECORD).read_text())
    except (OSError, ValueError):
        record = None
    if not isinstance(record, dict) or record.get("renderer") != key:
        return {"renderer": key, "pages": {}, "markup": {}, "stylesheet_for": None}
    return record


def _typeset_markup(unique, macros, record, stylesheet: Path, warn, found) -> dict:
    """The markup of each formula of ``unique`` that MathJax can typeset. MathJax runs (on every
    formula, so that the stylesheet has every character of the book) only when a formula has no
    markup in the record or the stylesheet is not the one for these formulas."""
    cached = record["markup"]
    digest = _digest(unique)
    if (all(_formula_key(f) in cached for f in unique) and record["stylesheet_for"] == digest
            and stylesheet.is_file()):
        return {f: cached[_formula_key(f)] for f in unique}
    result = run_mathjax(unique, macros)
    markup = {}
    for formula, code, error in zip(unique, result["html"], result["errors"]):
        if error:
            warn(f"MathJax cannot typeset {formula[0]!r} ({error}) on {', '.join(found(formula))}")
        else:
            markup[formula] = code
    stylesheet.write_text(result["css"])
    record["stylesheet_for"] = digest
    return markup


def typeset_book(outdir: Path, macros: dict, warn) -> int:
    """Typeset every formula of the HTML build in ``outdir``; return how many pages changed.
    ``warn(message)`` reports a formula that MathJax cannot typeset.

    A page typeset by an earlier build (it links the stylesheet) is left as it is; its formulas
    are those the record kept for it. Only pages that Sphinx has just written are typeset, from
    the record's markup where it has the formula, and MathJax runs only when a formula is new
    (:func:`_typeset_markup`), so an edit that adds no formula costs no run of Node.js.
    """
    record = load_record(outdir, renderer_key(macros))
    pages, found = {}, {}
    for path in sorted(outdir.rglob("*.html")):
        rel = path.relative_to(outdir).as_posix()
        text = path.read_text()
        if STYLESHEET in text and rel in record["pages"]:
            found[rel] = [tuple(f) for f in record["pages"][rel]]
        else:
            pages[path] = text
            found[rel] = formulas_of(text)
    unique = sorted({f for formulas in found.values() for f in formulas})
    stylesheet = outdir / "_static" / STYLESHEET
    def pages_with(formula):
        return [p for p, fs in found.items() if formula in fs]

    markup = _typeset_markup(unique, macros, record, stylesheet, warn, pages_with) if unique else {}
    changed = 0
    for path, text in pages.items():
        rel = path.relative_to(outdir).as_posix()
        if not found[rel]:
            continue
        prefix = "../" * (len(path.relative_to(outdir).parts) - 1)
        path.write_text(serve_typeset(replace_formulas(text, markup), prefix))
        changed += 1
    record["pages"] = {rel: [list(f) for f in formulas] for rel, formulas in found.items() if formulas}
    record["markup"] = {_formula_key(f): code for f, code in markup.items()}
    (outdir / RECORD).write_text(json.dumps(record))
    return changed


def typeset_at_build(app, exception):
    """Sphinx ``build-finished``: typeset the HTML build's formulas if Node.js and MathJax are
    here (the single page that ``make pdf`` prints keeps client-side MathJax)."""
    if exception is not None or app.builder.name != "html" or not renderer_available():
        return
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    macros = ((app.config.mathjax3_config or {}).get("tex") or {}).get("macros") or {}
    typeset_book(Path(app.outdir), macros, lambda message: logger.warning(message))


def setup(app):
    app.connect("build-finished", typeset_at_build, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
