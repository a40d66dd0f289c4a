"""Discovery on the LMSs' own bulk downloads, built by tests/grading/lms (written clean-room from
the LMSs' code and documentation, not from the grader): exactly the class's students by LMS user
id, the file each must be graded on, the older files listed, and the late verdicts and submission
times each LMS's evidence gives. Discovery only: nothing is graded here."""

from __future__ import annotations

import csv
import json
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
