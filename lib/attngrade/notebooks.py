"""Reading and rebuilding nbgrader notebooks by grade id."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat

__all__ = [
    "cell_grade_id",
    "answer_cells",
    "fill_answers",
    "hidden_test_blocks",
    "read_answer_script",
]

_HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS[ \t]*\n(.*?)^[ \t]*### END HIDDEN TESTS[ \t]*$", re.M | re.S)


def cell_grade_id(cell) -> str | None:
    """The nbgrader grade id of a cell, or None for a cell nbgrader does not track."""
    meta = cell.get("metadata", {}).get("nbgrader")
    if not isinstance(meta, dict):
        return None
    gid = meta.get("grade_id")
    return gid if isinstance(gid, str) else None


def _is_answer(cell) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return isinstance(meta, dict) and bool(meta.get("solution")) and not meta.get("grade")


def answer_cells(nb) -> dict[str, str]:
    """Grade id to source of every answer (``solution: true``) cell of a notebook."""
    return {cell_grade_id(c): c["source"] for c in nb["cells"] if _is_answer(c) and cell_grade_id(c)}


def fill_answers(template, answers: dict[str, str]):
    """A copy of ``template`` (the released notebook) with its answer cells' sources replaced.

    Only cells that the template itself marks as answers are touched; grade ids in ``answers``
    that the template does not have are ignored, and the template's test cells, metadata and
    checksums are kept as they are.
    """
    nb = copy.deepcopy(template)
    for cell in nb["cells"]:
        gid = cell_grade_id(cell)
        if gid in answers and _is_answer(cell):
            cell["source"] = answers[gid]
    return nb


def hidden_test_blocks(source_nb) -> list[str]:
    """The text between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS`` in a source notebook."""
    blocks = []
    for cell in source_nb["cells"]:
        if cell["cell_type"] == "code":
            blocks.extend(m.group(1) for m in _HIDDEN.finditer(cell["source"]))
    return blocks


def read_answer_script(path: str | Path) -> tuple[dict[str, str], dict[str, float]]:
    """Parse a sample submission written as a Python script with one section per answer cell.

    Format::

        # expect: test_a=3, test_b=0
        # %% grade_id: a
        def f(x): ...
        # %% grade_id: b
        ...

    Returns the answers by grade id and the expected points by test grade id.
    """
    text = Path(path).read_text()
    expect: dict[str, float] = {}
    m = re.search(r"^# expect:(.*)$", text, re.M)
    if m:
        for item in m.group(1).split(","):
            if item.strip():
                key, value = item.split("=")
                expect[key.strip()] = float(value)
    answers: dict[str, str] = {}
    parts = re.split(r"^# %% grade_id: *(\S+)[ \t]*\n", text, flags=re.M)
    for gid, body in zip(parts[1::2], parts[2::2]):
        answers[gid] = body.rstrip("\n")
    return answers, expect


def read_notebook(path: str | Path):
    """Read a notebook as nbformat v4 (raises on malformed JSON)."""
    return nbformat.read(str(path), as_version=4)
