# bug: the maximum is always taken along the last axis while the sum uses the axis argument
# part: stable_softmax
# %% grade_id: stable_softmax
def stable_softmax(x, axis=-1):
    x = np.asarray(x)
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    p, g = np.asarray(p), np.asarray(g)
    inner = np.sum(p * g, axis=-1, keepdims=True)
    return p * (g - inner)
