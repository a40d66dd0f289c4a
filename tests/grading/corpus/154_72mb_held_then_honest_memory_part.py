# Honest memory-limited part after a big earlier cell: an added cell keeps a 72 MB table alive,
# and Part 3's function itself allocates well under its budget. A memory-limited case charges what
# the call allocates, not what earlier cells hold.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: add-cell-after softmax_jacobian lookup = np.ones(72 * 2**20 // 8)\nprint(lookup.nbytes // 2**20, "MiB kept for later")
