# Memory hidden from a measurement by a trace hook: Part 3 installs sys.settrace/setprofile hooks
# that stop tracemalloc whenever it starts, then builds the Jacobian. Nothing in the worker is
# measured any more: the kernel's count still fails the memory case; flagged for the hooks.
# kind: cheat
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: flagged
# reason: settrace
# base: solution
# %% grade_id: softmax_vjp
import sys
import tracemalloc


def _hook(frame, event, arg):
    if tracemalloc.is_tracing():
        tracemalloc.stop()
    return None


sys.settrace(_hook)
sys.setprofile(_hook)


def softmax_vjp(p, g):
    J = p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]
    return np.einsum("...i,...ij->...j", g, J)
