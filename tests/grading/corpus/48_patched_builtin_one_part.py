# Tampering with builtins in Part 2's cell (isinstance, len, max). The student's namespace stays as
# the student left it, so NumPy code that needs len() fails in Part 2 as it does in the student's
# kernel (its visible checks fail too); Part 1 was computed before the patch, and the worker's
# reports keep the builtins they took before any student code, so nothing else breaks.
# expect: test_stable_softmax=3, test_softmax_jacobian=0, test_softmax_vjp=3
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
