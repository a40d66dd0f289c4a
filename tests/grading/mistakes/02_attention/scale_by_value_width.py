# bug: scales the scores by sqrt of the value width v.shape[-1] instead of the query/key width D
# part: attention
# %% grade_id: attention
def attention(q, k, v, mask=None):
    d_k = v.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    m = np.max(scores, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(scores - m)
    total = np.sum(e, axis=-1, keepdims=True)
    weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return weights @ v
# %% grade_id: additive_scores
def additive_scores(q, k, w_q, w_k, w_a):
    hq = q @ w_q  # (..., L, A)
    hk = k @ w_k  # (..., S, A)
    hidden = np.tanh(hq[..., :, None, :] + hk[..., None, :, :])  # (..., L, S, A)
    return hidden @ w_a
# %% grade_id: dot_product_stats
def dot_product_stats(q, k):
    dots = np.sum(q * k, axis=1)  # one dot product per row, no (n, n) matrix
    D = q.shape[1]
    mean = np.mean(dots)
    var = np.var(dots, ddof=1)
    scaled_var = np.var(dots / np.sqrt(D), ddof=1)
    return float(mean), float(var), float(scaled_var)
# %% grade_id: row_entropy
def row_entropy(p):
    p = np.asarray(p, dtype=np.float64)
    base = np.e  # my base: natural log, nats
    logs = np.log(np.where(p > 0, p, 1.0))  # log 1 = 0 where p = 0, so 0 log 0 = 0
    return -np.sum(p * logs, axis=-1) / np.log(base)
