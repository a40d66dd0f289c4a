# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    # each pair (x_2i, x_2i+1) is the complex number x_2i + i x_2i+1; rotating it is a product
    x = np.asarray(x, dtype=np.float64)
    D = x.shape[-1]
    z = x[..., 0::2] + 1j * x[..., 1::2]
    freqs = base ** (-2.0 * np.arange(D // 2) / D)
    rot = np.exp(1j * np.outer(positions, freqs))
    z = z * rot
    out = np.empty_like(x)
    out[..., 0::2] = z.real
    out[..., 1::2] = z.imag
    return out
