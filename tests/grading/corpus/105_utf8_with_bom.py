# Honest encoding: a UTF-8 notebook that begins with a byte-order mark (a Windows editor's save).
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: encode utf-8-sig
