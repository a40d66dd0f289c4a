# Runaway code that ignores SIGINT and SIGTERM and swallows every exception in Part 3.
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: timed_out
# reason: test_softmax_vjp
# base: solution
# %% grade_id: softmax_vjp
import signal
import time

signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)

def softmax_vjp(p, g):
    while True:
        try:
            time.sleep(0.05)
        except BaseException:
            pass
