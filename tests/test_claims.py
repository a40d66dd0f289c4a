"""The claim markers are well formed, so the book's appendix "Claims and errata" can be built from them.

The appendix itself runs the claim tests when the book is built (book/_ext/attnmath_claims.py);
these tests check what it relies on: every marker names a known source, a verdict of
``claims.VERDICTS``, a correction or caveat where the verdict needs one, the domain its test
covers, a chapter of the book, and a Correction box that exists in that chapter.
"""

import re
from pathlib import Path

from claims import CHAPTERS, NOT_VERIFIABLE, UNVERIFIABLE, VERDICTS, collect_claims, collect_markers, \
    inconsistent_groups, run_claim_tests

SEEDS = {"000", "001", "002", "003", "004"}
ROOT = Path(__file__).resolve().parents[1]


def _labels(chapter):
    return set(re.findall(r"^\(([\w-]+)\)=$", (ROOT / "book" / f"{chapter}.md").read_text(), re.M))


def test_every_claim_marker_is_well_formed():
    markers = collect_markers(Path(__file__).parent)
    assert markers, "no claim markers found"
    for m in markers:
        assert m.source and re.match(r"^\d{3}( .+)?$", m.source), f"{m.test}: source {m.source!r} must start with a document number"
        assert m.source[:3] in SEEDS, f"{m.test}: unknown source document {m.source[:3]}"
        assert m.text and len(m.text) > 10, f"{m.test}: the claim text is missing"
        assert m.verdict in VERDICTS, f"{m.test}: verdict {m.verdict!r} is not one of {VERDICTS}"
        assert m.chapter in CHAPTERS, f"{m.test}: chapter {m.chapter!r} is not a chapter of the book"
        if m.verdict != "verified":
            assert m.correction, f"{m.test}: a {m.verdict} claim must state the correction or caveat"
            assert m.box, f"{m.test}: a {m.verdict} claim must name its Correction box (box=...)"


def test_every_correction_box_a_marker_names_exists_in_its_chapter():
    for c in collect_claims(Path(__file__).parent):
        if c.box:
            assert c.box in _labels(c.chapter), f"{c.source} {c.text!r}: no box ({c.box})= in book/{c.chapter}.md"


def test_markers_of_one_claim_agree_and_each_claim_is_one_row():
    assert inconsistent_groups(Path(__file__).parent) == []
    claims = collect_claims(Path(__file__).parent)
    keys = [(c.source, c.text) for c in claims]
    assert len(keys) == len(set(keys)), "a claim appears in two rows"


def test_claims_are_in_chapter_order():
    order = list(CHAPTERS)
    chapters = [order.index(c.chapter) for c in collect_claims(Path(__file__).parent)]
    assert chapters == sorted(chapters)


def test_unverifiable_claims_say_why():
    for c in NOT_VERIFIABLE:
        assert c.reason and len(c.reason) > 40 and not c.tests
        assert c.chapter in CHAPTERS
        assert c.verdict in (*VERDICTS, UNVERIFIABLE)
        if c.box:
            assert c.box in _labels(c.chapter), f"{c.text!r}: no box ({c.box})= in book/{c.chapter}.md"


def test_the_run_reports_each_claim_tests_outcome_and_a_failure_is_not_hidden(tmp_path):
    # What the book build relies on: a failing claim test (or one failing case of a parametrised
    # test) is reported as failed, so the appendix's extension turns it into a build error.
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_sample.py").write_text(
        "import pytest\n"
        "@pytest.mark.claim('001 X', 'a true claim', 'verified')\n"
        "def test_true():\n    assert 1 + 1 == 2\n"
        "@pytest.mark.claim('001 X', 'a false claim', 'verified')\n"
        "def test_false():\n    assert 1 + 1 == 3\n"
        "@pytest.mark.claim('001 X', 'true for most n', 'verified')\n"
        "@pytest.mark.parametrize('n', [1, 2, 3])\n"
        "def test_partly(n):\n    assert n != 2\n"
        "def test_not_a_claim():\n    assert False\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    claim: a claim\n")
    outcomes = run_claim_tests(tmp_path, timeout=120)
    assert outcomes == {"tests/test_sample.py::test_true": "passed",
                        "tests/test_sample.py::test_false": "failed",
                        "tests/test_sample.py::test_partly": "failed"}


#: Plain-text maths that the appendix would show as typed: a superscript, an identifier with a
#: subscript, a function call, a comparison, an integer range, minus infinity, a times sign.
ASCII_MATH = re.compile(r"\^|\b[A-Za-z]+_\w|\b(?:O|sqrt|softmax|exp|log|phi|elu|diag|rank|min|max|Var)\("
                        r"|<=|>=|!=|\d\.\.\d|-inf\b|\w x \w")


def test_claim_strings_write_their_maths_in_tex():
    # The appendix renders the markers' strings as MyST: maths in $...$ (typeset by MathJax),
    # code in backticks. Anything else is shown as typed.
    claims = collect_claims(Path(__file__).parent)
    for c in claims:
        for text in (c.source, c.text, c.correction, c.reason, *(d for _, d in c.tests)):
            if not text:
                continue
            assert text.count("$") % 2 == 0, f"unbalanced $ in {text!r}"
            prose = re.sub(r"\$[^$]*\$|`[^`]*`", "", text)
            assert not ASCII_MATH.search(prose), f"maths outside $...$ in {text!r}"
    # The check finds what it is meant to find.
    assert all(ASCII_MATH.search(t) for t in ("O(n^2)", "d_k", "sqrt(d)", "j <= i", "n in 1..8", "-inf"))
