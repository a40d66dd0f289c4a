"""The display equations of the API pages fit their column at 1280 px.

The docstrings' ``.. math::`` displays are measured with a conservative estimate of their typeset
width, in ems of the body font: a letter or digit counts 1, a relation or binary operator 1.6 (its
spacing included), punctuation 0.5, a fraction the wider of its two parts, a sub- or superscript
0.7 of its content, a matrix or ``cases`` its widest row. A display broken into lines (``\\\\``,
as in ``\\begin{aligned}``) is as wide as its widest line. At 1280 px the article column of an API
page holds about 730 px of text, indented under the signature; ``LIMIT`` ems leave room for the
math font being wider than the body's. This is the quick check, without a browser: the fit itself
is measured on the built pages by ``tests/browser/test_api_fit.py``."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# ems: 730 px at 16 px per em is 45.6 em, less a member's indent and a margin for a rough estimate
LIMIT = 35.0
MATH_SCALE = 1.1  # MathJax scales its font to the surrounding text's x-height
TOKEN = re.compile(r"\\[a-zA-Z]+\*?|\\.|[{}^_&]|\s+|.")
LINE_ENVS = {"aligned", "split", "gathered", "align", "align*"}
SPACES = {r"\quad": 1.0, r"\qquad": 2.0, r"\,": 0.17, r"\;": 0.28, r"\:": 0.22, r"\ ": 0.25, r"\!": -0.17}
NO_WIDTH = re.compile(r"\\(left|right|[bB]igg?[lr]?|textstyle|displaystyle|scriptstyle|limits|nolimits|"
                      r"mathrel|mathop|mathbin|mathord|operatorname\*?|mathrm|mathbf|mathcal|mathbb|mathit|"
                      r"boldsymbol|text|hat|tilde|bar|widehat|widetilde|vec|dot|overline)$")
BIG_OPERATORS = {r"\sum", r"\prod", r"\int", r"\bigcup", r"\bigcap"}
NAMED_FUNCTIONS = {r"\max", r"\min", r"\log", r"\exp", r"\sin", r"\cos", r"\arg", r"\det", r"\lim", r"\sup"}
FRACTIONS = {r"\frac": 1.0, r"\dfrac": 1.0, r"\tfrac": 0.7}


def _group(tokens: list[str], i: int) -> tuple[list[str], int]:
    """The tokens of the group or single token at ``i`` (braces dropped), and the index after it."""
    while i < len(tokens) and tokens[i].isspace():
        i += 1
    if i >= len(tokens):
        return [], i
    if tokens[i] != "{":
        return [tokens[i]], i + 1
    depth, j = 0, i
    while j < len(tokens):
        depth += {"{": 1, "}": -1}.get(tokens[j], 0)
        if depth == 0:
            return tokens[i + 1:j], j + 1
        j += 1
    raise ValueError(f"unbalanced braces in {''.join(tokens)!r}")


def _environment(tokens: list[str], i: int, name: str) -> tuple[list[str], int]:
    """The tokens inside ``\\begin{name}`` (``i`` just after it) and the index after its ``\\end``."""
    depth, j = 1, i
    while j < len(tokens):
        if tokens[j] in (r"\begin", r"\end"):
            inner, after = _group(tokens, j + 1)
            if "".join(inner) == name:
                depth += 1 if tokens[j] == r"\begin" else -1
                if depth == 0:
                    return tokens[i:j], after
            j = after
            continue
        j += 1
    raise ValueError(f"\\begin{{{name}}} without its \\end")


def _split_top(tokens: list[str], separator: str) -> list[list[str]]:
    """``tokens`` split at ``separator`` outside braces and environments."""
    parts, depth, current = [], 0, []
    for token in tokens:
        depth += {"{": 1, "}": -1, r"\begin": 1, r"\end": -1}.get(token, 0)
        if token == separator and depth == 0:
            parts.append(current)
            current = []
        else:
            current.append(token)
    return parts + [current]


def _rows_width(tokens: list[str], lines: bool) -> float:
    """Width of a display or environment: its widest row (a row of a matrix: its cells and gaps)."""
    rows = _split_top(tokens, "\\\\")
    if lines:
        return max(_line_width(row) for row in rows)
    return max(sum(_line_width(cell) + 1.0 for cell in _split_top(row, "&")) for row in rows) + 1.0


def _token_width(token: str) -> float:
    if token.isspace() or token in "&{}" or NO_WIDTH.match(token):
        return 0.0
    if token in SPACES:
        return SPACES[token]
    if token in BIG_OPERATORS:
        return 1.2
    if token in NAMED_FUNCTIONS:
        return 0.5 * (len(token) - 1) + 0.17
    if token in "=+-<>" or token in (r"\le", r"\ge", r"\ne", r"\approx", r"\sim", r"\cdot", r"\times",
                                      r"\odot", r"\in", r"\to", r"\mapsto", r"\equiv", r"\propto"):
        return 1.33
    if token in ",;.:'":
        return 0.45
    if token in "()[]|":
        return 0.39
    return 0.55


def _line_width(tokens: list[str]) -> float:
    """Width in ems of one line of TeX (no top-level ``\\\\``)."""
    width, i = 0.0, 0
    while i < len(tokens):
        token = tokens[i]
        if token == r"\begin":
            name, i = _group(tokens, i + 1)
            inner, i = _environment(tokens, i, "".join(name))
            width += _rows_width(inner, "".join(name) in LINE_ENVS)
        elif token in FRACTIONS:
            top, i = _group(tokens, i + 1)
            bottom, i = _group(tokens, i)
            width += FRACTIONS[token] * max(_line_width(top), _line_width(bottom)) + 0.2
        elif token in (r"\underbrace", r"\overbrace"):
            body, i = _group(tokens, i + 1)
            label = []
            if i < len(tokens) and tokens[i] in "_^":
                label, i = _group(tokens, i + 1)
            width += max(_line_width(body), 0.7 * _line_width(label))
        elif token in "^_":
            script, i = _group(tokens, i + 1)
            width += 0.7 * _line_width(script)
        elif token in (r"\text", r"\mathrm", r"\operatorname", r"\mathbf", r"\textrm"):
            body, i = _group(tokens, i + 1)
            width += 0.5 * sum(1 for t in "".join(body) if not t.isspace()) + 0.25 * "".join(body).count(" ")
        elif token == r"\sqrt":
            body, i = _group(tokens, i + 1)
            width += _line_width(body) + 0.85
        else:
            width += _token_width(token)
            i += 1
    return width


def display_width(tex: str) -> float:
    """Estimated typeset width, in ems, of the display ``tex`` (its widest line)."""
    return MATH_SCALE * _rows_width(TOKEN.findall(tex), lines=True)


def _displays() -> list[tuple[str, str]]:
    """``(where, tex)`` of every ``.. math::`` display in the library's docstrings."""
    found = []
    for path in sorted((ROOT / "lib" / "attnmath").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            doc = ast.get_docstring(node, clean=True) or ""
            for match in re.finditer(r"^( *)\.\. math::(.*)\n((?:\1 +\S.*\n|[ \t]*\n)*)", doc + "\n", re.M):
                lines = [match.group(2)] + match.group(3).splitlines()
                tex = " ".join(line.strip() for line in lines)
                found.append((f"{path.stem}.{getattr(node, 'name', '<module>')}", tex.strip()))
    return found


DISPLAYS = _displays()


def test_the_library_has_displays_to_check():
    assert len(DISPLAYS) > 100


@pytest.mark.parametrize("where, tex", DISPLAYS, ids=[f"{w}-{i}" for i, (w, _) in enumerate(DISPLAYS)])
def test_display_fits_the_api_column(where, tex):
    width = display_width(tex)
    assert width <= LIMIT, (f"{where}: a display of about {width:.0f} em (limit {LIMIT:.0f}); break it into "
                            f"lines with \\begin{{aligned}} ... \\\\ ... \\end{{aligned}}: {tex[:120]}")


def test_the_estimate_measures_the_widest_line_and_counts_what_is_typeset():
    one_line = r"a = b, \qquad c = d, \qquad e = f"
    broken = r"\begin{aligned} &a = b, \\ &c = d, \\ &e = f \end{aligned}"
    assert display_width(broken) < display_width(one_line) / 2
    assert display_width(r"\frac{a + b}{c}") == pytest.approx(display_width("a + b") + 0.2 * MATH_SCALE)
    assert display_width("x^{abc}") == pytest.approx(display_width("x") + 0.7 * display_width("abc"))
    assert display_width(r"\begin{pmatrix} a & b \\ c & d \end{pmatrix}") > display_width("ab")
    assert display_width(r"\text{all entries}") > display_width(r"\text{all}")
    assert display_width(" + ".join("x_i" for _ in range(60))) > LIMIT


def _as_sphinx_sends_it(tex: str) -> str:
    """A display as Sphinx's MathJax writer passes it on: a part with ``\\\\`` inside ``split``."""
    return r"\begin{split}" + tex + r"\end{split}" if "\\\\" in tex else tex


def test_every_display_typesets_without_an_error():
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import attnmath_mathjax

    if not attnmath_mathjax.renderer_available():
        pytest.skip("Node.js with node_modules/mathjax-full is not installed (npm ci)")
    result = attnmath_mathjax.run_mathjax([(_as_sphinx_sends_it(tex), True) for _, tex in DISPLAYS], {})
    failed = [(where, error) for (where, _), error in zip(DISPLAYS, result["errors"]) if error]
    assert not failed, f"displays MathJax refuses: {failed}"
