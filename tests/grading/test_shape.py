"""The shape of ``attngrade``: stages with one small orchestrator, and no function over 60 lines."""

from __future__ import annotations

import ast
import dataclasses
import importlib
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[2] / "lib"
MAX_LINES = 60


def _functions(package: str):
    for path in sorted((LIB / package).glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield f"{path.name}:{node.name}", node.end_lineno - node.lineno + 1


def test_the_measure_counts_every_line_of_a_function():
    tree = ast.parse("def f(x):\n    '''doc'''\n\n    # a comment\n    return x\n")
    node = tree.body[0]
    assert node.end_lineno - node.lineno + 1 == 5


@pytest.mark.parametrize("package", ["attngrade"])
def test_no_function_is_longer_than_60_lines(package):
    long = {name: n for name, n in _functions(package) if n > MAX_LINES}
    assert not long, f"functions over {MAX_LINES} lines in {package}: {long}"


STAGES = {
    "submissions": ("discover", "Submission"),
    "reading": ("read_notebook", "Prepared"),
    "running": ("run_parts", "Computed"),
    "checking": ("check", None),
    "record": ("record", "Recorded"),
    "report": ("write_summary", None),
}


@pytest.mark.parametrize("module, names", list(STAGES.items()))
def test_each_stage_is_a_module_with_typed_outputs(module, names):
    mod = importlib.import_module(f"attngrade.{module}")
    function, output = names
    assert callable(getattr(mod, function))
    if output is not None:
        assert dataclasses.is_dataclass(getattr(mod, output))
    assert getattr(mod, function).__annotations__.get("return"), f"{module}.{function} states what it returns"


def test_the_command_only_parses_arguments_and_calls_the_orchestrator():
    tree = ast.parse((LIB / "attngrade" / "cli.py").read_text(encoding="utf-8"))
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    groups = {name for name in defined if name.startswith("_") and name.endswith("_options")}  # argparse groups
    assert defined - groups <= {"_cpu_count", "_parser", "main"}, defined
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    calls = {n.func.id for n in ast.walk(main) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "grade_class" in calls
    stage_calls = {"discover", "read_notebook", "run_parts", "check", "record", "write_summary", "write_csv"}
    assert not calls & stage_calls
