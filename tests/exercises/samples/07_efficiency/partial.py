# Part 1 builds the whole score matrix; Part 3 masks an (L, L) kernel matrix (right values, too
# much memory); Part 5 counts linear attention as O(nd). Parts 2 and 4 are right.
# expect: test_chunked_attention=0, test_linear_attention=2, test_causal_linear_attention=0, test_decode_step_window=2, test_attention_costs=0
# %% grade_id: chunked_attention
def chunked_attention(q, k, v, chunk_size, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    t = e.sum(axis=-1, keepdims=True)
    return (e / np.where(t > 0, t, 1.0)) @ v
# %% grade_id: linear_attention
def linear_attention(q, k, v):
    fq = np.where(q > 0, q + 1.0, np.exp(np.minimum(q, 0.0)))
    fk = np.where(k > 0, k + 1.0, np.exp(np.minimum(k, 0.0)))
    return (fq @ (np.swapaxes(fk, -1, -2) @ v)) / (fq @ fk.sum(axis=-2)[..., None])
# %% grade_id: causal_linear_attention
def causal_linear_attention(q, k, v):
    fq = np.where(q > 0, q + 1.0, np.exp(np.minimum(q, 0.0)))
    fk = np.where(k > 0, k + 1.0, np.exp(np.minimum(k, 0.0)))
    a = np.tril(fq @ np.swapaxes(fk, -1, -2))
    return (a / a.sum(axis=-1, keepdims=True)) @ v
# %% grade_id: decode_step_window
def decode_step_window(q_t, k_cache, v_cache, length, window):
    lo = max(0, length - window)
    s = q_t @ np.swapaxes(k_cache[..., lo:length, :], -1, -2) / np.sqrt(q_t.shape[-1])
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True) @ v_cache[..., lo:length, :]
# %% grade_id: attention_costs
def attention_costs(ns, d, bytes_per_elem=4):
    return np.array([[4 * n * n * d, 4 * n * d, n * n * bytes_per_elem] for n in ns])
