"""Discovery on the LMSs' own bulk downloads, built by tests/grading/lms (written clean-room from
the LMSs' code and documentation, not from the grader): exactly the class's students by LMS user
id, the file each must be graded on, the older files listed, and the late verdicts and submission
times each LMS's evidence gives. Discovery only: nothing is graded here."""

from __future__ import annotations

import csv
import json
import unicodedata
import zipfile
from datetime import datetime, timezone

import pytest

from attngrade.export import lms_id_from_filename
from attngrade.late import LatePolicy, assign_deadlines, read_deadlines, read_time
from attngrade.lms import read_times
from attngrade.submissions import discover_class

from .lms import downloads as D
from .lms.classes import DOWNLOADED_AT, DUE_AT, ordinary_class

ASSIGNMENT, NOTEBOOK = D.ASSIGNMENT, D.NOTEBOOK[: -len(".ipynb")]
SERVER = DOWNLOADED_AT.tzinfo  # the zone the fixtures' servers write local times in (CST)


def _notebook(key: str) -> bytes:
    return json.dumps({"cells": [], "metadata": {"key": key}, "nbformat": 4, "nbformat_minor": 5}).encode()


CLASS = ordinary_class(_notebook)
BY_ID = {s.user_id: s for s in CLASS}
PIDS = D.moodle_participant_ids(CLASS)
BUILDERS = {
    "canvas": lambda p: D.canvas_download(CLASS, due_at=DUE_AT, downloaded_at=DOWNLOADED_AT, path=p),
    "moodle": lambda p: D.moodle_download(CLASS, assignment_cmid=5123, downloaded_at=DOWNLOADED_AT, path=p),
    "moodle-flat": lambda p: D.moodle_download(CLASS, assignment_cmid=5123, downloaded_at=DOWNLOADED_AT, path=p,
                                               folders=False),
    "blackboard": lambda p: D.blackboard_download(CLASS, due_at=DUE_AT, downloaded_at=DOWNLOADED_AT, path=p),
    "brightspace": lambda p: D.brightspace_download(CLASS, due_at=DUE_AT, downloaded_at=DOWNLOADED_AT, path=p),
    "gradescope": lambda p: D.gradescope_download(CLASS, assignment_id=4123456, due_at=DUE_AT,
                                                  downloaded_at=DOWNLOADED_AT, path=p),
}
#: The identity each LMS's download carries, per user of the fixture's class.
IDENTITY = {
    "canvas": lambda s: str(s.user_id),
    "moodle": lambda s: str(PIDS[s.user_id]),
    "moodle-flat": lambda s: str(PIDS[s.user_id]),
    "blackboard": lambda s: s.login,
    "brightspace": lambda s: s.full_name,  # Brightspace's names hold no user id
    "gradescope": lambda s: s.login,  # the SID
}
NAMESAKES = (40101, 40102)  # "Minh Nguyen" twice


@pytest.fixture(scope="module")
def found(tmp_path_factory):
    """Each download built once and discovered once: ``{lms: (expected, Discovery, zip)}``."""
    out = {}
    for lms, build in BUILDERS.items():
        folder = tmp_path_factory.mktemp(lms)
        expected = build(folder / "download.zip")
        (folder / "work").mkdir()
        out[lms] = (expected, discover_class(folder / "download.zip", ASSIGNMENT, NOTEBOOK, zone=SERVER,
                                             workdir=str(folder / "work")), folder / "download.zip")
    return out


def _relative(member: str) -> str:
    """A member's path below the download's own enclosing folder (Gradescope's export folder)."""
    return member.split("/", 1)[1] if member.startswith("assignment_") else member


def _deadlines(tmp_path, lms: str):
    """A deadlines file: the due date for everyone, and the extension by the LMS's id."""
    path = tmp_path / f"deadlines-{lms}.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["assignment", "student", "due"])
        w.writerow([ASSIGNMENT, "", DUE_AT.isoformat()])
        for s in CLASS:
            if s.extension_until is not None:
                w.writerow([ASSIGNMENT, IDENTITY[lms](s), s.extension_until.isoformat()])
    return read_deadlines(path, ASSIGNMENT, SERVER)


