"""The chapters keep the notation of book/notation.md: a letter of its tables used in another sense
is declared in the chapter and listed under "Second senses", and no chapter, nor the notation
page, nor a docstring of the library (the API reference) writes a form the page rules out: a
boolean mask added to scores, an upright d of a gradient (book/_ext/attnmath_notation.py).
No build is needed: the check reads the MyST sources and the library's files.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import attnmath_notation as notation  # noqa: E402  (book/_ext/attnmath_notation.py)

CHAPTERS = sorted(p for p in (ROOT / "book").glob("*.md")
                  if notation.CHAPTER.match(p.relative_to(ROOT).as_posix()))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_a_chapter_gives_the_pages_letters_no_unlisted_sense(chapter):
    found = notation.undeclared_senses(chapter)
    assert not found, "rename the letter, or declare the sense in the chapter and list it " \
                      "under 'Second senses' in book/notation.md:\n" + "\n".join(map(str, found))


def test_every_listed_second_sense_is_declared_in_its_chapter():
    rows = notation.second_senses(notation.NOTATION.read_text())
    assert rows
    assert not notation.missing_declarations()


def test_the_pages_letters_carry_the_words_of_their_sense():
    senses = notation.global_senses(notation.NOTATION.read_text())
    assert "attention weights" in senses["P"] and "score scale" in senses["s"]
    assert "boolean mask" in senses["M"] and "batch size" in senses["B"]
    assert {"experts chosen", "keys"} <= senses["K"]  # the page gives K two senses
    assert "o=pv" in senses["O"]


@pytest.fixture
def chapter(tmp_path):
    """Write a made-up chapter 99 and return the function that checks it."""
    path = tmp_path / "book" / "99_made_up.md"
    path.parent.mkdir()

    def check(text):
        path.write_text(text)
        return [d.letter for d in notation.undeclared_senses(path, tmp_path, notation.NOTATION)]
    return check


@pytest.mark.parametrize("text, letter", [
    ("Count a multiply-add as two FLOPs and let $P$ be the number of weights.", "P"),
    ("Write $s = L'/L \\ge 1$ for the factor by which the context grows.", "s"),
    ("Ring attention puts $P$ workers on a ring.", "P"),
    ("With a fast memory, let $M$ denote its size in elements.", "M"),
    ("Call $B$ the bandwidth of the link.", "B"),
])
def test_a_letter_defined_in_another_sense_is_reported(chapter, text, letter):
    assert chapter(text + "\n") == [letter]


@pytest.mark.parametrize("text", [
    "Let $P = \\softmax(Z)$ be the attention weights, row by row.",
    "Let $O = PV$ with $P$ the weights.",
    "Write $s = 1/\\sqrt{D}$ for the score scale.",
    "Let $M$ be a boolean mask that broadcasts to the scores.",
    "The weights $P$ of every head are shown below.",
    "```{code-cell} ipython3\n# let $P$ be the number of workers\nP = 8\n```",
])
def test_a_letter_in_its_own_sense_or_in_code_is_not_reported(chapter, text):
    assert chapter(text + "\n") == []


def test_no_source_writes_a_form_the_notation_page_rules_out():
    sources = [*CHAPTERS, notation.NOTATION, *sorted((ROOT / "lib" / "attnmath").glob("*.py"))]
    found = [slip for path in sources
             for slip in notation.notation_slips(path.read_text(), path.relative_to(ROOT).as_posix())]
    assert not found, "write the notation page's form:\n" + "\n".join(found)


@pytest.mark.parametrize("text, slips", [
    (r"$P = \softmax(sQK^\top + M)$ row by row", 1),
    ("$\\softmax\\bigl(x W_Q (x W_K)^\\top\n/ \\sqrt{D} + M\\bigr)$", 1),
    (r"$p_{ij} = e^{s q_i\cdot k_j + M_{ij}}$", 1),
    (r"$\mathrm{d}Q$ and $\mathrm d K$", 2),
    (r"$P = \softmax(sQK^\top + \mathrm{bias}_M)$ and $dQ = s\, dZ\, K$", 0),
    (r"the fast memory: $\Theta(N^2 d^2 / M)$ accesses, $Nd + M$ elements", 0),
])
def test_the_ruled_out_forms_are_found(text, slips):
    assert len(notation.notation_slips(text, "x.md")) == slips
