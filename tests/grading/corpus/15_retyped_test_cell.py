# Tampering: a wrong Part 1 (no max subtraction) hidden by turning its test cell into markdown.
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: flagged
# reason: changed from code to markdown
# base: solution
# mutate: retype test_stable_softmax markdown
# %% grade_id: stable_softmax
def stable_softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
