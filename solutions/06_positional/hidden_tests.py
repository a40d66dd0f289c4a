"""Hidden tests of exercise 06 (positional encodings). Not released to students.

Each part's cases include the visible self-checks' inputs, so the notebook runner and the grading
pipeline agree on every submission. Expected values come from ``attnmath`` in float64.
"""

import numpy as np

import attnmath.positional as ref
from attngrade.spec import Case, Part


def encoding_cases(rng):
    cases = [Case((6, 4), {}, "visible", ref.sinusoidal_encoding(6, 4), kind="a visible self-check"),
             Case((40, 16), {}, "visible part 5", ref.sinusoidal_encoding(40, 16),
                  kind="a visible self-check")]
    for L, C, base in [(1, 2, 10000.0), (17, 8, 10000.0), (50, 32, 10000.0), (9, 6, 100.0),
                       (3, 2, 2.0), (200, 128, 10000.0), (1000, 64, 10000.0), (33, 10, 500000.0)]:
        cases.append(Case((L, C), {"base": base}, f"L={L} C={C} base={base}",
                          ref.sinusoidal_encoding(L, C, base=base),
                          kind="another length and width" if base == 10000.0 else "another base"))
    return cases


def rope_cases(rng):
    cases = []
    vis = np.random.default_rng(0)
    X = vis.normal(size=(3, 8))
    for pos in (np.zeros(3, dtype=int), np.array([1, 2, 3])):
        cases.append(Case((X, pos), {}, f"visible {pos.tolist()}", ref.apply_rope(X, pos),
                          kind="a visible self-check"))
    for p in (3, 10, 103, 110):
        cases.append(Case((X[:2], np.array([p, p])), {}, f"visible position {p}", ref.apply_rope(X[:2], [p, p]),
                          kind="a visible self-check"))
    for shape, positions, base in [
        ((5, 2), [0, 1, 2, 3, 4], 10000.0),
        ((2, 3, 6, 16), [5, 0, 17, 3, 3, 250], 10000.0),  # (B, H, L, D), unsorted and repeated
        ((4, 12), [-7, -1, 0, 1000], 10000.0),  # negative positions
        ((1, 2, 3, 10), [2, 7, 30], 500.0),
        ((3, 64), [0, 4096, 100000], 10000.0),  # far positions
        ((2, 8, 4), list(range(100, 108)), 1000000.0),
    ]:
        x = rng.normal(size=shape)
        pos = np.array(positions, dtype=np.int64)
        cases.append(Case((x, pos), {"base": base}, f"shape {shape} base {base}",
                          ref.apply_rope(x, pos, base=base), kind="another shape, positions and base"))
    return cases


def slopes_cases(rng):
    return [Case((H,), {}, f"H={H}", ref.alibi_slopes(H),
                 kind="a head count that is " + ("a power of two" if H & (H - 1) == 0 else "not a power of two"))
            for H in (8, 1, 6, 2, 3, 4, 5, 7, 12, 16, 20, 24, 32, 48, 64, 100)]


def bias_cases(rng):
    cases = [Case((8, 4), {}, "visible", ref.alibi_bias(8, 4), kind="a visible self-check")]
    for H, L, S in [(1, 1, None), (6, 4, 7), (3, 7, 4), (12, 5, None), (5, 3, 3), (16, 9, 20)]:
        args = (H, L) if S is None else (H, L, S)
        cases.append(Case(args, {}, f"H={H} L={L} S={S}", ref.alibi_bias(H, L, S),
                          kind="another head count and length" if S is None else "another head count, L and S differ"))
    return cases


def dot_cases(rng):
    ks = np.arange(0, 20)
    cases = [Case((16, ks), {}, "visible", ref.sinusoidal_dot_product(16, ks), kind="a visible self-check"),
             Case((16, np.array([0])), {}, "visible zero", ref.sinusoidal_dot_product(16, [0]),
                  kind="a visible self-check"),
             Case((16, -ks), {}, "visible negative", ref.sinusoidal_dot_product(16, -ks),
                  kind="a visible self-check"),
             Case((16, np.array([[1, 2], [3, 4]])), {}, "visible 2-D",
                  ref.sinusoidal_dot_product(16, np.array([[1, 2], [3, 4]])), kind="a visible self-check")]
    for C, offsets, base in [(2, np.arange(-5, 6), 10000.0), (64, np.arange(-300, 301), 10000.0),
                             (10, rng.integers(-1000, 1000, size=(4, 5)), 100.0)]:
        cases.append(Case((C, offsets), {"base": base}, f"C={C} base={base}",
                          ref.sinusoidal_dot_product(C, offsets, base=base),
                          kind="other offsets and width" if base == 10000.0 else "another base, offsets in a matrix"))
    # far offsets: the closed form needs O(len(offsets) * C) memory, about 0.5 MB here; an
    # encoding of 10^5 rows and 128 columns takes 100 MB.
    far = rng.integers(-10**5, 10**5, size=500)
    far[:2] = [10**5, -10**5]
    cases.append(Case((128, far), {}, "offsets up to 1e5", ref.sinusoidal_dot_product(128, far),
                      tol=1e-7, max_peak_bytes=16 * 2**20, kind="far offsets, memory limit"))
    return cases


PARTS = [
    Part("test_sinusoidal_encoding", function="sinusoidal_encoding", cases=encoding_cases),
    Part("test_apply_rope", function="apply_rope", cases=rope_cases),
    Part("test_alibi_slopes", function="alibi_slopes", cases=slopes_cases),
    Part("test_alibi_bias", function="alibi_bias", cases=bias_cases),
    Part("test_pe_dot_by_offset", function="pe_dot_by_offset", cases=dot_cases),
]
