# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    idx = np.arange(d // 2)
    w = base ** (-(2 * idx) / d)
    phase = np.multiply.outer(np.asarray(positions, dtype=np.float64), w)
    even = x[..., ::2]
    odd = x[..., 1::2]
    new_even = even * np.cos(phase) - odd * np.sin(phase)
    new_odd = even * np.sin(phase) + odd * np.cos(phase)
    return np.stack((new_even, new_odd), axis=-1).reshape(x.shape)
