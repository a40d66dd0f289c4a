# %% grade_id: attention
def attention(q, k, v, mask=None):
    logits = (q @ np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])
    ok = np.broadcast_to(True if mask is None else mask, logits.shape)
    logits = np.where(ok, logits, -np.inf)
    probs = np.zeros_like(logits)
    has_any = ok.any(axis=-1)
    chosen = logits[has_any]
    chosen = np.exp(chosen - chosen.max(axis=-1, keepdims=True))
    probs[has_any] = chosen / chosen.sum(axis=-1, keepdims=True)
    return probs @ v
