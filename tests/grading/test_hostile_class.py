"""A class of 30 with one hostile or odd file for each class of edge: the class finishes, with 30
rows, a summary and feedback for each student; each odd one gets a true status naming the reason."""

from __future__ import annotations

import csv
import json
import os
import zipfile

import nbformat
import pytest

import gradingkit as gk
from attngrade.grader import STATUSES
from attngrade.names import student_ids

pytestmark = pytest.mark.slow

NB = "softmax.ipynb"


def _put(root, name: str, content, *, notebook: str = NB):
    """``root/<name>/01_softmax/<notebook>`` with ``content`` (text, bytes, or None for no file)."""
    folder = root / name / "01_softmax"
    folder.mkdir(parents=True)
    if isinstance(content, str):
        (folder / notebook).write_text(content, encoding="utf-8")
    elif isinstance(content, bytes):
        (folder / notebook).write_bytes(content)
    (folder / "timestamp.txt").write_text("2026-11-22 10:00:00.000000 UTC")
    return folder


def _with_json(text: str, edit) -> str:
    nb = json.loads(text)
    edit(nb)
    return json.dumps(nb)


def _cell(nb, gid):
    return next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == gid)


def _surrogate_answer(nb):
    _cell(nb, "stable_softmax")["source"] = "# SURROGATE\n" + "".join(_cell(nb, "stable_softmax")["source"])


def _surrogate_written(nb):
    _cell(nb, "jacobian_proof")["source"] = "The proof SURROGATE holds."


def _build(root, right: str, stub: str) -> dict:
    """The class; returns the expected (status, score, reason words) by folder name."""
    expect = {}

    def put(name, content, status, score=None, words="", **kw):
        folder = _put(root, name, content, **kw)
        expect[name] = (status, score, words)
        return folder

    alice = put("alice", right, "graded", 8.0)
    put("bob", stub, "graded", 0.0)
    mallory = put("mallory", None, "malformed", 0.0, "symbolic link")
    (mallory / NB).symlink_to(alice / NB)
    (root / "eve").symlink_to(root / "alice")
    expect["eve"] = ("malformed", 0.0, "symbolic link")
    (root / "trent").mkdir()
    (root / "trent" / "01_softmax").symlink_to(alice)
    expect["trent"] = ("malformed", 0.0, "symbolic link")
    put(os.fsdecode(b"Jos\xe9 (windows zip)"), right, "graded", 8.0)
    for name in ('=HYPERLINK("evil.example","x")', "+cmd", "-2+3", "@SUM(A1)"):
        put(name, right, "graded", 8.0)
    put("मीना", right, "graded", 8.0)
    put("मोना", stub, "graded", 0.0)
    put("Anna Müller", right, "graded", 8.0)
    put("Anna_Müller", stub, "graded", 0.0)
    put("ü" * 120, right, "graded", 8.0)
    put("new\nline\u202eevil", right, "graded", 8.0)
    fifo = put("fifo", None, "malformed", 0.0, "not a regular file")
    os.mkfifo(fifo / NB)
    folder = put("folder", None, "malformed", 0.0, "not a regular file")
    (folder / NB).mkdir()
    stamp = put("stamp_link", right, "graded", 8.0)
    (stamp / "timestamp.txt").unlink()
    (stamp / "timestamp.txt").symlink_to("/etc/passwd")
    widgets = {"state": {f"w{i}": "A" * 4096 for i in range(40 * 256)}}
    put("widgets", _with_json(right, lambda nb: nb["metadata"].update(widgets=widgets)), "graded", 8.0)
    put("latin1", right.replace("{", '{"café": 1, ', 1).encode("latin-1", "replace"), "malformed", 0.0, "not UTF-8")
    put("deep", "[" * 200000 + "]" * 200000, "malformed", 0.0, "nested too deeply")
    put("surrogate_code", _with_json(right, _surrogate_answer).replace("SURROGATE", "\\ud800"), None)
    put("surrogate_text", _with_json(right, _surrogate_written).replace("SURROGATE", "\\udcff\\ud800"), None)
    many = _with_json(right, lambda nb: nb["cells"].extend([{"cell_type": "raw", "source": "", "metadata": {}}] * 6000))
    put("many_cells", many, "graded", 8.0)  # past the cell limit: the tracked cells are graded, with a note
    put("empty", "", "malformed", 0.0, "empty")
    put("nothing", None, "missing", 0.0, "no softmax.ipynb")
    put("renamed", right, "missing", 0.0, "Softmax (1).ipynb", notebook="Softmax (1).ipynb")
    big = "table = [\n" + "    (1.25, 'abc', 7),\n" * 45000 + "]\n"
    add_big = _with_json(right, lambda nb: nb["cells"].append(
        {"cell_type": "code", "source": big, "metadata": {}, "outputs": [], "execution_count": None}))
    put("big_cell", add_big, "graded", 8.0)
    odd = put("odd_names", right, "graded", 8.0)
    (odd / "x\x1b[31mred.ipynb").write_text(stub)
    return expect


