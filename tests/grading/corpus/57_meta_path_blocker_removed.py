# Removing the import blocker from sys.meta_path, then importing attnmath: the blocker is only a
# second line of defence; the package is not in the root at all.
# kind: cheat
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: flagged
# reason: sys.meta_path
# base: solution
# %% grade_id: stable_softmax
import sys

sys.meta_path[:] = [f for f in sys.meta_path if "Block" not in type(f).__name__]
for _name in [n for n in sys.modules if n.startswith("attn")]:
    del sys.modules[_name]


def stable_softmax(x, axis=-1):
    from attnmath.softmax import softmax
    return softmax(x, axis=axis)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
