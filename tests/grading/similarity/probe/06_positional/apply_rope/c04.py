# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(x)
    D = x.shape[-1]
    half = np.arange(D // 2)
    freq = 1.0 / base ** (2 * half / D)
    for row, m in enumerate(positions):
        b = x[..., row, 1::2]
        a = x[..., row, 0::2]
        s = np.sin(m * freq)
        c = np.cos(m * freq)
        out[..., row, 0::2] = a * c - b * s
        out[..., row, 1::2] = a * s + b * c
    return out
