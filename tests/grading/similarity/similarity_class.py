"""The planted-copy class of ``01_softmax`` Part 1, the probe's classes, and consistent renamings.

``stable_softmax/`` holds 30 honest answers (``s01`` ... ``s30``) and 13 planted copies
(``c1`` ... ``c13``; ``planted.json``: each copy's original and its disguises), the class the
method was tuned on. ``probe/`` holds three parts' honest answers and disguised copies written
by someone else, never used to tune (``probe/README.md``).

Used by ``tests/grading/test_similarity.py`` and ``bench/bench_similarity.py``.
"""

from __future__ import annotations

import ast
import io
import json
import tokenize
from pathlib import Path

HERE = Path(__file__).resolve().parent
PART = "stable_softmax"
PLANTED = json.loads((HERE / "planted.json").read_text())[PART]  # copy -> [original, how]
ANSWERS = {p.stem: {PART: p.read_text()} for p in sorted((HERE / PART).glob("*.py"))}
KEEP = {"stable_softmax", "axis", "np", "math", "True", "False", "None", "self"}
PROBE = HERE / "probe"


def rename(code: str, salt: int) -> str:
    """Every name the code binds itself (assigned, a parameter, a loop variable, a function) gets
    a new name wherever it stands for that name: not as an attribute, nor as a call's keyword."""
    tree = ast.parse(code)
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    bound |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    bound -= KEEP | {n for n in bound if n.startswith("__")}
    toks = list(tokenize.generate_tokens(io.StringIO(code).readline))
    out, brackets = [], []  # brackets: True for a call's or a subscript's, False for a def's
    for i, t in enumerate(toks):
        before = toks[i - 1].string if i else ""
        if t.string in "([{" and t.type == tokenize.OP:
            brackets.append(not (i > 1 and toks[i - 2].string == "def"))
        elif t.string in ")]}" and t.type == tokenize.OP and brackets:
            brackets.pop()
        keyword_arg = (brackets and brackets[-1] and before in ("(", ",") and i + 1 < len(toks)
                       and toks[i + 1].string == "=")
        renamed = t.type == tokenize.NAME and t.string in bound and before != "." and not keyword_arg
        out.append((t.type, f"{t.string}_{salt}" if renamed else t.string))
    return tokenize.untokenize(out)


def original(student: str, planted: dict) -> str:
    """The answer a planted copy was made from (itself for an honest answer)."""
    while student in planted:
        student = planted[student][0]
    return student


def probe_parts() -> list[str]:
    """``assignment/part`` of every probe class."""
    return sorted(json.loads((PROBE / "planted.json").read_text()))


def probe_class(key: str) -> tuple[dict, dict]:
    """A probe part's answers (file stem -> code) and its planted copies (copy -> original)."""
    planted = json.loads((PROBE / "planted.json").read_text())[key]
    answers = {p.stem: p.read_text() for p in sorted((PROBE / key).glob("*.py"))}
    return answers, {copy: how[0] for copy, how in planted.items()}
