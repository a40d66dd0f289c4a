"""The book builds with warnings as errors and every chapter executed."""

from __future__ import annotations

import re

import pytest
from build import book_html, toc_files  # tests/book/build.py, shared with tests/browser

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return book_html(tmp_path_factory)


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
