# Tampering: the test cell of Part 3 appears twice (stock nbgrader stopped the whole batch).
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: flagged
# reason: appears 2 times
# base: solution
# mutate: duplicate test_softmax_vjp
