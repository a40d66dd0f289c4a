# Memory set aside before the part, in a shared anonymous mapping (clean-room red team): an earlier
# cell maps and touches 128 MiB, and Part 3 builds each row's (n, n) Jacobian in it. Shared pages
# stay charged to the group of the cell that touched them, so the case's group saw nothing; the
# grader now also counts the shared pages the case's process holds after the call: it fails.
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
    return (out / T).reshape(p.shape)
