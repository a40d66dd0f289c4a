# %% grade_id: attention
def attention(q, k, v, mask=None):
    D = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(D)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    m = np.max(scores, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(scores - m)
    total = e.sum(axis=-1, keepdims=True)
    return (e / np.where(total > 0, total, 1.0)) @ v
