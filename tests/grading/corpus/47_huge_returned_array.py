# Resource abuse by mistake: Part 2 returns a 288 MB array (4.5x the 64 MiB result limit) on one case. That part is resource_limit
# (the result or memory limit), never "exited with code 1"; the other parts keep their points.
# expect: test_stable_softmax=3, test_softmax_jacobian=0, test_softmax_vjp=3
# status: resource_limit
# base: solution
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    if z.size == 3:
        return np.ones((6000, 6000))
    p = stable_softmax(z)
    return np.diag(p) - np.outer(p, p)
