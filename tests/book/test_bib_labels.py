"""One citation style (book/_ext/attnmath_bib.py): the bibliography's author-year labels, names as
plain text with pybtex's own LaTeX decoding and text rendering, for one, two and more authors; no
LaTeX escape (backslash or brace) in any label or rendered entry of the book's bibliography;
BibTeX's "and others" read "et al." in labels, entries and citations; and no year written by
hand beside a work that its entry in references.bib contradicts, in the chapters or the library's
docstrings."""

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


def test_and_others_reads_et_al_in_every_entry():
    others = [key for key, e in BIB.entries.items() if bib.is_others(e.persons.get("author", [None])[-1])]
    assert others  # the bibliography has such entries ("Brown, Tom B. and others")
    for key in others:
        text = SHOWN[key].text.render_as("text")
        assert "and others" not in text and " et al." in text, (key, text)
        assert re.search(rf"et al\., {BIB.entries[key].fields['year']}[a-z]?$", SHOWN[key].label)


@pytest.mark.parametrize("authors, short, full", [
    (["Brown, Tom B.", "others"], "Brown et al.", "Brown et al."),
    (["Black, Sid", "Biderman, Stella", "others"], "Black et al.", "Black, Biderman, et al."),
    (["Kitaev, N.", "Kaiser, L."], "Kitaev and Kaiser", "Kitaev and Kaiser"),
    (["Dao, Tri", "Fu, Dan", "R{\\'e}, C."], "Dao et al.", "Dao, Fu, and Ré"),
])
def test_citations_cut_author_lists_as_the_labels_do(authors, short, full):
    from sphinxcontrib.bibtex.plugin import find_plugin

    style = find_plugin("sphinxcontrib.bibtex.style.referencing", "attnmath")()
    data = {"entry": entry(*authors), "style": style}
    assert style.person.names("author", full=False).format_data(data).render_as("text") == short
    assert style.person.names("author", full=True).format_data(data).render_as("text") == full
    assert style.person.author_or_editor_or_title(full=False).format_data(data).render_as("text") == short


SOURCES = sorted((ROOT / "book").glob("*.md")) + sorted((ROOT / "lib" / "attnmath").glob("*.py"))


def test_no_work_is_dated_by_hand_otherwise_than_in_references_bib():
    slips = [f"{path.relative_to(ROOT)}: {slip}" for path in SOURCES
             for slip in bib.year_slips(path.read_text(), BIB.entries)]
    assert not slips, "\n".join(slips)


@pytest.mark.parametrize("text, found", [
    ('Dao, "FlashAttention-2" (2023)', "2023"),
    ("FlashAttention-2's loop order (Dao, 2023)", "2023"),
    ('"FlashAttention" (2021) and FlashAttention-2 (Dao, 2024)', "2021"),
    ("FlashAttention (Dao et al., 2022); FlashAttention-2 (Dao, 2024). In 2023 it ran.", None),
])
def test_a_year_that_contradicts_the_entry_is_found(text, found):
    slips = bib.year_slips(text, BIB.entries)
    assert [found] == [s.split(" in ")[1].split(",")[1].strip() for s in slips] if found else not slips


@pytest.mark.slow
def test_no_rendered_citation_reads_and_others(tmp_path_factory):
    pages = sorted((book_html(tmp_path_factory) / "book").glob("*.html"))
    for page in pages:
        text = page.read_text()
        cited = re.findall(r'<span class="bibtex-citation"[^>]*>(.*?)</span>', text, re.S)
        entries = re.findall(r'role="doc-biblioentry">(.*?)</div>', text, re.S)
        for shown in cited + entries:
            plain = html.unescape(re.sub(r"<[^>]+>", "", shown))
            assert "and others" not in plain, f"{page.name}: {plain}"


@pytest.mark.slow
def test_the_built_bibliography_page_shows_every_entry_without_escapes(tmp_path_factory):
    page = (book_html(tmp_path_factory) / "book" / "bibliography.html").read_text()
    entries = re.findall(r'<div class="citation"[^>]*role="doc-biblioentry">(.*?)</div>', page, re.S)
    assert len(entries) == len(BIB.entries)
    for entry_html in entries:
        text = html.unescape(re.sub(r"<[^>]+>", "", entry_html))
        assert not {"\\", "{", "}"} & set(text), text
