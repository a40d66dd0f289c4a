"""Named mistakes for 01_softmax: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("01_softmax", "the global-max softmax", "test_stable_softmax",
     {"stable_softmax": ("shifted = work - np.max(work, axis=axis, keepdims=True)", "shifted = work - np.max(work)")}),
    ("01_softmax", "no maximum subtracted", "test_stable_softmax",
     {"stable_softmax": ("shifted = work - np.max(work, axis=axis, keepdims=True)", "shifted = work")}),
    ("01_softmax", "1-D input made 2-D", "test_stable_softmax",
     {"stable_softmax": ("x = np.asarray(x)", "x = np.atleast_2d(x)")}),
    ("01_softmax", "only axis 0 or the last axis", "test_stable_softmax",
     {"stable_softmax": ("x = np.asarray(x)", "x = np.asarray(x)\n    axis = -1 if axis in (-1, x.ndim - 1) else 0")}),
    ("01_softmax", "a Jacobian of a squeezed softmax", "test_softmax_jacobian",
     {"softmax_jacobian": ("p = stable_softmax(np.asarray(z, dtype=np.float64))",
                           "p = np.squeeze(stable_softmax(np.asarray(z, dtype=np.float64)))")}),
    ("01_softmax", "a Jacobian for three logits only", "test_softmax_jacobian",
     {"softmax_jacobian": ("np.diag(p)", "np.eye(3) * p")}),
    ("01_softmax", "a Jacobian of the unstable softmax", "test_softmax_jacobian",
     {"softmax_jacobian": ("p = stable_softmax(np.asarray(z, dtype=np.float64))",
                           "z = np.asarray(z, dtype=np.float64)\n    p = np.exp(z) / np.exp(z).sum()")}),
    ("01_softmax", "a VJP that builds the Jacobian of every row", "test_softmax_vjp",
     {"softmax_vjp": ("inner = np.sum(p * g, axis=-1, keepdims=True)\n    return p * (g - inner)",
                      "out = np.empty(np.shape(p))\n    for i in np.ndindex(np.shape(p)[:-1]):\n"
                      "        out[i] = (np.diag(p[i]) - np.outer(p[i], p[i])).T @ g[i]\n    return out")}),
    ("01_softmax", "a VJP for batches only", "test_softmax_vjp",
     {"softmax_vjp": ("axis=-1, keepdims=True", "axis=1, keepdims=True")}),
    ("01_softmax", "a VJP for one row only", "test_softmax_vjp",
     {"softmax_vjp": ("inner = np.sum(p * g, axis=-1, keepdims=True)", "inner = np.sum(p * g)")}),
    ("01_softmax", "float32 computed in float16", "test_stable_softmax",
     {"stable_softmax": ("work = x.astype(np.float32) if x.dtype == np.float16 else x",
                         "work = x if x.dtype == np.float64 else x.astype(np.float16)")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {}
