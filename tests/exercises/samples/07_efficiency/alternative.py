# Correct answers written differently: log-sum-exp and einsum, cumulative sums for the causal form,
# an explicit index list for the window, float counts.
# expect: test_chunked_attention=3, test_linear_attention=2, test_causal_linear_attention=3, test_decode_step_window=2, test_attention_costs=2
# %% grade_id: chunked_attention
def chunked_attention(q, k, v, chunk_size, mask=None):
    L, D = q.shape[-2], q.shape[-1]
    pieces = []
    start = 0
    while start < L:
        stop = min(start + chunk_size, L)
        s = np.einsum("...id,...jd->...ij", q[..., start:stop, :], k) / np.sqrt(D)
        if mask is not None:
            s = np.where(mask[start:stop, :], s, -np.inf)
        top = s.max(axis=-1, keepdims=True)
        top[~np.isfinite(top)] = 0.0
        e = np.exp(s - top)
        norm = e.sum(axis=-1, keepdims=True)
        norm[norm == 0] = 1.0
        pieces.append(np.einsum("...ij,...jv->...iv", e / norm, v))
        start = stop
    return np.concatenate(pieces, axis=-2)
# %% grade_id: linear_attention
def elu_plus_one(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0))) + 1.0

def linear_attention(q, k, v):
    fq, fk = elu_plus_one(q), elu_plus_one(k)
    summary = np.einsum("...sd,...sv->...dv", fk, v)
    norm = np.einsum("...ld,...d->...l", fq, fk.sum(axis=-2))
    return np.einsum("...ld,...dv->...lv", fq, summary) / norm[..., None]
# %% grade_id: causal_linear_attention
def causal_linear_attention(q, k, v):
    fq = np.where(q > 0, q, np.expm1(np.minimum(q, 0))) + 1.0
    fk = np.where(k > 0, k, np.expm1(np.minimum(k, 0))) + 1.0
    S = np.cumsum(fk[..., :, :, None] * v[..., :, None, :], axis=-3)  # (..., L, D, D_v)
    z = np.cumsum(fk, axis=-2)  # (..., L, D)
    num = np.einsum("...ld,...ldv->...lv", fq, S)
    den = np.einsum("...ld,...ld->...l", fq, z)
    return num / den[..., None]
# %% grade_id: decode_step_window
def decode_step_window(q_t, k_cache, v_cache, length, window):
    idx = np.arange(max(0, length - window), length)
    k = np.take(k_cache, idx, axis=-2)
    v = np.take(v_cache, idx, axis=-2)
    s = np.einsum("...id,...jd->...ij", q_t, k) / np.sqrt(q_t.shape[-1])
    lse = s.max(axis=-1, keepdims=True)
    lse = lse + np.log(np.exp(s - lse).sum(axis=-1, keepdims=True))
    return np.exp(s - lse) @ v
# %% grade_id: attention_costs
def attention_costs(ns, d, bytes_per_elem=4):
    n = np.asarray(ns, dtype=np.float64)[:, None]
    return np.hstack([4 * n**2 * d, 4 * n * d * (d + 1), n**2 * bytes_per_elem])
