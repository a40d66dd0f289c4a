# A crash: Part 1 calls os._exit; the other parts are graded in a fresh worker.
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: crashed
# reason: exited with code 3
# base: solution
# %% grade_id: stable_softmax
import os

def stable_softmax(x, axis=-1):
    os._exit(3)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
