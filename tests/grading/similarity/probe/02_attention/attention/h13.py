# %% grade_id: attention
def attention(q, k, v, mask=None):
    scores = q @ k.swapaxes(-1, -2) / q.shape[-1] ** 0.5
    keep = np.ones(scores.shape, bool) if mask is None else np.broadcast_to(mask, scores.shape)
    top = np.max(scores, axis=-1, keepdims=True, where=keep, initial=-np.inf)
    top[np.isneginf(top)] = 0.0
    expo = np.exp(scores - top, where=keep, out=np.zeros_like(scores))
    norm = expo.sum(axis=-1, keepdims=True)
    return np.divide(expo, norm, out=np.zeros_like(expo), where=norm > 0) @ v
