# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    D = x.shape[-1]
    theta = base ** (-np.arange(0, D, 2) / D)
    ang = np.asarray(positions, dtype=float)[:, None] * theta[None, :]
    c, s = np.cos(ang), np.sin(ang)
    x0 = x[..., 0::2]
    x1 = x[..., 1::2]
    out = np.empty(x.shape, dtype=np.float64)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out
