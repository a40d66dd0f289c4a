# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    D = x.shape[-1]
    theta = 1.0 / np.power(base, np.arange(0, D, 2, dtype=np.float64) / D)
    mt = np.asarray(positions).reshape(-1, 1) * theta.reshape(1, -1)
    cos_full = np.repeat(np.cos(mt), 2, axis=1)       # (L, D): cos, cos, cos, cos, ...
    sin_full = np.repeat(np.sin(mt), 2, axis=1)
    sign = np.tile([-1.0, 1.0], D // 2)                # -sin on the even slot, +sin on the odd one
    swapped = x.reshape(x.shape[:-1] + (D // 2, 2))[..., ::-1].reshape(x.shape)
    return x * cos_full + swapped * sign * sin_full
