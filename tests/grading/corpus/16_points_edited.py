# Tampering: the points of Part 1 edited to 100; points come from the release (8 in all).
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: flagged
# reason: points
# base: solution
# mutate: meta test_stable_softmax points=100
