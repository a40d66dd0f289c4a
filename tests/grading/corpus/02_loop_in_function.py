# Runaway code inside Part 1's function: it never returns (it waits forever, which costs the
# grader's time limit but no CPU; 01 is the runaway that burns CPU). Parts 2 and 3 are right and
# keep their points.
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: timed_out
# reason: test_stable_softmax
# base: solution
# %% grade_id: stable_softmax
import time


def stable_softmax(x, axis=-1):
    n = 0
    while True:
        n += 1
        time.sleep(0.5)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
