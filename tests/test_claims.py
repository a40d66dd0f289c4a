"""The claim markers are well formed, so the book's errata appendix can be built from them."""

import re
from pathlib import Path

from claims import VERDICTS, collect_claims

SEEDS = {"000", "001", "002", "003", "004"}


def test_every_claim_marker_is_well_formed():
    claims = collect_claims(Path(__file__).parent)
    assert claims, "no claim markers found"
    for c in claims:
        assert c.source and re.match(r"^\d{3}( .+)?$", c.source), f"{c.test}: source {c.source!r} must start with a document number"
        assert c.source[:3] in SEEDS, f"{c.test}: unknown source document {c.source[:3]}"
        assert c.text and len(c.text) > 10, f"{c.test}: the claim text is missing"
        assert c.verdict in VERDICTS, f"{c.test}: verdict {c.verdict!r} is not one of {VERDICTS}"
        if c.verdict == "corrected":
            assert c.correction, f"{c.test}: a corrected claim must state the correction"
