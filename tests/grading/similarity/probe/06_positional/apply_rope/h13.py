# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    """RoPE with interleaved pairs (2i, 2i+1)."""
    D = x.shape[-1]
    # theta_i = base^(-2i/D), written with a log
    theta = np.exp(-np.log(base) * np.arange(0, D, 2) / D)
    m = np.asarray(positions, dtype=np.float64)
    cos = np.cos(np.einsum('l,f->lf', m, theta))
    sin = np.sin(np.einsum('l,f->lf', m, theta))
    out = np.array(x, dtype=np.float64, copy=True)
    out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    out[..., 1::2] = x[..., 1::2] * cos + x[..., 0::2] * sin
    return out
