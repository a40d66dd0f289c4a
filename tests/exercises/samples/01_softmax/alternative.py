# A correct answer written differently: log-sum-exp, einsum, float32 kept as float32.
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# %% grade_id: stable_softmax
def stable_softmax(x, axis=-1):
    x = np.asarray(x)
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    m = x.max(axis=axis, keepdims=True)
    lse = m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))
    return np.exp(x - lse)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    p = stable_softmax(z)
    return np.einsum("i,ij->ij", p, np.eye(len(p))) - np.einsum("i,j->ij", p, p)
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    return p * g - p * np.einsum("...i,...i->...", p, g)[..., None]
