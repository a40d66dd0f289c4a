"""The claim markers are well formed, so the book's appendix "Claims and errata" can be built from them.

The appendix itself runs the claim tests when the book is built (book/_ext/attnmath_claims.py);
these tests check what it relies on: every marker names a known source, a verdict of
``claims.VERDICTS``, a correction or caveat where the verdict needs one, the domain its test
covers, a chapter of the book, and a Correction box that exists in that chapter.
"""

import re
from pathlib import Path

from claims import CHAPTERS, NOT_VERIFIABLE, UNVERIFIABLE, VERDICTS, collect_claims, collect_markers, \
    inconsistent_groups

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
