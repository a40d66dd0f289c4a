# bug: for any H the slopes of the next power of two are computed and the first H kept
# part: alibi_slopes
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
    n = 1
    while n < H:
        n *= 2
    return np.array([2.0 ** (-8.0 * (h + 1) / n) for h in range(n)])[:H]
# %% grade_id: alibi_bias
def _slopes_for_bias(H):
    n = 1
    while n * 2 <= H:
        n *= 2
    first = [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]
    finer = [2.0 ** (-8.0 * (h + 1) / (2 * n)) for h in range(0, 2 * n, 2)]
    return np.array(first + finer[: H - n])


def alibi_bias(H, L, S=None):
    S = L if S is None else S
    distance = np.maximum(np.arange(L)[:, None] - np.arange(S)[None, :], 0)
    return -_slopes_for_bias(H)[:, None, None] * distance[None, :, :]
# %% grade_id: pe_dot_by_offset
def pe_dot_by_offset(C, offsets, base=10000.0):
    offsets = np.asarray(offsets, dtype=np.float64)
    total = np.zeros(offsets.shape, dtype=np.float64)
    for i in range(C // 2):
        total += np.cos(offsets * float(base) ** (-2.0 * i / C))
    return total
