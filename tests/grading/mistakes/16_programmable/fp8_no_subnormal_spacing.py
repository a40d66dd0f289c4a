# bug: FP8 rounding uses the spacing 2^(e-3) for every exponent, ignoring that below 2^-6 the spacing stays 2^-9 (subnormals are rounded too finely)
# part: fp8_quantize_blocks
# %% grade_id: sink_window_mod
def sink_window_mod(b, h, q_idx, kv_idx, n_sink, window, offset=0):
    i = q_idx + offset
    return (kv_idx <= i) & ((kv_idx < n_sink) | (kv_idx > i - window))
# %% grade_id: block_mask_kinds
def block_mask_kinds(mask, block_q, block_k):
    mask = np.asarray(mask, dtype=bool)
    L, S = mask.shape
    nq, nk = -(-L // block_q), -(-S // block_k)
    kinds = np.zeros((nq, nk), dtype=np.int64)
    computed = 0
    for a in range(nq):
        for c in range(nk):
            tile = mask[a * block_q:(a + 1) * block_q, c * block_k:(c + 1) * block_k]
            if tile.all():
                kinds[a, c] = 2
            elif tile.any():
                kinds[a, c] = 1
            if kinds[a, c] > 0:
                computed += tile.size
    return kinds, int(computed)
# %% grade_id: moba_selection
def moba_selection(q, k, block, top_k):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    L = q.shape[0]
    nb = -(-L // block)
    kbar = np.stack([k[c * block:(c + 1) * block].mean(axis=0) for c in range(nb)]) if nb else np.zeros((0, k.shape[1]))
    scores = q @ kbar.T
    sel = np.zeros((L, L), dtype=bool)
    for t in range(L):
        own = t // block
        sel[t, own * block:t + 1] = True
        earlier = np.arange(own)
        order = earlier[np.argsort(-scores[t, :own], kind="stable")][:max(top_k - 1, 0)]
        for c in order:
            sel[t, c * block:(c + 1) * block] = True
    return sel
# %% grade_id: fp8_quantize_blocks
def _fp8_round(y):
    a = np.abs(y)
    _, ex = np.frexp(a)
    e = ex - 1
    spacing = np.ldexp(1.0, e - 3)
    r = np.round(a / spacing) * spacing
    r = np.where(a == 0, 0.0, np.minimum(r, 448.0))
    return np.sign(y) * r


def fp8_quantize_blocks(x, block):
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    nb = -(-n // block)
    x_hat = np.zeros_like(x)
    scales = np.ones(nb)
    for b in range(nb):
        rows = slice(b * block, (b + 1) * block)
        amax = np.abs(x[rows]).max() if x[rows].size else 0.0
        sigma = amax / 448.0 if amax > 0 else 1.0
        scales[b] = sigma
        x_hat[rows] = sigma * _fp8_round(x[rows] / sigma)
    return x_hat, scales
# %% grade_id: gated_attention_output
def gated_attention_output(q, k, v, gate_logits, causal):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    g = np.asarray(gate_logits, dtype=np.float64)
    s = q @ k.T / math.sqrt(q.shape[1])
    if causal:
        L, S = s.shape
        s = np.where(np.tril(np.ones((L, S), dtype=bool)), s, -np.inf)
    s = s - s.max(axis=1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(axis=1, keepdims=True)
    e = np.exp(-np.abs(g))
    sig = np.where(g >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return (p @ v) * sig
