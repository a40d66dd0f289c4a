# Runaway code: an infinite loop that burns CPU at the top of the first answer cell. That cell
# never finishes, so Part 1 and Part 2 (which calls stable_softmax) get nothing; the next worker
# skips it, so Part 3 counts.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=3
# status: timed_out
# reason: while running the answer cells
# base: solution
# %% grade_id: stable_softmax
while True:
    pass
