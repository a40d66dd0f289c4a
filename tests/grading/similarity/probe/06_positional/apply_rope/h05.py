# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    D = x.shape[-1]
    pos = np.asarray(positions, dtype=np.float64)
    out = x.copy()
    for i in range(D // 2):
        theta = base ** (-2 * i / D)
        cos = np.cos(pos * theta)[:, None]
        sin = np.sin(pos * theta)[:, None]
        pair = x[..., 2 * i:2 * i + 2]
        a, b = pair[..., :1], pair[..., 1:]
        out[..., 2 * i:2 * i + 1] = a * cos - b * sin
        out[..., 2 * i + 1:2 * i + 2] = a * sin + b * cos
    return out
