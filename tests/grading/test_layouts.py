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
        ("s_1001.ipynb", "s_1001"),
        ("team-01.ipynb", "team-01"),
        ("team-01_softmax.ipynb", "team-01"),
        ("alice_2.ipynb", "alice_2"),
        ("alice-2.ipynb", "alice-2"),
        ("alice_softmax-2.ipynb", "alice"),
        ("Anna Mu\u0308ller.ipynb", "Anna_M\u00fcller"),  # decomposed umlaut: NFC keeps the letter
        ("Zoë_Ørsted_softmax.ipynb", "Zoë_Ørsted"),
        ("李雷_softmax.ipynb", "李雷"),
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
    assert subs["dave"].ignored == [("dave_softmax.ipynb", "older")]


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


def _names(tmp_path, notebooks, names, kind="right"):
    for name in names:
        _write(notebooks[kind], tmp_path / name)


def test_distinct_file_names_never_merge(tmp_path, notebooks):
    names = [f"{n}.ipynb" for n in ("s_1001", "s_1002", "team-01", "team-02", "alice_2", "alice_3")]
    _names(tmp_path, notebooks, names)
    subs = discover(tmp_path, "01_softmax", "softmax")
    assert sorted(s.student for s in subs) == sorted(n[:-6] for n in names)
    assert all(s.problem is None and not s.ignored for s in subs)


def test_numbered_names_keep_their_number_when_the_folder_uses_the_notebook_suffix(tmp_path, notebooks):
    """``student_01_softmax`` is ``student_01`` beside ``student_00_softmax``, not ``student``."""
    _names(tmp_path, notebooks, [f"student_{i:02d}_softmax.ipynb" for i in range(3)])
    assert [s.student for s in discover(tmp_path, "01_softmax", "softmax")] == [
        "student_00", "student_01", "student_02"]
    other = tmp_path / "long"
    _names(other, notebooks, ["alice_01_softmax.ipynb", "bob_01_softmax.ipynb"])
    assert [s.student for s in discover(other, "01_softmax", "softmax")] == ["alice", "bob"]


def test_two_names_giving_one_id_are_two_students_not_one(tmp_path, notebooks):
    """``Anna Müller`` and ``Anna_Müller`` would both be ``Anna_Müller``: each gets its own id."""
    _names(tmp_path, notebooks, ["Anna Müller.ipynb", "Anna_Müller.ipynb", "Anna Möller.ipynb"])
    subs = {s.name: s for s in discover(tmp_path, "01_softmax", "softmax")}
    assert sorted(subs) == ["Anna Möller", "Anna Müller", "Anna_Müller"]
    assert subs["Anna Möller"].student == "Anna_Möller"
    ids = {subs[n].student for n in ("Anna Müller", "Anna_Müller")}
    assert len(ids) == 2 and all(i.startswith("Anna_Müller~") for i in ids)
    assert all(s.problem is None and s.path is not None for s in subs.values())


