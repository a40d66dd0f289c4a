"""The hand-graded half: what a student wrote for a written answer reaches formgrader whole.

Unit tests read :func:`attngrade.submissions.rebuild`, :func:`attngrade.notebooks.run_plan` and
:func:`attngrade.reading.slim_notebook` on notebooks made here. The tests marked ``slow`` read
one ``attngrade --course`` run over a few students (built once per test run whatever the xdist
workers, ``support.shared_build``), and one of them opens formgrader's view of a student's
notebook in headless Chromium.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import base64
import copy
import json
import os
import secrets
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.request
import zlib
from pathlib import Path

import nbformat
import pytest

import gradingkit as gk
from attngrade import reading
from attngrade.grader import grade_submission, load_assignment, load_course
from attngrade.notebooks import cell_grade_id, run_plan
from attngrade.reading import SubmissionError, read_notebook, slim_notebook
from attngrade.sandbox import Isolation, Limits
from attngrade.submissions import Submission, rebuild

PROOF = "With p = softmax(z), d p_i / d z_j = p_i (delta_ij - p_j), so J = diag(p) - p p^T."


SIDE = 24  # pixels: large enough for a person to see in the screenshot the browser test leaves


def _png(rgb: tuple[int, int, int]) -> str:
    """A valid SIDE x SIDE PNG of one colour, base64 (as Jupyter stores a pasted image)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes(rgb) * SIDE for _ in range(SIDE))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", SIDE, SIDE, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return base64.b64encode(png).decode()


RED, BLUE = _png((200, 30, 30)), _png((30, 30, 200))


def _solved():
    return gk.fill_any(gk.release("01_softmax"), gk.solution_answers("01_softmax"))


def _index(nb, gid: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if cell_grade_id(c) == gid)


def _markdown(text: str, images: dict | None = None):
    cell = nbformat.v4.new_markdown_cell(text)
    if images:
        cell["attachments"] = {name: {"image/png": data} for name, data in images.items()}
    return cell


def _slim(nb) -> dict:
    """The notebook as the read stage gives it to the grader."""
    return slim_notebook(json.loads(nbformat.writes(nb)))[0]


def _rebuilt(nb):
    return rebuild(gk.release("01_softmax"), _slim(nb))


def _proof_cell(rebuilt):
    return next(c for c in rebuilt.notebook["cells"] if cell_grade_id(c) == "jacobian_proof")


# ------------------------------------------------------------------ rebuild: the written answer


@pytest.mark.parametrize("cell_type", ["raw", "code"])
def test_a_written_answer_in_a_cell_of_another_type_is_graded_by_hand_as_written(cell_type):
    nb = _solved()
    cell = nb.cells[_index(nb, "jacobian_proof")]
    cell.cell_type, cell.source = cell_type, PROOF
    if cell_type == "code":
        cell.outputs, cell.execution_count = [], None
    rebuilt = _rebuilt(nb)
    assert rebuilt.written["jacobian_proof"] == PROOF and "jacobian_proof" not in rebuilt.unanswered
    assert rebuilt.flags == [], "a stray key in command mode is not tampering"
    assert any(f"is in a {cell_type} cell" in n for n in rebuilt.notes)
    assert _proof_cell(rebuilt)["cell_type"] == "markdown", "formgrader shows it as the release's cell"
    plan = run_plan(_code_cells(), _slim(nb), rebuilt.answers)
    assert all(PROOF not in c["source"] for c in plan.cells), "the text is never run as code"


def _code_cells() -> list:
    """The release's code cells as :func:`attngrade.notebooks.run_plan` takes them."""
    cells = []
    for cell in gk.release("01_softmax").cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code":
            kind = "test" if meta.get("grade") else "answer" if meta.get("solution") else "setup"
            cells.append((cell_grade_id(cell), kind, cell.source))
    return cells


