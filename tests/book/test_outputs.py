"""Clean outputs: what the chapters' cells print is what a book would print.

No warning, traceback, stderr stream or path of the machine that built the book reaches a page,
and the flash chapter's recorded table is a table, not rows of text. The checks read the built HTML (the ``built`` fixture)
with :func:`problems_in_outputs`, which the unit tests below also run on made-up pages.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from build import book_html, toc_files  # tests/book/build.py

ROOT = Path(__file__).resolve().parents[2]

#: Text that a build machine leaves in an output: a warning or a traceback, or one of its paths.
_WARNING = re.compile(r"\b\w*(Warning|Error)\b:|Traceback \(most recent call last\)")


def machine_paths() -> list[str]:
    """Folders of the build machine whose names must not appear in an output."""
    paths = {str(ROOT), str(Path(sys.prefix)), str(Path.home()), tempfile.gettempdir() + "/",
             "site-packages", "/usr/lib/", "/usr/local/"}
    return sorted(p for p in paths if len(p) > 4)


def problems_in_outputs(page: str, paths: list[str]) -> list[str]:
    """Each output of a page's cells that shows a warning, a traceback, a stderr stream or one
    of ``paths``, with the text that gives it away."""
    problems = []
    soup = BeautifulSoup(page, "html.parser")
    for output in soup.select("div.cell_output"):
        text = output.get_text()
        if output.select(".stderr, .output.error, .output.traceback"):
            problems.append(f"a stderr or error output: {text.strip()[:160]!r}")
        match = _WARNING.search(text)
        if match:
            problems.append(f"{match.group(0)!r} in {text[max(0, match.start() - 80):match.end() + 80]!r}")
        problems += [f"the build machine's path {p!r} in {text.strip()[:160]!r}" for p in paths if p in text]
    return problems


def test_outputs_that_leak_the_build_are_found():
    page = ('<div class="cell_output docutils container"><div class="output stderr"><pre>'
            '/work/x/lib/softmax.py:47: RuntimeWarning: overflow encountered in divide</pre></div></div>'
            '<div class="cell_output docutils container"><pre>ok [0. 1.]</pre></div>')
    problems = problems_in_outputs(page, ["/work/x"])
    assert len(problems) == 3, problems
    assert any("RuntimeWarning:" in p for p in problems) and any("/work/x" in p for p in problems)
    assert problems_in_outputs('<div class="cell_output"><pre>max error 1e-16; warnings: none</pre></div>',
                               ["/work/x"]) == []


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return book_html(tmp_path_factory)


@pytest.mark.slow
@pytest.mark.parametrize("doc", toc_files())
def test_no_warning_traceback_or_machine_path_in_any_output(built, doc):
    problems = problems_in_outputs((built / f"{doc}.html").read_text(), machine_paths())
    assert not problems, f"{doc}: outputs a book would not print:\n" + "\n".join(problems[:5])


@pytest.mark.slow
def test_recorded_memory_table_is_a_table(built):
    """The flash chapter's table of recorded peak memory is an HTML table, not printed rows."""
    soup = BeautifulSoup((built / "book" / "08_flash.html").read_text(), "html.parser")
    tables = [t for t in soup.select("div.cell_output table") if "chunked" in t.get_text()]
    assert tables, "08_flash: the recorded memory table is not rendered as a table"
    rows = tables[0].select("tbody tr")
    assert len(rows) >= 3 and all(len(r.select("td")) == 7 for r in rows)
