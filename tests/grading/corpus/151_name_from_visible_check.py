# Honest work leaning on a visible self-check cell: Part 2's answer cell reuses `square`, which
# Part 1's visible checks defined. Every code cell runs in order, visible checks included.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: softmax_jacobian
assert np.allclose(stable_softmax(square).sum(axis=-1), 1.0)  # `square` comes from Part 1's checks


def softmax_jacobian(z):
    p = stable_softmax(np.asarray(z, dtype=np.float64))
    return np.diag(p) - np.outer(p, p)
