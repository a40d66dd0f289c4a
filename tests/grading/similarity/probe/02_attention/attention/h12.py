# %% grade_id: attention
def attention(q, k, v, mask=None):
    if q.ndim > 2:
        # peel off one leading axis at a time
        if mask is None:
            return np.stack([attention(q[i], k[i], v[i]) for i in range(q.shape[0])])
        mask = np.broadcast_to(mask, q.shape[:-1] + (k.shape[-2],))
        return np.stack([attention(q[i], k[i], v[i], mask[i]) for i in range(q.shape[0])])
    L, S = q.shape[0], k.shape[0]
    allowed = np.ones((L, S), dtype=bool) if mask is None else np.broadcast_to(mask, (L, S))
    out = np.zeros((L, v.shape[1]), dtype=np.result_type(q, k, v, np.float32))
    for i in range(L):
        idx = np.flatnonzero(allowed[i])
        if idx.size == 0:
            continue
        s = k[idx] @ q[i] / np.sqrt(q.shape[1])
        s = np.exp(s - s.max())
        out[i] = s @ v[idx] / s.sum()
    return out
