# Honest work that changes NumPy's print options and error handling in one cell and relies on a
# module-level constant of its own later: the namespace stays as the student left it.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: add-cell-after setup np.set_printoptions(precision=3, suppress=True)\nnp.seterr(under="ignore")\nAXIS = -1\nimport numpy.linalg as la
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    inner = np.sum(p * g, axis=AXIS, keepdims=True)
    return p * (g - inner)
