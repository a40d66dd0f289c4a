"""Instructor errors stop the run before anything is written, with a message saying what to do."""

from __future__ import annotations

import nbformat
import pytest

import gradingkit as gk


def _run(tmp_path, *args):
    out = tmp_path / "out"
    proc = gk.run_attngrade(*args, "--out", out, "--no-gradebook", "--jobs", "1")
    return proc, out


def _flat(folder, notebooks: dict):
    folder.mkdir(parents=True, exist_ok=True)
    for name, nb in notebooks.items():
        nbformat.write(nb, folder / name)
    return folder


@pytest.mark.parametrize(
    "case, words",
    [
        ("missing path", ["no such file or folder", "give the folder or zip"]),
        ("empty folder", ["no notebooks found", "<student>/01_softmax/softmax.ipynb"]),
        ("unknown assignment", ["unknown assignment '01_sofmax'", "01_softmax", "05_multihead"]),
        ("bad shard", ["--shard '3/2'", "i must be from 1 to n"]),
    ],
)
def test_an_instructor_error_is_a_clear_non_zero_exit_and_writes_nothing(tmp_path, case, words):
    assignment, target, extra = "01_softmax", tmp_path / "submissions", []
    if case == "empty folder":
        target.mkdir()
        (target / "readme.txt").write_text("nothing here")
    elif case == "unknown assignment":
        assignment = "01_sofmax"
        _flat(target, {"alice.ipynb": gk.release("01_softmax")})
    elif case == "bad shard":
        extra = ["--shard", "3/2"]
        _flat(target, {"alice.ipynb": gk.release("01_softmax")})
    proc, out = _run(tmp_path, assignment, target, *extra)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    for word in words:
        assert word in proc.stderr, (word, proc.stderr)
    assert not out.exists()


def test_a_folder_of_another_assignment_stops_the_run(tmp_path):
    multihead = gk.fill_any(gk.release("05_multihead"), gk.solution_answers("05_multihead"))
    target = _flat(tmp_path / "subs", {f"student{i}.ipynb": multihead for i in range(3)})
    proc, out = _run(tmp_path, "01_softmax", target)
    assert proc.returncode == 2
    assert "3 of the 3 notebooks" in proc.stderr and "05_multihead" in proc.stderr
    assert "attngrade 05_multihead" in proc.stderr
    assert not out.exists()


def test_one_stray_notebook_of_another_assignment_is_malformed_not_flagged(tmp_path):
    softmax = gk.fill_any(gk.release("01_softmax"), gk.solution_answers("01_softmax"))
    target = _flat(
        tmp_path / "subs",
        {"alice.ipynb": softmax, "bob.ipynb": softmax, "carol.ipynb": gk.release("05_multihead")},
    )
    proc, out = _run(tmp_path, "01_softmax", target)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = gk.read_grades(out)
    assert rows["carol"]["status"] == "malformed"
    assert rows["carol"]["reason"] == "a notebook of 05_multihead, not of 01_softmax"
    assert rows["alice"]["status"] == rows["bob"]["status"] == "graded"
