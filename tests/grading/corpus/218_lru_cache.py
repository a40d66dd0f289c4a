# The student memoised the ALiBi slopes with `functools.lru_cache` (the bias of Part 4 asks for them again and again): caching a pure function of an integer is good practice, not a trick.
# expect: test_sinusoidal_encoding=2, test_apply_rope=3, test_alibi_slopes=2, test_alibi_bias=2, test_pe_dot_by_offset=2
# status: graded
# kind: honest
# assignment: 06_positional
# base: solution
# %% grade_id: alibi_slopes
from functools import lru_cache


@lru_cache(maxsize=None)
def _slopes(H):
    if H & (H - 1) == 0:                                # a power of two
        return tuple(2.0 ** (-8.0 * (h + 1) / H) for h in range(H))
    n = 1 << (H.bit_length() - 1)                       # the largest power of two below H
    return _slopes(n) + _slopes(2 * n)[0::2][:H - n]


def alibi_slopes(H):
    return np.array(_slopes(int(H)))
