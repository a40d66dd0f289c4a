# Tampering: a skip-execution tag on Part 2's test cell and a wrong Jacobian (identity).
# expect: test_stable_softmax=3, test_softmax_jacobian=0, test_softmax_vjp=3
# status: flagged
# reason: skip-execution
# base: solution
# mutate: tag test_softmax_jacobian skip-execution
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    return np.eye(len(z))
