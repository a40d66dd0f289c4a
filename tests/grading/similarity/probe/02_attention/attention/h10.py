# %% grade_id: attention
def attention(q, k, v, mask=None):
    # scores, then a numerically safe log-sum-exp per row
    s = np.einsum("...qd,...kd->...qk", q, k) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    mx = np.amax(s, axis=-1, keepdims=True)
    finite = np.isfinite(mx)
    mx = np.where(finite, mx, 0.0)
    lse = mx + np.log(np.sum(np.exp(s - mx), axis=-1, keepdims=True))
    p = np.where(finite, np.exp(s - np.where(finite, lse, 0.0)), 0.0)
    return np.einsum("...qk,...kd->...qd", p, v)
