"""The release as a student opens it in JupyterLab: nothing changes on opening, wide maths fits,
every test cell lets Run All go on, and the last cell sums the parts up."""

from __future__ import annotations

import re

import nbformat
import pytest

from conftest import ASSIGNMENTS, EXERCISES, notebook_name

# What ipykernel reports for this environment's kernel: JupyterLab writes it on opening, so a
# release that carries less is "modified" before the student has typed anything.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGE_INFO_KEYS = {"codemirror_mode", "file_extension", "mimetype", "name", "nbconvert_exporter",
                      "pygments_lexer", "version"}

# A display line wider than this many ems (estimated) does not fit the notebook's text column in
# an 800 px wide window (about 34 em of MathJax at JupyterLab's font size), so it must be broken.
MAX_DISPLAY_EM = 30.0

_SPACE_EM = {r"\quad": 1.0, r"\qquad": 2.0, r"\,": 0.17, r"\;": 0.28, r"\:": 0.22, r"\!": 0.0, r"\ ": 0.25}
_NO_WIDTH = {r"\left", r"\right", r"\bigl", r"\bigr", r"\Bigl", r"\Bigr", r"\big", r"\Big", r"\displaystyle",
             r"\limits", r"\begin", r"\end"}
_WRAPS = {r"\mathrm", r"\text", r"\operatorname", r"\mathbf", r"\mathtt", r"\mathit", r"\texttt", r"\mathcal",
          r"\mathbb", r"\boldsymbol", r"\hat", r"\tilde", r"\bar", r"\vec", r"\widetilde", r"\overline", r"\sqrt"}
_NAMED_EM = {r"\max": 1.7, r"\min": 1.7, r"\exp": 1.6, r"\log": 1.4, r"\sin": 1.3, r"\cos": 1.4}


def _argument(tex: str, i: int) -> tuple[str, int]:
    """The TeX argument starting at ``tex[i]`` (a braced group, a command or one character)."""
    while i < len(tex) and tex[i] == " ":
        i += 1
    if i < len(tex) and tex[i] == "{":
        depth = 0
        for j in range(i, len(tex)):
            depth += {"{": 1, "}": -1}.get(tex[j], 0)
            if depth == 0:
                return tex[i + 1:j], j + 1
        return tex[i + 1:], len(tex)
    token = re.match(r"\\([A-Za-z]+|.)|.", tex[i:], re.S)
    return (token.group(0), i + len(token.group(0))) if token else ("", i)


def display_width(tex: str) -> float:
    """A conservative estimate of one display line's width in ems (MathJax, a symbol ~0.55 em)."""
    i, width = 0, 0.0
    while i < len(tex):
        char = tex[i]
        if char == "\\":
            cmd = re.match(r"\\([A-Za-z]+|.?)", tex[i:], re.S).group(0)
            i += len(cmd)
            if cmd in (r"\begin", r"\end"):
                _, i = _argument(tex, i)
            elif cmd in _NO_WIDTH:
                pass
            elif cmd in _SPACE_EM:
                width += _SPACE_EM[cmd]
            elif cmd in (r"\frac", r"\dfrac", r"\tfrac"):
                top, i = _argument(tex, i)
                bottom, i = _argument(tex, i)
                width += max(display_width(top), display_width(bottom)) + 0.3
            elif cmd in _WRAPS:
                inner, i = _argument(tex, i)
                width += display_width(inner) + (0.8 if cmd == r"\sqrt" else 0.0)
            else:
                width += _NAMED_EM.get(cmd, 0.7)
        elif char in "_^":
            script, i = _argument(tex, i + 1)
            width += 0.7 * display_width(script)
        else:
            width += 0.0 if char in "{}& \n\t" else 1.0 if char in "=+-<>" else 0.3 if char in ",.;" else 0.55
            i += 1
    return width


def display_lines(markdown: str) -> list[str]:
    """Every line of every ``$$ ... $$`` display (lines are separated by ``\\\\``)."""
    return [line.strip() for body in re.findall(r"\$\$(.*?)\$\$", markdown, re.S)
            for line in re.split(r"\\\\", body) if line.strip()]


def _release(assignment: str):
    return nbformat.read(EXERCISES / assignment / notebook_name(assignment), as_version=4)


