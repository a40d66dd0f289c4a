# A correct answer written differently: einsum, log-sum-exp with an explicit empty-row mask,
# the variance from the sums of squares, and the entropy through np.log of a clipped array.
# expect: test_attention=4, test_additive_scores=2, test_dot_product_stats=2, test_row_entropy=2
# %% grade_id: attention
def attention(q, k, v, mask=None):
    scores = np.einsum("...ld,...sd->...ls", q, k) / np.sqrt(q.shape[-1])
    allowed = np.ones(scores.shape, dtype=bool) if mask is None else np.broadcast_to(mask, scores.shape)
    filled = np.where(allowed, scores, -np.inf)
    has_key = allowed.any(axis=-1, keepdims=True)
    m = np.where(has_key, filled.max(axis=-1, keepdims=True, initial=-np.inf), 0.0)
    lse = m + np.log(np.where(has_key, np.exp(filled - m).sum(axis=-1, keepdims=True), 1.0))
    weights = np.where(allowed & has_key, np.exp(filled - lse), 0.0)
    return np.einsum("...ls,...sd->...ld", weights, v)
# %% grade_id: additive_scores
def additive_scores(q, k, w_q, w_k, w_a):
    hq = np.einsum("...ld,da->...la", q, w_q)
    hk = np.einsum("...sd,da->...sa", k, w_k)
    return np.einsum("...lsa,a->...ls", np.tanh(hq[..., :, None, :] + hk[..., None, :, :]), w_a)
# %% grade_id: dot_product_stats
def dot_product_stats(q, k):
    dots = (q * k).sum(axis=1)
    n = dots.size
    mean = dots.sum() / n
    var = ((dots - mean) ** 2).sum() / (n - 1)
    return (mean, var, var / q.shape[1])
# %% grade_id: row_entropy
def row_entropy(p):
    safe = np.clip(p, 1e-320, None)
    return -(p * np.log(safe)).sum(axis=-1)