def test_cells_added_after_a_written_answer_continue_it_with_their_images():
    nb = _solved()
    at = _index(nb, "jacobian_proof")
    nb.cells[at].source = "Part one: ![first](attachment:image.png)"
    nb.cells[at]["attachments"] = {"image.png": {"image/png": RED}}
    nb.cells[at + 1:at + 1] = [
        _markdown("Part two, photographed: ![second](attachment:image.png)", {"image.png": BLUE}),
        nbformat.v4.new_raw_cell("Part three."),
        nbformat.v4.new_code_cell("print('a scratch cell ends the answer')"),
        _markdown("Not part of the answer."),
    ]
    rebuilt = _rebuilt(nb)
    text = rebuilt.written["jacobian_proof"]
    assert text == ("Part one: ![first](attachment:image.png)\n\n"
                    "Part two, photographed: ![second](attachment:image-2.png)\n\nPart three.")
    cell = _proof_cell(rebuilt)
    assert cell["source"] == text
    assert cell["attachments"] == {"image.png": {"image/png": RED}, "image-2.png": {"image/png": BLUE}}
    assert any("continues in the 2 cell(s)" in n for n in rebuilt.notes) and rebuilt.flags == []


def test_images_of_the_same_name_in_two_cells_are_told_apart_all_at_once():
    nb = _solved()
    at = _index(nb, "jacobian_proof")
    nb.cells[at].source = "A ![](attachment:image.png)"
    nb.cells[at]["attachments"] = {"image.png": {"image/png": RED}}
    nb.cells.insert(at + 1, _markdown("B ![](attachment:image.png) ![](attachment:image-2.png)",
                                      {"image.png": BLUE, "image-2.png": RED}))
    cell = _proof_cell(_rebuilt(nb))
    assert cell["source"] == "A ![](attachment:image.png)\n\nB ![](attachment:image-3.png) ![](attachment:image-2.png)"
    assert cell["attachments"] == {"image.png": {"image/png": RED}, "image-2.png": {"image/png": RED},
                                   "image-3.png": {"image/png": BLUE}}


def test_an_image_the_answer_shows_but_that_was_not_read_gets_a_placeholder():
    nb = _solved()
    cell = nb.cells[_index(nb, "jacobian_proof")]
    cell.source = "See ![scan](attachment:scan.pdf) and ![photo](attachment:photo.png)."
    cell["attachments"] = {"scan.pdf": {"application/pdf": "JVBERi0="}}  # not an image: not read
    rebuilt = _rebuilt(nb)
    images = _proof_cell(rebuilt)["attachments"]
    assert sorted(images) == ["photo.png", "scan.pdf"] and all("image/svg+xml" in v for v in images.values())
    assert "was not kept by the grader" in base64.b64decode(images["scan.pdf"]["image/svg+xml"]).decode()
    assert sum("which was not read: a placeholder stands in" in n for n in rebuilt.notes) == 2


def test_an_answer_written_below_the_untouched_answer_cell_is_the_answer():
    nb = _solved()
    nb.cells.insert(_index(nb, "jacobian_proof") + 1, _markdown(PROOF))
    rebuilt = _rebuilt(nb)
    assert rebuilt.written["jacobian_proof"] == PROOF and "jacobian_proof" not in rebuilt.unanswered


def test_a_deleted_written_answer_is_found_where_it_stood_and_flagged():
    nb = _solved()
    at = _index(nb, "jacobian_proof")
    nb.cells[at] = _markdown(PROOF, {"proof.png": RED})
    rebuilt = _rebuilt(nb)
    assert rebuilt.written["jacobian_proof"] == PROOF
    assert _proof_cell(rebuilt)["attachments"] == {"proof.png": {"image/png": RED}}
    assert rebuilt.flags == ["answer cell 'jacobian_proof' was deleted; the text in the 1 cell(s) added where "
                             "it stood is graded by hand"]
    del nb.cells[at]
    rebuilt = _rebuilt(nb)
    assert "jacobian_proof" in rebuilt.unanswered and rebuilt.flags == ["answer cell 'jacobian_proof' was deleted"]


# ------------------------------------------------------------------ rebuild: a code answer typed again

VJP = "def softmax_vjp(p, g):\n    inner = np.sum(p * g, axis=-1, keepdims=True)\n    return p * (g - inner)\n"


