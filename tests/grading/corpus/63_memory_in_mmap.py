# Memory hidden from tracemalloc: Part 3 builds the (n, n) Jacobian in an anonymous mmap. The
# kernel counts the worker's pages (its cgroup), read by the grader: the memory case fails.
# kind: cheat
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: graded
# base: solution
# %% grade_id: softmax_vjp
import mmap


def softmax_vjp(p, g):
    n = p.shape[-1]
    out = np.empty_like(p)
    buf = mmap.mmap(-1, n * n * 8)
    J = np.frombuffer(buf, dtype=np.float64).reshape(n, n)
    for idx in np.ndindex(p.shape[:-1]):
        J[...] = -np.outer(p[idx], p[idx])
        J[np.diag_indices(n)] += p[idx]
        out[idx] = g[idx] @ J
    del J
    return out
