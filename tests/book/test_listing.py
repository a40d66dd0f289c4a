"""The book's code listings and downloadable notebooks, without building the book:
``book/_ext/attnmath_listing.py`` (docstrings left out, argument checks folded, lines laid out
to 88 columns) and ``book/_ext/attnmath_notebook.py`` (MyST Markdown rewritten for JupyterLab).

The code on the page is the tested code: for every function and class of the library, the lines
a listing shows are a subsequence of its source, and its syntax tree is the source's without its
docstrings and without exactly the statements of its folds, each of which checks arguments (a
check helper's call, a raise or an assert) and is named by its fold's line."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import sys
import textwrap
from pathlib import Path

import pytest
from docutils import nodes

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from attnmath_listing import (FOLD_MARK, WIDTH, fit_code, listing, show_code,  # noqa: E402
                              summary_nodes)
from attnmath_notebook import macro_definitions, markdown_cell  # noqa: E402


def _library_objects():
    """Source of every function and class defined in attnmath (the listings' whole domain)."""
    import attnmath

    found = []
    for info in pkgutil.iter_modules(attnmath.__path__):
        try:
            module = importlib.import_module(f"attnmath.{info.name}")
        except ImportError:  # an optional dependency (triton) is missing
            continue
        for name, obj in vars(module).items():
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == module.__name__:
                try:
                    found.append((f"{module.__name__}.{name}", inspect.getsource(obj)))
                except (OSError, TypeError):
                    continue
    return found


OBJECTS = _library_objects()


def _without_docstrings(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str) and len(node.body) > 1:
                node.body = node.body[1:]
    return tree


def _without(tree, spans):
    """``tree`` without the statements that lie within one of ``spans`` (1-based lines)."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(node, field, [s for s in block if not any(
                    a <= s.lineno and s.end_lineno <= b for a, b in spans)])
    return ast.dump(tree)


def _is_subsequence(shown, source):
    it = iter(source)
    return all(any(line == src for src in it) for line in shown)


def _named_in(stmts):
    """What a fold must name: the check helpers called and the exceptions raised."""
    names = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                func = node.func
                name = getattr(func, "id", None) or getattr(func, "attr", "")
                if name.lstrip("_").startswith("check_") or name == "as_array":
                    names.add(name)
            elif isinstance(node, ast.Raise):
                exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                names.add("raise" + ("" if exc is None else " " + ast.unparse(exc)))
            elif isinstance(node, ast.Assert):
                names.add("assert")
    return names


def test_the_library_has_objects_to_list():
    assert len(OBJECTS) > 50


@pytest.mark.parametrize("name,source", OBJECTS, ids=[n for n, _ in OBJECTS])
def test_a_listing_is_the_source_without_docstrings_and_named_checks(name, source):
    code = textwrap.dedent(source)
    shown, folds = show_code(code)
    lines = shown.splitlines()
    assert _is_subsequence([x for x in lines if not x.lstrip().startswith(FOLD_MARK)],
                           code.splitlines()), f"{name}: a line that is not the source's"
    original = _without_docstrings(ast.parse(code))
    for fold in folds:
        assert fold.marker in lines
        stmts = [s for s in ast.walk(original) if isinstance(s, ast.stmt)
                 and fold.start <= s.lineno and s.end_lineno <= fold.end]
        assert stmts and all(_named_in([s]) for s in stmts), f"{name}: folded a computation"
        assert set(fold.names) == _named_in(stmts), f"{name}: {fold.marker!r} misnames its fold"
        assert fold.marker.strip() == FOLD_MARK + ", ".join(fold.names)
    assert ast.dump(_without_docstrings(ast.parse(shown))) == \
        _without(original, [(f.start, f.end) for f in folds]), f"{name}: the code changed"
    laid_out = fit_code(shown)
    assert ast.dump(ast.parse(laid_out)) == ast.dump(ast.parse(shown)), f"{name}: layout changed it"
    # a line may stay long only where Python offers no break (a call chain without commas)
    for line in laid_out.splitlines():
        if len(line) > WIDTH and not line.lstrip().startswith("#"):
            assert "," not in line.split("#")[0] and '"' not in line and "'" not in line, \
                f"{name}: a line of {len(line)} characters that could have been broken: {line!r}"


def _book_listings():
    """Every library listing of every chapter: (chapter, file, object)."""
    found = []
    for path in sorted((ROOT / "book").glob("[0-9][0-9]_*.md")):
        text = path.read_text()
        for block in text.split("```{literalinclude}")[1:]:
            head = block.split("```", 1)[0]
            arg = head.split("\n", 1)[0].strip()
            obj = [x.split(":", 2)[2].strip() for x in head.splitlines() if x.startswith(":pyobject:")]
            found.append((path.stem, (path.parent / arg).resolve(), obj[0] if obj else None))
    return found


def test_the_books_listings_show_no_docstring_and_no_raise():
    listings = _book_listings()
    assert len(listings) > 100
    folded = 0
    for chapter, path, obj in listings:
        assert obj, f"{chapter}: a listing of a whole file ({path.name})"
        shown = listing(path.read_text(), obj)
        tree = ast.parse(shown.code)
        handlers = [s for h in ast.walk(tree) if isinstance(h, ast.ExceptHandler) for s in h.body]
        # a raise is left only where it is the whole of an except clause (a clearer message)
        assert all(n in handlers for n in ast.walk(tree) if isinstance(n, ast.Raise)), \
            f"{chapter}: {obj} shows a raise"
        assert not [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                    and ast.get_docstring(n)], f"{chapter}: {obj} shows a docstring"
        assert shown.code.count(FOLD_MARK) == len(shown.folds)
        folded += bool(shown.folds)
    assert folded > len(listings) // 2


def test_the_summary_renders_its_mathematics_and_literals():
    out = summary_nodes("Stable :math:`\\log \\sum_j e^{x_j}` along ``axis``, as :func:`~a.b.f`. More.")
    assert [type(n) for n in out] == [nodes.Text, nodes.math, nodes.Text, nodes.literal, nodes.Text,
                                      nodes.literal, nodes.Text]
    assert out[1].astext() == "\\log \\sum_j e^{x_j}" and out[5].astext() == "f"
    assert "".join(n.astext() for n in out).endswith("as f.")


def test_notebook_markdown_has_no_myst_left():
    source = textwrap.dedent("""\
        (sec-x)=
        ## A section

        See {ref}`the section <sec-x>`, {eq}`eq-a` and {cite:p}`vaswani2017attention`.

        ```{prf:theorem} Softmax is shift invariant
        :label: thm-shift

        $\\softmax(z + c) = \\softmax(z)$.
        ```

        ```{prf:proof}
        Cancel $e^c$.
        ```

        :::{admonition} Correction: a title
        :class: warning
        Body line.
        :::

        ```{math}
        :label: eq-a
        x = 1
        ```
        """)
    out = markdown_cell(source, ROOT / "book")
    assert "{" + "ref}" not in out and "```{" not in out and ":::" not in out and "(sec-x)=" not in out
    assert "**Theorem (Softmax is shift invariant).**" in out
    assert "*Proof.*" in out and "> **Correction: a title**" in out and "> Body line." in out
    assert "the section" in out and "(vaswani2017attention)" in out and "$$\nx = 1\n\\tag{eq-a}\n$$" in out


def test_notebook_listing_is_the_pages():
    out = markdown_cell("```{literalinclude} ../lib/attnmath/softmax.py\n:pyobject: softmax\n```",
                        ROOT / "book")
    shown = listing((ROOT / "lib/attnmath/softmax.py").read_text(), "softmax")
    assert out == "```python\n" + shown.code.rstrip("\n") + "\n```" and FOLD_MARK in out


def test_macro_definitions():
    assert macro_definitions({"R": "\\mathbb{R}", "norm": ["\\lVert #1 \\rVert", 1]}) == \
        "\\newcommand{\\R}{\\mathbb{R}}\\newcommand{\\norm}[1]{\\lVert #1 \\rVert}"


def _chapter_cells():
    """Every code cell of every chapter (MyST ``{code-cell}`` blocks), the layout's other domain."""
    cells = []
    for path in sorted((ROOT / "book").glob("[0-9][0-9]_*.md")):
        blocks = path.read_text().split("```{code-cell}")[1:]
        for i, block in enumerate(blocks):
            body = block.split("\n", 1)[1].split("\n```", 1)[0]
            code = "\n".join(line for line in body.splitlines() if not line.startswith(":"))  # options
            cells.append((f"{path.stem}[{i}]", code))
    return cells


CELLS = _chapter_cells()


@pytest.mark.parametrize("name,code", CELLS, ids=[n for n, _ in CELLS])
def test_a_chapter_cell_laid_out_again_means_the_same_code(name, code):
    try:
        original = ast.dump(ast.parse(textwrap.dedent(code)))
    except SyntaxError:
        pytest.skip("not plain Python (a magic)")
    for width in (WIDTH, WIDTH - 2, 60):
        shown = fit_code(code, width)
        assert ast.dump(ast.parse(textwrap.dedent(shown))) == original, f"{name} at {width} columns"


def test_a_layout_that_would_break_the_code_keeps_the_line_as_written():
    # A string split inside brackets that already hold an implicit concatenation: splitting the
    # first piece again would need brackets of its own, so the line stays as it is.
    code = ('def f(path):\n'
            '    return (f"No figures recorded yet: run python bench/bench_something.py on a GPU "\n'
            '            f"to write {path.name}.")\n')
    shown = fit_code(code, 60)
    assert ast.dump(ast.parse(shown)) == ast.dump(ast.parse(code))
