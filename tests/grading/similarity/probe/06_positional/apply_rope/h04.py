# %% grade_id: apply_rope
def rotate_pairs(x):
    # (a, b) -> (-b, a) for every interleaved pair
    out = np.empty_like(x)
    out[..., 0::2] = -x[..., 1::2]
    out[..., 1::2] = x[..., 0::2]
    return out


def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=float)
    D = x.shape[-1]
    inv_freq = 1.0 / base ** (np.arange(0, D, 2) / D)
    angles = np.repeat(np.outer(positions, inv_freq), 2, axis=-1)   # (L, D): each angle twice
    return x * np.cos(angles) + rotate_pairs(x) * np.sin(angles)
