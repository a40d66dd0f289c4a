# Calling the reference: Part 1 delegates to attnmath (right values, no credit).
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: flagged
# reason: calls reference
# base: solution
# %% grade_id: stable_softmax
import attnmath.softmax

def stable_softmax(x, axis=-1):
    return attnmath.softmax.softmax(x, axis=axis)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
