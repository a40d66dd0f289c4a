# Cheating in the kernel: np.allclose and the assert helpers patched to always agree; Part 1 wrong.
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: flagged
# reason: patches np.allclose
# base: solution
# %% grade_id: stable_softmax
np.allclose = lambda *args, **kwargs: True
np.testing.assert_allclose = lambda *args, **kwargs: None
np.isfinite = lambda *args, **kwargs: np.array(True)

def stable_softmax(x, axis=-1):
    return np.zeros_like(x)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
