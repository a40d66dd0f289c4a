# Scratch cells that raise (KeyError, an assertion, a NameError) before, between and after the
# answers: like a notebook, the next cell still runs and every part keeps its points.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: add-cell-after setup {}["missing"]
# mutate: add-cell-after softmax_jacobian assert softmax_jacobian(np.zeros(2)).sum() == 1, "not yet"
# mutate: add-cell not_defined_anywhere + 1
