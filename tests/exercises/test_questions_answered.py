"""Every question a released task asks has a cell for its answer.

A question is a sentence of a locked markdown cell's prose (code, maths and link targets left
out) that carries a question mark. Its answer cell is a solution cell (code or written) after it
and before the next section heading. A question in "Before you submit", under which only the
summary follows, has nowhere to be answered: that is what this test finds.
"""

from __future__ import annotations

import re

import nbformat
import pytest

from conftest import ASSIGNMENTS, EXERCISES, notebook_name

_NOT_PROSE = re.compile(r"```.*?```|\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\]\([^)]*\)|https?://\S+", re.S)


def questions(markdown: str) -> list[str]:
    """The sentences of ``markdown``'s prose that ask something (carry a question mark)."""
    prose = _NOT_PROSE.sub(" ", markdown)
    sentences = re.split(r"(?<=[.!?])\s+|\n\s*\n", prose)
    return [" ".join(s.split()) for s in sentences if "?" in s]


def _nbgrader(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def _starts_section(cell) -> bool:
    return cell.cell_type == "markdown" and cell.source.lstrip().startswith("#")


def unanswered(notebook) -> list[tuple[str, str]]:
    """``(grade id, question)`` for each question of a locked markdown cell of ``notebook`` with
    no solution cell after it before the next section heading."""
    found = []
    cells = notebook.cells
    for i, cell in enumerate(cells):
        if cell.cell_type != "markdown" or _nbgrader(cell).get("solution"):
            continue
        asked = questions(cell.source)
        if not asked:
            continue
        section = []
        for later in cells[i + 1:]:
            if _starts_section(later):
                break
            section.append(later)
        if not any(_nbgrader(c).get("solution") for c in section):
            found += [(_nbgrader(cell).get("grade_id", f"cell {i}"), q) for q in asked]
    return found


def _notebook(*cells) -> nbformat.NotebookNode:
    """A toy notebook: ("task" | "answer" | "code", source) per cell."""
    made = []
    for role, source in cells:
        new = nbformat.v4.new_code_cell if role == "code" else nbformat.v4.new_markdown_cell
        made.append(new(source, metadata={"nbgrader": {"grade_id": f"c{len(made)}", "solution": role == "answer"}}))
    return nbformat.v4.new_notebook(cells=made)


def test_a_question_followed_by_its_answer_cell_is_answered():
    nb = _notebook(("task", "## Part 1\n\nWhy is $J$ singular?"), ("answer", "YOUR ANSWER HERE"),
                   ("task", "## Before you submit\n\nRun all cells."), ("code", "self_check.summary([])"))
    assert unanswered(nb) == []


def test_a_question_under_which_only_the_summary_follows_is_found():
    nb = _notebook(("task", "## Part 1\n\nCompute it."), ("answer", "YOUR ANSWER HERE"),
                   ("task", "## Before you submit\n\nRun all. How many times is $K$ read, and why?"),
                   ("code", "self_check.summary([])"))
    assert unanswered(nb) == [("c2", "How many times is read, and why?")]


def test_an_answer_cell_of_another_section_does_not_count():
    nb = _notebook(("task", "## Part 1\n\nWhich axis?"), ("code", "print(1)"),
                   ("task", "## Part 2\n\nWrite it."), ("answer", "YOUR ANSWER HERE"))
    assert unanswered(nb) == [("c0", "Which axis?")]


def test_question_marks_in_code_maths_and_links_ask_nothing():
    text = "Use `x ?? y`, $P(A?)$, [the docs](https://example.org/?q=1) and\n```\nwhat?\n```\nthen stop."
    assert questions(text) == []
    assert questions("Explain why (what constraint on $p$ does it express?). Then go on.") == [
        "Explain why (what constraint on does it express?)."]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_question_of_a_release_has_an_answer_cell(assignment):
    release = nbformat.read(EXERCISES / assignment / notebook_name(assignment), as_version=4)
    assert unanswered(release) == [], f"{assignment}: questions without an answer cell"
