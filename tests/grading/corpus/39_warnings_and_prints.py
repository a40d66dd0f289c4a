# Benign noise: right answers that print and emit warnings (stock nbgrader gave a zero for a warning).
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: stable_softmax
import warnings

print("defining stable_softmax")

def stable_softmax(x, axis=-1):
    warnings.warn("this softmax is being graded", UserWarning)
    print("stable_softmax called with shape", np.shape(x))
    x = np.asarray(x)
    work = x.astype(np.float32) if x.dtype == np.float16 else x
    e = np.exp(work - work.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
# %% grade_id: softmax_vjp
import sys

def softmax_vjp(p, g):
    print("softmax_vjp on", p.shape, file=sys.stderr)
    with np.errstate(all="warn"):
        np.log(np.zeros(1))
    return p * (g - (p * g).sum(axis=-1, keepdims=True))
