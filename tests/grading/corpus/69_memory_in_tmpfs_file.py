# Memory hidden in a file: Part 3 keeps the Jacobian in a np.memmap file under /tmp (tmpfs pages
# are charged to the worker too): the file passes the file size limit first, resource_limit.
# kind: cheat
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: resource_limit
# reason: file size limit
# base: solution
# %% grade_id: softmax_vjp
import os
import tempfile


def softmax_vjp(p, g):
    n = p.shape[-1]
    out = np.empty_like(p)
    path = os.path.join(tempfile.gettempdir(), "jac.dat")
    J = np.memmap(path, dtype=np.float64, mode="w+", shape=(n, n))
    for idx in np.ndindex(p.shape[:-1]):
        J[...] = -np.outer(p[idx], p[idx])
        J[np.diag_indices(n)] += p[idx]
        out[idx] = g[idx] @ J
    del J
    os.remove(path)
    return out
