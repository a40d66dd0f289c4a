"""Hidden tests of exercise 14 (long context). Not released to students.

Each part's cases include the visible self-checks' inputs, so the notebook runner and the grading
pipeline agree on every submission. Expected values come from ``attnmath.long_context`` in
float64 (ring attention: from the library's ring in float64, for float32 inputs too).
"""

import numpy as np

import attnmath.long_context as ref
from attngrade.spec import Case, Part

FREQ_TOL = 1e-10  # frequencies are at most 1; any order of evaluation is far inside this


def _freq_inputs(rng, min_D=2):
    """(label, kind, D, scale, base) for the frequency parts."""
    inputs = [("visible", "a visible self-check", 8, 4.0, 10000.0),
              ("visible s=1", "a visible self-check", 16, 1.0, 10000.0)]
    for D in (2, 4, 6, 64, 128):
        if D >= min_D:
            for s in (2.0, 3.5, 16.0):
                inputs.append((f"D={D} s={s}", "another head dim and factor", D, s, 10000.0))
    for base in (100.0, 500000.0):
        inputs.append((f"base {base:g}", "another base", 64, 8.0, base))
    inputs.append(("no extension", "a factor of 1, no extension", 128, 1.0, 10000.0))
    s = float(rng.uniform(1.0, 40.0))
    inputs.append(("random factor", "another head dim and factor", 96, s, 10000.0))
    return inputs


def interpolated_cases(rng):
    return [Case((D, s), {"base": base}, label, ref.interpolated_frequencies(D, s, base=base),
                 tol=FREQ_TOL, kind=kind) for label, kind, D, s, base in _freq_inputs(rng)]


def ntk_cases(rng):
    return [Case((D, s), {"base": base}, label, ref.ntk_frequencies(D, s, base=base),
                 tol=FREQ_TOL, kind=kind) for label, kind, D, s, base in _freq_inputs(rng, min_D=4)]


def _yarn_expected(D, s, L, base, fast, slow):
    return ref.yarn_frequencies(D, s, L, base=base, beta_fast=fast, beta_slow=slow), \
        ref.yarn_attention_factor(s)


def yarn_cases(rng):
    inputs = [("visible", "a visible self-check", 128, 8.0, 4096, 10000.0, 32.0, 1.0),
              ("visible s=1", "a visible self-check", 16, 1.0, 64, 10000.0, 32.0, 1.0)]
    for D, s, L in [(64, 4.0, 2048), (128, 16.0, 4096), (128, 2.5, 8192), (8, 4.0, 32),
                    (96, 32.0, 1024), (2, 3.0, 100)]:
        inputs.append((f"D={D} s={s} L={L}", "another head dim, factor and context", D, s, L,
                       10000.0, 32.0, 1.0))
    inputs.append(("base 500000", "another base", 128, 8.0, 8192, 500000.0, 32.0, 1.0))
    inputs.append(("custom ramp", "other ramp thresholds", 128, 8.0, 4096, 10000.0, 16.0, 2.0))
    inputs.append(("wide ramp", "other ramp thresholds", 64, 4.0, 2048, 10000.0, 64.0, 0.5))
    s = float(rng.uniform(1.0, 40.0))
    inputs.append(("random factor", "another head dim, factor and context", 128, s, 4096,
                   10000.0, 32.0, 1.0))
    return [Case((D, s, L), {"base": base, "beta_fast": fast, "beta_slow": slow}, label,
                 _yarn_expected(D, s, L, base, fast, slow), tol=FREQ_TOL, kind=kind)
            for label, kind, D, s, L, base, fast, slow in inputs]


def _yarn_check(case, out):
    assert isinstance(out, (tuple, list)) and len(out) == 2, "return a tuple (inv_freq, attention_factor)"
    theta_expected, factor_expected = case.expected
    theta = np.asarray(out[0])
    assert theta.dtype.kind == "f", f"inv_freq has dtype {theta.dtype}, expected floats"
    assert theta.shape == theta_expected.shape, f"inv_freq shape {theta.shape} != {theta_expected.shape}"
    assert np.isfinite(theta).all(), "NaN or inf in inv_freq"
    assert np.all(np.abs(theta - theta_expected) <= case.tol * (1 + np.abs(theta_expected))), \
        "wrong frequencies"
    factor = np.asarray(out[1], dtype=np.float64)
    assert factor.shape == (), "attention_factor must be one number"
    assert abs(float(factor) - factor_expected) <= case.tol * (1 + factor_expected), "wrong attention factor"


