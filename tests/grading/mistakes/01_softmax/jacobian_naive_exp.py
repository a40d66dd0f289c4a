# bug: the Jacobian computes p with a plain exp(z)/sum(exp(z)) instead of the stable softmax, so logits of several hundred overflow to NaN
# part: softmax_jacobian
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
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z / T)
    p = e / e.sum()
    return (np.diag(p) - np.outer(p, p)) / T
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    T = 1.0  # my temperature
    pg = np.sum(p * g, axis=-1, keepdims=True)
    return p * (g - pg) / T
