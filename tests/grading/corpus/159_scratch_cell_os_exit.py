# A scratch cell that ends the process (os._exit) between two parts: a fault in a cell that belongs
# to no part costs no part. The next worker runs without that cell.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: add-cell-after test_stable_softmax import os\nprint("cleaning up")\nos._exit(0)
