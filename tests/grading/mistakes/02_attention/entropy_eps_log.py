# bug: zeros are handled with np.log(p + 1e-9), which shifts every term by about 1e-9
# part: row_entropy
# %% grade_id: attention
def attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    m = np.max(scores, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(scores - m)
    total = e.sum(axis=-1, keepdims=True)
    weights = e / np.where(total > 0, total, 1.0)
    return weights @ v
# %% grade_id: additive_scores
def additive_scores(q, k, w_q, w_k, w_a):
    hq = q @ w_q                      # (..., L, A)
    hk = k @ w_k                      # (..., S, A)
    hidden = np.tanh(hq[..., :, None, :] + hk[..., None, :, :])
    return hidden @ w_a
# %% grade_id: dot_product_stats
def dot_product_stats(q, k):
    dots = np.einsum("nd,nd->n", q, k)
    scaled = dots / np.sqrt(q.shape[1])
    return (float(dots.mean()), float(dots.var(ddof=1)), float(scaled.var(ddof=1)))
# %% grade_id: row_entropy
def row_entropy(p):
    p = np.asarray(p, dtype=np.float64)
    return -(p * np.log(p + 1e-9)).sum(axis=-1)
