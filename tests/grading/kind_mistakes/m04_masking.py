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
    ("04_masking", "a causal mask squeezed", "test_causal_mask",
     {"causal_mask": ("return np.arange(S)[None, :] <= query_position", "return np.squeeze(np.arange(S)[None, :] <= query_position)")}),
    ("04_masking", "an L x L triangle cut to S columns", "test_causal_mask",
     {"causal_mask": ("return np.arange(S)[None, :] <= query_position", "return np.tril(np.ones((L, L), dtype=bool), delta)[:, :S]")}),
    ("04_masking", "an S x S triangle cut to L rows", "test_causal_mask",
     {"causal_mask": ("return np.arange(S)[None, :] <= query_position", "return np.tril(np.ones((S, S), dtype=bool), delta)[:L]")}),
    ("04_masking", "a bottom-right shift computed before S defaults to L", "test_causal_mask",
     {"causal_mask": [("    if S is None:\n        S = L\n", ""),
                      ("else S - L\n", "else S - L\n    if S is None:\n        S = L\n")]}),
    ("04_masking", "lengths squeezed", "test_padding_mask",
     {"padding_mask": ("lengths = np.asarray(lengths)", "lengths = np.squeeze(np.asarray(lengths))")}),
    ("04_masking", "lengths accepted as a list only", "test_padding_mask",
     {"padding_mask": ("lengths = np.asarray(lengths)", "if not isinstance(lengths, list):\n"
                       "        raise TypeError(\"lengths must be a list\")\n    lengths = np.asarray(lengths)")}),
    ("04_masking", "an integer check that accepts int64 only", "test_padding_mask",
     {"padding_mask": ("lengths = np.asarray(lengths)", "lengths = np.asarray(lengths)\n    if lengths.dtype != np.int64:\n"
                       "        raise TypeError(\"lengths must be integers\")")}),
    ("04_masking", "every sequence keeps at least one key", "test_padding_mask",
     {"padding_mask": ("lengths = np.asarray(lengths)", "lengths = np.maximum(np.asarray(lengths), 1)")}),
    ("04_masking", "a combined mask of 0/1 integers", "test_combined_mask",
     {"combined_mask": ("padding_mask(lengths, S) & causal_mask(", "padding_mask(lengths, S).astype(int) * causal_mask(")}),
    ("04_masking", "a combined mask where every query keeps key 0", "test_combined_mask",
     {"combined_mask": ("    return both", "    both[..., 0] = True\n    return both")}),
    ("04_masking", "masked attention without the row maximum", "test_masked_attention",
     {"masked_attention": ("weights = np.exp(scores - row_max)", "weights = np.exp(scores)")}),
    ("04_masking", "float16 attention in float16 without the row maximum", "test_masked_attention",
     {"masked_attention": [("dtype = np.result_type(q, k, v, np.float32)", "dtype = np.result_type(q, k, v)"),
                           ("/ np.sqrt(q.shape[-1])", "/ q.shape[-1] ** 0.5"),
                           ("weights = np.exp(scores - row_max)", "weights = np.exp(scores)")]}),
    ("04_masking", "float32 masked attention computed in float16", "test_masked_attention",
     {"masked_attention": ("dtype = np.result_type(q, k, v, np.float32)",
                           "dtype = np.float64 if q.dtype == np.float64 else np.float16")}),
    ("04_masking", "masked attention with k.T for a batch", "test_masked_attention",
     {"masked_attention": ("np.swapaxes(k, -1, -2)", "k.T")}),
    ("04_masking", "a mask applied by boolean indexing", "test_masked_attention",
     {"masked_attention": ("scores = np.where(mask, scores, -np.inf)", "scores[~mask] = -np.inf")}),
    ("04_masking", "a mask filled with -1e9", "test_masked_attention",
     {"masked_attention": [("scores = np.where(mask, scores, -np.inf)", "scores = np.where(mask, scores, -1e9)"),
                           ("return weights @ v", "return np.where(np.any(mask, axis=-1, keepdims=True), weights @ v, 0.0)")]}),
    ("04_masking", "empty rows zeroed afterwards by indexing with the mask's shape", "test_masked_attention",
     {"masked_attention": [("    row_max = np.where(np.isneginf(row_max), 0.0, row_max)  # a fully masked row\n", ""),
                           ("weights = weights / np.where(total == 0.0, 1.0, total)", "weights = weights / total"),
                           ("return weights @ v", "out = weights @ v\n    empty = ~np.any(mask, axis=-1)\n"
                            "    if empty.any():\n        out[empty] = 0.0\n    return out")]}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {
    ("04_masking", "test_combined_mask"): {"padding and causal, bottom-right, fewer keys than queries"},
    ("04_masking", "test_masked_attention"): {
        "padding and causal combined", "random mask",
    },
}
