# A crash: Part 2 kills its own process with SIGKILL, as a dying kernel would.
# expect: test_stable_softmax=3, test_softmax_jacobian=0, test_softmax_vjp=3
# status: crashed
# reason: SIGKILL
# base: solution
# %% grade_id: softmax_jacobian
import os
import signal

def softmax_jacobian(z):
    os.kill(os.getpid(), signal.SIGKILL)
