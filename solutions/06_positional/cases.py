"""The cases of exercise 06 (positional encodings): one generator per part, for the visible checks and the grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code, tolerances and memory
budgets (``attngrade.spec``). Expected values come from ``attnmath`` in float64, computed before
your function runs; your function gets its own copies of the inputs.

Parts 3 and 4 depend on your variant (``VARIANTS``): the constant $c$ of the ALiBi slopes your
notebook states, which ``variant.json`` next to this file records for the visible checks. Without
that file (the public copy of the course), it is the paper's 8.
"""

import numpy as np

import attnmath.positional as ref
from attngrade.spec import Case, Part, allclose_check
from attngrade.variants import Param, Variants
from attngrade.visible import factor_hint, like

VARIANTS = Variants("06_positional", (
    Param("alibi_constant", default=8, choices=(4, 6, 10, 12),
          says="the constant $c$ of your ALiBi slopes $m_h = 2^{-c(h+1)/H}$ (Parts 3 and 4)"),
))

# ----------------------------------------------------------------------------- Part 1


def encoding_check(case, out):
    """The task asks for a float64 array: its dtype, then its values."""
    assert out is not None, "returned None"
    dtype = np.asarray(out).dtype
    assert dtype == np.float64, f"the encoding must be a float64 array, got dtype {dtype}"
    allclose_check(case, out)


def encoding_cases(rng):
    cases = [Case((L, C), {}, f"L={L} C={C} default base", ref.sinusoidal_encoding(L, C), kind="the default base")
             for L, C in [(6, 4), (40, 16)]]
    for L, C, base in [(1, 2, 10000.0), (17, 8, 10000.0), (50, 32, 10000.0), (9, 6, 100.0), (12, 6, 10000.0),
                       (3, 2, 2.0), (3, 4, 100.0), (200, 128, 10000.0), (1000, 64, 10000.0), (33, 10, 500000.0)]:
        cases.append(Case((L, C), {"base": base}, f"L={L} C={C} base={base}",
                          ref.sinusoidal_encoding(L, C, base=base),
                          kind="another length and width" if base == 10000.0 else "another base"))
    return cases