def _zip(path, entries):
    """``entries``: (name, notebook, date_time), written in this order."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, nb, when in entries:
            zf.writestr(zipfile.ZipInfo(name, date_time=when), nbformat.writes(nb))


def test_a_zip_resubmission_is_chosen_by_its_stored_time_not_unpack_order(tmp_path, notebooks):
    archive = tmp_path / "export.zip"
    # The newer file comes first in the archive, so it is unpacked first.
    _zip(
        archive,
        [
            ("export/alice (1).ipynb", notebooks["right"], (2026, 11, 20, 9, 0, 0)),
            ("export/alice.ipynb", notebooks["stub"], (2026, 11, 1, 9, 0, 0)),
        ],
    )
    work = tmp_path / "work"
    work.mkdir()
    (sub,) = discover(archive, "01_softmax", "softmax", workdir=str(work))
    assert sub.source == "alice (1).ipynb" and sub.ignored == [("alice.ipynb", "older")]
    assert sub.timestamp == "2026-11-20 09:00:00.000000 UTC" and "zip" in sub.evidence


def test_equal_times_are_a_reported_tie_not_a_guess(tmp_path, notebooks):
    archive = tmp_path / "export.zip"
    when = (2026, 11, 20, 9, 0, 0)
    _zip(archive, [("alice.ipynb", notebooks["right"], when), ("alice (1).ipynb", notebooks["stub"], when)])
    work = tmp_path / "work"
    work.mkdir()
    (sub,) = discover(archive, "01_softmax", "softmax", workdir=str(work))
    assert sub.problem[0] == "ambiguous"
    assert "alice.ipynb" in sub.problem[1] and "alice (1).ipynb" in sub.problem[1]
    assert sub.source == "" and sub.path is None
    why = "ambiguous: not graded"
    assert sub.ignored == [("alice (1).ipynb", why), ("alice.ipynb", why)]


def test_the_lms_submission_id_beats_the_file_time_and_the_late_marker_is_kept(tmp_path, notebooks):
    _names(tmp_path, notebooks, ["bob_late_12_500_softmax.ipynb", "bob_12_400_softmax.ipynb"])
    os.utime(tmp_path / "bob_late_12_500_softmax.ipynb", (1, 1))  # older on disk, newer in the LMS
    (sub,) = discover(tmp_path, "01_softmax", "softmax")
    assert sub.source == "bob_late_12_500_softmax.ipynb" and sub.submission_id == 500
    assert sub.late and sub.ignored == [("bob_12_400_softmax.ipynb", "older")]


def test_other_notebooks_in_an_nbgrader_folder_are_listed_as_ignored(tmp_path, notebooks):
    folder = tmp_path / "submitted" / "carol" / "01_softmax"
    _write(notebooks["right"], folder / "softmax.ipynb")
    _write(notebooks["stub"], folder / "softmax-Copy1.ipynb")
    (sub,) = discover(tmp_path, "01_softmax", "softmax")
    assert sub.source == "carol/01_softmax/softmax.ipynb"
    assert sub.ignored == [("carol/01_softmax/softmax-Copy1.ipynb", "not the released name softmax.ipynb")]


def test_a_class_from_a_zip_is_graded_with_the_right_file_for_each_student(
    tmp_path, notebooks, empty_gradebook
):
    """The issue's class in small: resubmissions, a tie, a late marker, ids that must not merge."""
    archive = tmp_path / "class.zip"
    old, new = (2026, 11, 1, 9, 0, 0), (2026, 11, 20, 9, 0, 0)
    _zip(
        archive,
        [
            ("class/alice (1).ipynb", notebooks["right"], new),
            ("class/alice.ipynb", notebooks["stub"], old),
            ("class/s_1001.ipynb", notebooks["right"], old),
            ("class/s_1002.ipynb", notebooks["stub"], old),
            ("class/tie.ipynb", notebooks["right"], new),
            ("class/tie (1).ipynb", notebooks["stub"], new),
            ("class/dora_late_7_99_softmax.ipynb", notebooks["right"], new),
        ],
    )
    out = tmp_path / "out"
    url = gk.copy_gradebook(empty_gradebook, tmp_path / "gradebook.db")
    proc = gk.run_attngrade("01_softmax", archive, "--out", out, "--db", url, "--jobs", "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = gk.read_grades(out)
    assert {s: (r["status"], r["score"]) for s, r in rows.items()} == {
        "alice": ("graded", "8"),
        "s_1001": ("graded", "8"),
        "s_1002": ("graded", "0"),
        "tie": ("ambiguous", "0"),
        "dora": ("graded", "8"),
    }
    assert rows["alice"]["file"] == "alice (1).ipynb"
    assert rows["alice"]["ignored_files"] == "alice.ipynb (older)"
    assert rows["dora"]["late"] == "marked late by the LMS"
    assert rows["alice"]["timestamp"] == "2026-11-20 09:00:00.000000 UTC"
    feedback = (out / "feedback" / "alice.html").read_text()
    assert "alice (1).ipynb" in feedback and "alice.ipynb</code> (older)" in feedback
    summary = (out / "summary.html").read_text()
    for text in ("alice (1).ipynb", "alice.ipynb</code> (older)", "tie (1).ipynb"):
        assert text in summary
    from nbgrader.api import Gradebook

    with Gradebook(url, course_id="attnmath") as gb:
        stamp = gb.find_submission("01_softmax", "alice").timestamp
        assert stamp.strftime("%Y-%m-%d %H:%M") == "2026-11-20 09:00"
        assert gb.find_submission("01_softmax", "tie").notebooks[0].flagged
