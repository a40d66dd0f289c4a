# Resource abuse: Part 1 allocates 50 GB before computing the right answer.
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: resource_limit
# reason: MemoryError
# base: solution
# %% grade_id: stable_softmax
def stable_softmax(x, axis=-1):
    hog = np.ones(50 * 2**30 // 8)
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True) + 0 * hog[0]
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
