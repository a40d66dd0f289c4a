# Tampering: the answer cell of Part 3 was deleted; the release's stub stands in for it.
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: flagged
# reason: answer cell 'softmax_vjp' was deleted
# base: solution
# mutate: delete softmax_vjp
