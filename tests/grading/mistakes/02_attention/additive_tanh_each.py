# bug: tanh is applied to each projection separately and the results added, w_a . (tanh(q W_q) + tanh(k W_k))
# part: additive_scores
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
    hq = np.tanh(q @ w_q) @ w_a          # (..., L)
    hk = np.tanh(k @ w_k) @ w_a          # (..., S)
    return hq[..., :, None] + hk[..., None, :]
# %% grade_id: dot_product_stats
def dot_product_stats(q, k):
    dots = np.einsum("nd,nd->n", q, k)
    scaled = dots / np.sqrt(q.shape[1])
    return (float(dots.mean()), float(dots.var(ddof=1)), float(scaled.var(ddof=1)))
# %% grade_id: row_entropy
def row_entropy(p):
    p = np.asarray(p, dtype=np.float64)
    terms = np.zeros_like(p)
    positive = p > 0
    terms[positive] = p[positive] * np.log(p[positive])
    return -terms.sum(axis=-1)
