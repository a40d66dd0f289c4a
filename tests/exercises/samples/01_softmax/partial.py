# Part 1 overflows (no max subtraction); Part 2 is right; Part 3 builds the Jacobian per row.
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=0
# %% grade_id: stable_softmax
def stable_softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    J = p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]
    return np.einsum("...i,...ij->...j", g, J)
