"""``make lab`` works in the student's own copy, work/: nothing the course does replaces it.

The copy step (``make lab-work``) runs in a small course of its own (one assignment, the
Makefile, the nbgrader configuration and the environment), a student saves an answer there, the
release is regenerated as a course author does (``make exercises``) and checked as ``make test``
checks it, and ``make lab-work`` runs again: the answer is still there. The copies carry the
local interpreter's kernelspec and language_info, so opening one in JupyterLab changes nothing.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess

import nbformat
import pytest

from conftest import EXERCISES, ROOT, SOLUTIONS

pytestmark = pytest.mark.slow

ASSIGNMENT = "01_softmax"
MAKE = ["make", "--no-print-directory", "-o", ".venv/.installed"]  # never reinstall the environment


def _course(tmp_path, assignments=(ASSIGNMENT,)):
    root = tmp_path / "course"
    (root / "book").mkdir(parents=True)
    for name in ("Makefile", "nbgrader_config.py", "requirements.txt", "pyproject.toml"):
        shutil.copy(ROOT / name, root / name)
    for assignment in assignments:
        shutil.copytree(SOLUTIONS / assignment, root / "solutions" / assignment)
        shutil.copytree(EXERCISES / assignment, root / "exercises" / assignment)
        shutil.copy(ROOT / "book" / f"{assignment}.md", root / "book")
    (root / ".venv").symlink_to(ROOT / ".venv")
    return root


def _make(root, *args) -> str:
    done = subprocess.run([*MAKE, *args], cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _normalised(path) -> str:
    return json.dumps(json.loads(path.read_text()), sort_keys=True, indent=1)


def test_make_lab_then_save_then_make_exercises_then_make_lab_loses_nothing(tmp_path):
    root = _course(tmp_path)
    first = _make(root, "lab-work")
    mine = root / "work" / ASSIGNMENT / "softmax.ipynb"
    assert f"new: work/{ASSIGNMENT}/softmax.ipynb" in first and mine.is_file()
    assert (root / "work" / "README.md").read_text().count("/static/book/01_softmax.html") == 1

    # The student answers Part 1 and saves.
    nb = nbformat.read(mine, as_version=4)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "stable_softmax")
    answer.source = "def stable_softmax(x, axis=-1):\n    return 'my own work'\n"
    nbformat.write(nb, mine)
    saved = mine.read_bytes()

    # A course author regenerates the release; it is in sync, as `make test` checks.
    release = root / "exercises" / ASSIGNMENT / "softmax.ipynb"
    _make(root, "exercises")
    assert _normalised(release) == _normalised(EXERCISES / ASSIGNMENT / "softmax.ipynb")

    # A new assignment is released; `make lab` copies it and leaves the saved notebook alone.
    shutil.copytree(EXERCISES / "02_attention", root / "exercises" / "02_attention")
    second = _make(root, "lab-work")
    assert "new: work/02_attention/attention.ipynb" in second and ASSIGNMENT not in second
    assert mine.read_bytes() == saved
    copied = nbformat.read(root / "work" / "02_attention" / "attention.ipynb", as_version=4)
    assert copied.cells == nbformat.read(EXERCISES / "02_attention" / "attention.ipynb", as_version=4).cells


def _with_metadata(path, version, display_name):
    nb = nbformat.read(path, as_version=4)
    nb.metadata["language_info"]["version"] = version
    nb.metadata["kernelspec"]["display_name"] = display_name
    nbformat.write(nb, path)
    return nb


def test_copies_carry_the_local_kernel_metadata_and_saved_notebooks_keep_theirs(tmp_path):
    # The release was generated on another Python; the student's copy gets this one's metadata.
    root = _course(tmp_path, assignments=(ASSIGNMENT, "02_attention"))
    release = root / "exercises" / ASSIGNMENT / "softmax.ipynb"
    released = _with_metadata(release, "3.0.1", "Python 3 (elsewhere)")
    _with_metadata(root / "exercises" / "02_attention" / "attention.ipynb", "3.0.1", "Python 3 (elsewhere)")
    # A notebook the student saved earlier, under the old metadata, is theirs: it stays as it is.
    saved = root / "work" / "02_attention" / "attention.ipynb"
    saved.parent.mkdir(parents=True)
    nb = nbformat.read(root / "exercises" / "02_attention" / "attention.ipynb", as_version=4)
    nb.cells[0].source += "\n\nMy notes."
    nbformat.write(nb, saved)
    before = saved.read_bytes()

    _make(root, "lab-work")
    copy = nbformat.read(root / "work" / ASSIGNMENT / "softmax.ipynb", as_version=4)
    info, spec = copy.metadata["language_info"], copy.metadata["kernelspec"]
    assert info["version"] == platform.python_version() and info["name"] == "python"
    assert info["codemirror_mode"] == {"name": "ipython", "version": 3} and info["file_extension"] == ".py"
    assert spec["name"] == "python3" and spec["language"] == "python"
    assert spec["display_name"] != "Python 3 (elsewhere)"
    assert copy.cells == released.cells
    assert {k: v for k, v in copy.metadata.items() if k not in ("language_info", "kernelspec")} == {
        k: v for k, v in released.metadata.items() if k not in ("language_info", "kernelspec")}
    assert saved.read_bytes() == before

    # Run again: the copy, now the local metadata, is left byte for byte.
    mine = (root / "work" / ASSIGNMENT / "softmax.ipynb").read_bytes()
    _make(root, "lab-work")
    assert (root / "work" / ASSIGNMENT / "softmax.ipynb").read_bytes() == mine


def test_work_is_ignored_by_git():
    ignored = subprocess.run(["git", "check-ignore", "-q", "work/01_softmax/softmax.ipynb"], cwd=ROOT)
    assert ignored.returncode == 0, "work/ must be ignored by git"


def test_no_student_facing_text_tells_a_student_to_regenerate_the_release():
    readme = (ROOT / "README.md").read_text()
    student = readme.split("## Student quick start", 1)[1].split("\n## ", 1)[0]
    assert "make lab" in student and "work/" in student
    assert "make exercises" not in student and "generate_assignment" not in student
    for assignment in sorted(p.name for p in EXERCISES.iterdir() if p.is_dir()):
        for notebook in (EXERCISES / assignment).glob("*.ipynb"):
            assert "make exercises" not in notebook.read_text(), notebook


def test_localising_needs_two_folders(tmp_path):
    from attngrade.lab import localise

    with pytest.raises(ValueError, match="release"):
        localise(tmp_path / "missing", tmp_path)
    with pytest.raises(ValueError, match="work"):
        localise(tmp_path, tmp_path / "missing")
