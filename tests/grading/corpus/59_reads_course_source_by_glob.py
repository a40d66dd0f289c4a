# Reading the course's library source by a path searched with glob (no course word in any string)
# and exec-ing it. The course is not in the sandbox's root: nothing is found, the part fails.
# kind: cheat
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: stable_softmax
import glob

_hits = sorted(glob.glob("/*/*/lib/att*/soft*.py") + glob.glob("/*/*/*/lib/att*/soft*.py"))
_ns = {}
exec(open(_hits[0]).read(), _ns)


def stable_softmax(x, axis=-1):
    return _ns["soft" + "max"](x, axis=axis)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
