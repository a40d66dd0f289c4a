# %% grade_id: attention
def attention(q, k, v, mask=None):
    scale = q.shape[-1] ** -0.5
    logits = np.einsum('...id,...jd->...ij', q, k) * scale
    if mask is None:
        mask = np.ones(logits.shape, dtype=bool)
    logits = np.where(mask, logits, -np.inf)
    top = np.max(logits, axis=-1, keepdims=True)
    top = np.nan_to_num(top, neginf=0.0)
    ex = np.exp(logits - top)
    z = ex.sum(-1, keepdims=True)
    w = np.divide(ex, z, out=np.zeros_like(ex), where=z != 0)
    return np.einsum('...ij,...jd->...id', w, v)
