# Tampering: Part 1's test cell replaced by a print of its "passed" line; Part 1 is wrong.
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: flagged
# reason: locked cell 'test_stable_softmax' was edited
# base: solution
# %% grade_id: stable_softmax
def stable_softmax(x, axis=-1):
    return np.ones_like(x) / x.shape[axis]
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
# %% grade_id: test_stable_softmax
print("Part 1: visible checks passed")
