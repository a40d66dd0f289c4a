# A crash: Part 3 calls sys.exit() (exit status 0, but no result).
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: crashed
# reason: exited with code 0
# base: solution
# %% grade_id: softmax_vjp
import sys

def softmax_vjp(p, g):
    sys.exit()
