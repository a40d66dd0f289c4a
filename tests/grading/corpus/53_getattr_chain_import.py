# Calling the reference through a getattr chain on the builtins module with a name built from pieces.
# The reference does not exist in the sandbox's root, so the call fails; flagged for __import__.
# kind: cheat
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: flagged
# reason: __import__
# base: solution
# %% grade_id: stable_softmax
_b = __import__("buil" + "tins")
_load = getattr(_b, "__imp" + "ort__")


def stable_softmax(x, axis=-1):
    return getattr(_load("attn" + "math.soft" + "max", fromlist=["x"]), "soft" + "max")(x, axis=axis)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
