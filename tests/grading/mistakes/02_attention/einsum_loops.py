# honest: einsum everywhere, broadcasts the mask explicitly and treats fully masked rows with a separate boolean; float64 throughout; statistics from hand-written sums with a Python loop over the rows; entropy with np.log(..., out=, where=)
# part: none
# %% grade_id: attention
def _rows_softmax(scores, allowed):
    # scores and allowed have the same shape (..., L, S)
    any_allowed = allowed.any(axis=-1, keepdims=True)
    safe = np.where(allowed, scores, -np.inf)
    top = np.where(any_allowed, safe.max(axis=-1, keepdims=True, initial=-np.inf), 0.0)
    ex = np.where(allowed, np.exp(np.where(allowed, safe - top, 0.0)), 0.0)
    denom = np.where(any_allowed, ex.sum(axis=-1, keepdims=True), 1.0)
    return ex / denom


def attention(q, k, v, mask=None):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    scores = np.einsum("...ld,...sd->...ls", q, k) / np.sqrt(q.shape[-1])
    if mask is None:
        allowed = np.ones(scores.shape, dtype=bool)
    else:
        allowed = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    w = _rows_softmax(scores, allowed)
    return np.einsum("...ls,...sv->...lv", w, v)
# %% grade_id: additive_scores
def additive_scores(q, k, w_q, w_k, w_a):
    projected_q = np.einsum("...ld,da->...la", q, w_q)
    projected_k = np.einsum("...sd,da->...sa", k, w_k)
    both = np.expand_dims(projected_q, -2) + np.expand_dims(projected_k, -3)
    return np.einsum("...lsa,a->...ls", np.tanh(both), w_a)
# %% grade_id: dot_product_stats
def dot_product_stats(q, k):
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    n, D = q.shape
    dots = np.empty(n)
    for r in range(n):
        dots[r] = q[r] @ k[r]
    mean = dots.sum() / n
    var = ((dots - mean) ** 2).sum() / (n - 1)
    scaled = dots / D ** 0.5
    scaled_mean = scaled.sum() / n
    scaled_var = ((scaled - scaled_mean) ** 2).sum() / (n - 1)
    return float(mean), float(var), float(scaled_var)
# %% grade_id: row_entropy
LOG_BASE = np.e


def row_entropy(p):
    p = np.array(p, dtype=np.float64)
    ln_p = np.zeros_like(p)
    np.log(p, out=ln_p, where=p > 0)
    nats = -(p * ln_p).sum(axis=-1)
    return nats / np.log(LOG_BASE)