def test_a_class_of_30_with_a_hostile_file_for_each_edge_finishes(tmp_path, empty_gradebook):
    rel = gk.release("01_softmax")
    right = nbformat.writes(gk.fill_any(rel, gk.solution_answers("01_softmax")))
    stub = nbformat.writes(rel)
    root = tmp_path / "submitted"
    expect = _build(root, right, stub)
    assert len(expect) == 30
    out = tmp_path / "out"
    url = gk.copy_gradebook(empty_gradebook, tmp_path / "gradebook.db")
    proc = gk.run_attngrade("01_softmax", root, "--out", out, "--db", url, "--jobs", "2", "--timeout", "20")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ids = student_ids(expect)
    raw = (out / "grades.csv").read_bytes().decode("utf-8-sig")
    rows = {r["student"]: r for r in csv.DictReader(raw.splitlines(keepends=True))}
    assert len(rows) == 30
    for name, (status, score, words) in expect.items():
        sid = ids[name]
        shown_id = ("'" + sid) if sid.startswith(("=", "+", "-", "@")) else sid
        row = rows[shown_id]
        assert row["status"] in STATUSES
        if status is not None:
            assert (row["status"], float(row["score"])) == (status, score), (name, row["reason"])
            assert words in row["reason"], (name, row["reason"])
        assert (out / "feedback" / f"{sid}.html").is_file(), name
        assert (out / "logs" / f"{sid}.log").is_file(), name
    for row in rows.values():
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@", "\t", "\r")), row
    summary = json.loads((out / "summary.json").read_text())
    assert summary["submissions"] == 30 and len(summary["results"]) == 30
    page = (out / "summary.html").read_text(encoding="utf-8")
    assert "Jos\\xe9" in page and "\u202e" not in page
    assert rows[ids["Anna_Müller"]]["score"] == "0" and rows[ids["Anna Müller"]]["score"] == "8"
    assert "x\\x1b[31mred.ipynb" in rows["odd_names"]["ignored_files"]


def test_a_class_zip_with_a_member_over_the_limit_and_a_link_is_graded(tmp_path):
    rel = gk.release("01_softmax")
    right = nbformat.writes(gk.fill_any(rel, gk.solution_answers("01_softmax")))
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("class/alice.ipynb", right)
        link = zipfile.ZipInfo("class/mallory.ipynb")
        link.external_attr = 0o120777 << 16
        zf.writestr(link, "alice.ipynb")
        zf.writestr("class/zed.ipynb", "{}")
    data = bytearray(archive.read_bytes())
    declared = (600 << 20).to_bytes(4, "little")  # zed.ipynb says it holds 600 MiB
    local = data.rfind(b"PK\x03\x04", 0, data.find(b"class/zed.ipynb"))
    central = data.rfind(b"PK\x01\x02", 0, data.rfind(b"class/zed.ipynb"))
    data[local + 22: local + 26] = declared
    data[central + 24: central + 28] = declared
    archive.write_bytes(bytes(data))
    out = tmp_path / "out"
    proc = gk.run_attngrade("01_softmax", archive, "--out", out, "--no-gradebook", "--jobs", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = gk.read_grades(out)
    assert {s: (r["status"], r["score"]) for s, r in rows.items()} == {
        "alice": ("graded", "8"), "mallory": ("malformed", "0"), "zed": ("malformed", "0"),
    }
    assert "symbolic link" in rows["mallory"]["reason"]
    assert f"{600 << 20} bytes in the zip" in rows["zed"]["reason"]
