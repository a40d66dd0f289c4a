# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    *lead, L, D = x.shape
    pairs = x.reshape(*lead, L, D // 2, 2)
    theta = np.power(base, -np.arange(D // 2) * 2.0 / D)
    a = np.asarray(positions)[:, None] * theta
    c, s = np.cos(a), np.sin(a)
    R = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)
    rotated = (R @ pairs[..., None])[..., 0]
    return rotated.reshape(x.shape)
