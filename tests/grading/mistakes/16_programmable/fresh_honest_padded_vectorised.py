# honest: the mask as the complement of the keys between the sinks and the window, tiles by padding the mask (with True for "full", with False for "non-empty") and one reshape, MoBA ranked for all queries at once, FP8 for all rows at once with the scales repeated per row, the sigmoid from exp(-|g|), einsum products
# part: none
# %% grade_id: sink_window_mod
def sink_window_mod(b, h, q_idx, kv_idx, n_sink, window, offset=0):
    pos = q_idx + offset
    evicted = (kv_idx >= n_sink) & (kv_idx <= pos - window)
    return (kv_idx <= pos) & ~evicted
# %% grade_id: block_mask_kinds
def block_mask_kinds(mask, block_q, block_k):
    m = np.asarray(mask, dtype=bool)
    L, S = m.shape
    n_q, n_k = -(-L // block_q), -(-S // block_k)
    pad = ((0, n_q * block_q - L), (0, n_k * block_k - S))
    full = np.pad(m, pad, constant_values=True).reshape(n_q, block_q, n_k, block_k).all(axis=(1, 3))
    some = np.pad(m, pad, constant_values=False).reshape(n_q, block_q, n_k, block_k).any(axis=(1, 3))
    kinds = some.astype(np.int64) + full.astype(np.int64)
    rows = np.minimum(block_q, L - block_q * np.arange(n_q))
    cols = np.minimum(block_k, S - block_k * np.arange(n_k))
    computed = int(np.einsum("a,c,ac->", rows, cols, some.astype(np.int64)))
    return kinds, computed
# %% grade_id: moba_selection
def moba_selection(q, k, block, top_k):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    L = q.shape[0]
    n = -(-L // block)
    block_of = np.arange(L) // block
    sums = np.zeros((n, k.shape[1]))
    np.add.at(sums, block_of, k)
    means = sums / np.bincount(block_of, minlength=n)[:, None]
    scores = np.einsum("td,cd->tc", q, means)
    own = block_of[:, None]
    earlier = np.arange(n)[None, :] < own
    ranked = np.argsort(np.where(earlier, -scores, np.inf), axis=1, kind="stable")
    rank = np.empty_like(ranked)
    np.put_along_axis(rank, ranked, np.arange(n)[None, :].repeat(L, axis=0), axis=1)
    chosen = earlier & (rank < top_k - 1)                     # (L, n) blocks chosen
    t, j = np.arange(L)[:, None], np.arange(L)[None, :]
    causal_own = (block_of[None, :] == own) & (j <= t)
    return chosen[:, block_of] | causal_own
# %% grade_id: fp8_quantize_blocks
def fp8_quantize_blocks(x, block):
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    n_b = -(-n // block)
    which = np.arange(n) // block
    amax = np.zeros(n_b)
    np.maximum.at(amax, which, np.abs(x).max(axis=1, initial=0.0))
    scales = np.where(amax > 0, amax / 448.0, 1.0)
    y = x / scales[which][:, None]
    mag = np.minimum(np.abs(y), 448.0)
    e = np.frexp(mag)[1] - 1
    step = np.exp2(np.maximum(e, -6) - 3).astype(np.float64)
    q = np.minimum(np.rint(mag / step) * step, 448.0)
    return np.sign(y) * q * scales[which][:, None], scales
# %% grade_id: gated_attention_output
def gated_attention_output(q, k, v, gate_logits, causal):
    q, k, v, g = (np.asarray(a, dtype=np.float64) for a in (q, k, v, gate_logits))
    z = np.einsum("id,jd->ij", q, k) * (1.0 / np.sqrt(q.shape[-1]))
    if causal:
        z[np.triu_indices(z.shape[0], 1, z.shape[1])] = -np.inf
    w = np.exp(z - z.max(axis=1, keepdims=True))
    y = np.einsum("ij,jc->ic", w, v) / w.sum(axis=1)[:, None]
    e = np.exp(-np.abs(g))
    gate = np.where(g >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return y * gate