def _minute(student) -> str:
    """When the student's newest upload came, to the minute (as Moodle's worksheet says it)."""
    return max(u.uploaded_at for u in student.uploads).replace(second=0, microsecond=0).isoformat()


def _subs(found, lms: str, tmp_path) -> list:
    """The class's submissions as discovery gives them, with Moodle's worksheet for Moodle (its
    zip says nothing of times or lateness) and the deadlines file's due dates."""
    expected, discovery, archive = found[lms]
    subs = discovery.subs
    if lms.startswith("moodle"):
        worksheet = tmp_path / "worksheet.csv"
        D.moodle_grading_worksheet(CLASS, max_grade=10, path=worksheet, due_at=DUE_AT)
        subs = discover_class(archive, ASSIGNMENT, NOTEBOOK, zone=SERVER, times=read_times(worksheet, SERVER),
                              workdir=str(tmp_path)).subs
    assert assign_deadlines(subs, _deadlines(tmp_path, lms)) == []
    return subs


def _check_student(lms: str, e: dict, sub, policy) -> None:
    student = BY_ID[e["user_id"]]
    assert sub.lms_id == IDENTITY[lms](student) and sub.problem is None, (lms, e, sub)
    assert sub.source == _relative(e["member"]), (lms, sub.source, e["member"])
    assert json.loads(sub.path.read_bytes())["metadata"]["key"] == f"{student.user_id}-{len(student.uploads)}"
    assert [f for f, why in sub.ignored if why == "older"] == [_relative(m) for m in e["ignored"]], sub.ignored
    assert sub.evidence, sub
    if e["submitted_at"] is None:
        assert sub.timestamp is None, (lms, sub)
    else:
        assert read_time(sub.timestamp) == datetime.fromisoformat(e["submitted_at"]), (lms, sub.timestamp, e)
    verdict = policy.lateness(sub.timestamp, sub.late, sub.due)
    assert verdict.late == e["late"], (lms, student.full_name, verdict, sub.timestamp, sub.due)


@pytest.mark.parametrize("lms", sorted(BUILDERS))
def test_every_student_is_found_by_lms_id_with_the_right_file_time_and_verdict(found, lms, tmp_path):
    expected, discovery, _ = found[lms]
    subs = _subs(found, lms, tmp_path)
    by_id = {s.lms_id: s for s in subs}
    assert len(by_id) == len(subs), "two rows for one LMS id"
    assert set(by_id) == {IDENTITY[lms](BY_ID[e["user_id"]]) for e in expected}
    assert any("carry one time" in w for w in discovery.warnings), discovery.warnings
    policy = LatePolicy(DUE_AT.astimezone(timezone.utc))
    for e in expected:
        if lms == "brightspace" and e["user_id"] in NAMESAKES:
            continue  # test_brightspace_namesakes_share_one_row_and_a_warning
        if lms.startswith("moodle"):
            e = {**e, "submitted_at": _minute(BY_ID[e["user_id"]])}  # the worksheet's time
        _check_student(lms, e, by_id[IDENTITY[lms](BY_ID[e["user_id"]])], policy)


@pytest.mark.parametrize("lms", ["moodle", "moodle-flat"])
def test_moodle_zip_alone_gives_no_time_and_no_verdict_and_says_so(found, lms):
    _, discovery, _ = found[lms]
    assert all(s.timestamp is None and s.late is None and s.problem is None for s in discovery.subs)
    assert any("no submission time" in w and "--submission-times" in w for w in discovery.warnings)


def test_canvas_gives_verdicts_from_its_late_marker_and_no_download_time(found):
    expected, discovery, _ = found["canvas"]
    late = {s.lms_id for s in discovery.subs if s.late}
    assert late == {str(e["user_id"]) for e in expected if e["late"]} and len(late) == 2
    assert all(s.late is False for s in discovery.subs if s.lms_id not in late)
    for sub in discovery.subs:
        assert sub.timestamp is None and "download" in sub.evidence and "LATE" in sub.evidence


