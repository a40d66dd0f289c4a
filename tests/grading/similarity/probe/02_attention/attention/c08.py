# %% grade_id: attention
def attention(q, k, v, mask=None):
    logits = q @ k.swapaxes(-1, -2) / q.shape[-1] ** 0.5
    allowed = np.ones(logits.shape, bool) if mask is None else np.broadcast_to(mask, logits.shape)
    # the row maximum over the allowed keys only (0 for a row without any)
    row_max = np.max(logits, axis=-1, keepdims=True, where=allowed, initial=-np.inf)
    row_max[np.isneginf(row_max)] = 0.0
    e = np.exp(logits - row_max, where=allowed, out=np.zeros_like(logits))
    s = e.sum(axis=-1, keepdims=True)
    return np.divide(e, s, out=np.zeros_like(e), where=s > 0) @ v
