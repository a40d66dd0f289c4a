# bug: the distance is measured with the queries aligned to the last keys (i + S - L - j), not top-left
# part: alibi_bias
# %% grade_id: sinusoidal_encoding
def sinusoidal_encoding(L, C, base=10000.0):
    positions = np.arange(L, dtype=np.float64)[:, None]
    omega = float(base) ** (-np.arange(0, C, 2, dtype=np.float64) / C)
    angles = positions * omega
    pe = np.empty((L, C), dtype=np.float64)
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe
# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x)
    D = x.shape[-1]
    theta = float(base) ** (-np.arange(0, D, 2, dtype=np.float64) / D)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * theta    # (L, D/2)
    cos, sin = np.cos(angles), np.sin(angles)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty(x.shape, dtype=np.result_type(x.dtype, np.float64))
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out
# %% grade_id: alibi_slopes
def alibi_slopes(H):
    def power_of_two(n):
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]

    n = 1
    while n * 2 <= H:
        n *= 2
    slopes = power_of_two(n)
    if n < H:
        slopes += power_of_two(2 * n)[0::2][: H - n]
    return np.array(slopes, dtype=np.float64)
# %% grade_id: alibi_bias
def alibi_bias(H, L, S=None):
    S = L if S is None else S
    distance = np.maximum(np.arange(L)[:, None] + (S - L) - np.arange(S)[None, :], 0)
    return -alibi_slopes(H)[:, None, None] * distance
# %% grade_id: pe_dot_by_offset
def pe_dot_by_offset(C, offsets, base=10000.0):
    offsets = np.asarray(offsets, dtype=np.float64)
    total = np.zeros(offsets.shape, dtype=np.float64)
    for i in range(C // 2):
        total += np.cos(offsets * float(base) ** (-2.0 * i / C))
    return total
