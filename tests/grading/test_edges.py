"""The grader's own edges: names, ids and CSV fields, links, odd files, zip members, bounded reading."""

from __future__ import annotations

import csv
import io
import json
import os
import unicodedata
import zipfile

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradingkit as gk
from attngrade import reading, submissions
from attngrade.names import MAX_ID_BYTES, base_id, csv_cell, shown, student_ids
from attngrade.reading import SubmissionError, read_notebook, slim_notebook
from attngrade.submissions import discover

# Any text a file name, a zip member or a JSON string can hold: lone surrogates (bytes that are
# not UTF-8, as Python reads them from the file system) and control characters included.
NAMES = st.text(st.characters(codec=None, exclude_categories=()), min_size=0, max_size=40)
FORMULA = ("=", "+", "-", "@", "\t", "\r")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(NAMES, max_size=12))
def test_different_names_never_give_one_id(names):
    ids = student_ids(names)
    distinct = {unicodedata.normalize("NFC", n) for n in names}
    assert set(ids) == distinct
    assert len(set(ids.values())) == len(distinct)
    for name, sid in ids.items():
        assert sid and len(sid.encode("utf-8")) <= MAX_ID_BYTES
        assert "/" not in sid and "\x00" not in sid and sid not in (".", "..")
        sid.encode("utf-8")  # a file name on any UTF-8 file system


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(categories=("L", "M", "N")), min_size=1, max_size=30))
def test_ids_keep_every_letter_mark_and_digit(name):
    nfc = unicodedata.normalize("NFC", name)
    assert base_id(name) == nfc
    if len(nfc.encode("utf-8")) <= MAX_ID_BYTES:
        assert student_ids([name]) == {nfc: nfc}


def test_devanagari_names_stay_two_students():
    ids = student_ids(["मीना", "मोना", "Anna Mu\u0308ller", "Anna Müller"])
    assert ids == {"मीना": "मीना", "मोना": "मोना", "Anna Müller": "Anna_Müller"}


def test_a_long_name_is_cut_in_bytes_and_stays_distinct():
    names = ["ü" * 200 + "a", "ü" * 200 + "b"]
    ids = student_ids(names)
    assert len(set(ids.values())) == 2
    for sid in ids.values():
        assert len(sid.encode("utf-8")) <= MAX_ID_BYTES and sid.startswith("ü" * 20) and "~" in sid


@settings(max_examples=300, deadline=None)
@given(NAMES)
def test_shown_text_is_printable_utf8(text):
    out = shown(text)
    out.encode("utf-8")
    assert not any(unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") for ch in out)
    assert "\u202e" not in out


def test_undecodable_bytes_are_shown_as_escapes():
    name = os.fsdecode(b"Jos\xe9_\xff")
    assert shown(name) == "Jos\\xe9_\\xff"
    assert shown("a\nb\u202ec") == "a\\x0ab\\u202ec"


@settings(max_examples=300, deadline=None)
@given(NAMES)
def test_no_csv_field_from_student_text_is_a_formula(text):
    cell = csv_cell(text)
    assert not cell.startswith(FORMULA)
    buf = io.StringIO()
    csv.writer(buf).writerow([cell])
    assert next(csv.reader(io.StringIO(buf.getvalue()))) == [cell]


@pytest.mark.parametrize("text", ['=HYPERLINK("http://x","click")', "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"])
def test_owasp_formula_starts_get_a_quote(text):
    assert csv_cell(text).startswith("'")


def test_bad_arguments_name_the_argument():
    with pytest.raises(TypeError, match="name"):
        base_id(3)
    with pytest.raises(TypeError, match="text"):
        shown(b"bytes")


# ------------------------------------------------------------------ discovery: files and links


@pytest.fixture(scope="module")
def solution_text():
    return nbformat.writes(gk.fill_any(gk.release("01_softmax"), gk.solution_answers("01_softmax")))


def _nbgrader(root, name, text, *, notebook="softmax.ipynb"):
    folder = root / name / "01_softmax"
    folder.mkdir(parents=True)
    if text is not None:
        (folder / notebook).write_text(text)
    return folder


def test_links_are_malformed_with_the_reason_and_never_read(tmp_path, solution_text):
    root = tmp_path / "submitted"
    alice = _nbgrader(root, "alice", solution_text)
    mallory = _nbgrader(root, "mallory", None)
    (mallory / "softmax.ipynb").symlink_to(alice / "softmax.ipynb")
    (root / "eve").symlink_to(root / "alice")
    (root / "trent").mkdir()
    (root / "trent" / "01_softmax").symlink_to(alice)
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "bob.ipynb").write_text(solution_text)
    (flat / "carol.ipynb").symlink_to(flat / "bob.ipynb")
    subs = {s.student: s for s in discover(root, "01_softmax", "softmax")}
    subs.update({s.student: s for s in discover(flat, "01_softmax", "softmax")})
    assert subs["alice"].problem is None and subs["bob"].problem is None
    for who in ("mallory", "eve", "trent", "carol"):
        status, reason = subs[who].problem
        assert status == "malformed" and "symbolic link" in reason, (who, reason)
        assert subs[who].path is None