def test_a_code_answer_typed_again_without_metadata_is_graded_from_its_cell_once():
    nb = _solved()
    at = _index(nb, "softmax_vjp")
    nb.cells[at] = nbformat.v4.new_code_cell(VJP)
    nb.cells.append(nbformat.v4.new_code_cell("softmax_vjp(np.ones(2) / 2, np.ones(2))"))
    rebuilt = _rebuilt(nb)
    assert rebuilt.answers["softmax_vjp"] == VJP
    (flag,) = rebuilt.flags
    assert flag.startswith("answer cell 'softmax_vjp' was deleted and typed again without its nbgrader metadata")
    plan = run_plan(_code_cells(), _slim(nb), rebuilt.answers)
    ran = [(c["id"], c["source"]) for c in plan.cells]
    assert [label for label, src in ran if src == VJP] == ["softmax_vjp"], "once, at the answer's place"
    assert ran[-1][1].startswith("softmax_vjp(np.ones"), "the other added cell runs where it stands"


def test_an_added_cell_that_does_not_define_the_function_stands_in_for_nothing():
    nb = _solved()
    at = _index(nb, "softmax_vjp")
    nb.cells[at] = nbformat.v4.new_code_cell("def helper(p, g):\n    return p * g\n")
    rebuilt = _rebuilt(nb)
    assert rebuilt.flags == ["answer cell 'softmax_vjp' was deleted"] and "softmax_vjp" in rebuilt.unanswered


# ------------------------------------------------------------------ reading: images and limits


def test_images_that_may_belong_to_a_written_answer_are_read_within_a_budget(monkeypatch):
    monkeypatch.setattr(reading, "MAX_ATTACHMENT_BYTES", len(RED) + 10)
    nb = _solved()
    nb.cells[_index(nb, "jacobian_proof")]["attachments"] = {
        "proof.png": {"image/png": RED}, "notes.html": {"text/html": "<b>x</b>"}}
    nb.cells[_index(nb, "intro")]["attachments"] = {"logo.png": {"image/png": RED}}  # a locked cell's
    nb.cells.append(_markdown("more", {"more.png": BLUE}))
    slim, notes = slim_notebook(json.loads(nbformat.writes(nb)))
    by_gid = {cell_grade_id(c): c for c in slim["cells"]}
    assert by_gid["jacobian_proof"]["attachments"] == {"proof.png": {"image/png": RED}}
    assert "attachments" not in by_gid["intro"]
    assert slim["cells"][-1]["attachments"] == {}
    assert any("'notes.html'" in n and "not an image" in n for n in notes)
    assert any("'more.png'" in n and "not kept" in n for n in notes)


def test_past_the_cell_limit_the_cells_with_a_grade_id_are_read_with_a_note(monkeypatch):
    monkeypatch.setattr(reading, "MAX_CELLS", 12)
    nb = _solved()
    nb.cells[4:4] = [_markdown(f"scratch {i}") for i in range(30)]
    slim, notes = slim_notebook(json.loads(nbformat.writes(nb)))
    release_ids = [gid for c in gk.release("01_softmax").cells if (gid := cell_grade_id(c))]
    assert [cell_grade_id(c) for c in slim["cells"] if cell_grade_id(c)] == release_ids
    assert len(slim["cells"]) == 12 + len(release_ids) - 4
    unread = len(nb.cells) - len(slim["cells"])  # the scratch cells and the release's cells without a grade id
    assert any(f"has {len(nb.cells)} cells (limit 12)" in n and f"{unread} cells added after cell 12 were not read" in n
               for n in notes), notes


def test_past_the_source_limit_the_largest_added_cells_are_left_out(monkeypatch):
    nb = _solved()
    size = sum(len(c.source) for c in nb.cells)
    monkeypatch.setattr(reading, "MAX_SOURCE_BYTES", size + 100)
    nb.cells.append(nbformat.v4.new_code_cell("data = '" + "x" * 500 + "'"))
    nb.cells.append(nbformat.v4.new_code_cell("small = 1"))
    slim, notes = slim_notebook(json.loads(nbformat.writes(nb)))
    assert slim["cells"][-2]["source"] == "" and slim["cells"][-1]["source"] == "small = 1"
    assert any("the 1 largest cells without a grade id were not read" in n for n in notes), notes
    monkeypatch.setattr(reading, "MAX_SOURCE_BYTES", 100)
    with pytest.raises(SubmissionError, match="cells with a grade id are .* bytes"):
        slim_notebook(json.loads(nbformat.writes(nb)))


# ------------------------------------------------------------------ the grader's own failure


