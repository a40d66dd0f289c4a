# Runaway code: an infinite loop at the top of the first answer cell; no answer cell finishes.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=0
# status: timed_out
# reason: while running the answer cells
# base: solution
# %% grade_id: stable_softmax
while True:
    pass
