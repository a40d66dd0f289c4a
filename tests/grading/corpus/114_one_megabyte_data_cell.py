# Honest but large: an added cell holding 1 MB of data as a Python literal (a pasted table). The
# grader's static analysis of it runs in its bounded reading child; the answers are graded.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: big-cell 1
