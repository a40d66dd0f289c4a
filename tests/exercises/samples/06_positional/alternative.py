# A correct answer written differently: the exp/log form of the frequencies, RoPE by complex
# multiplication, the slopes by the reference code's recursion with logarithms, the bias from
# np.tril, and the dot product as the real part of a sum of complex exponentials.
# expect: test_sinusoidal_encoding=2, test_apply_rope=3, test_alibi_slopes=2, test_alibi_bias=2, test_pe_dot_by_offset=2
# %% grade_id: sinusoidal_encoding
import math

def sinusoidal_encoding(L, C, base=10000.0):
    div_term = np.exp(np.arange(0, C, 2) * -(np.log(base) / C))
    angles = np.outer(np.arange(L), div_term)
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(L, C)
# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    D = x.shape[-1]
    z = x[..., 0::2] + 1j * x[..., 1::2]
    theta = 1.0 / base ** (np.arange(D // 2) * 2.0 / D)
    z = z * np.exp(1j * np.multiply.outer(np.asarray(positions), theta))
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)
# %% grade_id: alibi_slopes
def alibi_slopes(H):
    def power_of_two(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]
    if math.log2(H).is_integer():
        return np.array(power_of_two(H))
    closest = 2 ** math.floor(math.log2(H))
    return np.array(power_of_two(closest) + list(alibi_slopes(2 * closest))[0::2][: H - closest])
# %% grade_id: alibi_bias
def alibi_bias(H, L, S=None):
    S = L if S is None else S
    i, j = np.indices((L, S))
    return np.tril(-(i - j).astype(float))[None] * alibi_slopes(H).reshape(H, 1, 1)
# %% grade_id: pe_dot_by_offset
def pe_dot_by_offset(C, offsets, base=10000.0):
    freqs = np.power(float(base), -np.arange(C // 2) * 2.0 / C)
    return np.real(np.exp(1j * np.multiply.outer(offsets, freqs))).sum(axis=-1)
