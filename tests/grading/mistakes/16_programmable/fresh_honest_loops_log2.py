# honest: positions as q_idx + offset with ufuncs, tiles by a double loop, MoBA ranked with np.lexsort, the FP8 exponent from np.log2 on the nonzero entries, the sigmoid as exp(-logaddexp(0, -g))
# part: none
# %% grade_id: sink_window_mod
def sink_window_mod(b, h, q_idx, kv_idx, n_sink, window, offset=0):
    position = np.add(q_idx, offset)
    causal = np.less_equal(kv_idx, position)
    keep = np.logical_or(np.less(kv_idx, n_sink), np.greater(kv_idx, position - window))
    return np.logical_and(causal, keep)
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
            allowed = int(np.count_nonzero(tile))
            if allowed == 0:
                continue
            kinds[a, c] = 2 if allowed == tile.size else 1
            computed += tile.size
    return kinds, int(computed)
# %% grade_id: moba_selection
def moba_selection(q, k, block, top_k):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    L = q.shape[0]
    n_blocks = -(-L // block)
    means = np.zeros((n_blocks, k.shape[1]))
    for c in range(n_blocks):
        means[c] = np.mean(k[c * block:(c + 1) * block], axis=0)
    reads = np.zeros((L, L), dtype=bool)
    for t in range(L):
        own = t // block
        reads[t, own * block:t + 1] = True
        if own == 0 or top_k <= 1:
            continue
        scores = np.array([float(np.dot(q[t], means[c])) for c in range(own)])
        # lexsort: last key is primary -> highest score first, then lowest block index
        order = np.lexsort((np.arange(own), -scores))
        for c in order[:top_k - 1]:
            reads[t, c * block:(c + 1) * block] = True
    return reads
# %% grade_id: fp8_quantize_blocks
def _e4m3_round(y):
    a = np.minimum(np.abs(y), 448.0)
    e = np.full(a.shape, -6.0)
    nz = a > 0
    e[nz] = np.maximum(np.floor(np.log2(a[nz])), -6.0)
    spacing = 2.0 ** (e - 3.0)
    r = np.minimum(np.round(a / spacing) * spacing, 448.0)
    return np.where(y < 0, -r, r)


def fp8_quantize_blocks(x, block):
    x = np.array(x, dtype=np.float64)
    n = x.shape[0]
    starts = list(range(0, n, block))
    x_hat = np.zeros_like(x)
    scales = np.ones(len(starts))
    for b, s in enumerate(starts):
        rows = x[s:s + block]
        amax = np.max(np.abs(rows)) if rows.size else 0.0
        if amax > 0:
            scales[b] = amax / 448.0
        x_hat[s:s + block] = _e4m3_round(rows / scales[b]) * scales[b]
    return x_hat, scales
# %% grade_id: gated_attention_output
def gated_attention_output(q, k, v, gate_logits, causal):
    q, k, v, g = (np.asarray(a, dtype=np.float64) for a in (q, k, v, gate_logits))
    z = (q @ k.T) / np.sqrt(q.shape[1])
    if causal:
        z = np.where(np.tri(z.shape[0], z.shape[1], dtype=bool), z, -np.inf)
    lse = np.max(z, axis=1, keepdims=True)
    lse = lse + np.log(np.sum(np.exp(z - lse), axis=1, keepdims=True))
    y = np.exp(z - lse) @ v
    return y * np.exp(-np.logaddexp(0.0, -g))
