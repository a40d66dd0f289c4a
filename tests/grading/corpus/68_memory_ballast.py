# Memory hidden behind ballast: Part 3's cell holds 160 MB while the grader reads the usage, and
# the function frees it before building the Jacobian (so the usage never rises). The peak is also
# compared with the usage before any student code ran: the memory case fails.
# kind: cheat
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: graded
# base: solution
# %% grade_id: softmax_vjp
_ballast = [np.ones(20 * 2**20 // 8) for _ in range(8)]


def softmax_vjp(p, g):
    _ballast.clear()
    J = p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]
    return np.einsum("...i,...ij->...j", g, J)
