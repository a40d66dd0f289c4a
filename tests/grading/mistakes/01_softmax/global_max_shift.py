# bug: subtracts the maximum of the whole array (np.max(x) with no axis) instead of each row's own maximum, so a row far below the others underflows to 0/0
# part: stable_softmax
# %% grade_id: stable_softmax
def stable_softmax(x, axis=-1):
    T = 1.0  # my temperature
    x = np.asarray(x)
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    z = x / T
    z = z - np.max(z)  # shift invariance: any constant works
    e = np.exp(z)
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
    pg = np.sum(p * g, axis=-1, keepdims=True)
    return p * (g - pg) / T
