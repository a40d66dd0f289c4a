# Runaway scratch cell: an added cell waits forever after Part 1. It belongs to no part: it costs
# no part (the next worker skips it), only time.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: add-cell-after test_stable_softmax import time\nwhile True:\n    time.sleep(0.5)
