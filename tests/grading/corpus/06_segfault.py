# A crash: Part 3 dereferences a null pointer through ctypes (segmentation fault).
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: crashed
# reason: SIGSEGV
# base: solution
# %% grade_id: softmax_vjp
import ctypes

def softmax_vjp(p, g):
    return ctypes.cast(8, ctypes.POINTER(ctypes.c_double)).contents.value
