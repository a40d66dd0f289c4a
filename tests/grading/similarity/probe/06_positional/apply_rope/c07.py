# %% grade_id: apply_rope
def _swap_pairs(x):
    """(x0, x1, x2, x3, ...) -> (x1, x0, x3, x2, ...)"""
    D = x.shape[-1]
    return x.reshape(x.shape[:-1] + (D // 2, 2))[..., ::-1].reshape(x.shape)


def apply_rope(x, positions, base=10000.0):
    D = x.shape[-1]
    theta = 1.0 / np.power(base, np.arange(0, D, 2, dtype=np.float64) / D)
    mt = np.asarray(positions).reshape(-1, 1) * theta.reshape(1, -1)
    cos_full = np.repeat(np.cos(mt), 2, axis=1)
    sin_full = np.repeat(np.sin(mt), 2, axis=1)
    sign = np.tile([-1.0, 1.0], D // 2)
    return x * cos_full + _swap_pairs(x) * sign * sin_full