def test_when_the_grader_fails_the_written_answer_still_waits_for_its_grade(tmp_path, monkeypatch):
    from attngrade import running

    nb = _solved()
    nb.cells[_index(nb, "jacobian_proof")].source = PROOF
    path = tmp_path / "softmax.ipynb"
    nbformat.write(nb, path)
    spec = load_assignment(load_course(gk.ROOT), "01_softmax")

    def broken(*args, **kwargs):
        raise RuntimeError("the run stage broke")

    monkeypatch.setattr(running, "run_parts", broken)
    res = grade_submission(spec, Submission("alice", path, "flat"), Isolation("basic"), Limits())
    assert res.status == "crashed" and "the run stage broke" in res.reason
    assert res.written["jacobian_proof"] == PROOF and res.notebook is not None
    prepared = read_notebook(path, reference=spec.reference, module_names=spec.module_names)
    assert prepared.notebook["cells"][_index(nb, "jacobian_proof")]["source"] == PROOF


# ------------------------------------------------------------------ one course graded, formgrader's view

#: The students of the course run: what each did with Part 4's written answer.
STUDENTS = ("photo", "raw", "below", "untouched")


def _submission(student: str):
    nb = _solved()
    at = _index(nb, "jacobian_proof")
    if student == "photo":  # a photo pasted into the answer cell, the rest in a cell added below
        nb.cells[at].source = "My proof, handwritten:\n\n![proof](attachment:image.png)"
        nb.cells[at]["attachments"] = {"image.png": {"image/png": RED}}
        nb.cells.insert(at + 1, _markdown("And the last step: ![step](attachment:image.png)", {"image.png": BLUE}))
    elif student == "raw":
        nb.cells[at].cell_type, nb.cells[at].source = "raw", PROOF
    elif student == "below":
        nb.cells.insert(at + 1, _markdown(PROOF))
    return nb


def _grade_course(nbgrader_course: Path, folder: Path) -> None:
    from support import course_copy  # tests/support.py

    root = course_copy(nbgrader_course, folder, "01_softmax")
    for student in STUDENTS:
        target = root / "submitted" / student / "01_softmax" / "softmax.ipynb"
        target.parent.mkdir(parents=True)
        nbformat.write(_submission(student), target)
    proc = gk.run_attngrade("01_softmax", root / "submitted", "--course", root, "--out", folder / "out",
                            "--jobs", "2", "--no-similarity")
    (folder / "run.json").write_text(json.dumps({"returncode": proc.returncode, "stderr": proc.stderr[-3000:]}))


@pytest.fixture(scope="module")
def graded(tmp_path_factory, nbgrader_course) -> Path:
    """The course folder after one ``attngrade --course`` run over :data:`STUDENTS`."""
    from functools import partial

    from support import shared_build  # tests/support.py

    folder = shared_build(tmp_path_factory, "written-answers", partial(_grade_course, nbgrader_course))
    run = json.loads((folder / "run.json").read_text())
    assert run["returncode"] == 0, run["stderr"]
    return folder


@pytest.mark.slow
def test_every_written_answer_waits_for_its_grade_by_hand(graded):
    rows = gk.read_grades(graded / "out")
    for student in STUDENTS:
        row = rows[student]
        assert (row["status"], row["score"]) == ("graded", "8"), row
        assert row["manual_pending"] == ("0" if student == "untouched" else "2"), row
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{graded / 'course' / 'gradebook.db'}", course_id="attnmath-test") as gb:
        for student in STUDENTS:
            grade = gb.find_grade("jacobian_proof", "softmax", "01_softmax", student)
            comment = gb.find_comment("jacobian_proof", "softmax", "01_softmax", student)
            waiting = student != "untouched"
            assert (grade.auto_score is None, grade.needs_manual_grade) == (waiting, waiting), student
            assert (comment.auto_comment is None) == waiting, student


@pytest.mark.slow
def test_the_feedback_page_shows_the_written_answer_and_its_photos_as_graded(graded):
    page = (graded / "out" / "feedback" / "photo.html").read_text()
    written = page[page.index("What you wrote"):]
    assert "My proof, handwritten" in written and "And the last step" in written
    for image in (RED, BLUE):
        assert f"data:image/png;base64,{''.join(image.split())}" in written
    raw = (graded / "out" / "feedback" / "raw.html").read_text()
    assert "What you wrote" in raw
    assert "What you wrote" not in (graded / "out" / "feedback" / "untouched.html").read_text()


