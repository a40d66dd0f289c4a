# honest: long-double (float128) intermediates, in-place work on the answer's own copies, the Jacobian from broadcasting
# part: none
# %% grade_id: stable_softmax
def stable_softmax(x, axis=-1):
    work = np.array(x, dtype=np.longdouble)      # a private copy in extended precision
    work -= work.max(axis=axis, keepdims=True)
    np.exp(work, out=work)
    work /= work.sum(axis=axis, keepdims=True)
    return work.astype(np.float64)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    p = stable_softmax(z)
    n = p.shape[0]
    J = -p[:, None] * p[None, :]
    J[np.arange(n), np.arange(n)] += p
    return J
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    out = np.array(g, dtype=np.float64)
    out -= np.einsum("...i,...i->...", p, g)[..., None]
    out *= p
    return out
