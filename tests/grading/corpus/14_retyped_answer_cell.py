# Tampering: Part 2's answer cell was turned into markdown; its text is not run as code.
# expect: test_stable_softmax=3, test_softmax_jacobian=0, test_softmax_vjp=3
# status: flagged
# reason: changed from code to markdown
# base: solution
# mutate: retype softmax_jacobian markdown
