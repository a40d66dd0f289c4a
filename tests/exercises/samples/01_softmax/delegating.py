# Calls the course library instead of implementing the mechanism: no credit for those parts.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=3
# %% grade_id: stable_softmax
from attnmath.softmax import softmax as _library_softmax

def stable_softmax(x, axis=-1):
    return _library_softmax(x, axis=axis)
# %% grade_id: softmax_jacobian
import attnmath.softmax

def softmax_jacobian(z):
    return attnmath.softmax.softmax_jacobian(z)
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    return p * (g - (p * g).sum(axis=-1, keepdims=True))
