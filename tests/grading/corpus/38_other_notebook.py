# Malformed: a notebook without any of the release's cells (all nbgrader metadata stripped).
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=0
# status: malformed
# reason: not a notebook of this assignment
# base: solution
# mutate: strip-nbgrader