def sink_cases(rng):
    inputs = [("visible", "a visible self-check", 10, 2, 3),
              ("visible short", "a visible self-check", 4, 2, 3),
              ("visible no sink", "a visible self-check", 7, 0, 2)]
    for S, n_sink, window in [(0, 4, 8), (1, 4, 8), (12, 4, 8), (13, 4, 8), (1000, 4, 1020),
                              (5000, 4, 1020), (50, 1, 1), (50, 0, 1), (9, 9, 9), (30, 10, 3)]:
        kind = ("an empty stream" if S == 0
                else "a stream shorter than the cache" if S <= n_sink + window
                else "no sinks" if n_sink == 0 else "a long stream")
        inputs.append((f"S={S} n_sink={n_sink} window={window}", kind, S, n_sink, window))
    S = int(rng.integers(100, 400))
    inputs.append(("random length", "a long stream", S, 4, 32))
    return [Case((S,), {"n_sink": n_sink, "window": window}, label,
                 ref.sink_cache_kept(S, n_sink=n_sink, window=window), kind=kind)
            for label, kind, S, n_sink, window in inputs]


def _sink_check(case, out):
    assert out is not None, "returned None"
    out = np.asarray(out)
    expected = np.asarray(case.expected)
    assert out.dtype.kind in "iu" or out.size == 0, f"kept has dtype {out.dtype}, expected integers"
    assert out.shape == expected.shape, f"shape {out.shape} != expected {expected.shape}"
    assert (out == expected).all(), "wrong tokens kept, or not in increasing order"


def _ring_expected(q, k, v, P, causal):
    q64, k64, v64 = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    return ref.ring_attention(q64, k64, v64, P=P, causal=causal).out


def ring_cases(rng):
    cases = []
    visible = np.arange(24, dtype=np.float64).reshape(6, 4) / 10.0
    for P, causal in ((2, False), (3, True)):
        cases.append(Case((visible, visible[::-1].copy(), visible, P, causal), {}, "visible",
                          _ring_expected(visible, visible[::-1], visible, P, causal), tol=1e-9,
                          kind="a visible self-check"))
    for L, D, D_v, P, causal in [(8, 4, 4, 1, True), (8, 4, 4, 4, False), (8, 4, 4, 4, True),
                                 (17, 8, 3, 3, True), (17, 8, 3, 5, False), (12, 2, 6, 12, True),
                                 (5, 16, 16, 2, True), (30, 8, 8, 7, True)]:
        q, k, v = rng.standard_normal((L, D)), rng.standard_normal((L, D)), rng.standard_normal((L, D_v))
        kind = ("one worker" if P == 1 else "an uneven split" if L % P else
                "a causal mask" if causal else "another length and number of workers")
        cases.append(Case((q, k, v, P, causal), {}, f"L={L} P={P} causal={causal}",
                          _ring_expected(q, k, v, P, causal), tol=1e-9, kind=kind))
    q, k, v = (3.0 * rng.standard_normal((16, 8)) for _ in range(3))  # larger scores
    cases.append(Case((q, k, v, 4, True), {}, "large scores", _ring_expected(q, k, v, 4, True),
                      tol=1e-9, kind="large scores"))
    q, k, v = (rng.standard_normal((12, 8)).astype(np.float32) for _ in range(3))
    cases.append(Case((q, k, v, 3, True), {}, "float32", _ring_expected(q, k, v, 3, True), tol=1e-5,
                      kind="float32 input"))
    return cases


PARTS = [
    Part("test_interpolated_frequencies", function="interpolated_frequencies", cases=interpolated_cases),
    Part("test_ntk_frequencies", function="ntk_frequencies", cases=ntk_cases),
    Part("test_yarn", function="yarn", cases=yarn_cases, check=_yarn_check),
    Part("test_sink_cache_kept", function="sink_cache_kept", cases=sink_cases, check=_sink_check,
         precision="Exact: the integer token indices, in increasing order, equal to the expected ones."),
    Part("test_ring_attention", function="ring_attention", cases=ring_cases),
]
