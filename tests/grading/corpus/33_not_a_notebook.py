# Malformed: the file is plain text, not JSON at all.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=0
# status: malformed
# reason: not valid JSON
# mutate: text def stable_softmax(x): return x
