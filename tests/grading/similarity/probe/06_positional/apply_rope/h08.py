# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    D = x.shape[-1]
    half = np.arange(D // 2)
    freq = base ** (-2 * half / D)
    out = np.zeros_like(x)
    for row, m in enumerate(positions):
        c = np.cos(m * freq)
        s = np.sin(m * freq)
        a = x[..., row, 0::2]
        b = x[..., row, 1::2]
        out[..., row, 0::2] = a * c - b * s
        out[..., row, 1::2] = a * s + b * c
    return out
