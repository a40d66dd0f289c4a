# bug: the VJP builds the (n, n) Jacobian of every row and multiplies by it: right values, but O(n^2) memory per row
# part: softmax_vjp
# %% grade_id: stable_softmax
def stable_softmax(x, axis=-1):
    T = 1.0  # my temperature
    x = np.asarray(x)
    if x.dtype == np.float16:
        x = x.astype(np.float32)  # do the arithmetic in float32
    z = x / T
    m = np.max(z, axis=axis, keepdims=True)
    e = np.exp(z - m)
    return e / np.sum(e, axis=axis, keepdims=True)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    T = 1.0  # my temperature
    z = np.asarray(z, dtype=np.float64) / T
    e = np.exp(z - z.max())
    p = e / e.sum()
    return (np.diag(p) - np.outer(p, p)) / T
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    T = 1.0  # my temperature
    n = p.shape[-1]
    # J = (diag(p) - p p^T) / T for every row at once, then J^T g
    J = (p[..., :, None] * np.eye(n) - p[..., :, None] * p[..., None, :]) / T
    return np.einsum("...ij,...i->...j", J, g)
