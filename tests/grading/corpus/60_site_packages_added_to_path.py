# Adding every site-packages folder found on disk to sys.path, then importing torch by a built
# name: the sandbox's package folders hold NumPy only; the part fails.
# kind: cheat
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: flagged
# reason: __import__
# base: solution
# %% grade_id: stable_softmax
import glob
import sys

sys.path.extend(glob.glob("/*/*/lib/python3*/site-packages") + glob.glob("/*/*/*/lib/python3*/site-packages")
                + glob.glob("/usr/lib/python3*/dist-packages") + glob.glob("/usr/local/lib/python3*/*-packages"))


def stable_softmax(x, axis=-1):
    t = __import__("to" + "rch")
    return t.softmax(t.from_numpy(np.asarray(x, dtype=np.float64)), dim=axis).numpy()
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
