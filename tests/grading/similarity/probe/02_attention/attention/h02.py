# %% grade_id: attention
def _masked_softmax(scores, allowed):
    scores = np.where(allowed, scores, -np.inf)
    top = np.max(scores, axis=-1, keepdims=True)
    top = np.nan_to_num(top, neginf=0.0)
    ex = np.exp(scores - top)
    z = ex.sum(-1, keepdims=True)
    return np.divide(ex, z, out=np.zeros_like(ex), where=z != 0)


def attention(q, k, v, mask=None):
    scale = q.shape[-1] ** -0.5
    logits = np.einsum('...id,...jd->...ij', q, k) * scale
    if mask is None:
        mask = np.ones(logits.shape, dtype=bool)
    return np.einsum('...ij,...jd->...id', _masked_softmax(logits, mask), v)