@pytest.mark.parametrize("lms", ["canvas", "moodle", "moodle-flat"])
def test_the_graded_file_names_the_lms_id_the_grade_export_needs(found, lms):
    """Copies, renames and namesakes keep their LMS id, so no one falls out of --export."""
    _, discovery, _ = found[lms]
    kind = lms.split("-")[0]
    assert {lms_id_from_filename(s.source, NOTEBOOK, ASSIGNMENT, kind) for s in discovery.subs} == {
        s.lms_id for s in discovery.subs
    }


@pytest.mark.parametrize("lms", ["blackboard", "brightspace", "gradescope"])
def test_an_extension_from_the_deadlines_file_is_what_keeps_the_student_on_time(found, lms, tmp_path):
    hannah = next(s for s in CLASS if s.extension_until is not None)
    subs = _subs(found, lms, tmp_path)
    sub = next(s for s in subs if s.lms_id == IDENTITY[lms](hannah))
    policy = LatePolicy(DUE_AT.astimezone(timezone.utc), 0.1)
    assert sub.due is not None and not policy.lateness(sub.timestamp, sub.late, sub.due).late
    without = policy.lateness(sub.timestamp, sub.late)
    assert without.late and without.days == 2 and without.fraction == pytest.approx(0.2)


def test_brightspace_namesakes_share_one_row_and_a_warning(found):
    """Brightspace's download names no user id (README of tests/grading/lms: the two numbers are a
    guess); two students of one name cannot be told from one student's resubmission. The newest
    is graded, the other listed, and the instructor is told to grade them apart."""
    expected, discovery, _ = found["brightspace"]
    (sub,) = [s for s in discovery.subs if s.name == "Minh Nguyen"]
    pair = sorted((e for e in expected if e["user_id"] in NAMESAKES), key=lambda e: e["submitted_at"])
    assert sub.source == pair[-1]["member"] and (pair[0]["member"], "older") in sub.ignored
    assert any("'Minh Nguyen'" in w and "grade their submissions apart" in w for w in discovery.warnings)


def test_the_grading_runs_discovery_applies_the_worksheet_and_the_deadlines_and_prints_warnings(
    found, tmp_path, capsys
):
    """The step of ``attngrade`` that discovers (pipeline._discover), on Moodle's download with
    ``--submission-times`` (its worksheet) and ``--deadlines``: times, verdicts, extensions."""
    from types import SimpleNamespace

    from attngrade import pipeline

    _, _, archive = found["moodle"]
    worksheet = tmp_path / "worksheet.csv"
    D.moodle_grading_worksheet(CLASS, max_grade=10, path=worksheet, due_at=DUE_AT)
    table = _deadlines(tmp_path, "moodle")
    opts = SimpleNamespace(submissions=str(archive), submission_times=str(worksheet))
    course = SimpleNamespace(release=tmp_path / "no-release", source=tmp_path)
    spec = SimpleNamespace(name=ASSIGNMENT, notebook=NOTEBOOK)
    subs, warnings = pipeline._discover(opts, course, spec, str(tmp_path), (SERVER, table))
    assert any("carry one time" in w for w in warnings), "kept for the summary too"
    policy = LatePolicy(table.default)
    late = {s.lms_id for s in subs if policy.lateness(s.timestamp, s.late, s.due).late}
    assert late == {str(PIDS[s.user_id]) for s in CLASS if s.late}
    assert all(s.timestamp for s in subs) and all("worksheet.csv" in s.evidence for s in subs)
    assert "attngrade: warning: all 12 notebooks carry one time" in capsys.readouterr().err


# --------------------------------------------------------------- Canvas's entries that are no upload, re-zipped downloads

from attngrade.lms import canvas_name  # noqa: E402
from attngrade.submissions import _member_names  # noqa: E402

from .lms import rezipped as R  # noqa: E402

STAMP = datetime(2026, 12, 6, 10, 15, 2)  # a download's time, on every member


