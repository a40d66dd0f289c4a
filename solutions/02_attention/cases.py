"""The cases of exercise 02 (attention): one generator per part, for the visible checks and the grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code, tolerances and memory
budgets (``attngrade.spec``). Expected values come from ``attnmath`` in float64, computed before
your function runs; your function gets its own copies of the inputs.

Part 4 depends on your variant (``VARIANTS``): the base of the logarithm your notebook states,
which ``variant.json`` next to this file records for the visible checks. Without that file (the
public copy of the course), it is e: the entropy in nats.
"""

import math

import numpy as np

import attnmath.attention as att
import attnmath.scaling as scaling
from attngrade.spec import Case, Part, allclose_check
from attngrade.variants import Param, Variants
from attngrade.visible import factor_hint, like

VARIANTS = Variants("02_attention", (
    Param("base", default=math.e, choices=(2.0, 3.0, 5.0, 10.0),
          says="the base $b$ of the logarithm in your entropy (Part 4)",
          shown={math.e: "e (the natural logarithm: nats)", 2.0: "2 (bits)", 10.0: "10 (hartleys)"}),
))

# ----------------------------------------------------------------------------- Part 1


def _attention(q, k, v, mask=None):
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    return att.scaled_dot_product_attention(q, k, v, mask=mask)[0]


def _some_key_allowed(rng, mask):
    """``mask`` with one random key allowed in each row, so that no row is empty by chance."""
    mask = mask.copy()
    rows = mask.reshape(-1, mask.shape[-1])
    rows[np.arange(len(rows)), rng.integers(0, mask.shape[-1], size=len(rows))] = True
    return mask


def _shape_cases(rng):
    cases = []
    for lead, L, S, D, D_v, mask_shape in [
        ((), 3, 5, 4, 2, None),
        ((), 1, 1, 3, 2, None),
        ((), 6, 2, 5, 7, None),
        ((2, 3), 4, 6, 8, 5, None),
        ((), 3, 5, 4, 2, (3, 5)),
        ((4,), 5, 7, 3, 3, (5, 7)),
        ((2, 3), 4, 5, 6, 2, (2, 1, 1, 5)),
        ((2, 3), 4, 5, 6, 2, (2, 3, 4, 5)),
        ((1,), 7, 7, 16, 4, (7, 7)),
    ]:
        q = rng.normal(size=lead + (L, D))
        k = rng.normal(size=lead + (S, D))
        v = rng.normal(size=lead + (S, D_v))
        m = None if mask_shape is None else _some_key_allowed(rng, rng.random(mask_shape) < 0.6)
        kwargs = {} if m is None else {"mask": m}
        cases.append(Case((q, k, v), kwargs, f"lead {lead} L={L} S={S} mask {mask_shape}",
                          _attention(q, k, v, m), tol=1e-8,
                          kind="another shape, no mask" if mask_shape is None else "another shape, with a mask"))
    return cases


def _edge_cases(rng):
    # causal mask, fully masked rows in some batches only, a row with one allowed key
    q, k, v = rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 3))
    m = np.tril(np.ones((5, 5), dtype=bool))[None].repeat(2, axis=0)
    m[1, 2] = False
    m[0, 4] = False
    m[0, 4, 3] = True
    cases = [Case((q, k, v), {"mask": m}, "causal with empty and single rows", _attention(q, k, v, m), tol=1e-8,
                  kind="causal mask with a fully masked row")]
    m = np.zeros((3, 4), dtype=bool)
    cases.append(Case((q[0, :3], k[0, :4], v[0, :4]), {"mask": m}, "everything masked",
                      np.zeros((3, 3)), tol=1e-12, kind="every key masked"))
    # large scores: a softmax without the max shift overflows to inf / inf = NaN
    q, k, v = 60.0 * rng.normal(size=(2, 4, 8)), 60.0 * rng.normal(size=(2, 6, 8)), rng.normal(size=(2, 6, 3))
    m = rng.random((4, 6)) < 0.7
    m[:, 0] = True
    cases.append(Case((q, k, v), {}, "large scores", _attention(q, k, v), tol=1e-8,
                      kind="scores in the thousands"))
    cases.append(Case((q, k, v), {"mask": m}, "large scores with a mask", _attention(q, k, v, m), tol=1e-8,
                      kind="scores in the thousands, with a mask"))
    # float32 inputs: float32 or float64 answers are accepted
    q, k, v = (rng.normal(size=s).astype(np.float32) for s in ((3, 4, 8), (3, 9, 8), (3, 9, 4)))
    cases.append(Case((q, k, v), {}, "float32", _attention(q, k, v), tol=1e-4, kind="float32 input"))
    # each row's largest score masked, far above the rest: a maximum taken before masking underflows
    q, k, v = 100.0 * rng.normal(size=(2, 3, 8)), 100.0 * rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 5, 2))
    scores = q @ np.swapaxes(k, -1, -2)
    m = scores < scores.max(axis=-1, keepdims=True)
    cases.append(Case((q, k, v), {"mask": m}, "largest score masked", _attention(q, k, v, m), tol=1e-8,
                      kind="scores in the thousands, with a mask"))
    return cases


