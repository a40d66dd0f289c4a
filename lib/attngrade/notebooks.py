"""Reading and rebuilding nbgrader notebooks by grade id."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

__all__ = [
    "cell_grade_id",
    "answer_cells",
    "fill_answers",
    "hidden_test_blocks",
    "read_answer_script",
    "RunPlan",
    "run_plan",
    "ran_notebook",
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


def _code_source(cell) -> str | None:
    """The source of a code cell as one string, or None when it is not a readable code cell."""
    if not isinstance(cell, dict) or cell.get("cell_type") != "code":
        return None
    src = cell.get("source")
    if isinstance(src, list) and all(isinstance(x, str) for x in src):
        src = "".join(src)
    return src if isinstance(src, str) else None


def _untracked_code(cell) -> str | None:
    """The source of a code cell that nbgrader does not track (one the student added), else None."""
    if not isinstance(cell, dict) or cell_grade_id(cell) is not None:
        return None
    src = _code_source(cell)
    return src if src is not None and src.strip() else None


@dataclass
class RunPlan:
    """The code cells of a submission in the order they run, as the student's notebook ran them.

    ``cells`` are ``{"id": label, "kind": kind, "source": text}``: the release's setup and test
    cells (visible checks) with the release's sources, each answer cell with the student's source
    at its own place, and every code cell the student added (``added-<n>``, ``n`` its index in the
    submission) right after the release cell it follows there. A second copy of an answer cell
    (one pasted further down as an experiment) is such an added cell: it runs where it stands and
    never replaces the answer at its place. ``after`` maps each test cell's grade id to the number
    of cells that run before its part is computed (the test cell included), ``anchors`` each added
    cell to the grade id it follows (None: before all of them), and ``notes`` says what was moved.
    """

    cells: list = field(default_factory=list)
    after: dict = field(default_factory=dict)
    anchors: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


def _submitted_cells(submitted) -> list:
    cells = submitted.get("cells") if isinstance(submitted, dict) else None
    return cells if isinstance(cells, list) else []


def _placed_cells(known: set, submitted) -> tuple[dict, dict, list]:
    """Answer copies in effect at their place, added cells by anchor, and notes about copies."""
    first: dict[str, int] = {}
    after: dict[str | None, list[int]] = {}
    notes, anchor = [], None
    for index, cell in enumerate(_submitted_cells(submitted)):
        gid = cell_grade_id(cell) if isinstance(cell, dict) else None
        if gid in known and gid not in first:
            anchor = gid
            if _code_source(cell) is not None:
                first[gid] = index
            continue
        if gid in known and _is_answer(cell) and _code_source(cell) is not None:
            after.setdefault(anchor, []).append(index)  # a pasted copy: it runs where it stands
            notes.append(f"a copy of answer cell {gid!r} runs as an added cell at its own place")
        elif _untracked_code(cell) is not None:
            after.setdefault(anchor, []).append(index)
    return first, after, notes


def _place_standins(release_cells: list, first: dict, after: dict, cells: list, answers: dict) -> None:
    """An answer cell the submission lacks, whose source in ``answers`` is one of the student's
    added code cells (the answer typed again without its nbgrader metadata, see
    :func:`attngrade.submissions.rebuild`), runs as that cell at the answer's place, once."""
    for gid, kind, _ in release_cells:
        if kind != "answer" or gid in first or not isinstance(answers.get(gid), str):
            continue
        same = [i for ids in after.values() for i in ids if _untracked_code(cells[i]) == answers[gid]]
        if same:
            first[gid] = max(same)
            for ids in after.values():
                if first[gid] in ids:
                    ids.remove(first[gid])


def run_plan(release_cells: list, submitted, answers: dict | None = None) -> RunPlan:
    """What runs, in order, for a submission (see :class:`RunPlan`).

    ``release_cells`` are the release's code cells in order, ``(grade id, kind, source)`` with
    kind ``"setup"``, ``"answer"`` or ``"test"``. An answer cell the submission lacks (or holds
    only as an unreadable cell) runs with ``answers[gid]`` when given, else the release's source;
    where ``answers[gid]`` is an added cell's, that cell runs there and not where it stands.
    """
    if not isinstance(release_cells, list):
        raise TypeError("release_cells must be a list of (grade id, kind, source)")
    known = {gid for gid, _, _ in release_cells}
    first, after, notes = _placed_cells(known, submitted)
    cells = _submitted_cells(submitted)
    _place_standins(release_cells, first, after, cells, answers or {})
    plan = RunPlan(notes=notes)

    def add_after(anchor) -> None:
        for i in after.get(anchor, []):
            label = f"added-{i}"
            plan.cells.append({"id": label, "kind": "added", "source": _code_source(cells[i]) or ""})
            plan.anchors[label] = anchor

    add_after(None)
    for gid, kind, source in release_cells:
        if kind == "answer":
            source = _code_source(cells[first[gid]]) if gid in first else (answers or {}).get(gid, source)
        plan.cells.append({"id": gid, "kind": kind, "source": source})
        if kind == "test":
            plan.after[gid] = len(plan.cells)
        add_after(gid)
    return plan


def ran_notebook(notebook, plan: RunPlan):
    """A copy of the rebuilt ``notebook`` that shows what ran: the answers as they ran at their
    places and every added code cell (pasted copies without nbgrader metadata) where it ran."""
    nb = copy.deepcopy(notebook)
    ran = {c["id"]: c for c in plan.cells}
    placed: dict[str | None, list] = {}
    for label, anchor in plan.anchors.items():
        placed.setdefault(anchor, []).append(nbformat.v4.new_code_cell(ran[label]["source"]))
    out = list(placed.pop(None, []))
    for cell in nb.cells:
        gid = cell_grade_id(cell)
        if gid in ran and ran[gid]["kind"] == "answer" and cell.get("cell_type") == "code":
            cell["source"] = ran[gid]["source"]
        out.append(cell)
        if gid is not None:
            out.extend(placed.pop(gid, []))
    for rest in placed.values():
        out.extend(rest)
    nb.cells = out
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
