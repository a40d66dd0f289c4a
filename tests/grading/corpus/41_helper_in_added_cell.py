# Honest work: a helper defined in an added cell of the student's own (right after the setup cell)
# and used by Part 1; the rebuild keeps added cells in their place, so nothing is lost.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: add-cell-after setup def _shifted(x, axis):\n    return x - np.max(x, axis=axis, keepdims=True)
# %% grade_id: stable_softmax
def stable_softmax(x, axis=-1):
    x = np.asarray(x)
    work = x.astype(np.float32) if x.dtype == np.float16 else x
    e = np.exp(_shifted(work, axis))
    return e / np.sum(e, axis=axis, keepdims=True)
