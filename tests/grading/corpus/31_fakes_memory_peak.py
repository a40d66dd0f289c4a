# Cheating the memory check: Part 3 builds the n x n Jacobian and patches tracemalloc to report 0.
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: flagged
# reason: tracemalloc
# base: solution
# %% grade_id: softmax_vjp
import tracemalloc

tracemalloc.get_traced_memory = lambda: (0, 0)

def softmax_vjp(p, g):
    J = p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]
    return np.einsum("...i,...ij->...j", g, J)
