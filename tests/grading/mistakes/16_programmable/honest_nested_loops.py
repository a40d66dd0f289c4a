# honest: the mask function through np.logical_and/np.logical_or, tiles counted with reduceat-free nested loops over explicit bounds, MoBA scores per query with Python sorting on (-score, block), FP8 rounding through log2 and np.rint per block, sigmoid via np.logaddexp (log-sigmoid) and a float64 copy of everything
# part: none
# %% grade_id: sink_window_mod
def sink_window_mod(b, h, q_idx, kv_idx, n_sink, window, offset=0):
    pos = np.asarray(q_idx) + offset
    kv = np.asarray(kv_idx)
    causal = np.less_equal(kv, pos)
    in_sink = np.less(kv, n_sink)
    in_window = np.greater(kv, pos - window)
    return np.logical_and(causal, np.logical_or(in_sink, in_window))
# %% grade_id: block_mask_kinds
def block_mask_kinds(mask, block_q, block_k):
    m = np.array(mask, dtype=bool)
    L, S = m.shape
    rows = [(r, min(r + block_q, L)) for r in range(0, L, block_q)]
    cols = [(c, min(c + block_k, S)) for c in range(0, S, block_k)]
    kinds = np.zeros((len(rows), len(cols)), dtype=int)
    computed = 0
    for a, (r0, r1) in enumerate(rows):
        for c, (c0, c1) in enumerate(cols):
            allowed = int(m[r0:r1, c0:c1].sum())
            size = (r1 - r0) * (c1 - c0)
            if allowed == 0:
                continue
            kinds[a, c] = 2 if allowed == size else 1
            computed += size
    return kinds, computed
# %% grade_id: moba_selection
def moba_selection(q, k, block, top_k):
    q64 = np.array(q, dtype=np.float64)
    k64 = np.array(k, dtype=np.float64)
    L = q64.shape[0]
    starts = list(range(0, L, block))
    means = [k64[s0:s0 + block].mean(axis=0) for s0 in starts]
    chosen = np.zeros((L, L), dtype=bool)
    for t in range(L):
        own = t // block
        ranked = sorted(range(own), key=lambda c: (-float(q64[t] @ means[c]), c))
        for c in ranked[:top_k - 1]:
            chosen[t, starts[c]:starts[c] + block] = True
        chosen[t, starts[own]:t + 1] = True
    return chosen
# %% grade_id: fp8_quantize_blocks
def e4m3(y):
    out = np.zeros_like(y)
    nz = y != 0
    a = np.abs(y[nz])
    e = np.floor(np.log2(a))
    # log2 can be off by one ulp at exact powers of two: repair the exponent
    e = np.where(2.0 ** e > a, e - 1, e)
    e = np.where(2.0 ** (e + 1) <= a, e + 1, e)
    step = 2.0 ** (np.maximum(e, -6) - 3)
    out[nz] = np.sign(y[nz]) * np.minimum(np.rint(a / step) * step, 448.0)
    return out


def fp8_quantize_blocks(x, block):
    x = np.array(x, dtype=np.float64)
    n = x.shape[0]
    scales = []
    pieces = []
    for r0 in range(0, n, block):
        chunk = x[r0:r0 + block]
        peak = float(np.max(np.abs(chunk))) if chunk.size else 0.0
        sigma = peak / 448.0 if peak != 0.0 else 1.0
        scales.append(sigma)
        pieces.append(sigma * e4m3(chunk / sigma))
    x_hat = np.concatenate(pieces, axis=0) if pieces else x.copy()
    return x_hat, np.array(scales, dtype=np.float64)
# %% grade_id: gated_attention_output
def gated_attention_output(q, k, v, gate_logits, causal):
    q, k, v, g = (np.array(a, dtype=np.float64) for a in (q, k, v, gate_logits))
    L, D = q.shape
    S = k.shape[0]
    out = np.zeros((L, v.shape[1]))
    for i in range(L):
        scores = (k @ q[i]) / np.sqrt(D)
        if causal:
            scores = scores[:i + 1]
        w = np.exp(scores - scores.max())
        out[i] = (w / w.sum()) @ v[:len(scores)]
    gate = np.exp(-np.logaddexp(0.0, -g))    # sigmoid(g) = exp(-log(1 + e^{-g}))
    return out * gate
