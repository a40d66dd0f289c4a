# Honest work: float32 inputs computed in float32 (the dtype is kept), as the task's precision
# contract allows; float64 inputs stay float64.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: stable_softmax
def stable_softmax(x, axis=-1):
    x = np.asarray(x)
    work = x.astype(np.float32) if x.dtype in (np.float16, np.float32) else x
    e = np.exp(work - np.max(work, axis=axis, keepdims=True))
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(work.dtype)
