# Honest work: Part 3 calls a helper defined in an added cell placed after Part 2's test cell (the
# order the student ran them in); the helper exists when Part 3 is checked.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: add-cell-after test_softmax_jacobian def _row_dot(p, g):\n    return np.sum(p * g, axis=-1, keepdims=True)
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    return p * (g - _row_dot(p, g))
