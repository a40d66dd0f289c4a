"""The three input layouts (nbgrader, flat folder, zip) and the file-naming rules."""

from __future__ import annotations

import os
import zipfile
from datetime import timedelta, timezone

import nbformat
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gradingkit as gk
from attngrade.submissions import discover, student_from_filename


@pytest.mark.parametrize(
    "filename, student",
    [
        ("alice.ipynb", "alice"),
        ("alice_softmax.ipynb", "alice"),
        ("alice_01_softmax.ipynb", "alice"),
        ("Alice_Softmax.ipynb", "Alice"),
        # An LMS's name: the user id is the identity, the student's own file name no part of it.
        ("alice_12345_67890_softmax.ipynb", "alice_12345"),
        ("alice_late_12345_67890_softmax.ipynb", "alice_12345"),
        ("alice_LATE_12345_67890_softmax.ipynb", "alice_12345"),
        ("alice_smith_12345_67890_softmax-1.ipynb", "alice_smith_12345"),
        ("nguyenminh_2036_71000001_attention-Copy1.ipynb", "nguyenminh_2036"),
        ("LATE_anon_Kx4bZ_71000002_my notebook.ipynb", "anon_Kx4bZ"),
        ("Alice Smith_1234_assignsubmission_file_softmax.ipynb", "Alice_Smith_1234"),
        ("Alice Smith_1234_assignsubmission_file_Softmax (2).ipynb", "Alice_Smith_1234"),
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
    assert sorted(subs) == ["alice", "bob", "carol_12345", "dave", "softmax"]
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
    students = {"alice": ("right", 101), "bob": ("stub", 102)}
    for student, (kind, user) in students.items():
        if layout.endswith("nbgrader"):
            _write(notebooks[kind], src / "submissions" / student / "01_softmax" / "softmax.ipynb")
        else:
            _write(notebooks[kind], src / "submissions" / f"{student}_{user}_67890{user}_softmax.ipynb")
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
    ids = ("alice", "bob") if layout.endswith("nbgrader") else ("alice_101", "bob_102")
    assert {s: (r["status"], r["score"]) for s, r in rows.items()} == {
        ids[0]: ("graded", "8"),
        ids[1]: ("graded", "0"),
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
        "dora_7": ("graded", "8"),
    }
    assert rows["alice"]["file"] == "alice (1).ipynb"
    assert rows["alice"]["ignored_files"] == "alice.ipynb (older)"
    assert rows["dora_7"]["late"] == "marked late by the LMS"
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


# ------------------------------------------------------------------ LMS downloads and odd layouts
# Discovery never reads a notebook, so these write a placeholder and check who gets which file.


def _put(folder, *names, text="{}"):
    for name in names:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


def _zip_of(path, names, when=(2024, 4, 8, 16, 16, 42)):
    """A zip whose members all carry one time, as an LMS's download stamps them."""
    with zipfile.ZipFile(path, "w") as zf:
        for name in names:
            zf.writestr(zipfile.ZipInfo(name, date_time=when), "{}")
    return path


def _found(target, tmp_path, assignment="02_attention", notebook="attention", **kw):
    from attngrade.submissions import discover_class

    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return discover_class(target, assignment, notebook, workdir=str(work), **kw)


def test_canvas_namesakes_stay_two_students_and_a_renamed_copy_keeps_its_owner(tmp_path):
    """Two "Nguyen, Minh" (user ids 2036, 2037) and Jupyter's "Make a Copy" in one Canvas zip."""
    archive = _zip_of(tmp_path / "submissions.zip", [
        "nguyenminh_2036_71000001_attention.ipynb",
        "nguyenminh_2037_71000002_attention.ipynb",
        "ramanpriya_2040_71000003_attention-Copy1.ipynb",
    ])
    found = _found(archive, tmp_path)
    subs = {s.lms_id: s for s in found.subs}
    assert sorted(subs) == ["2036", "2037", "2040"] and found.lms == "canvas"
    assert [s.student for s in found.subs] == ["nguyenminh_2036", "nguyenminh_2037", "ramanpriya_2040"]
    assert all(s.problem is None and s.path is not None and s.ignored == [] for s in found.subs)
    assert subs["2040"].source == "ramanpriya_2040_71000003_attention-Copy1.ipynb"
    assert any("attention-Copy1.ipynb" in n and "own name" in n for n in subs["2040"].notes)


def test_canvas_late_marker_in_capitals_is_the_verdict_not_part_of_the_id(tmp_path):
    folder = _put(tmp_path / "dl", "chenemily_LATE_40106_71000011_attention.ipynb",
                  "smitholiver_40112_71000001_attention.ipynb")
    subs = {s.student: s for s in _found(folder, tmp_path).subs}
    assert sorted(subs) == ["chenemily_40106", "smitholiver_40112"]
    assert subs["chenemily_40106"].late is True and subs["smitholiver_40112"].late is False
    assert "LATE marker" in subs["chenemily_40106"].evidence


def test_a_downloads_member_times_are_never_submission_times(tmp_path):
    """Canvas stamps every member with the time of the download: no one's submission time."""
    archive = _zip_of(tmp_path / "submissions.zip", [
        "bobby_11_501_attention.ipynb", "carla_LATE_12_502_attention.ipynb", "dora_13_503_attention.ipynb"])
    found = _found(archive, tmp_path)
    assert all(s.timestamp is None for s in found.subs)
    assert all("download" in s.evidence for s in found.subs)
    assert any("carry one time, 2024-04-08 16:16:42" in w for w in found.warnings)
    assert any("3 submissions have no submission time" in w for w in found.warnings)


def test_a_flat_folders_one_shared_time_is_dropped_not_used(tmp_path):
    """Copied files share the copy's time: a late policy must not read it as anyone's."""
    folder = _put(tmp_path / "flat", "alice.ipynb", "bob.ipynb", "carol.ipynb")
    for path in folder.iterdir():
        os.utime(path, (1_700_000_000, 1_700_000_000))
    found = _found(folder, tmp_path, "01_softmax", "softmax")
    assert [s.timestamp for s in found.subs] == [None, None, None]
    assert any("carry one time" in w and "3 submissions have no time" in w for w in found.warnings)


@pytest.mark.parametrize("layout", ["folders", "folders-before-4.1", "flat"])
def test_moodle_downloads_give_the_participant_id_as_identity(tmp_path, layout):
    names = {"folders": "{}_assignsubmission_file/{}", "folders-before-4.1": "{}_assignsubmission_file_/{}",
             "flat": "{}_assignsubmission_file_{}"}[layout]
    archive = _zip_of(tmp_path / "moodle.zip", [
        names.format("Minh Nguyen_3400004", "attention.ipynb"),
        names.format("Minh Nguyen_3400006", "attention.ipynb"),
        names.format("Seán OBrien-Smith_3400003", "Attention (2).ipynb"),
        names.format("Aisha Bello_3400002", "notes.pdf"),
    ])
    subs = {s.lms_id: s for s in _found(archive, tmp_path).subs}
    assert sorted(subs) == ["3400002", "3400003", "3400004", "3400006"]
    assert subs["3400004"].student == "Minh_Nguyen_3400004" and subs["3400004"].problem is None
    assert subs["3400003"].source.endswith("Attention (2).ipynb") and subs["3400003"].problem is None
    status, reason = subs["3400002"].problem  # a row, never a silent drop
    assert status == "missing" and "notes.pdf" in reason and subs["3400002"].ignored[0][1] == "not a notebook"


def test_a_notebook_without_its_assignment_folder_or_in_another_case_is_found(tmp_path):
    root = _put(tmp_path / "course", "submitted/alice/attention.ipynb", "submitted/bob/02_Attention/attention.ipynb",
                "submitted/carol/01_softmax/softmax.ipynb", "submitted/dave/drafts/attention-old.ipynb")
    (root / "submitted" / "bob" / "02_Attention" / "timestamp.txt").write_text("2024-03-08 22:00:00 +0100")
    found = _found(root, tmp_path, assignments=["01_softmax", "02_attention"])
    subs = {s.student: s for s in found.subs}
    assert sorted(subs) == ["alice", "bob", "dave"] and found.warnings == []  # carol did 01_softmax only
    unknown = _found(root, tmp_path).warnings  # without the course's list: named like an assignment
    assert unknown == ["1 notebook in folders named like other assignments left alone "
                       "(carol/01_softmax/softmax.ipynb)"]
    assert subs["alice"].problem is None and subs["alice"].source == "alice/attention.ipynb"
    assert any("no 02_attention/ folder" in n for n in subs["alice"].notes)
    assert subs["bob"].problem is None and subs["bob"].timestamp == "2024-03-08 21:00:00.000000 UTC"
    status, reason = subs["dave"].problem  # a notebook of dave's, but not the released one: a row
    assert status == "missing" and "dave/drafts/attention-old.ipynb" in reason


def test_a_notebook_that_names_no_student_is_a_row_and_a_stray_file_a_warning(tmp_path):
    folder = _put(tmp_path / "flat", "alice.ipynb", "attention.ipynb", "syllabus.pdf")
    found = _found(folder, tmp_path)
    subs = {s.student: s for s in found.subs}
    assert sorted(subs) == ["alice", "attention"]
    assert subs["attention"].problem[0] == "malformed" and "does not name a student" in subs["attention"].problem[1]
    assert any(w.startswith("syllabus.pdf: not a notebook") for w in found.warnings)


def test_blackboard_attempts_by_username_from_the_receipt(tmp_path):
    """Blackboard's names hold the username after the assignment's name; its receipt confirms it
    (``mary_ann`` holds a ``_``); the newest attempt is graded, the older one listed."""
    folder = tmp_path / "bb"
    old, new = "02_attention_mary_ann_attempt_2024-03-07-10-00-00", "02_attention_mary_ann_attempt_2024-03-09-08-30-00"
    _put(folder, f"{old}_attention.ipynb", f"{new}_attention-Copy1.ipynb")
    for stem in (old, new):
        (folder / f"{stem}.txt").write_text(f"Name: Mary Ann Lee (mary_ann)\nAssignment: 02_attention\n"
                                            f"Date Submitted: Saturday, March 9, 2024 8:30:00 AM CST\n")
    (folder / "02_attention_tom_attempt_2024-03-08-09-00-00.txt").write_text("Name: Tom Ek (tom)\n")
    zone = timezone(timedelta(hours=-6), "CST")
    found = _found(folder, tmp_path, zone=zone)
    subs = {s.lms_id: s for s in found.subs}
    assert sorted(subs) == ["mary_ann", "tom"] and found.warnings == []
    mary = subs["mary_ann"]
    assert mary.source == f"{new}_attention-Copy1.ipynb" and mary.ignored == [(f"{old}_attention.ipynb", "older")]
    assert mary.timestamp == "2024-03-09 14:30:00.000000 UTC" and "attempt time" in mary.evidence
    assert subs["tom"].problem[0] == "missing"  # a text-only attempt: a row, not nothing
    utc = _found(folder, tmp_path).warnings  # the receipts' CST is not UTC's: the zone must be set
    assert len(utc) == 1 and "Blackboard's receipts" in utc[0] and "c.AttnGrade.timezone" in utc[0]


def test_gradescope_gives_every_submitter_of_a_group_the_submission(tmp_path):
    folder = _put(tmp_path / "gs", "assignment_9_export/submission_501/attention.ipynb",
                  "assignment_9_export/submission_502/attention.ipynb")
    (folder / "assignment_9_export" / "submission_metadata.yml").write_text(
        "submission_501:\n  :submitters:\n  - :name: Ana Li\n    :sid: '1001'\n    :email: ana@x.edu\n"
        "  - :name: Bo Wu\n    :sid: '1002'\n    :email: bo@x.edu\n"
        "  :created_at: 2024-03-08 17:52:03.123456000 Z\n  :history: []\n"
        "submission_502:\n  :submitters:\n  - :name: Cy Dee\n    :sid: ''\n    :email: cy@x.edu\n"
        "  :created_at: 2024-03-09 01:00:00.000000000 Z\n  :history: []\n")
    subs = {s.lms_id: s for s in _found(folder, tmp_path).subs}
    assert sorted(subs) == ["1001", "1002", "cy@x.edu"]
    assert subs["1001"].source == subs["1002"].source == "submission_501/attention.ipynb"
    assert subs["1001"].timestamp == "2024-03-08 17:52:03.123456 UTC" and ":created_at" in subs["1001"].evidence
    assert subs["cy@x.edu"].student == "Cy_Dee_cy@x.edu"


def test_a_submission_times_csv_gives_times_by_lms_id_and_names_those_it_lacks(tmp_path):
    from attngrade.lms import read_times

    archive = _zip_of(tmp_path / "c.zip", ["amy_21_601_attention.ipynb", "ben_22_602_attention.ipynb"])
    times = tmp_path / "times.csv"
    times.write_text("id,submitted\n21,2024-03-08 23:58\n99,2024-03-01 10:00\n")
    zone = timezone(timedelta(hours=-6))
    found = _found(archive, tmp_path, zone=zone, times=read_times(times, zone))
    subs = {s.lms_id: s for s in found.subs}
    assert subs["21"].timestamp == "2024-03-09 05:58:00.000000 UTC" and "times.csv" in subs["21"].evidence
    assert subs["22"].timestamp is None
    assert any("no row for 1 submission(s) (ben_22)" in w for w in found.warnings)


def test_each_student_gets_a_share_of_the_zip_limit_not_a_place_in_it(tmp_path, monkeypatch):
    """Past the limit, only the student whose notebook is too large for an equal share loses it,
    wherever it stands in the zip; before, the students after it were malformed."""
    from attngrade import submissions

    monkeypatch.setattr(submissions, "MAX_ZIP_BYTES", 4000)
    small = {f"s{i}_{70 + i}_90{i}_attention.ipynb": "{}" + " " * 400 for i in range(5)}
    for order in ("big-first", "big-last"):
        archive = tmp_path / f"{order}.zip"
        with zipfile.ZipFile(archive, "w") as zf:
            names = list(small)
            names.insert(0 if order == "big-first" else len(names), "big_60_800_attention.ipynb")
            for name in names:
                zf.writestr(name, small.get(name, "{}" + " " * 3500))
        (tmp_path / order).mkdir()
        subs = {s.lms_id: s for s in _found(archive, tmp_path / order).subs}
        assert all(subs[str(70 + i)].problem is None for i in range(5)), order
        status, reason = subs["60"].problem
        assert status == "malformed" and "share" in reason, (order, reason)


@given(st.dictionaries(st.text(max_size=3), st.integers(0, 10**6), max_size=8), st.integers(0, 3 * 10**6))
def test_shares_give_each_what_it_asks_while_an_equal_share_lasts(requests, total):
    from attngrade.submissions import _shares

    shares = _shares(requests, total)
    assert sum(shares.values()) <= total and all(0 <= shares[o] <= requests[o] for o in requests)
    equal = total // max(1, len(requests))
    assert all(shares[o] == requests[o] for o in requests if requests[o] <= equal)
    assert all(shares[o] >= equal for o in requests if requests[o] > equal)
