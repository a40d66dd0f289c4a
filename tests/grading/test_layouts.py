"""The three input layouts (nbgrader, flat folder, zip) and the file-naming rules."""

from __future__ import annotations

import os
import zipfile

import nbformat
import pytest

import gradingkit as gk
from attngrade.submissions import discover, student_from_filename


@pytest.mark.parametrize(
    "filename, student",
    [
        ("alice.ipynb", "alice"),
        ("alice_softmax.ipynb", "alice"),
        ("alice_01_softmax.ipynb", "alice"),
        ("Alice_Softmax.ipynb", "Alice"),
        ("alice_12345_67890_softmax.ipynb", "alice"),
        ("alice_late_12345_67890_softmax.ipynb", "alice"),
        ("alice_smith_12345_67890_softmax-1.ipynb", "alice_smith"),
        ("Alice Smith_1234_assignsubmission_file_softmax.ipynb", "Alice_Smith"),
        ("bob (1).ipynb", "bob"),
        ("bob_smith.ipynb", "bob_smith"),
        ("jdoe@example.edu.ipynb", "jdoe@example.edu"),
        ("softmax.ipynb", None),
        ("01_softmax.ipynb", None),
    ],
)
def test_flat_file_names_give_the_student(filename, student):
    assert student_from_filename(filename, "softmax", "01_softmax")[0] == student


def _write(nb, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


@pytest.fixture(scope="module")
def notebooks():
    rel = gk.release("01_softmax")
    return {"right": gk.fill_any(rel, gk.solution_answers("01_softmax")), "stub": rel}


def test_discovering_a_flat_folder(tmp_path, notebooks):
    for name in (
        "alice.ipynb",
        "bob_softmax.ipynb",
        "carol_12345_67890_softmax.ipynb",
        "softmax.ipynb",
        "dave_softmax.ipynb",
        "dave_softmax-2.ipynb",
    ):
        _write(notebooks["right"], tmp_path / name)
    os.utime(tmp_path / "dave_softmax.ipynb", (1, 1))
    (tmp_path / "notes.txt").write_text("not a notebook")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    _write(notebooks["right"], tmp_path / ".ipynb_checkpoints" / "eve-checkpoint.ipynb")
    subs = {s.student: s for s in discover(tmp_path, "01_softmax", "softmax")}
    assert sorted(subs) == ["alice", "bob", "carol", "dave", "softmax"]
    assert subs["softmax"].problem[0] == "malformed"
    assert subs["dave"].path.name == "dave_softmax-2.ipynb"
    assert any("ignored" in n for n in subs["dave"].notes)


def test_discovering_nbgrader_layout_and_a_course_root(tmp_path, notebooks):
    course = tmp_path / "course"
    _write(notebooks["right"], course / "submitted" / "alice" / "01_softmax" / "softmax.ipynb")
    (course / "submitted" / "alice" / "01_softmax" / "timestamp.txt").write_text("2026-11-22 10:00:00 UTC")
    _write(notebooks["right"], course / "submitted" / "bob" / "02_attention" / "attention.ipynb")
    (course / "submitted" / "carol" / "01_softmax").mkdir(parents=True)
    subs = {s.student: s for s in discover(course, "01_softmax", "softmax")}
    assert sorted(subs) == ["alice", "carol"]
    assert subs["alice"].timestamp.startswith("2026-11-22")
    assert subs["carol"].problem[0] == "missing"


def test_zip_slip_and_links_are_ignored(tmp_path, notebooks):
    archive = tmp_path / "export.zip"
    text = nbformat.writes(notebooks["right"])
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("export/alice_softmax.ipynb", text)
        zf.writestr("../evil_softmax.ipynb", text)
        zf.writestr("/abs_softmax.ipynb", text)
        zf.writestr("__MACOSX/export/._alice_softmax.ipynb", "junk")
    work = tmp_path / "work"
    work.mkdir()
    subs = discover(archive, "01_softmax", "softmax", workdir=str(work))
    assert [s.student for s in subs] == ["alice"]
    assert not (tmp_path / "evil_softmax.ipynb").exists()


@pytest.mark.parametrize("layout", ["nbgrader", "flat", "zip-flat", "zip-nbgrader"])
def test_every_layout_grades_end_to_end(tmp_path, notebooks, layout):
    src = tmp_path / "src"
    students = {"alice": "right", "bob": "stub"}
    for student, kind in students.items():
        if layout.endswith("nbgrader"):
            _write(notebooks[kind], src / "submissions" / student / "01_softmax" / "softmax.ipynb")
        else:
            _write(notebooks[kind], src / "submissions" / f"{student}_12345_67890_softmax.ipynb")
    target = src / "submissions"
    if layout.startswith("zip"):
        target = tmp_path / "submissions.zip"
        with zipfile.ZipFile(target, "w") as zf:
            for path in sorted((src / "submissions").rglob("*.ipynb")):
                zf.write(path, path.relative_to(src))
    out = tmp_path / "out"
    proc = gk.run_attngrade("01_softmax", target, "--out", out, "--no-gradebook", "--jobs", "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = gk.read_grades(out)
    assert {s: (r["status"], r["score"]) for s, r in rows.items()} == {
        "alice": ("graded", "8"),
        "bob": ("graded", "0"),
    }
