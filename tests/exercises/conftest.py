"""Fixtures for the exercise tests: a throw-away nbgrader course built from the repository.

Every assignment in ``solutions/`` is generated once per run into a temporary course
(``nbgrader_course``, tests/conftest.py); each assignment is copied from there into a course of
its own with its own SQLite gradebook, sample submissions are placed in
``submitted/<student>/<assignment>/``, and ``nbgrader autograde`` grades them once per
assignment; the tests then read the gradebook.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

from attngrade.course import run_nbgrader
from attngrade.notebooks import fill_answers, read_answer_script
from support import course_copy  # tests/support.py

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
SAMPLES = Path(__file__).resolve().parent / "samples"
ASSIGNMENTS = sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and not p.name.startswith("."))


@dataclass
class GradedCourse:
    assignment: str
    course: Path
    notebook: str
    expected: dict[str, dict[str, float]] = field(default_factory=dict)
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    max_scores: dict[str, float] = field(default_factory=dict)
    manual_parts: list[str] = field(default_factory=list)


def notebook_name(assignment: str) -> str:
    names = sorted(p.name for p in (SOLUTIONS / assignment).glob("*.ipynb"))
    assert len(names) == 1, f"{assignment}: expected one notebook, found {names}"
    return names[0]


# Under pytest-xdist every test of one assignment runs on the same worker (tests/conftest.py's
# scheduler), so each assignment is autograded once per run; every assignment is generated once
# per run, by one nbgrader command (the ``nbgrader_course`` fixture of tests/conftest.py).
@pytest.fixture(scope="session", params=ASSIGNMENTS)
def graded(request, tmp_path_factory, nbgrader_course) -> GradedCourse:
    """The generated assignment in a course of its own: submit the solution, the untouched
    release and every sample, autograde all."""
    assignment = request.param
    course = course_copy(nbgrader_course, tmp_path_factory.mktemp(assignment), assignment)
    nb_name = notebook_name(assignment)
    release = nbformat.read(course / "release" / assignment / nb_name, as_version=4)
    source = nbformat.read(course / "source" / assignment / nb_name, as_version=4)
    result = GradedCourse(assignment, course, nb_name)

    def submit(student: str, nb) -> None:
        folder = course / "submitted" / student / assignment
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / nb_name)
        (folder / "timestamp.txt").write_text("2026-11-22 10:00:00.000000 UTC")

    submit("solution", source)
    submit("release", release)
    for sample in sorted((SAMPLES / assignment).glob("*.py")):
        answers, expect = read_answer_script(sample)
        submit(sample.stem, fill_answers(release, answers))
        result.expected[sample.stem] = expect
    run_nbgrader(course, "autograde", assignment, "--force")

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in ["solution", "release", *result.expected]:
            sub = gb.find_submission_notebook(nb_name.removesuffix(".ipynb"), assignment, student)
            auto = [g for g in sub.grades if g.cell.cell_type == "code"]  # written answers are graded by hand
            result.scores[student] = {g.name: float(g.score) for g in auto}
            result.max_scores = {g.name: float(g.max_score) for g in auto}
            result.manual_parts = sorted(g.name for g in sub.grades if g.cell.cell_type != "code")
    return result
