# Calling the reference through __import__ with a computed name (stock nbgrader did not notice).
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: flagged
# reason: __import__
# base: solution
# %% grade_id: stable_softmax
_lib = __import__("attn" + "math.soft" + "max", fromlist=["softmax"])

def stable_softmax(x, axis=-1):
    return _lib.softmax(x, axis=axis)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
