# bug: the outer product is indexed the wrong way, p_i (delta_ij - p_i) instead of p_i (delta_ij - p_j)
# part: softmax_jacobian
# %% grade_id: stable_softmax
def stable_softmax(x, axis=-1):
    x = np.asarray(x)
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return p[:, None] * (np.eye(len(p)) - p[:, None])
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    p, g = np.asarray(p), np.asarray(g)
    inner = np.sum(p * g, axis=-1, keepdims=True)
    return p * (g - inner)
