# Honest work with a scratch added cell that raises (ZeroDivisionError) between two answers: like a
# notebook, the next cells still run and every part keeps its points.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: add-cell-after test_stable_softmax print(stable_softmax(np.arange(3.0)))\nratio = 1 / 0
