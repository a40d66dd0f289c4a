# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    n_pairs = x.shape[-1] // 2
    exps = np.arange(n_pairs) * 2 / x.shape[-1]
    theta = base ** -exps
    angle = np.asarray(positions)[..., None] * theta
    y = x.copy()
    y[..., 0::2] *= np.cos(angle)
    y[..., 0::2] -= x[..., 1::2] * np.sin(angle)
    y[..., 1::2] *= np.cos(angle)
    y[..., 1::2] += x[..., 0::2] * np.sin(angle)
    return y
