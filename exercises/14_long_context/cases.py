"""The cases of exercise 14 (long context): one generator per part, for the visible checks and the
grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code and tolerances
(``attngrade.spec``). Expected values come from ``attnmath.long_context`` in float64 (ring
attention: from the library's ring in float64, for float32 inputs too), computed before your
function runs; your function gets its own copies of the inputs.
"""

import math

import numpy as np

import attnmath.long_context as ref
from attngrade.spec import Case, Part
from attngrade.visible import like

FREQ_TOL = 1e-10  # frequencies are at most 1; any order of evaluation is far inside this

# ----------------------------------------------------------------------------- Parts 1 and 2


def _freq_inputs(rng, min_D=2):
    """(label, kind, D, scale, base) for the frequency parts: plain kinds first."""
    inputs = []
    for D, scales in [(8, (4.0,)), (2, (2.0, 3.5, 16.0)), (4, (2.0, 3.5, 16.0)), (6, (2.5, 3.5, 16.0)),
                      (64, (2.0, 3.5, 16.0)), (128, (2.0, 3.5, 16.0))]:
        if D >= min_D:
            for s in scales:
                inputs.append((f"D={D} s={s}", "another head dim and factor", D, s, 10000.0))
    inputs.append(("D=96, a drawn factor", "another head dim and factor", 96, float(rng.uniform(1.0, 40.0)),
                   10000.0))
    for D, s, base in [(4, 2.0, 100.0), (64, 8.0, 100.0), (64, 8.0, 500000.0)]:
        inputs.append((f"base {base:g} D={D} s={s}", "another base", D, s, base))
    inputs.append(("a drawn base", "another base", 32, 4.0, float(10 ** rng.uniform(2.0, 6.0))))
    for D in (16, 128):
        inputs.append((f"no extension, D={D}", "a factor of 1, no extension", D, 1.0, 10000.0))
    return inputs


def interpolated_cases(rng):
    return [Case((D, s), {"base": base}, label, ref.interpolated_frequencies(D, s, base=base),
                 tol=FREQ_TOL, kind=kind) for label, kind, D, s, base in _freq_inputs(rng)]


def ntk_cases(rng):
    return [Case((D, s), {"base": base}, label, ref.ntk_frequencies(D, s, base=base),
                 tol=FREQ_TOL, kind=kind) for label, kind, D, s, base in _freq_inputs(rng, min_D=4)]


