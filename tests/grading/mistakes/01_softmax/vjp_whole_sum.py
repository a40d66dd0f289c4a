# bug: the inner product p.g is summed over the whole batch instead of row by row
# part: softmax_vjp
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
    return np.diag(p) - np.outer(p, p)
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    p, g = np.asarray(p), np.asarray(g)
    return p * (g - np.sum(p * g))
