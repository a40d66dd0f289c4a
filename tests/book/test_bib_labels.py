"""The bibliography's author-year labels (book/_ext/attnmath_bib.py): names as plain text, with
pybtex's own LaTeX decoding and text rendering, for one, two and more authors; and no LaTeX escape
(backslash or brace) in any label or rendered entry of the book's bibliography."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

from hypothesis import given, settings, strategies as st
import pytest
from pybtex.database import Entry, Person, parse_file
from pybtex.richtext import Text

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import attnmath_bib as bib  # noqa: E402
from build import book_html  # noqa: E402  (tests/book/build.py)

LATEX = st.lists(st.sampled_from(["a", "Z", " ", "{", "}", "-", "\\'e", '\\"o', "{\\ss}", "van ", "~"]),
                 max_size=12).map("".join)


#: balanced BibTeX with every kind of escape the bibliography may hold: accents in their three
#: spellings, special letters, dashes, ties, escaped specials and protecting braces.
ESCAPED = st.lists(st.sampled_from(["a", "Z", " ", "\\'e", "{\\'e}", "\\'{e}", '{\\"o}', '\\"{u}', "\\~a",
                                    "\\=a", "\\c{c}", "{\\c{c}}", "{\\ss}", "{\\L}ukasz", "\\v{s}",
                                    "--", "---", "~", "\\&", "\\#", "\\%", "{Brain}", "{{IO}}"]),
                   max_size=12).map("".join)


@settings(max_examples=60, deadline=None)
@given(LATEX)
def test_plain_text_is_pybtexs_text_rendering(latex):
    try:
        expected = Text.from_latex(latex).render_as("text")
    except Exception as error:  # unbalanced braces: the same error either way
        try:
            bib._plain(latex)
        except type(error):
            return
        raise AssertionError(f"{latex!r} rendered, pybtex raised {error!r}")
    assert bib._plain(latex) == expected


def entry(*authors: str, year: str = "2020") -> Entry:
    return Entry("article", fields={"title": "T", "year": year},
                 persons={"author": [Person(a) for a in authors]})


def test_labels_for_one_two_many_authors_and_others():
    assert bib.author_year(entry("Bridle, John S.", year="1990")) == "Bridle, 1990"
    assert bib.author_year(entry("Kitaev, N.", "Kaiser, L.")) == "Kitaev and Kaiser, 2020"
    assert bib.author_year(entry("Dao, Tri", "Fu, Dan", "R{\\'e}, C.")) == "Dao et al., 2020"
    assert bib.author_year(entry("Vaswani, A.", "others")) == "Vaswani et al., 2020"
    assert bib.author_year(entry("{Google Brain}")) == "Google Brain, 2020"  # braces are not text
    assert bib.author_year(entry("von Neumann, John")) == "von Neumann, 2020"


@settings(max_examples=100, deadline=None)
@given(ESCAPED)
def test_plain_text_has_no_escape_left(latex):
    plain = bib._plain(latex)
    assert not {"\\", "{", "}"} & set(plain), (latex, plain)


def test_accents_read_as_unicode():
    assert bib.author_year(entry("P{\\'e}rez, Jorge", "Marinkovi{\\'c}, J.", "Barcel{\\'o}, P.",
                                 year="2019")) == "Pérez et al., 2019"
    assert bib.author_year(entry('Schmidhuber, J{\\"u}rgen')) == "Schmidhuber, 2020"
    assert bib.author_year(entry("Fran{\\c{c}}ois, F.", "{\\L}ukasz, K.")) == "François and Łukasz, 2020"


BIB = parse_file(ROOT / "book" / "references.bib")
SHOWN = {entry.key: entry for entry in bib.AuthorYearStyle().format_entries(BIB.entries.values())}


@pytest.mark.parametrize("key", sorted(BIB.entries))
def test_no_escape_reaches_a_label_or_entry_of_the_bibliography(key):
    """Every entry as the book prints it: its label and its text in HTML (the page) and plain text."""
    shown = SHOWN[key]
    for text in (shown.label, shown.text.render_as("text"), shown.text.render_as("html")):
        assert not {"\\", "{", "}"} & set(text), (key, text)


@pytest.mark.slow
def test_the_built_bibliography_page_shows_every_entry_without_escapes(tmp_path_factory):
    page = (book_html(tmp_path_factory) / "book" / "bibliography.html").read_text()
    entries = re.findall(r'<div class="citation"[^>]*role="doc-biblioentry">(.*?)</div>', page, re.S)
    assert len(entries) == len(BIB.entries)
    for entry_html in entries:
        text = html.unescape(re.sub(r"<[^>]+>", "", entry_html))
        assert not {"\\", "{", "}"} & set(text), text