def _grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def test_the_width_estimate_orders_what_it_should():
    assert display_width(r"a + b") < display_width(r"a + b + c")
    assert display_width(r"\frac{x_1 + x_2}{y}") < display_width(r"x_1 + x_2 + y")
    assert display_width(r"\begin{gathered} a \end{gathered}") == display_width("a")
    assert display_width(r"\mathrm{softmax}(x)") == pytest.approx(display_width("softmax(x)"))
    assert display_width(r"x \qquad y") - display_width("x y") == pytest.approx(_SPACE_EM[r"\qquad"])
    assert display_lines("$$\na = 1, \\\\\nb = 2\n$$ and $$c$$") == ["a = 1,", "b = 2", "c"]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_display_maths_fits_an_800_px_window(assignment):
    too_wide = [(_grade_id(cell), round(display_width(line), 1), line[:80])
                for cell in _release(assignment).cells if cell.cell_type == "markdown"
                for line in display_lines(cell.source) if display_width(line) > MAX_DISPLAY_EM]
    assert not too_wide, f"display lines wider than {MAX_DISPLAY_EM} em: break them with \\\\ in a gathered block"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_opening_the_release_changes_no_metadata(assignment):
    metadata = _release(assignment).metadata
    assert metadata["kernelspec"] == KERNELSPEC
    assert set(metadata["language_info"]) == LANGUAGE_INFO_KEYS
    assert metadata["language_info"]["name"] == "python"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_run_all_reaches_the_summary_of_every_part(assignment):
    cells = _release(assignment).cells
    tests = [c for c in cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    parts = [re.search(r'with self_check\("(Part \d+)"\)', c.source).group(1) for c in tests]
    may_raise = [c for c in cells if c.cell_type == "code" and re.search(r"^\s*(assert|raise) ", c.source, re.M)
                 and not c.metadata.get("nbgrader", {}).get("solution") and _grade_id(c) != "self_check"]
    for cell in tests + may_raise:
        assert "raises-exception" in cell.metadata.get("tags", []), f"{_grade_id(cell)} would stop Run All"
    summary = cells[-1]
    assert _grade_id(summary) == "summary" and summary.cell_type == "code"
    assert f"self_check.summary({parts!r})".replace("'", '"') in summary.source


def test_every_release_carries_the_same_self_check_helper():
    """Releases whose visible checks draw from ``cases.py`` carry ``attngrade.visible.HELPER_CELL``
    itself; those not converted yet (issue 38) carry one older helper, the same in each."""
    from attngrade.visible import HELPER_CELL

    helpers = {a: next(c.source for c in _release(a).cells if _grade_id(c) == "self_check") for a in ASSIGNMENTS}
    drawn = {a for a in ASSIGNMENTS if (EXERCISES / a / "cases.py").is_file()}
    assert drawn, "no release draws its visible checks from cases.py"
    assert {helpers[a] for a in drawn} == {HELPER_CELL}, "a release's self_check cell is not HELPER_CELL"
    older = {helpers[a] for a in ASSIGNMENTS if a not in drawn}
    assert len(older) <= 1, "the self_check cells differ"
    imports = re.findall(r"^\s*(?:import|from)\s+(\S+)", HELPER_CELL, re.M)
    assert imports == ["attngrade.visible"], f"the helper imports {imports}, not only the course's runner"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_drawn_release_runs_its_parts_from_cases_py_only(assignment):
    """Each test cell of a release with ``cases.py`` is the one-line runner of its own part."""
    from attngrade.spec import load_cases
    from attngrade.visible import visible_source

    if not (EXERCISES / assignment / "cases.py").is_file():
        pytest.skip("its visible checks are not drawn from cases.py yet (issue 38)")
    parts = {p.grade_id: p for p in load_cases(EXERCISES / assignment).PARTS}
    tests = [c for c in _release(assignment).cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    assert sorted(_grade_id(c) for c in tests) == sorted(parts)
    for cell in tests:
        label = re.search(r'with self_check\("(Part \d+)"\)', cell.source).group(1)
        assert cell.source.strip() == visible_source(label, parts[_grade_id(cell)].function).strip()
