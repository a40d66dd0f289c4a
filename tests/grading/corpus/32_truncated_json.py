# Malformed: the notebook file was cut off in the middle of its JSON.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=0
# status: malformed
# reason: not valid JSON
# base: solution
# mutate: truncate 3000
