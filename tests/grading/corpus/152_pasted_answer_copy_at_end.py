# Honest work with an experiment: a copy of Part 1's answer cell (its nbgrader metadata included)
# pasted at the end and changed into a wrong guess. Each part is checked as it stood after its own
# cell: the copy runs where it stands and never replaces the answer at its place.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: copy-at-end stable_softmax def stable_softmax(x, axis=-1):\n    return np.exp(x) / 2  # what if I skip the sum?
