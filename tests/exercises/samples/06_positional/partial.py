# Part 1 is right; Part 2 pairs (i, i + D/2) ("rotate half") instead of (2i, 2i + 1); Part 3
# uses the power-of-two formula for every H; Part 4 is right; Part 5 builds an encoding of
# max|k| + 1 rows and takes dot products, which is right but needs far too much memory.
# expect: test_sinusoidal_encoding=2, test_apply_rope=0, test_alibi_slopes=0, test_alibi_bias=2, test_pe_dot_by_offset=0
# %% grade_id: sinusoidal_encoding
def sinusoidal_encoding(L, C, base=10000.0):
    pe = np.zeros((L, C))
    for p in range(L):
        for i in range(C // 2):
            pe[p, 2 * i] = np.sin(p / base ** (2 * i / C))
            pe[p, 2 * i + 1] = np.cos(p / base ** (2 * i / C))
    return pe
# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    D = x.shape[-1]
    angle = np.asarray(positions)[:, None] * base ** (-np.arange(0, D, 2) / D)
    cos, sin = np.concatenate([np.cos(angle)] * 2, -1), np.concatenate([np.sin(angle)] * 2, -1)
    rotated = np.concatenate([-x[..., D // 2:], x[..., :D // 2]], axis=-1)
    return x * cos + rotated * sin
# %% grade_id: alibi_slopes
def alibi_slopes(H):
    return 2.0 ** (-8.0 * np.arange(1, H + 1) / H)
# %% grade_id: alibi_bias
def alibi_bias(H, L, S=None):
    S = L if S is None else S
    d = np.clip(np.arange(L)[:, None] - np.arange(S)[None, :], 0, None)
    return -np.einsum("h,ls->hls", alibi_slopes_correct(H), d)

def alibi_slopes_correct(H):
    n = 2 ** int(np.floor(np.log2(H)))
    geo = lambda m: 2.0 ** (-8.0 * np.arange(1, m + 1) / m)
    return np.concatenate([geo(n), geo(2 * n)[0::2][: H - n]])
# %% grade_id: pe_dot_by_offset
def pe_dot_by_offset(C, offsets, base=10000.0):
    offsets = np.asarray(offsets)
    n = int(np.abs(offsets).max())
    pe = sinusoidal_encoding(n + 1, C, base) if n < 50 else None
    if pe is None:
        angles = np.arange(n + 1)[:, None] * base ** (-np.arange(0, C, 2) / C)
        pe = np.empty((n + 1, C))
        pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
    return (pe[np.abs(offsets)] @ pe[0])
