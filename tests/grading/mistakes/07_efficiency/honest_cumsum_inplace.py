# honest: cumulative sums for the causal recurrence, in-place operations on the answer's own buffers, Python ints in an object-free int64 table
# part: none
# %% grade_id: chunked_attention
def chunked_attention(q, k, v, chunk_size, mask=None):
    scale = 1.0 / np.sqrt(q.shape[-1])
    pieces = []
    for start in range(0, q.shape[-2], chunk_size):
        block = np.einsum("...ld,...sd->...ls", q[..., start:start + chunk_size, :], k)
        block *= scale
        if mask is not None:
            block[..., ~mask[start:start + chunk_size]] = -np.inf
        top = block.max(axis=-1, keepdims=True)
        top[~np.isfinite(top)] = 0.0
        block -= top
        np.exp(block, out=block)
        total = block.sum(axis=-1, keepdims=True)
        total[total == 0] = 1.0
        block /= total
        pieces.append(block @ v)
    return np.concatenate(pieces, axis=-2)
# %% grade_id: linear_attention
def linear_attention(q, k, v):
    def feature(x):
        y = np.array(x, dtype=np.result_type(x, np.float32))
        negative = y <= 0
        y[~negative] += 1.0
        y[negative] = np.exp(y[negative])
        return y
    fq, fk = feature(q), feature(k)
    kv = np.einsum("...sd,...se->...de", fk, v)
    norm = np.einsum("...ld,...d->...l", fq, fk.sum(axis=-2))
    return np.einsum("...ld,...de->...le", fq, kv) / norm[..., None]
# %% grade_id: causal_linear_attention
def causal_linear_attention(q, k, v):
    def feature(x):
        return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))
    fq, fk = feature(q), feature(k)
    states = np.cumsum(fk[..., :, :, None] * v[..., :, None, :], axis=-3)    # (..., L, D, D_v)
    norms = np.cumsum(fk, axis=-2)                                          # (..., L, D)
    num = np.einsum("...ld,...lde->...le", fq, states)
    return num / np.einsum("...ld,...ld->...l", fq, norms)[..., None]
# %% grade_id: decode_step_window
def decode_step_window(q_t, k_cache, v_cache, length, window):
    keep = slice(max(length - window, 0), length)
    s = np.einsum("...qd,...sd->...qs", q_t, k_cache[..., keep, :]) / np.sqrt(q_t.shape[-1])
    s -= s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    w /= w.sum(axis=-1, keepdims=True)
    return np.einsum("...qs,...se->...qe", w, v_cache[..., keep, :])
# %% grade_id: attention_costs
def attention_costs(ns, d, bytes_per_elem=4):
    table = np.empty((len(ns), 3), dtype=np.int64)
    for row, n in enumerate(ns):
        n, d_ = int(n), int(d)
        table[row, 0] = 2 * (2 * n * n * d_)
        table[row, 1] = 2 * (2 * n * d_ * d_) + 2 * (2 * n * d_)
        table[row, 2] = n * n * int(bytes_per_elem)
    return table
