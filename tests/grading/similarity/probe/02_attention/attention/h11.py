# %% grade_id: attention
def attention(q, k, v, mask=None):
    scores = (q @ np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])
    allowed = np.broadcast_to(True if mask is None else mask, scores.shape)
    scores = np.where(allowed, scores, -np.inf)
    weights = np.zeros_like(scores)
    live = allowed.any(axis=-1)          # rows with at least one key
    sub = scores[live]                   # (number of live rows, S)
    sub = np.exp(sub - sub.max(axis=-1, keepdims=True))
    weights[live] = sub / sub.sum(axis=-1, keepdims=True)
    return weights @ v
