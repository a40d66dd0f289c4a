# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=float)
    D = x.shape[-1]
    inv_freq = 1.0 / base ** (np.arange(0, D, 2) / D)
    angles = np.repeat(np.outer(positions, inv_freq), 2, axis=-1)
    turned = np.empty_like(x)
    turned[..., 0::2] = -x[..., 1::2]
    turned[..., 1::2] = x[..., 0::2]
    return x * np.cos(angles) + turned * np.sin(angles)
