"""The student's loop in a real JupyterLab, driven in headless Chromium.

A lab is started as ``make lab`` starts it (its own Jupyter config, a copy of the release made by
``make lab-work``), on a free loopback port with a token, in a temporary folder, and stopped by
its pid. The student opens exercise 01, which is not marked modified on opening and over which
no pop-up asks about Jupyter news, types a wrong answer (the global-max softmax) into Part 1's
answer cell, runs all cells and reads the summary (Part 1 failed, naming the kind of case, the
later parts not attempted). Part 2's cell, not attempted, says so in one line, without a
traceback. Validate's dialog shows each failed cell's message as the cell shows it. Then the
student types a right answer and reads "Part 1: passed". The instructor's server extensions are
absent.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MAKE = ["make", "--no-print-directory", "-o", ".venv/.installed"]
WRONG = "def stable_softmax(x, axis=-1):\n    e = np.exp(x - np.max(x))\n    return e / e.sum(axis=axis, keepdims=True)\n"
RIGHT = ("def stable_softmax(x, axis=-1):\n    x = np.asarray(x, dtype=np.float64)\n"
         "    e = np.exp(x - x.max(axis=axis, keepdims=True))\n    return e / e.sum(axis=axis, keepdims=True)\n")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


@pytest.fixture
def lab(tmp_path):
    """``make lab`` on a fresh copy of the release, in its own process group: (base URL, token, work)."""
    config, work = tmp_path / "config", tmp_path / "work"
    port, token = _free_port(), secrets.token_hex(16)
    server_args = (f"--no-browser --port={port} --ServerApp.ip=127.0.0.1 --ServerApp.port_retries=0 "
                   f"--IdentityProvider.token={token} --LabApp.expose_app_in_browser=True")
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    log = open(tmp_path / "lab.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen([*MAKE, "lab", f"WORK={work}", f"LAB_CONFIG={config}", f"LAB_ARGS={server_args}"],
                              cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(f"{base}/api/status?token={token}", 120)
        yield base, token, work
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # make and the lab it started: the group of this Popen
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


def _replace_answer(page, text: str) -> None:
    """Select Part 1's answer cell (the first that defines stable_softmax) and type ``text``."""
    cell = page.locator(".jp-CodeCell", has_text="def stable_softmax").first
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(text)


_RUN_ALL = """async () => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  await panel.sessionContext.ready;
  await app.commands.execute('notebook:clear-all-cell-outputs');
  await app.commands.execute('notebook:run-all-cells');
}"""

_SUMMARY = """() => {
  const cells = document.querySelectorAll('.jp-Notebook .jp-Cell');
  const last = cells[cells.length - 1];
  return last.querySelector('.jp-OutputArea') ? last.querySelector('.jp-OutputArea').innerText : '';
}"""


_TEST_OUTPUT = """(part) => {
  const cell = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')]
    .find(c => c.querySelector('.jp-InputArea').innerText.includes(`self_check("${part}")`));
  const out = cell.querySelector('.jp-OutputArea');
  return out ? out.innerText : '';
}"""

_VALIDATION = """() => [...document.querySelectorAll('#validation-message .jp-RenderedText pre')].map(p => p.innerText)"""


def _validate(page, artifacts: Path) -> dict[str, str]:
    """Click Validate, wait for its dialog, screenshot it and close it: part label -> the error
    the dialog shows under that part's failed cell."""
    page.locator(".validate-button").first.click()
    page.wait_for_selector("#validation-message", timeout=120_000)
    dialog = page.locator(".jp-Dialog-content")
    dialog.screenshot(path=str(artifacts / "lab-validate-failed.png"))
    texts = page.evaluate(_VALIDATION)  # the source of each failed cell, then its error
    dialog.get_by_role("button", name="Ok").click()
    shown = {}
    for source, error in zip(texts[::2], texts[1::2]):
        label = re.search(r'self_check\("(Part \d+)"\)', source)
        shown[label.group(1) if label else source] = error
    return shown


def _no_news_pop_up(page) -> None:
    """JupyterLab's first start asks in a pop-up whether to fetch Jupyter news: not in the student's lab."""
    page.wait_for_timeout(3000)  # the question comes once the settings are loaded, after the notebook
    assert page.get_by_text("Jupyter news").count() == 0, "the news pop-up shows"
    assert not page.evaluate("() => window.jupyterapp.isPluginActivated('@jupyterlab/apputils-extension:announcements')")


def _run_all_and_read_summary(page) -> str:
    """Clear every output, run all cells, and return the summary once its last line is there."""
    page.evaluate(_RUN_ALL)
    page.wait_for_function(f"() => ({_SUMMARY})().includes('Part 3:')", timeout=120_000)
    return page.evaluate(_SUMMARY)


def test_a_student_types_a_wrong_then_a_right_answer_and_reads_the_summary(lab, browser, artifacts):
    base, token, work = lab
    with urllib.request.urlopen(f"{base}/?token={token}") as reply:  # the start page opens first
        assert reply.status == 200 and urlsplit(reply.url).path == "/lab/tree/README.md", reply.url
    assert (work / "README.md").is_file() and (work / "01_softmax" / "softmax.ipynb").is_file()
    for tool in ("formgrader", "course_list", "assignment_list"):
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{base}/{tool}?token={token}")
        assert missing.value.code == 404, tool
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(f"{base}/lab/tree/01_softmax/softmax.ipynb?token={token}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                               " && window.jupyterapp.shell.currentWidget.sessionContext", timeout=120_000)
        # polled, not awaited: a promise held across the lab's start-up can be collected with the
        # context that made it (Playwright then fails with "Resulting promise was garbage collected")
        page.wait_for_function("() => window.jupyterapp.shell.currentWidget.sessionContext.isReady",
                               timeout=120_000)
        page.wait_for_timeout(1000)
        assert not page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty"), \
            "opening the untouched release marked it modified"

        _no_news_pop_up(page)

        _replace_answer(page, WRONG)
        summary = _run_all_and_read_summary(page)
        page.locator(".jp-Notebook .jp-Cell").last.screenshot(path=str(artifacts / "lab-summary-wrong.png"))
        assert "Part 1: failed [float16 input, rows of ±1e4]" in summary, summary
        assert "Part 2: not attempted" in summary and "Part 3: not attempted" in summary, summary
        in_cell = {part: page.evaluate(_TEST_OUTPUT, part).strip() for part in ("Part 1", "Part 2", "Part 3")}
        page.locator(".jp-CodeCell", has_text='self_check("Part 2")').screenshot(
            path=str(artifacts / "lab-not-attempted.png"))
        assert in_cell["Part 2"] == "Part 2 not attempted (it still raises NotImplementedError)", in_cell["Part 2"]
        assert in_cell["Part 1"].startswith("Part 1 failed [float16 input, rows of ±1e4]: "), in_cell["Part 1"]
        assert "Traceback" not in in_cell["Part 1"] and max(map(len, in_cell["Part 1"].splitlines())) <= 80

        in_dialog = _validate(page, artifacts)
        assert {part: in_dialog.get(part, "").strip() for part in in_cell} == in_cell, in_dialog
        others = {text.strip() for part, text in in_dialog.items() if part not in in_cell}
        assert others <= {"You did not provide a response."}, others  # Part 4, written, not answered yet

        _replace_answer(page, RIGHT)
        summary = _run_all_and_read_summary(page)
        page.locator(".jp-Notebook .jp-Cell").last.screenshot(path=str(artifacts / "lab-summary-right.png"))
        assert "Part 1: passed" in summary and "Part 2: not attempted" in summary, summary
    finally:
        page.close()
