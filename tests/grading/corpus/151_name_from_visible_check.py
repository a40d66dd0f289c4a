# Honest work leaning on a visible self-check cell: Part 2's answer cell reuses `check`, which
# Part 1's test cell bound (`with self_check("Part 1") as check:`). Every code cell runs in order,
# visible checks included (in the grader's worker they stop at once: the course library is absent).
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: softmax_jacobian
assert check.part == "Part 1"  # `check` comes from Part 1's test cell


def softmax_jacobian(z):
    p = stable_softmax(np.asarray(z, dtype=np.float64))
    return np.diag(p) - np.outer(p, p)
