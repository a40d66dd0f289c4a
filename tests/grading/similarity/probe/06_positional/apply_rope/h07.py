# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    """Rotate x with one block-diagonal rotation matrix per position."""
    L, D = x.shape[-2], x.shape[-1]
    R = np.zeros((L, D, D))
    for i in range(D // 2):
        t = np.asarray(positions, dtype=np.float64) * base ** (-2 * i / D)
        R[:, 2 * i, 2 * i] = np.cos(t)
        R[:, 2 * i, 2 * i + 1] = -np.sin(t)
        R[:, 2 * i + 1, 2 * i] = np.sin(t)
        R[:, 2 * i + 1, 2 * i + 1] = np.cos(t)
    # x' = R x for each row: (L, D, D) times (..., L, D)
    return np.einsum('lij,...lj->...li', R, x)
