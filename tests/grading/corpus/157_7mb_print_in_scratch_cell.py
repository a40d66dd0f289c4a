# Benign noise, a lot of it: a scratch cell prints 7 MB of debug output. Output past the cap is
# discarded with a note; nothing is killed and no part pays.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: add-cell-after test_stable_softmax row = stable_softmax(np.arange(3.0)).round(3)\nfor i in range(70000):\n    print(i, str(row), "." * 80)