def attention_cases(rng):
    return _shape_cases(rng) + _edge_cases(rng)


def _variant(q, k, v, mask=None, scale=None, axis=-1):
    """Attention as a mistake computes it: another scale, or the softmax over another axis."""
    scores = (q @ np.swapaxes(k, -1, -2)) * (1.0 / np.sqrt(q.shape[-1]) if scale is None else scale)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    top = np.max(scores, axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
        return (e / e.sum(axis=axis, keepdims=True)) @ v


def diagnose_attention(case, out):
    q, k, v = (np.asarray(x, dtype=np.float64) for x in case.args)
    mask, D, D_v = case.kwargs.get("mask"), q.shape[-1], v.shape[-1]
    variants = [(dict(scale=1.0), "the scores are not scaled: divide them by sqrt(D)"),
                (dict(scale=1.0 / D), "the scores are divided by D instead of sqrt(D)"),
                (dict(scale=-1.0 / np.sqrt(D)), "the scores have the wrong sign"),
                (dict(axis=-2), "the softmax runs over the queries: each query's weights sum to one over the keys")]
    if D_v != D:
        variants.append((dict(scale=1.0 / np.sqrt(D_v)), "the scores are scaled with the width of v: "
                                                          "D is the width of q and k"))
    if mask is not None:
        variants += [(dict(mask=~np.asarray(mask)), "the mask is inverted: True marks the keys a query may attend to"),
                     (dict(mask=None), "the mask is not applied")]
    for change, words in variants:
        if like(out, _variant(q, k, v, **{"mask": mask, **change}), case.expected):
            return words
    return None


HINTS_ATTENTION = {
    "another shape, no mask": "transpose only the last two axes of k (np.swapaxes(k, -1, -2)), keep the leading "
                              "axes, and scale by sqrt(D) with D the width of q and k",
    "another shape, with a mask": "the mask broadcasts to the scores (..., L, S): np.where(mask, scores, -np.inf)",
    "causal mask with a fully masked row": "a row with no allowed key gives zeros, not NaN: use a finite shift for "
                                           "it and divide only where the total is positive",
    "every key masked": "a row with no allowed key gives zeros, not NaN (and the mask is not inverted)",
    "scores in the thousands": "subtract each row's maximum before exp",
    "scores in the thousands, with a mask": "take each row's maximum over the keys it may attend to: mask first",
    "float32 input": "compute in at least float32",
}

# ----------------------------------------------------------------------------- Part 2


def additive_cases(rng):
    cases = []
    for lead, L, S, D_q, D_k, A, kind in [
        ((), 4, 4, 3, 3, 5, "one query per key, no batch axes"),
        ((), 5, 3, 4, 4, 8, "more queries than keys"),
        ((), 2, 4, 3, 5, 6, "queries and keys of different widths"),
        ((), 1, 1, 2, 2, 1, "one query and one key"),
        ((2,), 3, 7, 2, 6, 5, "leading batch axes"),
        ((2, 2), 4, 4, 3, 1, 9, "leading batch axes"),
    ]:
        q, k = rng.normal(size=lead + (L, D_q)), rng.normal(size=lead + (S, D_k))
        w_q, w_k, w_a = rng.normal(size=(D_q, A)), rng.normal(size=(D_k, A)), rng.normal(size=A)
        cases.append(Case((q, k, w_q, w_k, w_a), {}, f"lead {lead} L={L} S={S} A={A}",
                          att.additive_scores(q, k, w_q, w_k, w_a), tol=1e-8, kind=kind))
    return cases


def diagnose_additive(case, out):
    q, k, w_q, w_k, w_a = case.args
    hq, hk = (q @ w_q)[..., :, None, :], (k @ w_k)[..., None, :, :]
    for variant, words in [(np.tanh(hq - hk) @ w_a, "the key term is subtracted: s = w_a^T tanh(q W_q + k W_k)"),
                           ((hq + hk) @ w_a, "tanh is missing"),
                           (np.swapaxes(case.expected, -1, -2), "the output is transposed: entry [..., i, j] is "
                                                                "s(q_i, k_j), shape (..., L, S)")]:
        if like(out, variant, case.expected):
            return words
    return None


_BROADCAST = "project first, then broadcast an (..., L, 1, A) array against an (..., 1, S, A) one"
HINTS_ADDITIVE = {
    "one query per key, no batch axes": _BROADCAST,
    "more queries than keys": _BROADCAST + "; the output is (..., L, S), queries along the rows",
    "queries and keys of different widths": "W_q is (D_q, A) and W_k is (D_k, A): each side is projected by its own "
                                            "matrix to the common width A",
    "one query and one key": _BROADCAST + "; keep every axis, even of length 1",
    "leading batch axes": _BROADCAST + "; the leading axes stay in front, as they are",
}

# ----------------------------------------------------------------------------- Part 3


def _stats(q, k):
    dots = np.einsum("nd,nd->n", q, k)
    var = np.var(dots, ddof=1)
    return float(np.mean(dots)), float(var), float(var / q.shape[-1])


def stats_check(case, out):
    assert isinstance(out, (tuple, list)) and len(out) == 3, "must return a tuple (mean, var, scaled_var)"
    for x in out:
        assert np.ndim(x) == 0, "each statistic must be a single number"
    allclose_check(case, np.array([float(x) for x in out]))


def stats_cases(rng):
    cases = []
    for n, D in [(3, 2), (2, 1), (10, 3), (500, 64)]:
        q, k = rng.normal(size=(n, D)), rng.normal(size=(n, D))
        cases.append(Case((q, k), {}, f"n={n} D={D}", _stats(q, k), tol=1e-8, kind="random vectors"))
    # nonzero means: the variance is not D here (the theorem's general formula)
    q, k = 1.0 + np.sqrt(0.5) * rng.normal(size=(800, 16)), -2.0 + np.sqrt(2.0) * rng.normal(size=(800, 16))
    cases.append(Case((q, k), {}, "nonzero means", _stats(q, k), tol=1e-8, kind="vectors with a nonzero mean"))
    # q @ k.T would be 4000 x 4000 float64 = 122 MiB; the row-wise products need O(n D)
    q, k = rng.normal(size=(4000, 8)), rng.normal(size=(4000, 8))
    cases.append(Case((q, k), {}, "n=4000, memory", _stats(q, k), tol=1e-8, max_peak_bytes=4 * 2**20,
                      kind="memory limit on many vectors"))
    return cases


def diagnose_stats(case, out):
    q, k = case.args
    dots = np.einsum("nd,nd->n", q, k)
    n, D = len(dots), q.shape[-1]
    var = case.expected[1]
    if not (isinstance(out, (tuple, list)) and len(out) == 3):
        return None
    for i, variant, words in [
        (1, var * (n - 1) / n, "the variance must be unbiased: divide by n - 1"),
        (1, np.sum(dots**2) / (n - 1), "the deviations are from the sample mean of the dot products"),
        (2, var * D, "scaled_var is the variance of q.k / sqrt(D): var divided by D"),
        (2, var / np.sqrt(D), "the variance of x / c is var / c^2: divide var by D, not by sqrt(D)"),
    ]:
        if np.ndim(out[i]) == 0 and like(out[i], variant, case.expected[i]):
            return words
    return None


HINTS_STATS = {"memory limit on many vectors": "compute one dot product per pair (np.einsum('nd,nd->n', q, k) or "
                                               "(q * k).sum(axis=1)), not the (n, n) matrix q @ k.T",
               "vectors with a nonzero mean": "the deviations are from the sample mean of the dot products, and the "
                                              "variance is unbiased (divide by n - 1)"}

# ----------------------------------------------------------------------------- Part 4


def _softmax_rows(rng, shape, spread=3.0):
    logits = spread * rng.normal(size=shape)
    p = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return p / p.sum(axis=-1, keepdims=True)


def entropy_cases(rng, variant):
    unit = math.log(variant["base"])  # H_b = H / ln b

    def ent(p):
        return scaling.attention_entropy(p) / unit

    hot = np.zeros(3)
    hot[rng.integers(0, 3)] = 1.0
    half = np.zeros((2, 3))
    half[0, rng.permutation(3)[:2]] = 0.5
    cases = [Case((np.full(8, 1 / 8),), {}, "uniform", ent(np.full(8, 1 / 8)), tol=1e-10, kind="one-hot and uniform rows"),
             Case((hot,), {}, "one-hot", np.array(0.0), tol=1e-10, kind="one-hot and uniform rows"),
             Case((half,), {}, "zeros", np.array([np.log(2) / unit, 0.0]), tol=1e-10, kind="masked rows and keys"),
             Case((np.ones((3, 1)),), {}, "S=1", np.zeros(3), tol=1e-10, kind="a single key")]
    for shape in [(7,), (4, 9), (2, 3, 5)]:
        p = _softmax_rows(rng, shape)
        cases.append(Case((p,), {}, f"softmax rows {shape}", ent(p), tol=1e-10, kind="softmax rows of another shape"))
    p = _softmax_rows(rng, (2, 4, 6), spread=1.0)
    p[0, 1] = 0.0                      # a fully masked row
    p[1, :, 2] = 0.0                   # a masked key (rows no longer sum to one: taken as given)
    p[1, 3] = np.array([1e-300, 0.0, 0.0, 1.0 - 1e-300, 0.0, 0.0])
    cases.append(Case((p,), {}, "masked rows and keys", ent(p), tol=1e-10, kind="masked rows and keys"))
    return cases


def diagnose_entropy(case, out):
    p = np.asarray(case.args[0], dtype=np.float64)
    total = p.sum(axis=-1, keepdims=True)
    renormalised = np.divide(p, total, out=np.zeros_like(p), where=total > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h_renormalised = -np.sum(np.where(renormalised > 0, renormalised * np.log(np.where(renormalised > 0,
                                                                                            renormalised, 1)),
                                          0.0), axis=-1)
    unit = _unit(p, case.expected)  # ln b of this case's base: expected = H / ln b
    if unit is not None and like(out, h_renormalised / unit, case.expected):
        return "the rows are renormalised: take the sum as it is"
    param = VARIANTS.param("base")
    factors = [(-1.0, "the sign is flipped: H = -sum_j p_j log_b p_j")]
    if unit is not None:
        bases = (param.default, *param.choices)
        yours = min(bases, key=lambda b: abs(math.log(b) - unit))
        factors += [(unit / math.log(b), f"the logarithm has base {param.text(b)}: yours is b = {param.text(yours)}")
                    for b in bases if b != yours]
    return factor_hint(out, case.expected, factors)


def _unit(p, expected):
    """ln b of the case's own base (the ratio of the natural-log entropy to the expected one), or None."""
    natural = scaling.attention_entropy(p)
    expected = np.asarray(expected, dtype=np.float64)
    big = np.abs(expected) > 1e-6
    return float(np.median(natural[big] / expected[big])) if big.any() else None


HINTS_ENTROPY = {"one-hot and uniform rows": "a one-hot row has entropy 0 and a uniform one log_b S: use 0 log 0 = 0",
                 "masked rows and keys": "use 0 log 0 = 0 (no NaN), and take the sum as it is: do not renormalise",
                 "a single key": "a row with one key holds all the weight: its entropy is 0",
                 "softmax rows of another shape": "sum over the last axis only: the output drops that axis"}

PARTS = [
    Part("test_attention", function="attention", cases=attention_cases, hints=HINTS_ATTENTION,
         diagnose=diagnose_attention),
    Part("test_additive_scores", function="additive_scores", cases=additive_cases, hints=HINTS_ADDITIVE,
         diagnose=diagnose_additive),
    Part("test_dot_product_stats", function="dot_product_stats", cases=stats_cases, check=stats_check,
         outputs=("mean", "var", "scaled_var"), hints=HINTS_STATS, diagnose=diagnose_stats),
    Part("test_row_entropy", function="row_entropy", cases=entropy_cases, hints=HINTS_ENTROPY,
         diagnose=diagnose_entropy, variants=VARIANTS),
]
