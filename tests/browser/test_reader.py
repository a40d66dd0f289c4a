"""The tools the browser tests read the book with (tests/browser/conftest.py) see what goes wrong.

A page of a small site, served on loopback, plants every kind of problem the ``Reader`` records
for a visit: a console error, an uncaught exception, a style sheet and an image that answer
HTTP 404, and a request off the site. Each must be reported for the visit that met it, again on
a later visit that meets the same missing style sheet, and not on a clean page visited after
them. A ``Snapshots`` load (which reads the dark theme after the light one) stops when a
registered script leaves the page it reads changed, and only then; and the switch to the dark
theme returns once the colours have faded over.
"""

from __future__ import annotations

import pytest
from conftest import SCRIPTS, Reader, Snapshots, darken, serve  # tests/browser/conftest.py

pytestmark = pytest.mark.slow

OFF_SITE = "http://example.org/planted.png"  # the browser resolves no host name but 127.0.0.1
_PLANTED = f"""<!DOCTYPE html><html><head><title>planted</title>
<link rel="stylesheet" href="missing.css"></head><body>
<p>planted problems</p>
<img src="missing.png" alt="a missing figure"><img src="{OFF_SITE}" alt="an off-site figure">
<script>console.error("planted console error");</script>
<script>throw new Error("planted exception");</script>
</body></html>"""
_SHARED = """<!DOCTYPE html><html><head><title>shared</title>
<link rel="stylesheet" href="missing.css"></head><body><p>the same sheet</p></body></html>"""
_CLEAN = """<!DOCTYPE html><html><head><title>clean</title></head><body><p>nothing wrong</p></body></html>"""


@pytest.fixture
def planted_site(tmp_path):
    for name, html in (("planted.html", _PLANTED), ("shared.html", _SHARED), ("clean.html", _CLEAN)):
        (tmp_path / name).write_text(html)
    with serve(tmp_path) as served:
        yield served


def test_every_planted_problem_is_reported_for_its_visit(browser, planted_site):
    reader = Reader(browser, planted_site)
    try:
        planted = reader.open("planted.html")
        shared = reader.open("shared.html")
        clean = reader.open("clean.html")
    finally:
        reader.close()
    site = planted_site.base
    assert planted.status == 200 and shared.status == 200 and clean.status == 200
    expected = [f"HTTP 404: {site}missing.css", f"HTTP 404: {site}missing.png",
                f"request off the site (the book must work offline): {OFF_SITE}", f"request failed: {OFF_SITE}",
                "console error: planted console error", "uncaught exception: planted exception"]
    missing = [p for p in expected if not any(line.startswith(p) for line in planted.problems)]
    assert not missing, f"not reported: {missing}; reported: {planted.problems}"
    assert any(line.startswith(f"HTTP 404: {site}missing.css") for line in shared.problems), shared.problems
    assert not any("missing.png" in line or "planted" in line for line in shared.problems), shared.problems
    assert clean.problems == [], clean.problems


def test_a_script_that_changes_the_page_stops_the_dark_read(browser, planted_site, tmp_path_factory,
                                                             monkeypatch):
    for name in list(SCRIPTS):  # the book's scripts read what a book page has; these pages have none
        monkeypatch.delitem(SCRIPTS, name)
    monkeypatch.setitem(SCRIPTS, "title", "() => document.title")
    snapshots = Snapshots(Reader(browser, planted_site), tmp_path_factory)
    try:
        light, dark = snapshots.get("clean.html"), snapshots.get("clean.html", dark=True)
        assert light.problems == [] and not light.dark and dark.dark
        assert light.data == dark.data == {"title": "clean"}
        # What a script adds to measure and takes away again is no change.
        monkeypatch.setitem(SCRIPTS, "puts back", """() => {
          const probe = document.createElement('span'); document.body.append(probe); probe.remove();
          document.body.setAttribute('data-x', '1'); document.body.removeAttribute('data-x');
          const text = document.querySelector('p').firstChild, was = text.data;
          text.data = 'probe'; text.data = was; return 1; }""")
        assert snapshots.get("planted.html", dark=True).data["puts back"] == 1
        monkeypatch.setitem(SCRIPTS, "changes", "() => { document.body.dataset.read = '1'; }")
        with pytest.raises(RuntimeError, match="'changes' changed the page it read"):
            snapshots.get("shared.html", dark=True)
    finally:
        snapshots.reader.close()


def test_the_dark_theme_is_read_once_its_colours_have_faded_over(browser):
    page = browser.new_page()
    try:
        page.set_content("<style>body { background: rgb(255, 255, 255); transition: background-color 0.6s linear }"
                         " html[data-theme=dark] body { background: rgb(0, 0, 0) }</style><p>text</p>")
        darken(page)
        assert page.evaluate("() => getComputedStyle(document.body).backgroundColor") == "rgb(0, 0, 0)"
    finally:
        page.close()
