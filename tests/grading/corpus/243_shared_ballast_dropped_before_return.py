# The ballast of case 242, with its pages dropped from the process (madvise MADV_DONTNEED) before
# the call returns: what the process holds after the call is nothing, but the grader reads the
# shared pages while the call runs too, so the (n, n) rows still count: it fails.
# kind: cheat
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: graded
# base: solution
# %% grade_id: softmax_vjp
import mmap

_N = 4096
_BALLAST = mmap.mmap(-1, _N * _N * 8)  # MAP_SHARED | MAP_ANONYMOUS
_J = np.frombuffer(_BALLAST, dtype=np.float64).reshape(_N, _N)
_J[:] = 0.0  # every page touched here, before the part


def softmax_vjp(p, g):
    T = 1.0  # variant: temperature
    p, g = np.asarray(p, dtype=np.float64), np.asarray(g, dtype=np.float64)
    n = p.shape[-1]
    rows, grads = p.reshape(-1, n), g.reshape(-1, n)
    out = np.empty_like(rows)
    J = _J[:n, :n]
    for r in range(rows.shape[0]):
        np.multiply.outer(rows[r], rows[r], out=J)
        np.negative(J, out=J)
        J[np.diag_indices(n)] += rows[r]
        np.matmul(J.T, grads[r], out=out[r])
    _BALLAST.madvise(mmap.MADV_DONTNEED)  # gone from this process before the grader looks
    return (out / T).reshape(p.shape)
