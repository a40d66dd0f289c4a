# bug: penalises future keys too, with -m |i - j|, instead of giving them 0
# part: alibi_bias
# %% grade_id: sinusoidal_encoding
def sinusoidal_encoding(L, C, base=10000.0):
    p = np.arange(L, dtype=np.float64)[:, None]         # (L, 1)
    i = np.arange(C // 2, dtype=np.float64)[None, :]    # (1, C/2)
    omega = base ** (-2.0 * i / C)
    pe = np.zeros((L, C))
    pe[:, 0::2] = np.sin(omega * p)
    pe[:, 1::2] = np.cos(omega * p)
    return pe
# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    D = x.shape[-1]
    i = np.arange(D // 2, dtype=np.float64)
    theta = base ** (-2.0 * i / D)
    angle = np.asarray(positions, dtype=np.float64)[:, None] * theta   # (L, D/2)
    cos, sin = np.cos(angle), np.sin(angle)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = cos * x_even - sin * x_odd
    out[..., 1::2] = sin * x_even + cos * x_odd
    return out
# %% grade_id: alibi_slopes
def alibi_slopes(H):
    c = 8.0  # my constant

    def power_of_two_slopes(n):
        return 2.0 ** (-c * np.arange(1, n + 1) / n)

    n = 1
    while 2 * n <= H:
        n *= 2                     # the largest power of two not above H
    if n == H:
        return power_of_two_slopes(H)
    extra = power_of_two_slopes(2 * n)[0::2][:H - n]
    return np.concatenate([power_of_two_slopes(n), extra])
# %% grade_id: alibi_bias
def alibi_bias(H, L, S=None):
    if S is None:
        S = L
    c = 8.0

    def pow2(n):
        return 2.0 ** (-c * np.arange(1, n + 1) / n)

    n = 1
    while 2 * n <= H:
        n *= 2
    m = pow2(H) if n == H else np.concatenate([pow2(n), pow2(2 * n)[0::2][:H - n]])
    i = np.arange(L)[:, None]
    j = np.arange(S)[None, :]
    distance = np.abs(i - j).astype(np.float64)   # penalty proportional to the distance
    return -m[:, None, None] * distance[None, :, :]
# %% grade_id: pe_dot_by_offset
def pe_dot_by_offset(C, offsets, base=10000.0):
    # PE_p . PE_{p+k} = sum_i [sin(w p) sin(w (p+k)) + cos(w p) cos(w (p+k))] = sum_i cos(w_i k)
    k = np.asarray(offsets, dtype=np.float64)
    f = np.zeros(k.shape)
    for i in range(C // 2):
        omega = base ** (-2.0 * i / C)
        f += np.cos(omega * k)     # one frequency at a time: memory stays the size of `offsets`
    return f
