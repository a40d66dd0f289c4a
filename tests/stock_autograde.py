"""One stock ``nbgrader autograde`` of every assignment's solution, release and samples, shared
by every xdist worker of a run (``support.shared_build``, name ``stock-autograde``): the
``stock_autograde`` fixture of ``tests/conftest.py``, which starts it in the background as soon
as the tests are collected, right behind the generated course (``nbgrader_course``) it copies,
so that it runs while other tests do. ``tests/exercises`` checks its scores.

The course: every generated assignment copied into one course with its own SQLite gradebook;
the solution (the source notebook), the untouched release and the sample submissions of every
assignment are placed in ``submitted/<student>/<assignment>/``, and one ``nbgrader autograde``
grades them all (one nbgrader start instead of one per assignment). The gradebook's scores are
written to ``graded.json``: assignment -> its ``GradedCourse`` fields, or nbgrader's error for
that assignment.

The course lives in ``/dev/shm`` where there is one (a memory file system): nbgrader commits
to its SQLite gradebook about 30 times per notebook, and each commit waits for the disk
(7.5 s of the autograde's wall time on this machine's ext4). Nothing else differs: the same
nbgrader, configuration and notebooks.

Kernels are shut down at once (``AUTOGRADE_ARGS``): every cell has run and its outputs are in the
notebook by then, so nothing the grades come from is lost, while a graceful shutdown (the
interpreter's own exit) costs each kernel 0.1-0.2 CPU seconds, about 0.5 once it has imported
torch: a fifth of this autograde's CPU time.

nbgrader stays stock, but its kernels are forked from the book's kernel server
(``book/_ext/attnmath_kernels.py``, :func:`forked_kernels`): each notebook's kernel starts with
IPython, NumPy and torch already imported instead of importing them itself (about 0.4 CPU
seconds per kernel, 1.2 more where the notebook imports torch). Measured once, this autograde
took 48 CPU seconds instead of 84, with the same scores. ``tests/book/test_kernels.py`` proves
that such a kernel runs a notebook as a fresh one does; ``test_forked_kernels.py`` that
nbgrader's executor gives the same outputs with it, for a notebook that crashes its kernel or
runs past the cell timeout as well.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
SAMPLES = ROOT / "tests" / "exercises" / "samples"
ASSIGNMENTS = sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and not p.name.startswith("."))
#: Options of every ``nbgrader autograde`` run here: stock nbgrader, its kernels killed once the
#: notebook has run (nbclient's ``shutdown_kernel``) instead of asked to exit.
AUTOGRADE_ARGS = ("--force", "--Execute.shutdown_kernel=immediate")
#: The shared build's name, and its outcome file in the build's folder.
NAME, OUTCOME = "stock-autograde", "graded.json"
#: A memory file system for the graded course, where the machine has one.
MEMORY = Path("/dev/shm")


@dataclass
class GradedCourse:
    assignment: str
    notebook: str
    expected: dict[str, dict[str, float]] = field(default_factory=dict)
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    max_scores: dict[str, float] = field(default_factory=dict)
    manual_parts: list[str] = field(default_factory=list)


def notebook_name(assignment: str) -> str:
    names = sorted(p.name for p in (SOLUTIONS / assignment).glob("*.ipynb"))
    assert len(names) == 1, f"{assignment}: expected one notebook, found {names}"
    return names[0]


def _submit(course: Path, assignment: str) -> GradedCourse:
    """The solution, the untouched release and every sample of ``assignment`` as submissions."""
    from attngrade.notebooks import fill_answers, read_answer_script

    nb_name = notebook_name(assignment)
    release = nbformat.read(course / "release" / assignment / nb_name, as_version=4)
    source = nbformat.read(course / "source" / assignment / nb_name, as_version=4)
    result = GradedCourse(assignment, nb_name)

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
    return result


def _read_scores(gb, result: GradedCourse) -> None:
    """``result``'s scores from the gradebook ``gb``: every student's autograded parts."""
    notebook = result.notebook.removesuffix(".ipynb")
    for student in ["solution", "release", *result.expected]:
        sub = gb.find_submission_notebook(notebook, result.assignment, student)
        auto = [g for g in sub.grades if g.cell.cell_type == "code"]  # written answers are graded by hand
        result.scores[student] = {g.name: float(g.score) for g in auto}
        result.max_scores = {g.name: float(g.max_score) for g in auto}
        result.manual_parts = sorted(g.name for g in sub.grades if g.cell.cell_type != "code")


@contextlib.contextmanager
def forked_kernels(folder: Path) -> Iterator[dict[str, str]]:
    """The environment that makes nbgrader (``run_nbgrader(..., env=...)``) start its notebooks'
    ``python3`` kernels from a kernel server, for the duration of the ``with`` block: a kernelspec
    of that name in ``folder``, first on ``JUPYTER_PATH``. Empty (kernels start as usual) when the
    server cannot start, as without ``fork``."""
    if str(ROOT / "book" / "_ext") not in sys.path:
        sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from attnmath_kernels import kernel_command, kernel_server  # book/_ext

    with kernel_server() as sock:
        if sock is None:
            yield {}
            return
        spec = folder / "kernels" / "python3"
        spec.mkdir(parents=True)
        spec.joinpath("kernel.json").write_text(json.dumps({
            "argv": [*kernel_command(sock), "-f", "{connection_file}"],
            "display_name": "Python 3 (ipykernel)", "language": "python"}))
        yield {"JUPYTER_PATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("JUPYTER_PATH")]))}


def _autograde(course: Path, env: dict[str, str]) -> dict[str, str]:
    """Autograde every submission of ``course`` in one nbgrader run (with ``env``, see
    ``run_nbgrader``); should it fail, each assignment again on its own, so that a failure is told
    for the assignment it belongs to. Returns assignment -> nbgrader's error, for those it could
    not grade."""
    from attngrade.course import run_nbgrader

    try:
        run_nbgrader(course, "autograde", "*", *AUTOGRADE_ARGS, env=env)
        return {}
    except RuntimeError:
        failures = {}
        for assignment in ASSIGNMENTS:
            try:
                run_nbgrader(course, "autograde", assignment, *AUTOGRADE_ARGS, env=env)
            except RuntimeError as exc:
                failures[assignment] = str(exc)
        return failures


def grade_all(generated: Path, folder: Path) -> dict[str, dict | str]:
    """Autograde every assignment of the generated course ``generated`` (its solution, release and
    samples) in a course of its own, and write ``folder/graded.json``: assignment -> the fields
    of its ``GradedCourse``, or nbgrader's error for that assignment."""
    from nbgrader.api import Gradebook

    from support import course_copy  # tests/support.py

    work = Path(tempfile.mkdtemp(prefix="stock-autograde-", dir=MEMORY if MEMORY.is_dir() else folder))
    try:
        for assignment in ASSIGNMENTS:
            course = course_copy(generated, work, assignment)
        results = {assignment: _submit(course, assignment) for assignment in ASSIGNMENTS}
        with forked_kernels(work / "jupyter") as env:
            graded: dict[str, dict | str] = dict(_autograde(course, env))
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
            for assignment, result in results.items():
                if assignment not in graded:
                    try:
                        _read_scores(gb, result)
                        graded[assignment] = dataclasses.asdict(result)
                    except Exception as exc:  # told by that assignment's tests, not by all
                        graded[assignment] = f"its scores are not in the gradebook: {type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    (folder / OUTCOME).write_text(json.dumps(graded))
    return graded


def read_graded(folder: Path) -> dict[str, GradedCourse | str]:
    """``graded.json`` of the shared build ``folder``: assignment -> ``GradedCourse`` or error."""
    graded = json.loads((folder / OUTCOME).read_text())
    return {a: r if isinstance(r, str) else GradedCourse(**r) for a, r in graded.items()}
