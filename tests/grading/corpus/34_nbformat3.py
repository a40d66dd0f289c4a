# Malformed: the notebook claims nbformat 3.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=0
# status: malformed
# reason: nbformat 3
# base: solution
# mutate: nbformat 3
