# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    arr = np.asarray(x, dtype=np.float64)
    width = arr.shape[-1]
    c = arr[..., 0::2] + 1j * arr[..., 1::2]
    omega = base ** (-2.0 * np.arange(width // 2) / width)
    turn = np.exp(1j * np.outer(positions, omega))
    c = c * turn
    res = np.empty_like(arr)
    res[..., 0::2] = c.real
    res[..., 1::2] = c.imag
    return res
