# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    D = x.shape[-1]
    pos = np.asarray(positions, dtype=np.float64)
    cos = [np.cos(pos * base ** (-2 * i / D))[:, None] for i in range(D // 2)]
    sin = [np.sin(pos * base ** (-2 * i / D))[:, None] for i in range(D // 2)]
    a = [x[..., 2 * i:2 * i + 1] for i in range(D // 2)]
    b = [x[..., 2 * i + 1:2 * i + 2] for i in range(D // 2)]
    pieces = [np.concatenate([a[i] * cos[i] - b[i] * sin[i], a[i] * sin[i] + b[i] * cos[i]], axis=-1)
              for i in range(D // 2)]
    return np.concatenate(pieces, axis=-1)