def test_odd_files_are_their_students_problem(tmp_path, solution_text):
    root = tmp_path / "submitted"
    fifo = _nbgrader(root, "fifo", None)
    os.mkfifo(fifo / "softmax.ipynb")
    folder = _nbgrader(root, "folder", None)
    (folder / "softmax.ipynb").mkdir()
    stamp = _nbgrader(root, "stamp", solution_text)
    os.mkfifo(stamp / "timestamp.txt")
    _nbgrader(root, os.fsdecode(b"Jos\xe9"), solution_text)
    subs = {s.student: s for s in discover(root, "01_softmax", "softmax")}
    assert subs["fifo"].problem == ("malformed", "fifo/01_softmax/softmax.ipynb is not a regular file")
    assert subs["folder"].problem[0] == "malformed"
    assert subs["stamp"].problem is None and subs["stamp"].timestamp is None
    assert any("timestamp.txt unreadable" in n for n in subs["stamp"].notes)
    jose = subs["Jos_xe9"]
    assert jose.problem is None and jose.source == "Jos\\xe9/01_softmax/softmax.ipynb"


def _oversize_zip(path, members: dict, big: str, declared: int):
    """A zip of ``members`` whose member ``big`` declares ``declared`` bytes (its header says so)."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
        zf.writestr(big, "{}")
    data = bytearray(path.read_bytes())
    raw = big.encode()
    local = data.rfind(b"PK\x03\x04", 0, data.find(raw))
    data[local + 22: local + 26] = declared.to_bytes(4, "little")
    central = data.rfind(b"PK\x01\x02", 0, data.rfind(raw))
    data[central + 24: central + 28] = declared.to_bytes(4, "little")
    path.write_bytes(bytes(data))


def test_a_zip_member_over_the_limit_is_that_students_malformed(tmp_path, solution_text):
    archive = tmp_path / "class.zip"
    _oversize_zip(
        archive, {"class/alice.ipynb": solution_text, "class/bob.ipynb": solution_text},
        "class/mallory.ipynb", submissions.MAX_FILE_BYTES + 1,
    )
    work = tmp_path / "work"
    work.mkdir()
    subs = {s.student: s for s in discover(archive, "01_softmax", "softmax", workdir=str(work))}
    assert sorted(subs) == ["alice", "bob", "mallory"]
    status, reason = subs["mallory"].problem
    assert status == "malformed" and f"limit {submissions.MAX_FILE_BYTES}" in reason
    assert subs["alice"].problem is None and subs["bob"].problem is None


def test_a_link_member_of_a_zip_is_malformed(tmp_path, solution_text):
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("alice/01_softmax/softmax.ipynb", solution_text)
        link = zipfile.ZipInfo("mallory/01_softmax/softmax.ipynb")
        link.external_attr = (0o120777 << 16)
        zf.writestr(link, "../../alice/01_softmax/softmax.ipynb")
        zf.writestr("win\\01_softmax\\softmax.ipynb", solution_text)  # a Windows zip's separators
    work = tmp_path / "work"
    work.mkdir()
    subs = {s.student: s for s in discover(archive, "01_softmax", "softmax", workdir=str(work))}
    assert subs["mallory"].problem[0] == "malformed" and "symbolic link" in subs["mallory"].problem[1]
    assert subs["alice"].problem is None and subs["win"].problem is None


# ------------------------------------------------------------------ reading, bounded


def _read(path):
    return read_notebook(path, reference=frozenset({"torch"}), module_names={"np"})


def test_widget_state_and_outputs_are_dropped_not_rejected(tmp_path):
    nb = json.loads(nbformat.writes(gk.fill_any(gk.release("01_softmax"), gk.solution_answers("01_softmax"))))
    nb["metadata"]["widgets"] = {"state": {f"w{i}": "A" * 4096 for i in range(40 * 256)}}  # 40 MiB
    nb["cells"][0].setdefault("attachments", {})["big.png"] = {"image/png": "B" * (8 << 20)}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb))
    assert path.stat().st_size > 48 << 20  # widgets and attachments
    prepared = _read(path)
    assert "widgets" not in prepared.notebook["metadata"] and "widgets" in prepared.notes[0]
    assert all(set(c["metadata"]) <= {"nbgrader", "tags"} for c in prepared.notebook["cells"])
    assert len(json.dumps(prepared.notebook)) < 1 << 20


@pytest.mark.parametrize(
    "content, words",
    [
        (b"", "empty"),
        (b"\xff\xfe{\x00}\x00", "not UTF-8"),
        (b"[" * 200000 + b"]" * 200000, "nested too deeply"),
        (b'{"nbformat": ' + b"9" * 5000 + b', "cells": []}', "not valid JSON"),
        (b"[]", "not a JSON object"),
        (b'{"nbformat": "4", "cells": []}', "nbformat '4'"),
        (b'{"nbformat": 4, "cells": [1, 2]}', "no list of cells"),
    ],
)
def test_what_cannot_be_read_is_malformed_with_the_reason(tmp_path, content, words):
    path = tmp_path / "nb.ipynb"
    path.write_bytes(content)
    with pytest.raises(SubmissionError) as err:
        _read(path)
    assert err.value.status == "malformed" and words in str(err.value)


def test_reading_is_bounded_in_memory_and_time(tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "cells": [{"cell_type": "code", "source": "x = 1\n" * 4_000_000}]}))
    with pytest.raises(SubmissionError, match="memory|needs more than"):
        read_notebook(path, reference=frozenset(), module_names=set(), memory_mb=200)
    with pytest.raises(SubmissionError, match="took more than 0.5 s"):
        read_notebook(path, reference=frozenset(), module_names=set(), seconds=0.5)


def test_slim_keeps_what_grading_uses():
    nb = {
        "nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3"}, "junk": 1},
        "cells": [{"cell_type": "code", "source": ["a", "b"], "outputs": [1],
                   "metadata": {"nbgrader": {"grade_id": "x"}, "tags": ["t", 3], "collapsed": True}, "id": "c1"},
                  {"cell_type": "code", "source": {"not": "text"}, "metadata": "nope"}],
    }
    slim, notes = slim_notebook(nb)
    assert slim["cells"][0] == {"cell_type": "code", "source": "ab", "id": "c1",
                                "metadata": {"nbgrader": {"grade_id": "x"}, "tags": ["t"]}}
    assert slim["cells"][1]["source"] == 0 and slim["cells"][1]["metadata"] == {}
    assert slim["metadata"] == {"kernelspec": {"name": "python3"}} and "junk" in notes[0]
    with pytest.raises(SubmissionError, match="limit"):
        slim_notebook({"nbformat": 4, "cells": [{"source": "x" * (reading.MAX_SOURCE_BYTES + 1),
                                                  "metadata": {"nbgrader": {"grade_id": "a"}}}]})


# ------------------------------------------------------------------ the fault boundary of one student


def test_a_grader_failure_on_one_student_costs_only_that_students_row(tmp_path, monkeypatch, solution_text):
    from attngrade import pipeline, record
    from attngrade.grader import PartResult, Result
    from attngrade.pipeline import Options, grade_class
    from attngrade.sandbox import Limits

    root = tmp_path / "submitted"
    for name in ("alice", "bob", "carol", "dave"):
        _nbgrader(root, name, solution_text)

    def fake_grade(spec, sub, *args, **kwargs):  # the stages stand in: no worker runs
        if sub.student == "bob":
            raise RuntimeError("the run stage broke")
        res = Result(sub.student, "graded", file=sub.source)
        res.parts = {p.grade_id: PartResult(p.points, p.points, True, "passed", "") for p in spec.parts}
        return res

    real_feedback = record.write_feedback

    def fake_feedback(folder, spec, result):
        if result.student == "carol":
            raise OSError("disk full while writing carol's feedback")
        return real_feedback(folder, spec, result)

    monkeypatch.setattr(pipeline, "grade_submission", fake_grade)
    monkeypatch.setattr(record, "write_feedback", fake_feedback)
    out = tmp_path / "out"
    opts = Options("01_softmax", str(root), out, jobs=2, limits=Limits(timeout=10), no_gradebook=True,
                   autograded_dir=str(out / "autograded"), say=lambda *a: None)
    assert grade_class(opts) == 0
    rows = gk.read_grades(out)
    assert sorted(rows) == ["alice", "bob", "carol", "dave"]
    assert rows["alice"]["status"] == rows["dave"]["status"] == "graded" and rows["alice"]["score"] == "8"
    for who, words in (("bob", "the run stage broke"), ("carol", "disk full")):
        assert rows[who]["status"] == "crashed" and "grader error" in rows[who]["reason"], rows[who]
        assert words in rows[who]["reason"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["submissions"] == 4 and summary["statuses"]["crashed"] == 2
