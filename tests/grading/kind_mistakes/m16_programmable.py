"""Named mistakes for 16_programmable: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

A = "16_programmable"
SINK = "return causal & ((kv_idx < n_sink) | (kv_idx > position - window))"
KINDS = ("            if tile.all():\n                kinds[a, c] = 2\n            elif tile.any():\n"
         "                kinds[a, c] = 1")
BEST = 'best = np.argsort(-scores[t, :own], kind="stable")[:top_k - 1]'

KIND_MISTAKES = [
    (A, "a mask function with `and` and `or`", "test_sink_window_mod",
     {"sink_window_mod": (SINK, "return causal and ((kv_idx < n_sink) or (kv_idx > position - window))")}),
    (A, "a window one key too wide", "test_sink_window_mod",
     {"sink_window_mod": ("(kv_idx > position - window)", "(kv_idx >= position - window)")}),
    (A, "sinks that see later keys", "test_sink_window_mod",
     {"sink_window_mod": (SINK, "return (kv_idx < n_sink) | (causal & (kv_idx > position - window))")}),
    (A, "the offset subtracted", "test_sink_window_mod",
     {"sink_window_mod": ("position = q_idx + offset", "position = q_idx - offset")}),
    (A, "full and partial tiles swapped", "test_block_mask_kinds",
     {"block_mask_kinds": (KINDS, KINDS.replace("= 2", "= 9").replace("= 1", "= 2").replace("= 9", "= 1"))}),
    (A, "empty tiles computed too", "test_block_mask_kinds",
     {"block_mask_kinds": ("            if kinds[a, c]:\n                computed += tile.size",
                           "            computed += tile.size")}),
    (A, "every tile counted at full size", "test_block_mask_kinds",
     {"block_mask_kinds": ("computed += tile.size", "computed += block_q * block_k")}),
    (A, "the short last tile dropped", "test_block_mask_kinds",
     {"block_mask_kinds": ("n_q, n_k = -(-L // block_q), -(-S // block_k)", "n_q, n_k = L // block_q, S // block_k")}),
    (A, "the whole own block read", "test_moba_selection",
     {"moba_selection": ("keys[t, own * block:t + 1] = True", "keys[t, own * block:(own + 1) * block] = True")}),
    (A, "top_k earlier blocks besides the own", "test_moba_selection",
     {"moba_selection": ("[:top_k - 1]", "[:top_k]")}),
    (A, "ties to the later block", "test_moba_selection",
     {"moba_selection": (BEST, 'best = np.argsort(scores[t, :own], kind="stable")[::-1][:top_k - 1]')}),
    (A, "later blocks competing", "test_moba_selection",
     {"moba_selection": (BEST, 'best = np.argsort(-scores[t], kind="stable")[:top_k - 1]')}),
    (A, "FP8 rounding half up", "test_fp8_quantize_blocks",
     {"fp8_quantize_blocks": ("np.round(y / spacing)", "np.floor(y / spacing + 0.5)")}),
    (A, "FP8 without subnormals", "test_fp8_quantize_blocks",
     {"fp8_quantize_blocks": ("np.maximum(e - 1, -6) - 3", "(e - 1) - 3")}),
    (A, "one FP8 scale for the whole array", "test_fp8_quantize_blocks",
     {"fp8_quantize_blocks": ("amax = np.abs(rows).max()", "amax = np.abs(x).max()")}),
    (A, "a zero block scaled by zero", "test_fp8_quantize_blocks",
     {"fp8_quantize_blocks": ("sigma = amax / 448.0 if amax > 0 else 1.0", "sigma = amax / 448.0")}),
    (A, "a sigmoid that overflows", "test_gated_attention_output",
     {"gated_attention_output": ("gate = 0.5 * (1.0 + np.tanh(0.5 * gate_logits))",
                                 "gate = 1.0 / (1.0 + np.exp(-gate_logits))")}),
    (A, "a gated softmax without the max shift", "test_gated_attention_output",
     {"gated_attention_output": ("    z = z - z.max(axis=1, keepdims=True)\n", "")}),
    (A, "the gate logits used as the gate", "test_gated_attention_output",
     {"gated_attention_output": ("return (p @ v) * gate", "return (p @ v) * gate_logits")}),
    (A, "a gated causal mask transposed", "test_gated_attention_output",
     {"gated_attention_output": ("np.tri(*z.shape, dtype=bool)", "np.tri(*z.shape, dtype=bool).T")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {}
