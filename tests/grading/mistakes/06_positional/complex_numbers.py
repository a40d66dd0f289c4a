# honest: RoPE with complex multiplication on a view of the pairs, sinusoids via np.outer and stacking then reshaping, slopes built recursively like the reference code, ALiBi bias with np.tril and a loop over heads, the closed form as a Python sum over the frequencies
# part: none
# %% grade_id: sinusoidal_encoding
def sinusoidal_encoding(L, C, base=10000.0):
    freqs = np.power(float(base), -np.arange(0, C, 2) / C)   # w_i = base^(-2i/C), i = 0..C/2-1
    angles = np.outer(np.arange(L), freqs)                      # (L, C/2)
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(L, C)
# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    D = x.shape[-1]
    pairs = x.reshape(x.shape[:-1] + (D // 2, 2))
    z = pairs[..., 0] + 1j * pairs[..., 1]              # x_{2i} + i x_{2i+1}
    theta = np.power(float(base), -np.arange(0, D, 2) / D)
    m = np.asarray(positions).astype(np.float64)
    z = z * np.exp(1j * np.outer(m, theta))             # rotate pair i by m * theta_i
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)
# %% grade_id: alibi_slopes
import math

ALIBI_C = 8


def _slopes_list(n):
    if math.log2(n).is_integer():
        start = 2.0 ** (-ALIBI_C / n)
        return [start ** (h + 1) for h in range(n)]
    closest = 2 ** math.floor(math.log2(n))
    return _slopes_list(closest) + _slopes_list(2 * closest)[0::2][: n - closest]


def alibi_slopes(H):
    return np.array(_slopes_list(H), dtype=np.float64)
# %% grade_id: alibi_bias
def alibi_bias(H, L, S=None):
    S = L if S is None else S
    i = np.arange(L).reshape(L, 1)
    j = np.arange(S).reshape(1, S)
    past = np.tril(np.ones((L, S), dtype=bool))   # j <= i
    distance = np.where(past, i - j, 0)
    bias = np.zeros((H, L, S))
    for h, slope in enumerate(alibi_slopes(H)):
        bias[h] = -slope * distance
    return bias
# %% grade_id: pe_dot_by_offset
def pe_dot_by_offset(C, offsets, base=10000.0):
    k = np.asarray(offsets).astype(np.float64)
    freqs = [float(base) ** (-2 * i / C) for i in range(C // 2)]
    # f(k) = sum_i cos(w_i k): a Python sum over the frequencies, each term the size of `offsets`
    return sum((np.cos(w * k) for w in freqs), np.zeros(k.shape))