@pytest.mark.slow
def test_formgraders_notebook_holds_the_whole_written_answer(graded):
    path = graded / "course" / "autograded" / "photo" / "01_softmax" / "softmax.ipynb"
    cell = next(c for c in nbformat.read(path, as_version=4).cells if cell_grade_id(c) == "jacobian_proof")
    assert "My proof, handwritten" in cell.source and "attachment:image-2.png" in cell.source
    assert cell.attachments == {"image.png": {"image/png": RED}, "image-2.png": {"image/png": BLUE}}
    page = (graded / "out" / "feedback" / "photo.html").read_text()
    assert "graded by your instructor" in page


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: Formgrader alone: the other server extensions of the environment are switched off (a lean start).
_EXTENSIONS = {
    **dict.fromkeys(("jupyterlab", "jupyter_lsp", "jupyter_server_terminals", "jupyterlab_jupytext", "notebook",
                     "notebook_shim", "nbgrader.server_extensions.validate_assignment",
                     "nbgrader.server_extensions.assignment_list", "nbgrader.server_extensions.course_list"), False),
    "nbgrader.server_extensions.formgrader": True,
}


@pytest.fixture
def formgrader(graded, tmp_path):
    """``jupyter server`` with formgrader in the graded course, on a free loopback port with a
    token, in its own process group (stopped by its pid): (base URL, token)."""
    config = tmp_path / "config"
    config.mkdir()
    (config / "jupyter_server_config.json").write_text(json.dumps({"ServerApp": {"jpserver_extensions": _EXTENSIONS}}))
    port, token = _free_port(), secrets.token_hex(16)
    course = graded / "course"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(config), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
         "--ServerApp.port_retries=0", "--ServerApp.allow_root=True", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={course}"],
        cwd=course, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5):
                    break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()
                time.sleep(0.2)
        yield base, token
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)  # the server this fixture started, by its process group
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        log.close()


#: Each decoded pasted image on the page: its width, and the text of the graded cell it is in.
_PHOTOS = """() => Array.from(document.images).filter((img) => img.src.startsWith('data:image/png'))
  .map((img) => [img.complete ? img.naturalWidth : 0, (img.closest('.nbgrader_cell') || {}).innerText || ''])"""


@pytest.mark.slow
@pytest.mark.needs("chromium")
def test_formgrader_shows_the_photo_of_a_handwritten_proof(graded, formgrader):
    from nbgrader.api import Gradebook
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(gk.ROOT / "book" / "_ext"))
    from headless_chromium import ARGS, find_chromium

    base, token = formgrader
    with Gradebook(f"sqlite:///{graded / 'course' / 'gradebook.db'}", course_id="attnmath-test") as gb:
        submission = gb.find_submission_notebook("softmax", "01_softmax", "photo").id

    def look() -> list:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=find_chromium(), headless=True, args=ARGS)
            try:
                page = browser.new_page()
                reply = page.goto(f"{base}/formgrader/submissions/{submission}/?token={token}", wait_until="load")
                assert reply.status == 200
                page.wait_for_function("() => Array.from(document.images).every((img) => img.complete)")
                found = page.evaluate(_PHOTOS)
                artifacts = gk.ROOT / "tests" / "browser" / "artifacts"  # git ignores it: for a person to look at
                artifacts.mkdir(parents=True, exist_ok=True)
                page.locator(".nbgrader_cell", has_text="My proof, handwritten").first.screenshot(
                    path=str(artifacts / "formgrader-written-answer-photo.png"))
                return found
            finally:
                browser.close()

    # Playwright's sync API refuses a thread with a running asyncio loop (an earlier test of the same
    # xdist worker may leave one): a thread of its own has none
    with ThreadPoolExecutor(max_workers=1) as one:
        photos = one.submit(look).result()
    assert [width for width, _ in photos] == [SIDE, SIDE], "both pasted images are shown, decoded"
    for _, cell in photos:
        assert "My proof, handwritten" in cell and "And the last step" in cell, "in the cell graded by hand"
