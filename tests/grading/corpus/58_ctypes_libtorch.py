# ctypes: loading libtorch's shared library by a path found with glob over the usual install
# folders. No such file exists inside the sandbox, so the part fails (graded 0).
# kind: cheat
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: stable_softmax
import ctypes
import glob
import sys

_found = [p for d in sys.path + ["/usr/lib", "/usr/local/lib"] for p in glob.glob(d + "/to*/lib/libtorch*.so")]
_lib = ctypes.CDLL(_found[0])


def stable_softmax(x, axis=-1):
    return _lib
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
