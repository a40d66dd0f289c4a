# bug: top_k earlier blocks are chosen besides the query's own block, instead of top_k - 1
# part: moba_selection
# %% grade_id: sink_window_mod
def sink_window_mod(b, h, q_idx, kv_idx, n_sink, window, offset=0):
    i = q_idx + offset
    return (kv_idx <= i) & ((kv_idx < n_sink) | (kv_idx > i - window))
# %% grade_id: block_mask_kinds
def block_mask_kinds(mask, block_q, block_k):
    mask = np.asarray(mask, dtype=bool)
    L, S = mask.shape
    n_q, n_k = -(-L // block_q), -(-S // block_k)
    kinds = np.zeros((n_q, n_k), dtype=np.int64)
    computed = 0
    for a in range(n_q):
        for c in range(n_k):
            tile = mask[a * block_q:(a + 1) * block_q, c * block_k:(c + 1) * block_k]
            if tile.all():
                kinds[a, c] = 2
            elif tile.any():
                kinds[a, c] = 1
            if kinds[a, c] > 0:
                computed += tile.shape[0] * tile.shape[1]
    return kinds, computed
# %% grade_id: moba_selection
def moba_selection(q, k, block, top_k):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    L = q.shape[0]
    n_blocks = -(-L // block)
    means = np.stack([k[c * block:(c + 1) * block].mean(axis=0) for c in range(n_blocks)])
    selected = np.zeros((L, L), dtype=bool)
    for t in range(L):
        own = t // block
        selected[t, own * block:t + 1] = True
        if own > 0:
            scores = means[:own] @ q[t]
            best = np.argsort(-scores, kind="stable")[:top_k]
            for c in best:
                selected[t, c * block:(c + 1) * block] = True
    return selected
# %% grade_id: fp8_quantize_blocks
def fp8_quantize_blocks(x, block):
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    n_blocks = -(-n // block)
    x_hat = np.empty_like(x)
    scales = np.empty(n_blocks)
    for b in range(n_blocks):
        rows = x[b * block:(b + 1) * block]
        amax = np.abs(rows).max()
        sigma = amax / 448.0 if amax > 0 else 1.0
        y = rows / sigma
        a = np.minimum(np.abs(y), 448.0)
        _, e = np.frexp(a)
        spacing = np.ldexp(1.0, np.maximum(e - 1, -6) - 3)
        r = np.minimum(np.round(a / spacing) * spacing, 448.0)
        x_hat[b * block:(b + 1) * block] = np.copysign(r, y) * sigma
        scales[b] = sigma
    return x_hat, scales
# %% grade_id: gated_attention_output
def gated_attention_output(q, k, v, gate_logits, causal):
    q, k, v, g = (np.asarray(a, dtype=np.float64) for a in (q, k, v, gate_logits))
    z = q @ k.T / np.sqrt(q.shape[1])
    if causal:
        z = np.where(np.tril(np.ones(z.shape, dtype=bool)), z, -np.inf)
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p = p / p.sum(axis=1, keepdims=True)
    gate = 0.5 * (1.0 + np.tanh(0.5 * g))
    return (p @ v) * gate
