# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    D = x.shape[-1]
    pos = np.asarray(positions, dtype=np.float64)
    cols = []
    for i, (a, b) in enumerate(zip(np.moveaxis(x[..., 0::2], -1, 0), np.moveaxis(x[..., 1::2], -1, 0))):
        t = pos * base ** (-2.0 * i / D)
        cols.append(a * np.cos(t) - b * np.sin(t))
        cols.append(a * np.sin(t) + b * np.cos(t))
    return np.stack(cols, axis=-1)
