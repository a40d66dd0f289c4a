# Honest work with a bloated kernelspec (5 MB written by a misbehaving extension). The grader keeps
# the kernelspec only when it is small; the answers are graded either way.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: metadata-mb kernelspec 5
