# Honest work saved with 30 MB of printed debug output under an answer cell. Outputs are never
# graded and are dropped before the size limit applies.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: stream-output softmax_vjp 30
