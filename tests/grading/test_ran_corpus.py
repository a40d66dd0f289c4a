"""The corpus batch seen from what ran: the formgrader's notebooks, the logs' notes, the reasons.

These read the one corpus run that ``test_corpus.py`` checks row by row (the ``corpus_run``
fixture): no extra grading happens here.
"""

from __future__ import annotations

import nbformat
import pytest

import gradingkit as gk
from attngrade.notebooks import cell_grade_id

pytestmark = pytest.mark.slow

SOFTMAX = "01_softmax"


def _ran(corpus_run, case: str, assignment: str = SOFTMAX):
    out = corpus_run.runs[assignment][0]
    path = out / "autograded" / case / assignment / gk.notebook_name(assignment)
    return nbformat.read(path, as_version=4)


def _log(corpus_run, case: str, assignment: str = SOFTMAX) -> str:
    return (corpus_run.runs[assignment][0] / "logs" / f"{case}.log").read_text()


def test_the_formgrader_notebook_shows_the_added_cells_where_they_ran(corpus_run):
    nb = _ran(corpus_run, "41_helper_in_added_cell")
    labels = [cell_grade_id(c) or c.source.split("(")[0] for c in nb.cells if c.cell_type == "code"]
    setup = labels.index("setup")
    assert labels[setup + 1] == "def _shifted", labels
    release = [cell_grade_id(c) for c in gk.release(SOFTMAX).cells if cell_grade_id(c)]
    assert [cell_grade_id(c) for c in nb.cells if cell_grade_id(c)] == release, "every release cell, once"


def test_a_pasted_answer_copy_is_shown_at_the_end_and_the_answer_at_its_place(corpus_run):
    nb = _ran(corpus_run, "152_pasted_answer_copy_at_end")
    answer = next(c for c in nb.cells if cell_grade_id(c) == "stable_softmax")
    assert "np.max(work" in answer.source, "the answer as it ran at its place"
    last = nb.cells[-1]
    assert "what if I skip the sum" in last.source and cell_grade_id(last) is None
    gids = [cell_grade_id(c) for c in nb.cells if cell_grade_id(c)]
    assert len(gids) == len(set(gids))


@pytest.mark.parametrize(
    "case, note",
    [
        ("157_7mb_print_in_scratch_cell", "was discarded"),
        ("158_print_in_graded_function", "was discarded"),
        ("159_scratch_cell_os_exit", "ended the worker (died); not run again"),
        ("160_scratch_cell_segfault", "ended the worker (died); not run again"),
        ("161_scratch_cell_endless_loop", "ended the worker (timeout); not run again"),
    ],
)
def test_faults_and_noise_of_cells_of_no_part_leave_a_note_and_cost_nothing(corpus_run, case, note):
    assert note in _log(corpus_run, case)
    row = corpus_run.rows[case]
    assert row["status"] == "graded" and float(row["score"]) == gk.max_points(SOFTMAX)


def test_the_visible_checks_ran_in_the_worker(corpus_run):
    log = _log(corpus_run, "151_name_from_visible_check")
    # they need the course library, which the worker lacks: the cell ran and stopped at once
    assert "'test_stable_softmax': 'SelfCheckFailed'" in log, "Part 1's visible checks ran"
    assert "'softmax_jacobian': None" in log, "the answer using their name ran without an error"
