"""The LMS fixtures are well-formed and keep the promises their expectations make (stdlib only, fast)."""
from __future__ import annotations

import csv
import json
import re
import zipfile
from datetime import datetime, timedelta, timezone

import pytest

from .classes import DOWNLOADED_AT, DUE_AT, ordinary_class
from .downloads import (
    canvas_download,
    canvas_gradebook_csv,
    blackboard_download,
    brightspace_download,
    gradescope_download,
    moodle_download,
    moodle_grading_worksheet,
    moodle_participant_ids,
)


def _notebook(key: str) -> bytes:
    return json.dumps({"cells": [], "metadata": {"key": key}, "nbformat": 4, "nbformat_minor": 5}).encode()


def _key(content: bytes) -> str:
    return json.loads(content)["metadata"]["key"]


CLASS = ordinary_class(_notebook)
BUILDERS = {
    "canvas": lambda p: canvas_download(CLASS, due_at=DUE_AT, downloaded_at=DOWNLOADED_AT, path=p),
    "moodle": lambda p: moodle_download(CLASS, assignment_cmid=5123, downloaded_at=DOWNLOADED_AT, path=p),
    "moodle-flat": lambda p: moodle_download(CLASS, assignment_cmid=5123, downloaded_at=DOWNLOADED_AT, path=p,
                                             folders=False),
    "blackboard": lambda p: blackboard_download(CLASS, due_at=DUE_AT, downloaded_at=DOWNLOADED_AT, path=p),
    "brightspace": lambda p: brightspace_download(CLASS, due_at=DUE_AT, downloaded_at=DOWNLOADED_AT, path=p),
    "gradescope": lambda p: gradescope_download(CLASS, assignment_id=4123456, due_at=DUE_AT,
                                                downloaded_at=DOWNLOADED_AT, path=p),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lms")
    result = {}
    for name, build in BUILDERS.items():
        path = folder / f"{name}.zip"
        result[name] = (path, build(path))
    return result


@pytest.mark.parametrize("lms", sorted(BUILDERS))
def test_every_notebook_in_the_archive_is_graded_or_ignored_as_promised(built, lms):
    path, expected = built[lms]
    assert sorted(e["user_id"] for e in expected) == sorted(s.user_id for s in CLASS)
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
        notebooks = {n: _key(archive.read(n)) for n in archive.namelist() if n.endswith(".ipynb")}
    accounted = set()
    for e in expected:
        student = next(s for s in CLASS if s.user_id == e["user_id"])
        newest = f"{student.user_id}-{len(student.uploads)}"
        assert notebooks[e["member"]] == newest, (lms, e)
        assert [notebooks[m] for m in e["ignored"]] == [f"{student.user_id}-{n}" for n in
                                                        range(1, len(e["ignored"]) + 1)]
        assert e["late"] == student.late
        accounted |= {e["member"], *e["ignored"]}
    assert accounted == set(notebooks)  # nothing in the archive is left unexplained


@pytest.mark.parametrize("lms", ["canvas", "moodle", "blackboard", "brightspace", "gradescope"])
def test_member_times_are_the_download_time_not_the_submission_time(built, lms):
    path, _ = built[lms]
    zone = timezone.utc if lms in ("canvas", "gradescope") else DOWNLOADED_AT.tzinfo
    stamp = DOWNLOADED_AT.astimezone(zone)
    with zipfile.ZipFile(path) as archive:
        times = {datetime(*info.date_time) for info in archive.infolist()}
    assert times == {stamp.replace(tzinfo=None, second=stamp.second // 2 * 2)}


def test_canvas_names_carry_the_late_marker_user_id_and_renamed_resubmission(built):
    _, expected = built["canvas"]
    for e in expected:
        found = re.fullmatch(r"([^\W_]+)(_LATE)?_([0-9]+)_([0-9]+)_(.+)", e["member"])
        assert found and int(found[3]) == e["user_id"] and bool(found[2]) == e["late"], e
        assert e["submitted_at"] is None
    by_id = {e["user_id"]: e["member"] for e in expected}
    assert by_id[40105].endswith("_attention-1.ipynb")  # the second "attention.ipynb" in the user's folder
    assert by_id[40101].startswith("nguyenminh_40101_") and by_id[40102].startswith("nguyenminh_40102_")
    assert by_id[40111].startswith("obriensmithseán_40111_")
    assert sum(e["late"] for e in expected) == 2


def test_moodle_folders_and_worksheet_share_the_participant_ids(built, tmp_path):
    pids = moodle_participant_ids(CLASS)
    folders = {e["user_id"]: e["member"] for e in built["moodle"][1]}
    flat = {e["user_id"]: e["member"] for e in built["moodle-flat"][1]}
    for uid, member in folders.items():
        assert member.split("/")[0].endswith(f"_{pids[uid]}_assignsubmission_file")
        assert flat[uid] == member.replace("_file/", "_file_")
    assert folders[40111].startswith("Seán OBrien-Smith_")  # clean_filename drops the apostrophe
    rows = moodle_grading_worksheet(CLASS, max_grade=100, path=tmp_path / "w.csv", due_at=DUE_AT)
    text = (tmp_path / "w.csv").read_text(encoding="utf-8")
    assert text.startswith("\ufeffIdentifier,\"Full name\",\"Email address\",Status,Grade,\"Maximum Grade\"")
    assert list(csv.reader(text.lstrip("\ufeff").splitlines())) == rows
    status = {int(r[0].split()[1]): r[3] for r in rows[1:]}
    late = {pids[s.user_id] for s in CLASS if s.late}
    assert {pid for pid, text in status.items() if " late" in text} == late
    assert status[pids[40106]] == "Submitted for grading - 7 mins 12 secs late"
    assert status[pids[40108]].startswith("Submitted for grading - Extension granted until: Monday, 11 March 2024")


def test_blackboard_receipts_state_the_submission_time_of_each_attempt(built):
    path, expected = built["blackboard"]
    with zipfile.ZipFile(path) as archive:
        for e in expected:
            stem = re.match(r"(.+_attempt_[0-9]{4}(?:-[0-9]{2}){5})_", e["member"])[1]
            receipt = archive.read(f"{stem}.txt").decode()
            stated = re.search(r"^Date Submitted: (.+) CST$", receipt, re.M)[1]
            when = datetime.strptime(stated, "%A, %B %d, %Y %I:%M:%S %p").replace(tzinfo=DUE_AT.tzinfo)
            assert when.isoformat() == e["submitted_at"]
            assert f"\tFilename: {e['member']}\n" in receipt
    assert len(next(e for e in expected if e["user_id"] == 40105)["ignored"]) == 1


def test_brightspace_folders_date_every_submission_to_the_minute(built):
    path, expected = built["brightspace"]
    with zipfile.ZipFile(path) as archive:
        assert b"<table>" in archive.read("index.html")
    for e in expected:
        folder = e["member"].split("/")[0]
        ids, name, date = folder.split(" - ")
        assert re.fullmatch(r"[0-9]+-[0-9]+", ids) and name == e["full_name"]
        when = datetime.strptime(date, "%b %d, %Y %I%M %p").replace(tzinfo=DOWNLOADED_AT.tzinfo)
        assert when.isoformat() == e["submitted_at"]
    assert next(e for e in expected if e["user_id"] == 40105)["ignored"]


def test_gradescope_metadata_dates_the_active_submission_and_keeps_the_history(built):
    path, expected = built["gradescope"]
    with zipfile.ZipFile(path) as archive:
        metadata = archive.read("assignment_4123456_export/submission_metadata.yml").decode()
    for e in expected:
        folder = e["member"].split("/")[1]
        block = metadata.split(f"{folder}:\n", 1)[1].split("\nsubmission_", 1)[0]
        created = re.search(r"^  :created_at: (\S+ \S+) Z$", block, re.M)[1]
        when = datetime.strptime(created[:26], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)
        assert when.isoformat() == e["submitted_at"]
        assert f":sid: {next(s.login for s in CLASS if s.user_id == e['user_id'])}" in block
    resubmitted = next(e for e in expected if e["user_id"] == 40105)["member"].split("/")[1]
    assert metadata.split(f"{resubmitted}:\n", 1)[1].split("\nsubmission_")[0].count("  - :id: ") == 1


def test_canvas_gradebook_has_the_header_rows_canvas_writes(tmp_path):
    rows = canvas_gradebook_csv(CLASS, assignment_column="02_attention (812345)", points_possible=100,
                                path=tmp_path / "g.csv", scores={40101: 85})
    with open(tmp_path / "g.csv", newline="", encoding="utf-8") as handle:
        assert list(csv.reader(handle)) == rows
    assert rows[0][:6] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "02_attention (812345)"]
    assert rows[1][0] == "    Points Possible" and rows[1][5] == "100.00"
    assert {len(r) for r in rows} == {len(rows[0])} and len(rows) == 2 + len(CLASS)
    assert next(r for r in rows if r[1] == "40101")[5] == "85.00"
    with pytest.raises(ValueError, match="assignment_column"):
        canvas_gradebook_csv(CLASS, assignment_column="02_attention", points_possible=100, path=tmp_path / "x")


def test_bad_classes_are_refused_with_the_argument_named(tmp_path):
    with pytest.raises(ValueError, match="downloaded_at"):
        canvas_download(CLASS, due_at=DUE_AT, downloaded_at=datetime(2024, 4, 1), path=tmp_path / "a.zip")
    with pytest.raises(ValueError, match=r"Emily Chen \(40106\) has late=True"):
        gradescope_download(CLASS, assignment_id=1, due_at=DUE_AT + timedelta(days=2), downloaded_at=DOWNLOADED_AT,
                            path=tmp_path / "b.zip")
