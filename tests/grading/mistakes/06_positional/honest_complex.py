# honest: complex numbers for the rotations (x_even + i x_odd times e^{i m theta}), np.exp of imaginary angles, float64 throughout
# part: none
# %% grade_id: sinusoidal_encoding
def sinusoidal_encoding(L, C, base=10000.0):
    omega = np.power(float(base), -np.arange(C // 2) * 2.0 / C)
    phase = np.exp(1j * np.outer(np.arange(L), omega))
    return np.stack([phase.imag, phase.real], axis=-1).reshape(L, C)
# %% grade_id: apply_rope
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    D = x.shape[-1]
    theta = np.power(float(base), -np.arange(D // 2) * 2.0 / D)
    z = x[..., 0::2] + 1j * x[..., 1::2]
    z = z * np.exp(1j * np.multiply.outer(np.asarray(positions, dtype=np.float64), theta))
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)
# %% grade_id: alibi_slopes
import math


def alibi_slopes(H):
    n = 2 ** int(math.log2(H))
    first = 2.0 ** (-8.0 * np.arange(1, n + 1) / n)
    rest = 2.0 ** (-8.0 * np.arange(1, 2 * n + 1, 2) / (2 * n))
    return np.concatenate([first, rest[: H - n]])
# %% grade_id: alibi_bias
def alibi_bias(H, L, S=None):
    S = L if S is None else S
    i, j = np.indices((L, S))
    return np.einsum("h,ls->hls", alibi_slopes(H), -np.clip(i - j, 0, None).astype(np.float64))
# %% grade_id: pe_dot_by_offset
def pe_dot_by_offset(C, offsets, base=10000.0):
    k = np.asarray(offsets, dtype=np.float64)
    out = np.zeros(k.shape)
    for w in np.power(float(base), -np.arange(C // 2) * 2.0 / C):
        out += np.exp(1j * k * w).real
    return out
