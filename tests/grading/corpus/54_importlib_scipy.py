# Calling the reference through importlib.import_module with a computed name (scipy's softmax).
# kind: cheat
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: flagged
# reason: importlib
# base: solution
# %% grade_id: stable_softmax
import importlib


def stable_softmax(x, axis=-1):
    special = importlib.import_module("sci" + "py.spe" + "cial")
    return special.softmax(x, axis=axis)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
