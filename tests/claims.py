"""Collect the source documents' claims that the tests check, from ``@pytest.mark.claim``.

A test that checks a claim of the source documents carries::

    @pytest.mark.claim("003 §1.1", "Softmax preserves the order of the logits", "verified")
    @pytest.mark.claim("003 §4.1", "Attention is permutation-invariant", "corrected",
                       correction="Self-attention is permutation-equivariant: ...")

``source`` is the document number in ``shared/seeds`` and the section, ``text`` the claim as the
document makes it (paraphrased where needed), ``verdict`` either ``verified`` or ``corrected``;
a corrected claim gives the correct statement. The book's appendix "Claims and errata" is built
from :func:`collect_claims`, so the table cannot drift from the tests. Parsing is static (``ast``):
nothing is imported or run.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

VERDICTS = ("verified", "corrected")


@dataclass(frozen=True)
class Claim:
    source: str
    text: str
    verdict: str
    correction: str | None
    test: str  # tests/attnmath/test_x.py::test_name


def _const(node):
    return node.value if isinstance(node, ast.Constant) else None


def _claims_of(decorators):
    for dec in decorators:
        if not isinstance(dec, ast.Call):
            continue
        f = dec.func
        if isinstance(f, ast.Attribute) and f.attr == "claim" and isinstance(f.value, ast.Attribute) \
                and f.value.attr == "mark":
            args = [_const(a) for a in dec.args]
            kwargs = {k.arg: _const(k.value) for k in dec.keywords}
            names = ["source", "text", "verdict", "correction"]
            values = dict(zip(names, args))
            values.update(kwargs)
            yield values


def collect_claims(tests_dir: str | Path | None = None) -> list[Claim]:
    """Every ``claim`` marker under ``tests_dir`` (default: this folder), sorted by source."""
    tests_dir = Path(tests_dir) if tests_dir else Path(__file__).resolve().parent
    root = tests_dir.parent
    claims = []
    for path in sorted(tests_dir.rglob("test_*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                for v in _claims_of(node.decorator_list):
                    claims.append(Claim(v.get("source"), v.get("text"), v.get("verdict"),
                                        v.get("correction"), f"{path.relative_to(root)}::{node.name}"))
    def key(c):
        doc, _, sec = (c.source or "").partition(" ")
        return doc, sec, c.test
    return sorted(claims, key=key)
