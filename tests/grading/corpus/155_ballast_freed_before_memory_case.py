# Honest memory-limited part after memory was freed: a scratch cell builds and deletes 200 MB before
# Part 3. Memory freed by earlier cells does not move the count either way: full points.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: add-cell-after test_softmax_jacobian big = np.random.default_rng(0).random((5000, 5000))\nprint(big.mean())\ndel big
