"""Named mistakes for 04_masking: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("04_masking", "a bottom-right shift of |S - L|", "test_causal_mask",
     {"causal_mask": ("delta = 0 if alignment == \"top_left\" else S - L", "delta = 0 if alignment == \"top_left\" else abs(S - L)")}),
    ("04_masking", "a combined mask that ignores S", "test_combined_mask",
     {"combined_mask": ("    if S is None:\n        S = L\n", "    S = L\n")}),
    ("04_masking", "a combined mask that drops the alignment", "test_combined_mask",
     {"combined_mask": ("causal_mask(L, S, alignment=alignment)", "causal_mask(L, S)")}),
    ("04_masking", "padding and causal combined by OR", "test_combined_mask",
     {"combined_mask": ("padding_mask(lengths, S) & causal_mask(", "padding_mask(lengths, S) | causal_mask(")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {
    ("04_masking", "test_causal_mask"): {
        "causal, bottom-right, as many keys as queries", "causal, bottom-right, more keys than queries",
        "causal, top-left, as many keys as queries", "causal, top-left, fewer keys than queries",
        "causal, top-left, more keys than queries",
    },
    ("04_masking", "test_padding_mask"): {
        "lengths as an int32 array", "lengths as an int64 array", "lengths including zero",
        "several lengths",
    },
    ("04_masking", "test_combined_mask"): {
        "padding and causal, bottom-right, as many keys as queries",
        "padding and causal, bottom-right, fewer keys than queries",
        "padding and causal, top-left, as many keys as queries",
    },
    ("04_masking", "test_masked_attention"): {
        "a padding mask that broadcasts", "causal, bottom-right, fewer keys than queries",
        "causal, top-left, fewer keys than queries", "float16 input", "float32 input",
        "padding and causal combined", "random mask", "scores below the mask fill value",
        "scores in the thousands",
    },
}
