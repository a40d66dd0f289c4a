"""The book builds with warnings as errors and every chapter executed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part["chapters"]]
    return files


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("book")
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "jupyter-book"), "build", str(ROOT),
         "--path-output", str(out), "-n", "-W", "--keep-going"],
        capture_output=True, text=True, env=env, timeout=1200)
    assert proc.returncode == 0, f"book build failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"
    return out / "_build" / "html"


def test_every_toc_file_is_built(built):
    assert (built / "index.html").exists()
    for f in toc_files():
        assert (built / f"{f}.html").exists(), f"{f} was not built"


def test_no_chapter_shows_an_error_or_a_traceback(built):
    for f in toc_files():
        html = (built / f"{f}.html").read_text()
        assert "Traceback (most recent call last)" not in html, f"{f} shows a traceback"
        assert not re.search(r'class="[^"]*\berror\b', html), f"{f} shows an error output"


def test_chapters_are_executed_and_show_library_code(built):
    chapters = [f for f in toc_files() if re.match(r"book/\d\d_", f)]
    assert chapters
    for f in chapters:
        html = (built / f"{f}.html").read_text()
        assert "cell_output" in html, f"{f} has no executed output"
        text = re.sub(r"<[^>]+>", "", html)
        assert "highlight-python" in html and re.search(r"\bdef \w+\(", text), f"{f} shows no library code"
