# Memory hidden behind ballast set aside in an added cell: the function frees the 160 MB ballast
# and then builds the full (n, n) Jacobian, so the worker's usage never rises. The case runs in a
# group of its own: pages that earlier cells hold or free do not count, the Jacobian does.
# kind: cheat
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: graded
# base: solution
# mutate: add-cell-after softmax_jacobian _spare = [np.ones(20 * 2**20 // 8) for _ in range(8)]
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    _spare.clear()
    J = p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]
    return np.einsum("...i,...ij->...j", g, J)
