# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    D = x.shape[-1]
    halfD = D // 2
    pos = np.asarray(positions, dtype=np.float64)
    freq = base ** (-np.arange(halfD) / halfD)
    z = x.astype(np.float64).reshape(x.shape[:-1] + (halfD, 2)).copy().view(np.complex128)[..., 0]
    z *= np.exp(1j * pos[:, None] * freq[None, :])
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)
