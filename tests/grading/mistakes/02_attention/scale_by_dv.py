# bug: the scale uses the width of v, 1/sqrt(v.shape[-1]), which only differs from D when D_v != D
# part: attention
# %% grade_id: attention
def attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(v.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    m = np.max(scores, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(scores - m)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0) @ v
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
    terms = np.zeros_like(p)
    positive = p > 0
    terms[positive] = p[positive] * np.log(p[positive])
    return -terms.sum(axis=-1)
