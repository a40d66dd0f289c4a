# bug: casts every input to float32 'to be safe', so float64 inputs lose precision (about 1e-7 error against a 1e-9 tolerance)
# part: stable_softmax
# %% grade_id: stable_softmax
def stable_softmax(x, axis=-1):
    T = 1.0  # my temperature
    x = np.asarray(x).astype(np.float32)  # float16 is too small, float32 is enough for everything
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
    pg = np.sum(p * g, axis=-1, keepdims=True)
    return p * (g - pg) / T
