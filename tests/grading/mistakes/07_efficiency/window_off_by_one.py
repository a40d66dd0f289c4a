# bug: starts the window at length - window - 1, so the token attends to itself and `window` earlier tokens (window + 1 in all)
# part: decode_step_window
# %% grade_id: chunked_attention
def chunked_attention(q, k, v, chunk_size, mask=None):
    L, D = q.shape[-2], q.shape[-1]
    s = 1.0 / np.sqrt(D)
    kT = np.swapaxes(k, -1, -2)
    out = np.zeros(q.shape[:-2] + (L, v.shape[-1]), dtype=np.result_type(q, k, v))
    for i0 in range(0, L, chunk_size):
        i1 = min(i0 + chunk_size, L)
        scores = (q[..., i0:i1, :] @ kT) * s            # (..., chunk, S)
        if mask is not None:
            scores = np.where(mask[i0:i1], scores, -np.inf)
        m = np.max(scores, axis=-1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        e = np.exp(scores - m)
        total = np.sum(e, axis=-1, keepdims=True)
        total = np.where(total > 0, total, 1.0)
        out[..., i0:i1, :] = (e / total) @ v
    return out
# %% grade_id: linear_attention
def linear_attention(q, k, v):
    def phi(x):
        return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))

    fq, fk = phi(q), phi(k)
    kv = np.swapaxes(fk, -1, -2) @ v          # (..., D, D_v)
    z = np.sum(fk, axis=-2)[..., :, None]      # (..., D, 1) = phi(K)^T 1
    return (fq @ kv) / (fq @ z)
# %% grade_id: causal_linear_attention
def causal_linear_attention(q, k, v):
    def phi(x):
        return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))

    fq, fk = phi(q), phi(k)
    L = q.shape[-2]
    D, D_v = q.shape[-1], v.shape[-1]
    state = np.zeros(q.shape[:-2] + (D, D_v), dtype=np.result_type(q, k, v))
    norm = np.zeros(q.shape[:-2] + (D,), dtype=state.dtype)
    out = np.zeros(q.shape[:-2] + (L, D_v), dtype=state.dtype)
    for t in range(L):
        state += fk[..., t, :, None] * v[..., t, None, :]   # S_t = S_{t-1} + phi(k_t) v_t^T
        norm += fk[..., t, :]                               # z_t = z_{t-1} + phi(k_t)
        num = np.einsum("...d,...de->...e", fq[..., t, :], state)
        den = np.sum(fq[..., t, :] * norm, axis=-1, keepdims=True)
        out[..., t, :] = num / den
    return out
# %% grade_id: decode_step_window
def decode_step_window(q_t, k_cache, v_cache, length, window):
    start = max(0, length - 1 - window)   # the window tokens before the newest one
    k_win = k_cache[..., start:length, :]
    v_win = v_cache[..., start:length, :]
    scores = q_t @ np.swapaxes(k_win, -1, -2) / np.sqrt(q_t.shape[-1])
    scores = scores - np.max(scores, axis=-1, keepdims=True)
    w = np.exp(scores)
    w = w / np.sum(w, axis=-1, keepdims=True)
    return w @ v_win
# %% grade_id: attention_costs
def attention_costs(ns, d, bytes_per_elem=4):
    rows = []
    for n in ns:
        n, d_ = int(n), int(d)
        softmax_flops = 2 * n * d_ * n + 2 * n * n * d_            # Q K^T and P V
        linear_flops = (2 * d_ * n * d_ + 2 * d_ * n * 1            # phi(K)^T V and phi(K)^T 1
                        + 2 * n * d_ * d_ + 2 * n * d_ * 1)         # phi(Q)(.) and phi(Q)(.)
        memory = n * n * int(bytes_per_elem)
        rows.append([softmax_flops, linear_flops, memory])
    return np.array(rows, dtype=np.int64).reshape(len(ns), 3)
