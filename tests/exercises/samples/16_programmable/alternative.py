# A correct answer written differently: the mask as "causal and not in the gap between the sinks and
# the window", the tiles counted at once with np.add.reduceat, MoBA's blocks sorted by a key that
# breaks ties by index, the FP8 exponent from log2, and a sigmoid from exp(-|x|).
# expect: test_sink_window_mod=2, test_block_mask_kinds=3, test_moba_selection=3, test_fp8_quantize_blocks=3, test_gated_attention_output=2
# %% grade_id: sink_window_mod
def sink_window_mod(b, h, q_idx, kv_idx, n_sink, window, offset=0):
    i = q_idx + offset
    gap = (kv_idx >= n_sink) & (kv_idx <= i - window)
    return (kv_idx <= i) & ~gap
# %% grade_id: block_mask_kinds
def block_mask_kinds(mask, block_q, block_k):
    L, S = mask.shape
    rows, cols = np.arange(0, L, block_q), np.arange(0, S, block_k)
    counts = np.add.reduceat(np.add.reduceat(mask.astype(np.int64), rows, axis=0), cols, axis=1)
    sizes = np.outer(np.minimum(rows + block_q, L) - rows, np.minimum(cols + block_k, S) - cols)
    kinds = (counts > 0).astype(np.int64) + (counts == sizes)
    return kinds, int(sizes[counts > 0].sum())
# %% grade_id: moba_selection
def moba_selection(q, k, block, top_k):
    L = len(q)
    keys = np.zeros((L, L), dtype=bool)
    for t in range(L):
        own = t // block
        score = {c: float(q[t] @ k[c * block:(c + 1) * block].mean(axis=0)) for c in range(own)}
        for c in sorted(score, key=lambda c: (-score[c], c))[:top_k - 1]:
            keys[t, c * block:(c + 1) * block] = True
        keys[t, own * block:t + 1] = True
    return keys
# %% grade_id: fp8_quantize_blocks
def fp8_quantize_blocks(x, block):
    x = np.asarray(x, dtype=np.float64)
    pieces, scales = [], []
    for start in range(0, len(x), block):
        part = x[start:start + block]
        top = float(np.max(np.abs(part)))
        scale = top / 448.0 if top > 0 else 1.0
        y = np.abs(part) / scale
        e = np.floor(np.log2(np.where(y > 0, y, 1.0)))
        step = 2.0 ** (np.maximum(e, -6.0) - 3.0)
        pieces.append(np.sign(part) * np.minimum(np.round(y / step) * step, 448.0) * scale)
        scales.append(scale)
    return np.concatenate(pieces), np.asarray(scales)
# %% grade_id: gated_attention_output
def gated_attention_output(q, k, v, gate_logits, causal):
    scores = np.einsum("ld,sd->ls", q, k) / np.sqrt(q.shape[-1])
    if causal:
        scores[np.triu_indices(len(q), 1, scores.shape[1])] = -np.inf
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    e = np.exp(-np.abs(gate_logits))
    gate = np.where(gate_logits >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return w @ v * gate
