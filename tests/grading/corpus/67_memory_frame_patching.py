# Memory hidden by patching the caller's frame: Part 3 walks up the stack and rewrites every
# local that looks like a measurement (peak, before, budget) to 0, then builds the Jacobian. The
# grader reads the peak from the kernel in its own process: the memory case fails; flagged.
# kind: cheat
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: flagged
# reason: _getframe
# base: solution
# %% grade_id: softmax_vjp
import ctypes
import sys


def softmax_vjp(p, g):
    frame = sys._getframe(1)
    while frame is not None:
        for name in list(frame.f_locals):
            if any(w in name for w in ("peak", "before", "budget", "limit")):
                frame.f_locals[name] = 0
                ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
        frame = frame.f_back
    J = p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]
    return np.einsum("...i,...ij->...j", g, J)
