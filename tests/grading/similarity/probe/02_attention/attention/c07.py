# %% grade_id: attention
def attention(q, k, v, mask=None):
    """Row by row: each query softmaxes over the keys its mask allows."""
    scores = q @ np.swapaxes(k, -1, -2)
    scores = scores / np.sqrt(q.shape[-1])
    keep = np.broadcast_to(True if mask is None else mask, scores.shape)
    out = np.zeros(scores.shape[:-1] + (v.shape[-1],), dtype=np.result_type(scores, v))
    for idx in np.ndindex(*scores.shape[:-1]):
        allowed = keep[idx]
        if allowed.any():
            row = scores[idx][allowed]
            top = max(row)
            w = [np.exp(x - top) for x in row]
            total = sum(w)
            vals = v[idx[:-1]][allowed]
            out[idx] = sum(wj / total * vj for wj, vj in zip(w, vals))
    return out
