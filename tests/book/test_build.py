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


def test_every_icon_a_page_uses_is_drawn_by_the_book(built):
    """Font Awesome's script and font are not loaded: ``_static/icons.css`` draws each icon as a
    mask, and an icon class without its entry shows as a filled square (the sidebar's toggle
    did, once the API reference had sub-pages)."""
    drawn = set(re.findall(r"\.(fa-[a-z0-9-]+)\s*\{\s*--attnmath-icon:",
                           (built / "_static" / "icons.css").read_text()))
    modifiers = {"fa-solid", "fas", "fa-regular", "far", "fa-brands", "fab", "fa-lg", "fa-fw"}
    used = {}
    for page in sorted(built.rglob("*.html")):
        for classes in re.findall(r'<i class="([^"]*\bfa-[^"]*)"', page.read_text()):
            for name in classes.split():
                if name.startswith("fa-") and name not in modifiers:
                    used.setdefault(name, page.relative_to(built).as_posix())
    assert used, "no icon found in the built pages: the check would pass vacuously"
    missing = {name: page for name, page in used.items() if name not in drawn}
    assert not missing, f"icons without a drawing in _static/icons.css (first page using each): {missing}"
