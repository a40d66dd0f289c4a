# Tampering confined to its part: Part 2's cell patches builtins (isinstance, len, max). The worker
# restores them before computing any part and before packing results: no part loses points.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: flagged
# reason: builtins
# base: solution
# %% grade_id: softmax_jacobian
import builtins

builtins.isinstance = lambda *args: False
builtins.len = lambda *args: 0
builtins.max = min


def softmax_jacobian(z):
    p = stable_softmax(np.asarray(z, dtype=np.float64))
    return np.diag(p) - np.outer(p, p)
