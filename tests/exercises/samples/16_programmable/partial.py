# Part 1 is right; Part 2 counts the scores of the empty tiles too; Part 3 breaks ties towards the
# later block; Part 4 is right; Part 5 computes the sigmoid as 1 / (1 + exp(-x)), which overflows
# (and warns) for logits far below zero.
# expect: test_sink_window_mod=2, test_block_mask_kinds=0, test_moba_selection=0, test_fp8_quantize_blocks=3, test_gated_attention_output=0
# %% grade_id: sink_window_mod
def sink_window_mod(b, h, q_idx, kv_idx, n_sink, window, offset=0):
    pos = q_idx + offset
    return (kv_idx <= pos) & ((kv_idx < n_sink) | (pos - kv_idx < window))
# %% grade_id: block_mask_kinds
def block_mask_kinds(mask, block_q, block_k):
    L, S = mask.shape
    kinds = np.zeros((-(-L // block_q), -(-S // block_k)), dtype=np.int64)
    for a in range(kinds.shape[0]):
        for c in range(kinds.shape[1]):
            tile = mask[a * block_q:(a + 1) * block_q, c * block_k:(c + 1) * block_k]
            kinds[a, c] = 2 if tile.all() else (1 if tile.any() else 0)
    return kinds, L * S
# %% grade_id: moba_selection
def moba_selection(q, k, block, top_k):
    L = q.shape[0]
    means = np.stack([k[s:s + block].mean(axis=0) for s in range(0, L, block)])
    scores = q @ means.T
    keys = np.zeros((L, L), dtype=bool)
    for t in range(L):
        own = t // block
        for c in np.argsort(scores[t, :own], kind="stable")[::-1][:top_k - 1]:
            keys[t, c * block:(c + 1) * block] = True
        keys[t, own * block:t + 1] = True
    return keys
# %% grade_id: fp8_quantize_blocks
def fp8_quantize_blocks(x, block):
    out, scales = np.zeros_like(x, dtype=np.float64), []
    for s in range(0, len(x), block):
        r = x[s:s + block]
        m = np.abs(r).max()
        sig = m / 448 if m > 0 else 1.0
        y = np.abs(r) / sig
        _, e = np.frexp(y)
        sp = 2.0 ** (np.maximum(e - 1, -6) - 3)
        out[s:s + block] = np.sign(r) * np.minimum(np.round(y / sp) * sp, 448) * sig
        scales.append(sig)
    return out, np.array(scales)
# %% grade_id: gated_attention_output
def gated_attention_output(q, k, v, gate_logits, causal):
    z = q @ k.T / np.sqrt(q.shape[1])
    if causal:
        z = np.where(np.tri(*z.shape, dtype=bool), z, -np.inf)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return (p @ v) / (1.0 + np.exp(-gate_logits))
