# bug: every input is converted to float32 first, so float64 inputs lose digits against the 1e-9 contract
# part: stable_softmax
# %% grade_id: stable_softmax
def stable_softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float32)
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
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
