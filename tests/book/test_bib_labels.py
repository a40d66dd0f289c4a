"""The bibliography's author-year labels (book/_ext/attnmath_bib.py): names as plain text, with
pybtex's own text rendering, for one, two and more authors."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given, settings, strategies as st
from pybtex.database import Entry, Person
from pybtex.markup import LaTeXParser

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import attnmath_bib as bib  # noqa: E402

LATEX = st.lists(st.sampled_from(["a", "Z", " ", "{", "}", "-", "\\'e", '\\"o', "{\\ss}", "van ", "~"]),
                 max_size=12).map("".join)


@settings(max_examples=60, deadline=None)
@given(LATEX)
def test_plain_text_is_pybtexs_text_rendering(latex):
    try:
        expected = LaTeXParser(latex).parse().render_as("text")
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