def _angles(L, C, base, exponent=2.0, divide=False):
    """The angles of the encoding as a mistake computes them: another exponent, or p / omega."""
    omega = base ** (-exponent * np.arange(C // 2) / C)
    angles = np.arange(L)[:, None] / omega if divide else np.arange(L)[:, None] * omega
    return angles


def _interleave(angles):
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(angles.shape[0], -1)


def diagnose_encoding(case, out):
    L, C = case.args
    base = case.kwargs.get("base", 10000.0)
    if np.asarray(out).dtype != np.float64:
        return "the task asks for a float64 array: compute and store the encoding in float64"
    angles = _angles(L, C, base)
    sin, cos = np.sin(angles), np.cos(angles)
    variants = [(np.concatenate([sin, cos], axis=1), "the columns alternate sin, cos: columns 2i and 2i + 1 hold the "
                                                     "sine and the cosine of one angle (interleaved, not all sines "
                                                     "first)"),
                (np.stack([cos, sin], axis=-1).reshape(L, C), "column 2i holds the sine and column 2i + 1 the cosine"),
                (_interleave(_angles(L, C, base, divide=True)), "the angle is p * omega_i, not p / omega_i"),
                (_interleave(_angles(L, C, base, exponent=1.0)), "omega_i = base^(-2i/C): the exponent uses 2i"),
                (_interleave(_angles(L, C, 10000.0)), "use the base argument, not 10000")]
    for variant, words in variants:
        if like(out, variant, case.expected):
            return words
    return None


HINTS_ENCODING = {
    "the default base": "base defaults to 10000; position 0 encodes as (0, 1, 0, 1, ...)",
    "another length and width": "omega_i = base^(-2i/C) for i = 0 .. C/2 - 1; compute in float64",
    "another base": "use the base argument",
}

# ----------------------------------------------------------------------------- Part 2


def rope_cases(rng):
    x = rng.normal(size=(3, 8))
    start = int(rng.integers(1, 50))
    cases = [Case((x, np.arange(start, start + 3)), {}, "consecutive", ref.apply_rope(x, np.arange(start, start + 3)),
                  kind="consecutive positions"),
             Case((x, np.zeros(3, dtype=np.int64)), {}, "zeros", ref.apply_rope(x, np.zeros(3, dtype=np.int64)),
                  kind="every position zero")]
    for i in range(2):
        p = int(rng.integers(1, 200))
        x = rng.normal(size=(2, 8))
        pos = np.array([p, p], dtype=np.int64)
        cases.append(Case((x, pos), {}, f"repeated {i + 1}", ref.apply_rope(x, pos), kind="a repeated position"))
    repeated = rng.integers(0, 300, size=6)
    repeated[4] = repeated[3]
    for shape, positions, base in [
        ((5, 2), np.arange(5), 10000.0),
        ((2, 3, 6, 16), repeated, 10000.0),  # (B, H, L, D), unsorted and repeated
        ((4, 12), [int(rng.integers(-50, -5)), -1, 0, int(rng.integers(500, 2000))], 10000.0),  # negative positions
        ((1, 2, 3, 10), rng.integers(0, 40, size=3), 500.0),
        ((2, 8), [0, int(rng.integers(1, 9))], 100.0),
        ((3, 64), [0, int(rng.integers(1000, 5000)), int(rng.integers(50000, 200000))], 10000.0),  # far positions
        ((2, 8, 4), np.arange(8) + int(rng.integers(50, 150)), 1000000.0),
    ]:
        x = rng.normal(size=shape)
        pos = np.array(positions, dtype=np.int64)
        cases.append(Case((x, pos), {"base": base}, f"shape {shape} base {base}",
                          ref.apply_rope(x, pos, base=base), kind="another shape, positions and base"))
    return cases


def _rotate_half(x, positions, base):
    """RoPE as GPT-NeoX pairs the coordinates: i with i + D/2."""
    D = x.shape[-1]
    angles = np.asarray(positions, dtype=np.float64)[:, None] * base ** (-np.arange(0, D, 2) / D)
    first, second = x[..., : D // 2], x[..., D // 2:]
    return np.concatenate([first * np.cos(angles) - second * np.sin(angles),
                           first * np.sin(angles) + second * np.cos(angles)], axis=-1)


def diagnose_rope(case, out):
    x, positions = case.args
    base = case.kwargs.get("base", 10000.0)
    for variant, words in [(ref.apply_rope(x, -positions, base=base), "the rotation goes the wrong way: rotate each "
                                                                       "pair by +m theta_i"),
                           (_rotate_half(x, positions, base), "pair i is the coordinates (2i, 2i + 1), interleaved, "
                                                              "not (i, i + D/2)"),
                           (ref.apply_rope(x, positions), "use the base argument, not 10000")]:
        if like(out, variant, case.expected):
            return words
    return None


HINTS_ROPE = {
    "consecutive positions": "rotate pair (2i, 2i + 1) of the row at position m by m * base^(-2i/D), "
                             "counterclockwise",
    "every position zero": "position 0 leaves x unchanged",
    "a repeated position": "each row is rotated by its own position; two rows at one position turn alike",
    "another shape, positions and base": "x may have leading axes (..., L, D): index pairs with x[..., 0::2]; "
                                         "positions may be unsorted, repeated, negative or far; use the base argument",
}

# ----------------------------------------------------------------------------- Part 3


def _slopes(H, c):
    """The ALiBi slopes with the constant c: the paper's (c = 8) raised to the power c / 8."""
    return ref.alibi_slopes(H) ** (c / 8.0)


def _bias(H, L, S, c):
    slopes = ref.alibi_slopes(H)
    return ref.alibi_bias(H, L, S) * (_slopes(H, c) / slopes)[:, None, None]


def _constant_of(expected, make):
    """The constant c among the variant's values whose ``make(c)`` is ``expected``, or None."""
    param = VARIANTS.param("alibi_constant")
    found = [c for c in (param.default, *param.choices) if np.allclose(make(c), expected, rtol=1e-9, atol=0)]
    return found[0] if len(found) == 1 else None


def slopes_cases(rng, variant):
    c = variant["alibi_constant"]
    return [Case((H,), {}, f"H={H}", _slopes(H, c),
                 kind="a head count that is " + ("a power of two" if H & (H - 1) == 0 else "not a power of two"))
            for H in (8, 1, 6, 2, 3, 4, 5, 7, 12, 16, 20, 24, 32, 48, 64, 100)]


def diagnose_slopes(case, out):
    (H,) = case.args
    h = np.arange(H)
    c = _constant_of(case.expected, lambda c: _slopes(H, c))
    if c is None:
        return None
    others = [(_slopes(H, o), f"the slopes use the constant {o}, not yours: c = {c}")
              for o in (VARIANTS.param("alibi_constant").default, *VARIANTS.param("alibi_constant").choices) if o != c]
    for variant, words in [(2.0 ** (-c * h / H), "count the heads from h = 0 with m_h = 2^(-c(h+1)/H): the first "
                                                 "slope is 2^(-c/H), not 1"),
                           (2.0 ** (-c * (h + 1) / H), "H is not a power of two: take the n slopes for n heads, "
                                                       "then every other slope for 2n heads"),
                           (np.sort(case.expected)[::-1], "keep the order described (n slopes, then the others), "
                                                          "not sorted"), *others]:
        if like(out, variant, case.expected):
            return words
    return None


HINTS_SLOPES = {
    "a head count that is a power of two": "m_h = 2^(-c(h+1)/H) for h = 0 .. H-1, with your constant c",
    "a head count that is not a power of two": "n is the largest power of two below H: the n slopes for n heads, "
                                               "then the slopes for 2n heads at the even indices",
}

# ----------------------------------------------------------------------------- Part 4


def bias_cases(rng, variant):
    c = variant["alibi_constant"]
    cases = []
    for H, L, S in [(8, 4, None), (1, 1, None), (6, 3, None), (6, 4, 7), (3, 7, 4), (2, 2, 5), (12, 5, None),
                    (5, 3, 3), (16, 9, 20)]:
        args = (H, L) if S is None else (H, L, S)
        cases.append(Case(args, {}, f"H={H} L={L} S={S}", _bias(H, L, S, c),
                          kind="another head count and length" if S is None else "another head count, L and S differ"))
    return cases


def diagnose_bias(case, out):
    H, L = case.args[:2]
    S = case.args[2] if len(case.args) > 2 else L
    c = _constant_of(case.expected, lambda c: _bias(H, L, S, c))
    if c is None:
        return None
    slopes = _slopes(H, c)[:, None, None]
    i, j = np.arange(L)[:, None], np.arange(S)[None, :]
    power = 2.0 ** (-c * np.arange(1, H + 1) / H)[:, None, None]
    for variant, words in [(slopes * np.maximum(i - j, 0), "the ALiBi bias is a penalty: its sign is flipped, "
                                                           "-m_h (i - j)"),
                           (-slopes * (i - j), "no bias for future keys (j > i): the mask removes them"),
                           (-slopes * np.maximum(j - i, 0), "the distance is i - j: the keys in the past are "
                                                            "penalised"),
                           (-slopes * j, "the penalty grows with the distance i - j, not with the key index j"),
                           (-power * np.maximum(i - j, 0), "each head uses its slope from alibi_slopes(H), also when "
                                                           "H is not a power of two")]:
        if like(out, np.broadcast_to(variant, case.expected.shape), case.expected):
            return words
    return None


HINTS_BIAS = {
    "another head count and length": "bias[h, i, j] = -m_h (i - j) for j <= i and 0 for j > i, with the slopes of "
                                     "alibi_slopes(H)",
    "another head count, L and S differ": "the shape is (H, L, S): S keys, query i at position i (top-left)",
}

# ----------------------------------------------------------------------------- Part 5


def dot_cases(rng):
    small = rng.integers(1, 60, size=20)
    cases = [Case((16, small), {}, "small offsets", ref.sinusoidal_dot_product(16, small), kind="small offsets"),
             Case((16, np.array([0])), {}, "zero", ref.sinusoidal_dot_product(16, [0]), kind="offset zero"),
             Case((16, -small), {}, "negative", ref.sinusoidal_dot_product(16, -small), kind="negative offsets")]
    square = rng.integers(-30, 30, size=(2, 2))
    cases.append(Case((16, square), {}, "2-D", ref.sinusoidal_dot_product(16, square), kind="offsets in a matrix"))
    for C, offsets, base in [(2, rng.integers(-5, 6, size=11), 10000.0), (8, rng.integers(-40, 41, size=12), 10000.0),
                             (64, rng.integers(-300, 301, size=601), 10000.0),
                             (10, rng.integers(-1000, 1000, size=(4, 5)), 100.0),
                             (4, rng.integers(-10, 10, size=(2, 2)), 100.0)]:
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


def diagnose_dot(case, out):
    C, offsets = case.args
    base = case.kwargs.get("base", 10000.0)
    k = np.asarray(offsets, dtype=np.float64)
    omega = base ** (-np.arange(0, C, 2) / C)
    for variant, words in [(np.sin(k[..., None] * omega).sum(axis=-1), "cos(a - b) = cos a cos b + sin a sin b: "
                                                                        "f(k) is a sum of cosines"),
                           (ref.sinusoidal_dot_product(C, offsets), "use the base argument, not 10000")]:
        if like(out, variant, case.expected):
            return words
    rounded = np.cos(k[..., None] * base ** (-np.arange(0, C, 2, dtype=np.float32) / C)).sum(axis=-1)
    if np.shape(out) == rounded.shape and np.allclose(out, rounded, rtol=1e-13, atol=1e-13):
        return "the frequencies are computed in float32: compute them in float64"
    return factor_hint(out, case.expected, [(2.0, "twice too large: f(0) = C/2, one cosine per frequency"),
                                            (0.5, "half as large as it should be: f(0) = C/2")])


HINTS_DOT = {
    "small offsets": "f(k) = sum over the C/2 frequencies of cos(omega_i k)",
    "offset zero": "f(0) = C/2",
    "negative offsets": "f is even in k: cos(-a) = cos(a)",
    "offsets in a matrix": "the output has the shape of offsets: add the frequency axis last and sum over it",
    "other offsets and width": "omega_i = base^(-2i/C), in float64",
    "another base, offsets in a matrix": "use the base argument; the output has the shape of offsets",
    "far offsets, memory limit": "use the closed form in the offset, not rows of the encoding for every position",
}

PARTS = [
    Part("test_sinusoidal_encoding", function="sinusoidal_encoding", cases=encoding_cases, check=encoding_check,
         hints=HINTS_ENCODING, diagnose=diagnose_encoding),
    Part("test_apply_rope", function="apply_rope", cases=rope_cases, hints=HINTS_ROPE, diagnose=diagnose_rope),
    Part("test_alibi_slopes", function="alibi_slopes", cases=slopes_cases, hints=HINTS_SLOPES,
         diagnose=diagnose_slopes, variants=VARIANTS),
    Part("test_alibi_bias", function="alibi_bias", cases=bias_cases, hints=HINTS_BIAS, diagnose=diagnose_bias,
         variants=VARIANTS),
    Part("test_pe_dot_by_offset", function="pe_dot_by_offset", cases=dot_cases, hints=HINTS_DOT,
         diagnose=diagnose_dot),
]
