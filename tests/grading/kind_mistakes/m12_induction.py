"""Named mistakes for 12_induction: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("12_induction", "a sequence of whole copies only", "test_repeated_sequence",
     {"repeated_sequence": ("tokens[1:] = segment[np.arange(L - 1) % T]", "tokens[1:] = np.tile(segment, (L - 1) // T)")}),
    ("12_induction", "a previous-token score on the first two axes", "test_previous_token_score",
     {"previous_token_score": ("np.diagonal(probs, offset=-1, axis1=-2, axis2=-1)", "np.diagonal(probs, offset=-1)")}),
    ("12_induction", "induction scores indexed on the first axis", "test_induction_score",
     {"induction_score": (".sum(axis=-1)[..., queries]", ".sum(axis=-1)[queries]")}),
    ("12_induction", "a phase change measured from the highest loss", "test_phase_change",
     {"phase_change": ("hi, lo = loss[0], loss.min()", "hi, lo = loss.max(), loss.min()")}),
    ("12_induction", "a repeated sequence shifted by one", "test_repeated_sequence",
     {"repeated_sequence": ("segment[np.arange(L - 1) % T]", "segment[np.arange(1, L) % T]")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {
    ("12_induction", "test_repeated_sequence"): {
        "a longer sequence", "a segment of one token", "a segment with repeated tokens",
        "a sequence of BOS alone", "a sequence shorter than the segment", "the segment exactly twice",
    },
    ("12_induction", "test_previous_token_score"): {
        "a head that attends to the first token", "another pattern", "two positions", "uniform attention",
    },
    ("12_induction", "test_induction_score"): {
        "a segment repeated several times", "another repeated sequence", "tokens that occur many times",
        "two positions",
    },
    ("12_induction", "test_phase_change"): {
        "a noisy curve", "a sharp drop", "a slow drop", "an early drop",
        "unevenly spaced steps, a loss that rises again",
    },
}
