# Honest work in a 48 MB notebook: image outputs of plots on two answer cells. Outputs are stripped
# before the size limit applies, so the answers are graded.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: image-output stable_softmax 24
# mutate: image-output softmax_vjp 24
