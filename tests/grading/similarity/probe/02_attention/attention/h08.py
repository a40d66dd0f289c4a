# %% grade_id: attention
def attention(q, k, v, mask=None):
    n_feat = q.shape[-1]
    logits = q @ np.swapaxes(k, -1, -2)
    logits /= np.sqrt(n_feat)
    if mask is None:
        mask = np.ones(logits.shape[-2:], dtype=bool)
    mask = np.broadcast_to(mask, logits.shape)
    logits[~mask] = -np.inf
    row_has_key = mask.any(axis=-1, keepdims=True)
    shift = np.where(row_has_key, logits.max(axis=-1, keepdims=True), 0.0)
    probs = np.exp(logits - shift)
    probs /= np.maximum(probs.sum(axis=-1, keepdims=True), np.finfo(probs.dtype).tiny)
    return probs @ v
