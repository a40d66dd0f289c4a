"""The shape of ``attnmath``: no function or method longer than 60 lines, docstring included."""

from __future__ import annotations

import ast
from pathlib import Path

LIB = Path(__file__).resolve().parents[2] / "lib" / "attnmath"
MAX_LINES = 60


def _lengths(source: str, filename: str = "<source>") -> dict[str, int]:
    """``{"file:qualified.name": lines}`` of every function, method and nested function."""
    lengths: dict[str, int] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}."
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lengths[f"{filename}:{name[:-1]}"] = child.end_lineno - child.lineno + 1
            walk(child, name)

    walk(ast.parse(source), "")
    return lengths


def test_the_measure_counts_every_line_of_every_function_nested_ones_too():
    source = ("class A:\n    def f(self):\n        '''doc\n\n        more'''\n\n"
              "        def g():\n            return 1\n        return g\n")
    assert _lengths(source) == {"<source>:A.f": 8, "<source>:A.f.g": 2}
    long = "def h():\n" + "    x = 1\n" * MAX_LINES
    assert _lengths(long)["<source>:h"] == MAX_LINES + 1


def test_the_library_has_modules_to_measure():
    assert len(list(LIB.glob("*.py"))) >= 20


def test_no_function_of_attnmath_is_longer_than_60_lines():
    long = {}
    for path in sorted(LIB.glob("*.py")):
        for name, n in _lengths(path.read_text(encoding="utf-8"), path.name).items():
            if n > MAX_LINES:
                long[name] = n
    assert not long, f"functions over {MAX_LINES} lines in attnmath (split them into helpers): {long}"
