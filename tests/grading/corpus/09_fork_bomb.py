# Resource abuse: a fork bomb in Part 3, stopped by the process limit.
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: resource_limit
# status-without-nproc: timed_out
# base: solution
# %% grade_id: softmax_vjp
import os

def softmax_vjp(p, g):
    while True:
        os.fork()