def _rope(D, base):
    return base ** (-2.0 * np.arange(D // 2) / D)


def _first_like(out, expected, variants):
    for variant, words in variants:
        if like(out, variant, expected, rtol=1e-9):
            return words
    return None


def diagnose_interpolated(case, out):
    (D, s), base = case.args, case.kwargs["base"]
    theta = _rope(D, base)
    return _first_like(out, case.expected, [
        (theta * s, "the frequencies are multiplied by s: interpolation divides them (positions are squeezed, not "
                    "stretched)"),
        (base ** (-np.arange(D // 2) / D) / s, "the exponent is -2i/D for the pairs i = 0 .. D/2 - 1"),
        (_rope(D, 10000.0) / s, "use the base argument"),
        (theta / int(s), "a factor need not be a whole number: divide by s itself"),
        (theta, "interpolation divides every frequency by s")])


def diagnose_ntk(case, out):
    (D, s), base = case.args, case.kwargs["base"]
    return _first_like(out, case.expected, [
        (_rope(D, base * s**D), "the base is multiplied by s^(D/(D-2)), not by s^D"),
        (_rope(D, base * s**D / (D - 2)), "the exponent of s is D/(D-2): mind the brackets"),
        (_rope(D, base / s ** (D / (D - 2))), "a larger base slows the pairs down: the base is multiplied, not "
                                              "divided"),
        (_rope(D, base * s), "the base is multiplied by s^(D/(D-2)), not by s"),
        (_rope(D, 10000.0 * s ** (D / (D - 2))), "use the base argument"),
        (_rope(D, base * int(s) ** (D / (D - 2))), "a factor need not be a whole number: use s itself"),
        (_rope(D, base) / s, "NTK scaling changes the base: only the slowest pair is divided by exactly s")])


HINTS_INTERPOLATED = {
    "another head dim and factor": "one frequency per pair, shape (D // 2,): b^(-2i/D) / s, and a factor need not "
                                   "be a whole number",
    "another base": "the frequencies are base^(-2i/D) / s: use the base argument",
    "a factor of 1, no extension": "with s = 1 these are RoPE's frequencies b^(-2i/D)",
}

HINTS_NTK = {
    "another head dim and factor": "the new base is b s^(D/(D-2)): the fastest pair keeps its frequency and the "
                                   "slowest is divided by exactly s",
    "another base": "the new base is base * s^(D/(D-2)): use the base argument",
    "a factor of 1, no extension": "with no extension the base stays b, so these are plain RoPE's frequencies",
}

# ----------------------------------------------------------------------------- Part 3


def _yarn_expected(D, s, L, base, fast, slow):
    return ref.yarn_frequencies(D, s, L, base=base, beta_fast=fast, beta_slow=slow), \
        ref.yarn_attention_factor(s)


def yarn_cases(rng):
    inputs = []
    for D, s, L in [(128, 8.0, 4096), (64, 4.0, 2048), (128, 16.0, 4096), (128, 2.5, 8192), (32, 2.5, 512),
                    (8, 4.0, 32), (96, 32.0, 1024), (2, 3.0, 100)]:
        inputs.append((f"D={D} s={s} L={L}", "another head dim, factor and context", D, s, L, 10000.0, 32.0, 1.0))
    inputs.append(("D=128, a drawn factor", "another head dim, factor and context", 128,
                   float(rng.uniform(1.0, 40.0)), 4096, 10000.0, 32.0, 1.0))
    inputs.append(("no extension", "a factor of 1, no extension", 16, 1.0, 64, 10000.0, 32.0, 1.0))
    inputs.append(("base 500000", "another base", 128, 8.0, 8192, 500000.0, 32.0, 1.0))
    inputs.append(("base 100", "another base", 8, 2.0, 64, 100.0, 32.0, 1.0))
    inputs.append(("custom ramp", "other ramp thresholds", 128, 8.0, 4096, 10000.0, 16.0, 2.0))
    inputs.append(("narrow ramp", "other ramp thresholds", 128, 8.0, 4096, 10000.0, 8.0, 2.0))
    inputs.append(("wide ramp", "other ramp thresholds", 64, 4.0, 2048, 10000.0, 64.0, 0.5))
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
    assert isinstance(out[1], float), \
        f"attention_factor must be a float (float(...)), not {type(out[1]).__name__}"
    assert abs(out[1] - factor_expected) <= case.tol * (1 + factor_expected), "wrong attention factor"


def _yarn_variant(D, s, L, base, fast, slow, reversed_ramp=False, multiply=False, turns_over=None):
    theta = _rope(D, base)
    turns = (L if turns_over is None else turns_over) * theta / (2.0 * np.pi)
    gamma = np.clip((turns - slow) / (fast - slow), 0.0, 1.0)
    if reversed_ramp:
        gamma = 1.0 - gamma
    return (1.0 - gamma) * (theta * s if multiply else theta / s) + gamma * theta


def diagnose_yarn(case, out):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        return None
    (D, s, L), kw = case.args, case.kwargs
    args = (D, s, L, kw["base"], kw["beta_fast"], kw["beta_slow"])
    theta_expected, factor_expected = case.expected
    words = _first_like(out[0], theta_expected, [
        (_yarn_variant(*args, reversed_ramp=True), "the ramp is the wrong way round: pairs that turn more than "
                                                   "beta_fast times keep their frequency, those under beta_slow are "
                                                   "interpolated"),
        (_yarn_variant(*args, multiply=True), "slow pairs are divided by s, not multiplied"),
        (_yarn_variant(*args, turns_over=s * L), "the turns are counted over the original context L, not s L"),
        (_yarn_variant(D, s, L, kw["base"], 32.0, 1.0), "use the beta_fast and beta_slow arguments"),
        (_yarn_variant(D, s, L, 10000.0, kw["beta_fast"], kw["beta_slow"]), "use the base argument"),
        (_yarn_variant(D, int(s), L, kw["base"], kw["beta_fast"], kw["beta_slow"]), "a factor need not be a whole "
                                                                                    "number: use s itself")])
    if words is None and not isinstance(out[1], float):
        return "attention_factor is a float: return float(...) of 0.1 ln s + 1"
    if words is None and np.ndim(out[1]) == 0:
        words = _first_like(out[1], factor_expected, [
            (0.1 * math.log10(s) + 1.0, "the attention factor is 0.1 ln s + 1 (natural log)"),
            (math.sqrt(0.1 * math.log(s) + 1.0), "the attention factor sqrt(1/t) is 0.1 ln s + 1 itself")])
    return words


HINTS_YARN = {
    "another head dim, factor and context": "pairs that turn more than beta_fast times over the original context "
                                            "keep their frequency, those under beta_slow are divided by s, the "
                                            "ramp blends in between; the factor is 0.1 ln s + 1",
    "a factor of 1, no extension": "s = 1 gives RoPE's frequencies and an attention factor of 1",
    "another base": "theta_i = base^(-2i/D): use the base argument",
    "other ramp thresholds": "the ramp runs between beta_slow and beta_fast turns: use the arguments",
}

# ----------------------------------------------------------------------------- Part 4


def sink_cases(rng):
    inputs = []
    for S, n_sink, window, kind in [(10, 2, 3, "a long stream"), (12, 4, 8, "a stream shorter than the cache"),
                                    (4, 2, 3, "a stream shorter than the cache"),
                                    (1, 4, 8, "a stream shorter than the cache"),
                                    (13, 4, 8, "a long stream"), (40, 3, 5, "a long stream"),
                                    (1000, 4, 1020, "a stream shorter than the cache"),
                                    (5000, 4, 1020, "a long stream"), (50, 1, 1, "a long stream"),
                                    (30, 10, 3, "a long stream"), (9, 9, 9, "a stream shorter than the cache"),
                                    (7, 0, 2, "no sinks"), (50, 0, 1, "no sinks"), (0, 4, 8, "an empty stream"),
                                    (0, 0, 3, "an empty stream")]:
        inputs.append((f"S={S} n_sink={n_sink} window={window}", kind, S, n_sink, window))
    inputs.append(("a drawn length", "a long stream", int(rng.integers(100, 400)), 4, 32))
    inputs.append(("a drawn length, no sinks", "no sinks", int(rng.integers(40, 400)), 0, 16))
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


def diagnose_sink(case, out):
    (S,), n, w = case.args, case.kwargs["n_sink"], case.kwargs["window"]
    out = np.asarray(out)
    if out.dtype.kind not in "iu":
        return None
    sinks = np.arange(min(n, S))
    for variant, words in [
        (np.concatenate([sinks, np.arange(max(min(n, S), S - w - 1), S)]), "the window holds exactly `window` "
                                                                           "tokens, the newest (S - 1) included"),
        (np.concatenate([sinks, np.arange(max(min(n, S), S - w + 1), S)]), "the window holds exactly `window` "
                                                                           "tokens, the newest (S - 1) included"),
        (np.concatenate([sinks, np.arange(max(0, S - w), S)]), "each token once: where the window reaches back "
                                                               "to the sinks, do not keep them twice"),
        (np.concatenate([np.arange(n), np.arange(max(min(n, S), S - w), S)]), "a short stream keeps only the tokens "
                                                                              "it has: no sink past S - 1"),
        (np.concatenate([np.arange(max(1, min(n, S))), np.arange(max(min(n, S), S - w), S)]),
         "n_sink = 0 keeps no sink: a plain window"),
        (np.union1d(sinks, np.arange(max(0, S - w), S))[::-1], "return the indices in increasing order")]:
        if out.shape == variant.shape and (out == variant).all() and not (
                variant.shape == case.expected.shape and (variant == case.expected).all()):
            return words
    return None


HINTS_SINK = {
    "a long stream": "keep the sinks and exactly the `window` newest tokens, in increasing order",
    "a stream shorter than the cache": "a short stream keeps every token it has, each once",
    "no sinks": "without sinks this is a plain window of the `window` newest tokens",
    "an empty stream": "an empty stream keeps nothing: an integer array of shape (0,)",
}

# ----------------------------------------------------------------------------- Part 5


def _ring_expected(q, k, v, P, causal):
    q64, k64, v64 = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    return ref.ring_attention(q64, k64, v64, P=P, causal=causal).out


def ring_cases(rng):
    cases = []
    for L, D, D_v, P, causal in [(6, 4, 4, 2, False), (6, 4, 4, 3, True), (6, 4, 4, 1, True), (8, 4, 4, 1, True),
                                 (8, 3, 3, 4, False), (8, 4, 4, 4, False), (8, 4, 4, 4, True), (7, 3, 3, 3, True),
                                 (17, 8, 3, 3, True), (17, 8, 3, 5, False), (12, 2, 6, 12, True),
                                 (5, 16, 16, 2, True), (30, 8, 8, 7, True)]:
        q, k, v = rng.standard_normal((L, D)), rng.standard_normal((L, D)), rng.standard_normal((L, D_v))
        kind = ("one worker" if P == 1 else "an uneven split" if L % P else
                "a causal mask" if causal else "another length and number of workers")
        cases.append(Case((q, k, v, P, causal), {}, f"L={L} D={D} P={P} causal={causal}",
                          _ring_expected(q, k, v, P, causal), tol=1e-9, kind=kind))
    for L, D, P in [(16, 8, 4), (12, 4, 4)]:
        q, k, v = (3.0 * rng.standard_normal((L, D)) for _ in range(3))  # larger scores
        cases.append(Case((q, k, v, P, True), {}, f"large scores, L={L}", _ring_expected(q, k, v, P, True),
                          tol=1e-9, kind="large scores"))
    for L, D, P in [(12, 8, 3), (6, 4, 3)]:
        q, k, v = (rng.standard_normal((L, D)).astype(np.float32) for _ in range(3))
        cases.append(Case((q, k, v, P, True), {}, f"float32, L={L}", _ring_expected(q, k, v, P, True), tol=1e-5,
                          kind="float32 input"))
    return cases


def _ring_mask(L, P, causal, local=False, strict=False, one_step=False):
    """The (L, L) mask a mistaken ring applies, block by block."""
    bounds = np.concatenate([[0], np.cumsum([len(b) for b in np.array_split(np.arange(L), P)])])
    mask = np.zeros((L, L), dtype=bool)
    for w in range(P):
        for b in [w] if one_step else range(P):
            i0, i1, j0, j1 = bounds[w], bounds[w + 1], bounds[b], bounds[b + 1]
            if causal and j0 > i1 - 1:
                continue
            block = np.ones((i1 - i0, j1 - j0), dtype=bool)
            if causal:
                i = np.arange(i0, i1)[:, None] - (i0 if local else 0)
                j = np.arange(j0, j1)[None, :] - (j0 if local else 0)
                block = j < i if strict else j <= i
            mask[i0:i1, j0:j1] = block
    return mask


def _masked(q, k, v, mask):
    scores = np.where(mask, q @ k.T / math.sqrt(q.shape[-1]), -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return (e @ v) / np.where(total > 0, total, 1.0)


def diagnose_ring(case, out):
    q, k, v, P, causal = case.args
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    L = len(q)
    variants = [(dict(one_step=True), "every query must see the key blocks of all P workers: P steps round the ring")]
    if causal:
        variants = [(dict(local=True), "the causal mask uses global positions: a block's mask compares global query "
                                       "and key indices"),
                    (dict(strict=True), "a query may attend to its own position: j <= i")] + variants
    for change, words in variants:
        if like(out, _masked(q, k, v, _ring_mask(L, P, causal, **change)), case.expected):
            return words
    if causal and like(out, _masked(q, k, v, np.ones((L, L), dtype=bool)), case.expected):
        return "with causal=True the future keys are masked"
    return None


HINTS_RING = {
    "another length and number of workers": "every query must see the key blocks of all P workers: worker w holds "
                                            "block (w - t) mod P in step t",
    "a causal mask": "the causal mask uses global positions: a block's mask compares global query and key indices",
    "one worker": "with one worker this is plain (causal) attention",
    "an uneven split": "uneven blocks: the first L % P blocks are one longer, as np.array_split splits them",
    "large scores": "merge the states with merge_states (it rescales by the larger lse) at each step",
    "float32 input": "float32 input: compute in at least float32 (never drop to float16)",
}

PARTS = [
    Part("test_interpolated_frequencies", function="interpolated_frequencies", cases=interpolated_cases,
         hints=HINTS_INTERPOLATED, diagnose=diagnose_interpolated),
    Part("test_ntk_frequencies", function="ntk_frequencies", cases=ntk_cases, hints=HINTS_NTK, diagnose=diagnose_ntk),
    Part("test_yarn", function="yarn", cases=yarn_cases, check=_yarn_check, outputs=("inv_freq", "attention_factor"),
         hints=HINTS_YARN, diagnose=diagnose_yarn),
    Part("test_sink_cache_kept", function="sink_cache_kept", cases=sink_cases, check=_sink_check,
         precision="Exact: the integer token indices, in increasing order, equal to the expected ones.",
         hints=HINTS_SINK, diagnose=diagnose_sink),
    Part("test_ring_attention", function="ring_attention", cases=ring_cases, hints=HINTS_RING, diagnose=diagnose_ring),
]