@pytest.mark.parametrize("member, lms_id, label, late", [
    (R.canvas_entry_member("text", sortable_name="Wei, Li", user_id=71000017), "71000017", "weili_71000017", False),
    (R.canvas_entry_member("link", sortable_name="Ruiz, Tomás", user_id=71000018, late=True), "71000018",
     "ruiztomás_71000018", True),
    (R.canvas_entry_member("text", anonymous_id="Zp9aB"), "anon_Zp9aB", "anon_Zp9aB", False),
    (R.canvas_entry_member("link", anonymous_id="48213", late=True), "anon_48213", "anon_48213", True),
    ("LATE_anon_Qm3vT_90000202_softmax.ipynb", "anon_Qm3vT", "anon_Qm3vT", True),
    ("anon_48213_90000203_softmax.ipynb", "anon_48213", "anon_48213", False),
])
def test_canvas_text_url_and_anonymous_names_give_the_student_and_the_late_marker(member, lms_id, label, late):
    placed = canvas_name(member)
    assert (placed.lms, placed.lms_id, placed.label, placed.late) == ("canvas", lms_id, label, late), placed
    assert (placed.order is None) == member.endswith(("_text.html", "_link.html"))


def test_canvas_text_and_url_entries_give_a_missing_row_or_a_stray_of_their_student(tmp_path):
    """A student whose only entry is online text or a URL is ``missing`` naming it; beside a
    notebook it is that student's stray, never a student of its own."""
    text = R.canvas_entry_member("text", sortable_name="Wei, Li", user_id=71000017)
    link = R.canvas_entry_member("link", sortable_name="Ruiz, Tomás", user_id=71000018, late=True)
    anon = R.canvas_entry_member("text", anonymous_id="Zp9aB")
    minh = R.canvas_entry_member("text", sortable_name="Nguyen, Minh", user_id=71000011)
    graded = "nguyenminh_71000011_90000101_softmax.ipynb"
    with zipfile.ZipFile(tmp_path / "submissions.zip", "w") as zf:
        for name in (text, link, anon, minh, graded):
            zf.writestr(name, _notebook(name) if name.endswith(".ipynb") else b"<p>answer</p>")
    found = discover_class(tmp_path / "submissions.zip", "01_softmax", "softmax", workdir=str(tmp_path))
    rows = {s.student: s for s in found.subs}
    assert sorted(rows) == ["anon_Zp9aB", "nguyenminh_71000011", "ruiztomás_71000018", "weili_71000017"]
    for student, member in (("weili_71000017", text), ("ruiztomás_71000018", link), ("anon_Zp9aB", anon)):
        sub = rows[student]
        assert sub.problem[0] == "missing" and member in sub.problem[1] and sub.lms == "canvas", sub
    assert rows["ruiztomás_71000018"].late is True and rows["weili_71000017"].late is False
    minh_row = rows["nguyenminh_71000011"]
    assert minh_row.problem is None and minh_row.source == graded and (minh, "not a notebook") in minh_row.ignored
    assert not any("names no student" in w for w in found.warnings), found.warnings


def _files():
    return {"nguyenminh_71000011_90000101_softmax.ipynb": _notebook("minh"),
            "mülleranna_71000013_90000103_softmax-1.ipynb": _notebook("anna"),
            "ødegårdsven_71000019_90000110_softmax.ipynb": _notebook("sven")}


