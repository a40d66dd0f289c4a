"""The book's code listings and downloadable notebooks, without building the book:
``book/_ext/attnmath_listing.py`` (docstrings stripped, lines laid out to 88 columns) and
``book/_ext/attnmath_notebook.py`` (MyST Markdown rewritten for JupyterLab)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from attnmath_listing import WIDTH, fit_code, strip_docstrings, summary_line  # noqa: E402
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
                    and isinstance(first.value.value, str):
                node.body = node.body[1:]
    return ast.dump(tree)


def test_the_library_has_objects_to_list():
    assert len(OBJECTS) > 50


@pytest.mark.parametrize("name,source", OBJECTS, ids=[n for n, _ in OBJECTS])
def test_listing_is_the_same_code_without_docstrings_and_fits_the_column(name, source):
    shown = fit_code(strip_docstrings(source))
    original, listed = ast.parse(textwrap.dedent(source)), ast.parse(textwrap.dedent(shown))
    assert _without_docstrings(listed) == _without_docstrings(original), f"{name}: the code changed"
    for node in ast.walk(listed):  # at most a one-sentence summary is left of each docstring
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node):
            assert "\n\n" not in ast.get_docstring(node)
            assert ".. math::" not in ast.get_docstring(node) and "Parameters" not in ast.get_docstring(node)
    long = [line for line in shown.splitlines() if len(line) > WIDTH]
    # a line may stay long only where Python offers no break (a call chain without commas)
    for line in long:
        assert "," not in line.split("#")[0] and '"' not in line and "'" not in line, \
            f"{name}: a line of {len(line)} characters that could have been broken: {line!r}"


def test_summary_line_is_the_first_sentence_in_plain_text():
    doc = """Numerically stable softmax along ``axis``.

    .. math:: p_i = e^{z_i} / \\sum_j e^{z_j}
    """
    assert summary_line(doc) == "Numerically stable softmax along axis."
    assert summary_line("Rank of :math:`P V`, numerically. More.") == "Rank of P V, numerically."


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


def test_notebook_listing_is_expanded():
    out = markdown_cell("```{literalinclude} ../lib/attnmath/softmax.py\n:pyobject: softmax\n```",
                        ROOT / "book")
    assert out.startswith("```python\ndef softmax(") and out.endswith("```")


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
