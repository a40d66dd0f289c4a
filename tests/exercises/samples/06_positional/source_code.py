# The source text's code where it has some: the sinusoidal encoding is right; its RoPE indexes
# x[:, 0::2] and so works on (L, D) inputs only, not on (B, H, L, D); the slopes use the
# power-of-two formula for every H; the bias row reads m [0, -1, ..., -(i-1)] literally, key j
# getting -m j. Part 5 is right.
# expect: test_sinusoidal_encoding=2, test_apply_rope=0, test_alibi_slopes=0, test_alibi_bias=0, test_pe_dot_by_offset=2
# %% grade_id: sinusoidal_encoding
def sinusoidal_encoding(L, C, base=10000.0):
    PE = np.zeros((L, C))
    position = np.arange(L)[:, np.newaxis]
    div_term = np.exp(np.arange(0, C, 2) * -(np.log(base) / C))
    PE[:, 0::2] = np.sin(position * div_term)
    PE[:, 1::2] = np.cos(position * div_term)
    return PE
# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    d_model = x.shape[-1]
    inv_freq = 1.0 / (base ** (np.arange(0, d_model, 2) / d_model))
    angles = np.asarray(positions)[:, np.newaxis] * inv_freq[np.newaxis, :]
    cos, sin = np.cos(angles), np.sin(angles)
    x_rot = np.zeros_like(x)
    x_rot[:, 0::2] = x[:, 0::2] * cos - x[:, 1::2] * sin
    x_rot[:, 1::2] = x[:, 0::2] * sin + x[:, 1::2] * cos
    return x_rot
# %% grade_id: alibi_slopes
def alibi_slopes(H):
    return np.array([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)])
# %% grade_id: alibi_bias
def alibi_bias(H, L, S=None):
    S = L if S is None else S
    j = np.arange(S)[None, :]
    i = np.arange(L)[:, None]
    row = np.where(j <= i, -j, 0.0)  # m [0, -1, ..., -(i-1)] read as key j -> -m j
    return alibi_slopes(H)[:, None, None] * row[None]
# %% grade_id: pe_dot_by_offset
def pe_dot_by_offset(C, offsets, base=10000.0):
    omega = 1.0 / base ** (np.arange(0, C, 2) / C)
    return np.sum(np.cos(np.asarray(offsets)[..., None] * omega), axis=-1)