def test_a_zip_recompressed_on_macos_gives_the_ids_and_files_of_the_canvas_zip_and_no_apple_files(tmp_path):
    """Finder writes NFD UTF-8 names without the UTF-8 flag, ``.DS_Store`` and ``__MACOSX/._*.ipynb``."""
    files = _files()
    R.macos_rezip(files, tmp_path / "mac.zip", stamp=STAMP)
    with zipfile.ZipFile(tmp_path / "mac.zip") as zf:  # the fault: zipfile alone reads cp437
        assert "submissions/mu╠êlleranna_71000013_90000103_softmax-1.ipynb" in zf.namelist()
    with zipfile.ZipFile(tmp_path / "canvas.zip", "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    mac = discover_class(tmp_path / "mac.zip", "01_softmax", "softmax", workdir=str(tmp_path / "a")).subs
    canvas = discover_class(tmp_path / "canvas.zip", "01_softmax", "softmax", workdir=str(tmp_path / "b")).subs
    assert [s.student for s in mac] == [s.student for s in canvas] == [
        "mülleranna_71000013", "nguyenminh_71000011", "ødegårdsven_71000019"]
    for sub, twin in zip(mac, canvas):
        assert sub.source == twin.source and sub.ignored == [] and sub.problem is None, sub
        assert sub.path.read_bytes() == files[twin.source]


def test_a_windows_code_page_name_stays_as_read_and_keeps_its_user_id(tmp_path):
    """cp850 bytes are no UTF-8 and cannot be told from cp437: read as zipfile reads them."""
    R.windows_rezip(_files(), tmp_path / "win.zip", stamp=STAMP)
    subs = discover_class(tmp_path / "win.zip", "01_softmax", "softmax", workdir=str(tmp_path)).subs
    assert {s.lms_id: s.source.split("/")[-1][:12] for s in subs} == {
        "71000011": "nguyenminh_7", "71000013": "mülleranna_7", "71000019": "¢degårdsven_"}


def test_an_nfc_and_an_nfd_member_of_one_name_are_both_kept():
    nfc = "mülleranna_71000013_90000103_softmax.ipynb"
    nfd = unicodedata.normalize("NFD", nfc)
    assert _member_names([zipfile.ZipInfo(nfd)]) == [nfc]
    assert _member_names([zipfile.ZipInfo(nfd), zipfile.ZipInfo(nfc)]) == [nfd, nfc]


# --------------------------------------------------------------- Moodle: the worksheet's students the zip lacks, team folders

from attngrade.lms import folder_owner, lms_id_of_path, name_owner, unsubmitted  # noqa: E402
from attngrade.submissions import Submission  # noqa: E402

_HEAD = ('\ufeffIdentifier,"Full name","Email address",Status,{group}Grade,"Maximum Grade",'
         '"Last modified (submission)"\n')


def _worksheet(path, rows, *, group=False, names=True):
    """A grading worksheet of Moodle's shape: ``rows`` of (participant id, name, status, group)."""
    head = _HEAD.format(group="Group," if group else "")
    if not names:
        head = head.replace('"Full name","Email address",', "")
    lines = []
    for pid, name, status, team in rows:
        who = f'"{name}",{pid}@uni.example,' if names else ""
        when = "-" if status.startswith("No submission") else '"Friday, 4 December 2026, 9:14 PM"'
        lines.append(f'"Participant {pid}",{who}"{status}",' + (f'"{team}",' if group else "") + f",100.00,{when}\n")
    path.write_text(head + "".join(lines), encoding="utf-8")
    return read_times(path)


def _moodle_sub(student, pid, name=""):
    return Submission(student, None, "moodle", name=name, lms="moodle", lms_id=pid)


def test_a_student_only_the_worksheet_lists_gets_a_missing_row_with_moodles_id_and_status(tmp_path):
    """Moodle's zip holds only those who uploaded (of a reopened attempt, only the new one): the
    worksheet's other students are missing, named as the download would name them."""
    times = _worksheet(tmp_path / "Grades-812.csv", [
        ("3400004", "Minh Nguyen", "Submitted for grading", ""),
        ("3400016", "Jonas Weber", "No submission - Assignment is overdue by: 1 day 10 hours", ""),
        ("3400006", "Seán O'Brien", "Reopened", ""),
    ])
    rows = unsubmitted(times, [_moodle_sub("Minh_Nguyen_3400004", "3400004", "Minh Nguyen")])
    assert [(label, pid) for label, _, pid, _ in rows] == [("Jonas Weber_3400016", "3400016"),
                                                          ("Seán OBrien_3400006", "3400006")]
    jonas, sean = rows[0][3], rows[1][3]
    assert "Grades-812.csv lists Jonas Weber (Participant 3400016)" in jonas and "No submission" in jonas
    assert "nothing of theirs" in jonas and "'Reopened'" in sean and "reopened attempt" in sean
    assert rows[1][1] == "Seán O'Brien"
    blind = _worksheet(tmp_path / "blind.csv", [("3400025", "", "No submission", "")], names=False)
    assert [r[0] for r in unsubmitted(blind, [])] == ["Participant_3400025"]
    assert unsubmitted(None, []) == [] and unsubmitted(times, [_moodle_sub("x", "3400004"), _moodle_sub(
        "y", "3400016"), _moodle_sub("3400006", "")]) == [], "matched by lms id or by attngrade's id"


def test_a_generic_submission_times_csv_gives_no_missing_rows(tmp_path):
    (tmp_path / "times.csv").write_text("student,submitted\nalice,2026-12-01 10:00\n", encoding="utf-8")
    assert unsubmitted(read_times(tmp_path / "times.csv"), []) == []


def test_a_team_worksheets_members_are_covered_by_their_groups_submission(tmp_path):
    """Team folders are the group's (``Team Beta_58``, raw name ``Team_Beta``; ``Default group``
    without an id): their members are not missing; a group with nothing in the zip is."""
    times = _worksheet(tmp_path / "team.csv", [
        ("3400004", "Minh Nguyen", "Submitted for grading", "Team Alpha"),
        ("3400012", "Kofi Mensah", "Submitted for grading", "Team_Beta"),
        ("3400013", "Elif Kaya", "Submitted for grading", "Default group"),
        ("3400020", "Ada Obi", "No submission", "Team Gamma"),
    ], group=True)
    (alpha,), (beta,), (default,) = (folder_owner(f"{g}_assignsubmission_file", "softmax.ipynb", timezone.utc, {})
                                     for g in ("Team Alpha_57", "Team Beta_58", "Default group"))
    assert (default.lms, default.lms_id, default.name, default.label) == ("moodle", "", "Default group",
                                                                          "Default group")
    subs = [_moodle_sub(p.label.replace(" ", "_"), p.lms_id, p.name) for p in (alpha, beta, default)]
    rows = unsubmitted(times, subs)
    assert [r[2] for r in rows] == ["3400020"] and "group 'Team Gamma'" in rows[0][3]
    flat = name_owner("Default group_assignsubmission_file_softmax.ipynb", timezone.utc, {})
    assert (flat.lms_id, flat.name, flat.own) == ("", "Default group", "softmax.ipynb")
    assert lms_id_of_path("Default group_assignsubmission_file/softmax.ipynb") is None
    assert lms_id_of_path("Team Alpha_57_assignsubmission_file/softmax.ipynb") == "57"


def test_the_grading_run_gives_the_worksheets_absent_students_rows_and_default_group_its_id(tmp_path, capsys):
    """``attngrade``'s discovery step (pipeline._discover) on a Moodle zip and its worksheet."""
    from types import SimpleNamespace

    from attngrade import pipeline

    with zipfile.ZipFile(tmp_path / "moodle.zip", "w") as zf:
        for folder in ("Minh Nguyen_3400004_assignsubmission_file", "Default group_assignsubmission_file"):
            zf.writestr(f"{folder}/softmax.ipynb", _notebook(folder))
    _worksheet(tmp_path / "Grades.csv", [("3400004", "Minh Nguyen", "Submitted for grading", ""),
                                         ("3400016", "Jonas Weber", "No submission", "")])
    opts = SimpleNamespace(submissions=str(tmp_path / "moodle.zip"), submission_times=str(tmp_path / "Grades.csv"))
    course = SimpleNamespace(release=tmp_path / "no-release", source=tmp_path)
    spec = SimpleNamespace(name="01_softmax", notebook="softmax")
    subs, warnings = pipeline._discover(opts, course, spec, str(tmp_path), (timezone.utc, None))
    rows = {s.student: s for s in subs}
    assert sorted(rows) == ["Default_group", "Jonas_Weber_3400016", "Minh_Nguyen_3400004"]
    jonas = rows["Jonas_Weber_3400016"]
    assert (jonas.problem[0], jonas.path, jonas.lms_id, jonas.name) == ("missing", None, "3400016", "Jonas Weber")
    assert rows["Default_group"].problem is None and rows["Minh_Nguyen_3400004"].problem is None
    assert any("1 student(s) it lists have nothing" in w and "Jonas_Weber_3400016" in w for w in warnings)
    assert "Jonas_Weber_3400016" in capsys.readouterr().err
