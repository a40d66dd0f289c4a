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
    "execution_order",
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


def _untracked_code(cell) -> str | None:
    """The source of a code cell that nbgrader does not track (one the student added), else None."""
    if not isinstance(cell, dict) or cell.get("cell_type") != "code" or cell_grade_id(cell) is not None:
        return None
    src = cell.get("source")
    if isinstance(src, list) and all(isinstance(x, str) for x in src):
        src = "".join(src)
    return src if isinstance(src, str) and src.strip() else None


def execution_order(release_cells: list[tuple[str, str]], submitted: dict) -> list[tuple[str, str, int]]:
    """The code cells to run, as the student's notebook ran them: ``[(label, kind, index)]``.

    ``release_cells`` are the release's code cells in order, ``(grade id, kind)``; they come in
    the release's order, with the release's sources for locked cells (the caller fills answers).
    Each code cell that the student added (one nbgrader does not track) runs right after the
    release cell it follows in the submission, or first when it comes before all of them; its
    kind is ``"added"``, its label ``added-<n>`` and ``index`` its position in the submission.
    """
    known = {gid for gid, _ in release_cells}
    after: dict[str | None, list[int]] = {}
    anchor = None
    cells = submitted.get("cells") if isinstance(submitted, dict) else None
    for index, cell in enumerate(cells if isinstance(cells, list) else []):
        gid = cell_grade_id(cell) if isinstance(cell, dict) else None
        if gid in known:
            anchor = gid
        elif _untracked_code(cell) is not None:
            after.setdefault(anchor, []).append(index)
    order = [(f"added-{i}", "added", i) for i in after.get(None, [])]
    for gid, kind in release_cells:
        order.append((gid, kind, -1))
        order.extend((f"added-{i}", "added", i) for i in after.get(gid, []))
    return order


def added_source(submitted: dict, index: int) -> str:
    """The source of the added cell at ``index`` of the submission (see :func:`execution_order`)."""
    return _untracked_code(submitted["cells"][index]) or ""


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
