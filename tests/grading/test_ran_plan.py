"""What runs for a submission, in which order, and the notebook that shows it (notebooks.run_plan)."""

from __future__ import annotations

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attngrade.notebooks import cell_grade_id, ran_notebook, run_plan

RELEASE = [
    ("setup", "setup", "import numpy as np"),
    ("f", "answer", "def f(x):\n    raise NotImplementedError()"),
    ("test_f", "test", "assert f(1) == 2\nSEEN = True"),
    ("g", "answer", "def g(x):\n    raise NotImplementedError()"),
    ("test_g", "test", "assert g(1) == 3"),
]
KIND = {gid: kind for gid, kind, _ in RELEASE}


def _tracked(gid: str, source: str):
    cell = nbformat.v4.new_code_cell(source)
    kind = KIND[gid]
    cell.metadata["nbgrader"] = {
        "grade_id": gid,
        "solution": kind == "answer",
        "grade": kind == "test",
        "locked": kind != "answer",
    }
    return cell


def _submission(cells) -> dict:
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    return nb


def _release_notebook():
    return _submission(_tracked(gid, src) for gid, _, src in RELEASE)


ANSWERS = {"f": "def f(x):\n    return 2 * x", "g": "def g(x):\n    return 3 * x"}


def _honest(extra_after: dict | None = None):
    cells = []
    for gid, _, src in RELEASE:
        cells.append(_tracked(gid, ANSWERS.get(gid, src)))
        for source in (extra_after or {}).get(gid, []):
            cells.append(nbformat.v4.new_code_cell(source))
    return cells


def test_visible_checks_run_as_release_cells_and_each_part_follows_its_test_cell():
    plan = run_plan(RELEASE, _submission(_honest()))
    assert [(c["id"], c["kind"]) for c in plan.cells] == [(gid, kind) for gid, kind, _ in RELEASE]
    assert plan.cells[2]["source"] == "assert f(1) == 2\nSEEN = True", "the release's visible checks"
    assert plan.after == {"test_f": 3, "test_g": 5}
    assert [c["source"] for c in plan.cells if c["kind"] == "answer"] == [ANSWERS["f"], ANSWERS["g"]]


def test_a_locked_cell_runs_with_the_release_source_whatever_the_submission_says():
    cells = _honest()
    cells[2] = _tracked("test_f", "SEEN = 'edited'")
    plan = run_plan(RELEASE, _submission(cells))
    assert plan.cells[2]["source"] == RELEASE[2][2]


def test_a_pasted_answer_copy_runs_where_it_stands_and_never_replaces_the_answer():
    cells = _honest() + [_tracked("f", "def f(x):\n    return 0  # an experiment")]
    plan = run_plan(RELEASE, _submission(cells))
    assert plan.cells[1]["source"] == ANSWERS["f"], "the answer at its place"
    assert plan.cells[-1] == {"id": f"added-{len(cells) - 1}", "kind": "added", "source": cells[-1].source}
    assert plan.anchors == {f"added-{len(cells) - 1}": "test_g"}
    assert plan.after == {"test_f": 3, "test_g": 5}, "after every part: it changes none"
    assert any("copy of answer cell 'f'" in note for note in plan.notes)


def test_a_copy_before_the_test_cell_is_what_the_part_sees():
    cells = _honest()
    cells.insert(2, _tracked("f", "def f(x):\n    return x + x  # fixed"))
    plan = run_plan(RELEASE, _submission(cells))
    assert [c["id"] for c in plan.cells[:4]] == ["setup", "f", "added-2", "test_f"]
    assert plan.after["test_f"] == 4


def test_a_deleted_answer_runs_what_the_caller_gives_or_the_release():
    cells = [c for c in _honest() if cell_grade_id(c) != "g"]
    assert run_plan(RELEASE, _submission(cells)).cells[3]["source"] == RELEASE[3][2]
    plan = run_plan(RELEASE, _submission(cells), {"g": "def g(x):\n    return -1"})
    assert plan.cells[3]["source"] == "def g(x):\n    return -1"


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(TypeError, match="release_cells"):
        run_plan("setup", _submission([]))
    assert run_plan(RELEASE, {"cells": "not a list"}).cells[1]["source"] == RELEASE[1][2]


def test_the_formgrader_notebook_shows_what_ran_added_cells_and_copies_included():
    cells = _honest({"setup": ["helper = 1"], "test_g": ["print('scratch')"]})
    cells.append(_tracked("g", "def g(x):\n    return 0  # experiment"))
    plan = run_plan(RELEASE, _submission(cells))
    nb = ran_notebook(_release_notebook(), plan)
    assert [c.source for c in nb.cells] == [c["source"] for c in plan.cells]
    gids = [cell_grade_id(c) for c in nb.cells if cell_grade_id(c)]
    assert gids == [gid for gid, _, _ in RELEASE], "one cell per grade id: copies carry no nbgrader metadata"
    assert nb.cells[1].source == "helper = 1" and not cell_grade_id(nb.cells[1])


_ADDED = st.lists(st.sampled_from([None, "setup", "f", "test_f", "g", "test_g"]), max_size=8)


@settings(max_examples=60, deadline=None)
@given(anchors=_ADDED, copies=st.lists(st.sampled_from(["f", "g"]), max_size=3))
def test_added_cells_and_copies_keep_the_submissions_order(anchors, copies):
    """Whatever is added where, every cell runs once, in the submission's order relative to the
    release cells, and the formgrader's notebook lists exactly what ran."""
    cells = _honest()
    for n, anchor in enumerate(anchors):
        where = 0 if anchor is None else next(i for i, c in enumerate(cells) if cell_grade_id(c) == anchor) + 1
        cells.insert(where, nbformat.v4.new_code_cell(f"added_{n} = {n}"))
    for n, gid in enumerate(copies):
        cells.append(_tracked(gid, f"def {gid}(x):\n    return {n}"))
    plan = run_plan(RELEASE, _submission(cells))
    ran = [c["source"] for c in plan.cells]
    expected = []
    for index, cell in enumerate(cells):
        gid = cell_grade_id(cell)
        first = gid is not None and next(i for i, c in enumerate(cells) if cell_grade_id(c) == gid) == index
        if gid is None or not first:
            expected.append(cell.source)
        else:
            expected.append(cell.source if KIND[gid] == "answer" else dict((g, s) for g, _, s in RELEASE)[gid])
    assert ran == expected
    for gid, position in plan.after.items():
        assert plan.cells[position - 1]["id"] == gid
    nb = ran_notebook(_release_notebook(), plan)
    assert [c.source for c in nb.cells] == ran
