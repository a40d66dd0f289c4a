# bug: bytes_per_elem is only honoured when it is 8; any other value is counted as 4 bytes (float32)
# part: attention_costs
# %% grade_id: chunked_attention
def chunked_attention(q, k, v, chunk_size, mask=None):
    L, D = q.shape[-2], q.shape[-1]
    k_t = np.swapaxes(k, -1, -2)
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    out = np.zeros(lead + (L, v.shape[-1]), dtype=np.result_type(q, k, v))
    for i0 in range(0, L, chunk_size):
        i1 = min(i0 + chunk_size, L)
        scores = q[..., i0:i1, :] @ k_t / np.sqrt(D)
        if mask is not None:
            scores = np.where(mask[i0:i1], scores, -np.inf)
        top = scores.max(axis=-1, keepdims=True)
        e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
        total = e.sum(axis=-1, keepdims=True)
        out[..., i0:i1, :] = (e / np.where(total > 0, total, 1.0)) @ v
    return out
# %% grade_id: linear_attention
def _phi(x):
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def linear_attention(q, k, v):
    fq, fk = _phi(q), _phi(k)
    summary = np.swapaxes(fk, -1, -2) @ v            # (..., D, D_v)
    z = fk.sum(axis=-2)                              # (..., D)
    numerator = fq @ summary                         # (..., L, D_v)
    denominator = fq @ z[..., :, None]               # (..., L, 1)
    return numerator / denominator
# %% grade_id: causal_linear_attention
def _phi_causal(x):
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def causal_linear_attention(q, k, v):
    fq, fk = _phi_causal(q), _phi_causal(k)
    L, D, D_v = q.shape[-2], q.shape[-1], v.shape[-1]
    lead = q.shape[:-2]
    state = np.zeros(lead + (D, D_v))
    z = np.zeros(lead + (D,))
    out = np.empty(lead + (L, D_v))
    for t in range(L):
        state += fk[..., t, :, None] * v[..., t, None, :]
        z += fk[..., t, :]
        num = np.einsum("...d,...de->...e", fq[..., t, :], state)
        den = np.einsum("...d,...d->...", fq[..., t, :], z)
        out[..., t, :] = num / den[..., None]
    return out
# %% grade_id: decode_step_window
def decode_step_window(q_t, k_cache, v_cache, length, window):
    start = max(0, length - window)
    k_win, v_win = k_cache[..., start:length, :], v_cache[..., start:length, :]
    scores = q_t @ np.swapaxes(k_win, -1, -2) / np.sqrt(q_t.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v_win
# %% grade_id: attention_costs
def attention_costs(ns, d, bytes_per_elem=4):
    size = 8 if bytes_per_elem == 8 else 4          # float32 unless double precision is asked
    rows = [[4 * n * n * d, 4 * n * d * (d + 1), n * n * size] for n in ns]
    return np.array(rows, dtype=np.int64).reshape(-1, 3)
