"""Named mistakes for 13_serving: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("13_serving", "whole blocks returned", "test_gather_sequence",
     {"gather_sequence": ("return tokens[:, :length, :]", "return tokens")}),
    ("13_serving", "a gather for a head dim of 1", "test_gather_sequence",
     {"gather_sequence": ("reshape(H_kv, len(table) * block_size, D)", "reshape(H_kv, len(table) * block_size, 1)")}),
    ("13_serving", "a gather that stacks the blocks", "test_gather_sequence",
     {"gather_sequence": ("blocks = pool[table]", "blocks = np.stack([pool[i] for i in table])")}),
    ("13_serving", "a merge of two states only", "test_merge_states",
     {"merge_states": ("total = sum(weights)", "total = weights[0] + weights[1]")}),
    ("13_serving", "a merge dividing by a zero total", "test_merge_states",
     {"merge_states": ("out = acc / np.where(seen, total, 1.0)[..., None]", "out = acc / total[..., None]")}),
    ("13_serving", "a merge giving an empty state weight", "test_merge_states",
     {"merge_states": ("weights = [np.exp(l - shift) for l in lses]",
                       "weights = [np.exp(np.where(np.isneginf(l), 0.0, l) - shift) for l in lses]")}),
    ("13_serving", "the non-absorbed MLA", "test_mla_absorbed",
     {"mla_absorbed": ("w_q_absorbed = np.einsum(\"hcd,hed->hce\", w_q, w_uk)  # (H, C, d_c)",
                       "k = np.einsum(\"sc,hcd->hsd\", c_kv, w_uk)\n"
                       "    w_q_absorbed = np.einsum(\"hcd,hed->hce\", w_q, w_uk)")}),
    ("13_serving", "blocks gathered in sorted order", "test_gather_sequence",
     {"gather_sequence": ("blocks = pool[table]", "blocks = pool[np.sort(table)]")}),
    ("13_serving", "int8 scales of zero", "test_quantize_int8",
     {"quantize_int8_per_channel": ("scale = np.where(amax > 0, amax / 127.0, 1.0)", "scale = amax / 127.0")}),
    ("13_serving", "int8 scales over 128 levels", "test_quantize_int8",
     {"quantize_int8_per_channel": ("amax / 127.0", "amax / 128.0")}),
    ("13_serving", "MLA scores clipped instead of shifted", "test_mla_absorbed",
     {"mla_absorbed": ("    scores -= scores.max(axis=-1, keepdims=True)\n    p = np.exp(scores)\n",
                       "    p = np.exp(np.clip(scores, -50.0, 50.0))\n")}),
    ("13_serving", "a merge that warns on rows that saw no key", "test_merge_states",
     {"merge_states": ('    with np.errstate(divide="ignore"):\n'
                       '        lse = np.where(seen, shift + np.log(np.where(seen, total, 1.0)), -np.inf)',
                       "    lse = shift + np.log(total)")}),
    ("13_serving", "int8 codes as int64", "test_quantize_int8",
     {"quantize_int8_per_channel": (".astype(np.int8)", ".astype(np.int64)")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {}
