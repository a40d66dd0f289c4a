# Resource abuse: Part 2 prints a gigabyte, 64 KiB at a time, at its first call (and returns a wrong
# Jacobian). What comes past the output cap is read and discarded with a note: nothing is killed,
# the grader's memory never holds it, and the part scores what it computes.
# expect: test_stable_softmax=3, test_softmax_jacobian=0, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: softmax_jacobian
import sys

_printed = 0


def softmax_jacobian(z):
    global _printed
    chunk = "x" * 2**16
    while _printed < 2**30:
        sys.stdout.write(chunk)
        _printed += len(chunk)
    return np.eye(len(z))
