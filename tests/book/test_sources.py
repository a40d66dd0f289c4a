"""Every mention of the five texts the course grew from says which text it is.

The landing page (book/intro.md, section ``sec-sources``) describes the five texts under the names
a reader meets in the chapters: "the reference sheet", "the interview summary", and so on. A
mention that does not say which text it is ("one source", "the source texts", "another source
text", "the seed's code") leaves the reader unable to look it up, so the book's pages, the
docstrings the API pages are made from and the claims appendix are checked for such mentions, and
the appendix's names are checked against the landing page's.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "tests"))
import attnmath_claims  # noqa: E402  (book/_ext: the claims appendix)
from claims import collect_claims  # noqa: E402  (tests/claims.py: the claim markers)

_DETERMINER = r"(?:the|a|an|one|another|other|two|three|four|five|some|several|both|all|each|either)"
_OWNER = r"(?:(?:of\s+)?(?:the|its|their|this\s+course's|the\s+course's)\s+)?"
#: An anonymous mention of the texts. "source" in the sense of a translation's source sequence
#: (its tokens, keys, queries, positions) or of source files and code, and random seeds ("three
#: seeds each", "at least one seed"), are not.
ANONYMOUS = re.compile(
    r"\bsource\s+(?:text|document|note|material)s?\b"
    r"|\bseed\s+(?:text|document|note)s?\b"
    rf"|\b{_DETERMINER}\s+{_OWNER}sources?(?:'s|')?(?!\w|\s+(?:sequence|token|key|quer|position|file|code))"
    r"|\bseeds?(?:'s|')(?!\w)",
    re.IGNORECASE)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def anonymous_mentions(text: str) -> list[tuple[int, str]]:
    """(line, words) of each anonymous mention in ``text``."""
    return [(_line_of(text, m.start()), " ".join(m.group().split())) for m in ANONYMOUS.finditer(text)]


def landing_page_names() -> list[str]:
    """The names the landing page describes the five texts under, in its order, lower case."""
    intro = (ROOT / "book" / "intro.md").read_text()
    section = intro.split("(sec-sources)=", 1)[1].split("\n## ", 2)[1]
    return [name[0].lower() + name[1:] for name in re.findall(r"^- \*\*(.+?)\*\*", section, re.M)]


@pytest.mark.parametrize("phrase", [
    "one source", "One source text", "the source texts", "a source", "another source",
    "the sources", "the sources' chain rule", "The source's version", "the source documents",
    "one of the sources", "one of this course's source texts", "two of the source texts",
    "the seed's softmax", "the seeds' mask", "the source\nsays", "a seed text",
])
def test_the_check_finds_an_anonymous_mention(phrase):
    assert anonymous_mentions(f"As {phrase} puts it.")


@pytest.mark.parametrize("phrase", [
    "every source token", "the source sequence's padding", "$S$ source positions", "source keys",
    "three seeds each", "the same seed", "over the seeds", "seed=3", "the textbook chapter",
    "a resource", "the sourced figure", "open source", "the source files", "at least one seed",
])
def test_the_check_leaves_other_senses_alone(phrase):
    assert not anonymous_mentions(f"As {phrase} puts it.")


def test_the_book_names_the_text_it_quotes():
    pages = sorted((ROOT / "book").glob("*.md"))
    assert len(pages) > 14, "the chapters and appendices are not where the check looks"
    found = [f"book/{p.name}:{line}: {words!r}" for p in pages
             for line, words in anonymous_mentions(p.read_text())]
    assert not found, "name the text (see book/intro.md, sec-sources):\n" + "\n".join(found)


def test_the_api_pages_name_the_text_they_quote():
    modules = sorted((ROOT / "lib" / "attnmath").rglob("*.py"))
    assert modules
    found = [f"{p.relative_to(ROOT)}:{line}: {words!r}" for p in modules
             for line, words in anonymous_mentions(p.read_text())]
    assert not found, "name the text (see book/intro.md, sec-sources):\n" + "\n".join(found)


def test_the_claims_appendix_names_each_claim_by_the_landing_pages_names():
    names = landing_page_names()
    assert names == list(attnmath_claims.SOURCE_NAMES.values())
    claims = collect_claims(ROOT / "tests")
    assert claims
    for c in claims:
        row = attnmath_claims.claim_row(c, {})[0]
        if c.about_data:  # the book's own statements about its data name the chapter and the data
            assert re.search(r"\*This chapter, about ", row), row
        elif c.source.startswith("paper:"):  # a paper's claim names the paper's entry of the bibliography
            assert re.search(r"\*A paper's claim, found in ", row), row
        else:
            assert re.search(r"A common claim, found in (" + "|".join(names) + r")\b", row), row


def test_found_in_names_the_text_and_keeps_the_section():
    assert attnmath_claims.found_in("003 §5.3") == "found in the textbook chapter, §5.3"
    assert attnmath_claims.found_in("000 Masking") == "found in the reference sheet, Masking"
    assert attnmath_claims.found_in("004") == "found in the lecture notes"
    with pytest.raises(ValueError, match="source"):
        attnmath_claims.found_in("005 §1")
