"""A part's visible checks cost only that part: a check that calls another part's function either
calls it because this part's own answer does (the task builds on it), or waits until that part
passes its own checks (``self_check.results``). Otherwise a right answer after a wrong earlier
part would fail its visible check, and the grader would give it nothing."""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from conftest import ASSIGNMENTS, SOLUTIONS, notebook_name
from attngrade.notebooks import cell_grade_id

HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", re.S)


def _names(source: str) -> set[str]:
    tree = ast.parse(re.sub(r"^\s*[%!].*$", "", source, flags=re.M))
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def _parts(assignment: str):
    """(answer grade id, its source, the functions it defines, the next test cell's source) per part."""
    nb = nbformat.read(SOLUTIONS / assignment / notebook_name(assignment), as_version=4)
    parts, answer = [], None
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not cell_grade_id(cell):
            continue
        if meta.get("solution"):
            tree = ast.parse(re.sub(r"^\s*[%!].*$", "", cell.source, flags=re.M))
            answer = (cell_grade_id(cell), cell.source, {n.name for n in tree.body if isinstance(n, ast.FunctionDef)})
        elif meta.get("grade") and answer is not None:
            parts.append((*answer, HIDDEN.sub("", cell.source)))
    return parts


def _uncovered(parts) -> list[str]:
    owner = {name: gid for gid, _src, defined, _test in parts for name in defined}
    found = []
    for gid, answer, _defined, test in parts:
        for name in sorted(_names(test) & set(owner)):
            inherent = owner[name] == gid or name in _names(answer)
            if not inherent and "self_check.results" not in test:
                found.append(f"the checks of {gid} call {name} ({owner[name]})")
    return found


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_parts_checks_depend_on_another_part_only_through_its_own_answer(assignment):
    assert _uncovered(_parts(assignment)) == []


def test_the_rule_finds_an_unguarded_call_of_another_part():
    parts = [("first", "def f(x):\n    return x", {"f"}, "assert f(1) == 1"),
             ("second", "def g(x):\n    return 2 * x", {"g"}, "assert g(1) == f(2)")]
    assert _uncovered(parts) == ["the checks of second call f (first)"]
    guarded = parts[:1] + [parts[1][:3] + ("if self_check.results.get('Part 1') == 'passed':\n    assert g(1) == f(2)",)]
    assert _uncovered(guarded) == []
    builds_on = parts[:1] + [("second", "def g(x):\n    return f(x)", {"g"}, "assert g(1) == f(1)")]
    assert _uncovered(builds_on) == []
