# %% grade_id: attention
def attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2)
    scores = scores / np.sqrt(q.shape[-1])
    keep = np.broadcast_to(True if mask is None else mask, scores.shape)
    out = np.zeros(scores.shape[:-1] + (v.shape[-1],), dtype=np.result_type(scores, v))
    for idx in np.ndindex(*scores.shape[:-1]):       # idx = (..., query)
        allowed = keep[idx]
        if allowed.any():
            row = scores[idx][allowed]
            w = np.exp(row - np.max(row))
            w /= w.sum()
            out[idx] = w @ v[idx[:-1]][allowed]
    return out
