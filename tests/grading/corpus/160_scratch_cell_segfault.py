# A scratch cell that crashes the interpreter (a segmentation fault through ctypes) after Part 2:
# it belongs to no part, so no part pays; the parts after it are computed without it.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: add-cell-after test_softmax_jacobian import ctypes\nctypes.string_at(0)
