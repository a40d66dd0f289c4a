# bug: the three statistics are returned as a list [mean, var, scaled_var] instead of a tuple
# part: dot_product_stats
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
    dots = np.sum(q * k, axis=1)
    D = q.shape[1]
    return [np.mean(dots), np.var(dots, ddof=1), np.var(dots / np.sqrt(D), ddof=1)]
# %% grade_id: row_entropy
def row_entropy(p):
    p = np.asarray(p, dtype=np.float64)
    terms = np.zeros_like(p)
    positive = p > 0
    terms[positive] = p[positive] * np.log(p[positive])
    return -terms.sum(axis=-1)
