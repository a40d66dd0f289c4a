# honest: works in float64 throughout, flattens the leading axes to one batch axis and reshapes back, uses einsum, a cumulative-sum form of the causal recurrence (the (..., L, D, D_v) array the task allows), a boolean window mask instead of slicing the cache, and closed-form FLOP formulas
# part: none
# %% grade_id: chunked_attention
def _flat(a):
    a = np.asarray(a, dtype=np.float64)
    return a.reshape((-1,) + a.shape[-2:])


def chunked_attention(q, k, v, chunk_size, mask=None):
    lead, L = q.shape[:-2], q.shape[-2]
    Q, K, V = _flat(q), _flat(k), _flat(v)
    result = np.empty((Q.shape[0], L, V.shape[-1]))
    starts = list(range(0, L, chunk_size))
    for i0 in starts:
        rows = slice(i0, min(i0 + chunk_size, L))
        s = np.einsum("bid,bjd->bij", Q[:, rows], K) / np.sqrt(Q.shape[-1])
        allowed = np.ones(s.shape[1:], dtype=bool) if mask is None else np.asarray(mask)[rows]
        s = np.where(allowed, s, -np.inf)
        has_key = allowed.any(axis=-1)[None, :, None]
        top = np.where(has_key, s.max(axis=-1, keepdims=True), 0.0)
        w = np.exp(s - top)
        w /= np.where(has_key, w.sum(axis=-1, keepdims=True), 1.0)
        result[:, rows] = np.einsum("bij,bjv->biv", w, V)
    return result.reshape(lead + (L, V.shape[-1]))
# %% grade_id: linear_attention
def elu_plus_one(x):
    x = np.asarray(x, dtype=np.float64)
    out = np.exp(np.clip(x, None, 0.0))   # e^x for x <= 0
    positive = x > 0
    out[positive] = x[positive] + 1.0
    return out


def linear_attention(q, k, v):
    fq, fk = elu_plus_one(q), elu_plus_one(k)
    v = np.asarray(v, dtype=np.float64)
    summary = np.einsum("...sd,...sv->...dv", fk, v)
    normaliser = np.einsum("...sd->...d", fk)
    top = np.einsum("...ld,...dv->...lv", fq, summary)
    bottom = np.einsum("...ld,...d->...l", fq, normaliser)
    return top / bottom[..., None]
# %% grade_id: causal_linear_attention
def causal_linear_attention(q, k, v):
    fq, fk = elu_plus_one(q), elu_plus_one(k)
    v = np.asarray(v, dtype=np.float64)
    S = np.cumsum(np.einsum("...ld,...lv->...ldv", fk, v), axis=-3)   # S_t for every t
    z = np.cumsum(fk, axis=-2)                                         # z_t for every t
    top = np.einsum("...ld,...ldv->...lv", fq, S)
    bottom = np.einsum("...ld,...ld->...l", fq, z)
    return top / bottom[..., None]
# %% grade_id: decode_step_window
def decode_step_window(q_t, k_cache, v_cache, length, window):
    positions = np.arange(length)                 # only the filled part of the cache
    inside = positions >= length - window
    k_used = np.asarray(k_cache[..., :length, :], dtype=np.float64)
    v_used = np.asarray(v_cache[..., :length, :], dtype=np.float64)
    s = np.einsum("...id,...jd->...ij", np.asarray(q_t, dtype=np.float64), k_used) / np.sqrt(q_t.shape[-1])
    s = np.where(inside, s, -np.inf)
    s -= s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    return np.einsum("...ij,...jv->...iv", w / w.sum(axis=-1, keepdims=True), v_used)
# %% grade_id: attention_costs
def attention_costs(ns, d, bytes_per_elem=4):
    table = np.zeros((len(ns), 3), dtype=np.int64)
    for row, n in enumerate(ns):
        table[row, 0] = 4 * n * n * d                 # two (n, d)-by-(d, n)-sized products
        table[row, 1] = 4 * n * d * d + 4 * n * d     # two d x d products, two with a vector
        table[row, 2] = n * n * bytes_per_elem
    return table
