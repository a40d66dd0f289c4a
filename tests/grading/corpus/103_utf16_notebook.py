# Malformed encoding: the notebook file was re-saved as UTF-16 by an editor. Jupyter reads and writes
# UTF-8 only, so the grader says so instead of guessing.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=0
# status: malformed
# reason: not UTF-8
# base: solution
# mutate: encode utf-16
