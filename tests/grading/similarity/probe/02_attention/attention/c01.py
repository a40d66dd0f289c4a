# %% grade_id: attention
def attention(q, k, v, mask=None):
    logits = np.matmul(q, np.moveaxis(k, -1, -2)) / np.sqrt(q.shape[-1])
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)
    hi = np.max(logits, axis=-1, keepdims=True)
    hi = np.where(hi == -np.inf, 0, hi)
    ex = np.exp(logits - hi)
    norm = ex.sum(axis=-1, keepdims=True)
    norm = np.where(norm == 0, 1, norm)
    return ex / norm @ v
