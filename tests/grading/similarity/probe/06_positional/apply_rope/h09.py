# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    dim = x.shape[-1]
    freqs = np.array([base ** (-2 * i / dim) for i in range(dim // 2)])
    angles = np.outer(np.asarray(positions, dtype=np.float64), freqs)
    cos_t = np.cos(angles)
    sin_t = np.sin(angles)
    xe, xo = x[..., 0::2].astype(np.float64), x[..., 1::2].astype(np.float64)
    ye = xe * cos_t - xo * sin_t
    yo = xo * cos_t + xe * sin_t
    y = np.zeros(x.shape)
    y[..., ::2], y[..., 1::2] = ye, yo
    return y
