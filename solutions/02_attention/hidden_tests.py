"""Hidden tests of exercise 02 (scaled dot-product attention). Not released to students.

Each part's cases include the visible self-checks' inputs, so the notebook runner and the grading
pipeline agree on every submission. Expected values come from ``attnmath`` in float64.
"""

import numpy as np

import attnmath.attention as att
import attnmath.scaling as scaling
from attngrade.spec import Case, Part, allclose_check


def _attention(q, k, v, mask=None):
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    return att.scaled_dot_product_attention(q, k, v, mask=mask)[0]


def attention_cases(rng):
    cases = []
    # the visible checks
    r = np.random.default_rng(0)
    q, k, v = r.normal(size=(3, 4)), r.normal(size=(5, 4)), r.normal(size=(5, 2))
    mask = np.array([[True, True, False, False, False], [True] * 5, [False] * 5])
    cases.append(Case((q, k, v), {}, "visible, no mask", _attention(q, k, v), kind="a visible self-check"))
    cases.append(Case((q, k, v), {"mask": mask}, "visible, mask", _attention(q, k, v, mask),
                      kind="a visible self-check"))
    qb, kb, vb = r.normal(size=(2, 3, 4, 8)), r.normal(size=(2, 3, 6, 8)), r.normal(size=(2, 3, 6, 5))
    cases.append(Case((qb, kb, vb), {}, "visible, batched", _attention(qb, kb, vb),
                      kind="a visible self-check"))
    # other shapes, without and with masks that broadcast
    for lead, L, S, D, D_v, mask_shape in [
        ((), 1, 1, 3, 2, None),
        ((), 6, 2, 5, 7, None),
        ((4,), 5, 7, 3, 3, (5, 7)),
        ((2, 3), 4, 5, 6, 2, (2, 1, 1, 5)),
        ((2, 3), 4, 5, 6, 2, (2, 3, 4, 5)),
        ((1,), 7, 7, 16, 4, (7, 7)),
    ]:
        q = rng.normal(size=lead + (L, D))
        k = rng.normal(size=lead + (S, D))
        v = rng.normal(size=lead + (S, D_v))
        m = None if mask_shape is None else rng.random(mask_shape) < 0.6
        kwargs = {} if m is None else {"mask": m}
        cases.append(Case((q, k, v), kwargs, f"lead {lead} L={L} S={S} mask {mask_shape}",
                          _attention(q, k, v, m), tol=1e-8,
                          kind="another shape, no mask" if mask_shape is None else "another shape, with a mask"))
    # causal mask, fully masked rows in some batches only, a row with one allowed key
    q, k, v = rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 3))
    m = np.tril(np.ones((5, 5), dtype=bool))[None].repeat(2, axis=0)
    m[1, 2] = False
    m[0, 4] = False
    m[0, 4, 3] = True
    cases.append(Case((q, k, v), {"mask": m}, "causal with empty and single rows", _attention(q, k, v, m), tol=1e-8,
                      kind="causal mask with a fully masked row"))
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


def additive_cases(rng):
    r = np.random.default_rng(1)
    q, k = r.normal(size=(2, 3)), r.normal(size=(4, 5))
    w_q, w_k, w_a = r.normal(size=(3, 6)), r.normal(size=(5, 6)), r.normal(size=6)
    cases = [Case((q, k, w_q, w_k, w_a), {}, "visible", att.additive_scores(q, k, w_q, w_k, w_a),
                  kind="a visible self-check")]
    for lead, L, S, D_q, D_k, A in [((), 1, 1, 2, 2, 1), ((), 5, 3, 4, 4, 8), ((2,), 3, 7, 2, 6, 5),
                                    ((2, 2), 4, 4, 3, 1, 9)]:
        q, k = rng.normal(size=lead + (L, D_q)), rng.normal(size=lead + (S, D_k))
        w_q, w_k, w_a = rng.normal(size=(D_q, A)), rng.normal(size=(D_k, A)), rng.normal(size=A)
        cases.append(Case((q, k, w_q, w_k, w_a), {}, f"lead {lead} L={L} S={S} A={A}",
                          att.additive_scores(q, k, w_q, w_k, w_a), tol=1e-8, kind="another shape"))
    return cases


def _stats(q, k):
    dots = np.einsum("nd,nd->n", q, k)
    var = np.var(dots, ddof=1)
    return np.array([np.mean(dots), var, var / q.shape[-1]])


def stats_check(case, out):
    assert isinstance(out, (tuple, list)) and len(out) == 3, "must return a tuple (mean, var, scaled_var)"
    for x in out:
        assert np.ndim(x) == 0, "each statistic must be a single number"
    allclose_check(case, np.array([float(x) for x in out]))


def stats_cases(rng):
    q = np.array([[1.0, 2.0], [3.0, 4.0], [0.0, 1.0]])
    k = np.array([[1.0, 0.0], [1.0, 1.0], [2.0, -1.0]])
    cases = [Case((q, k), {}, "visible", _stats(q, k), kind="a visible self-check")]
    for n, D in [(2, 1), (10, 3), (500, 64)]:
        q, k = rng.normal(size=(n, D)), rng.normal(size=(n, D))
        cases.append(Case((q, k), {}, f"n={n} D={D}", _stats(q, k), tol=1e-8, kind="random vectors"))
    # nonzero means: the variance is not D here (the theorem's general formula)
    q, k = 1.0 + np.sqrt(0.5) * rng.normal(size=(800, 16)), -2.0 + np.sqrt(2.0) * rng.normal(size=(800, 16))
    cases.append(Case((q, k), {}, "nonzero means", _stats(q, k), tol=1e-8, kind="vectors with a nonzero mean"))
    # q @ k.T would be 4000 x 4000 float64 = 122 MiB; the row-wise products need O(n D)
    q, k = rng.normal(size=(4000, 8)), rng.normal(size=(4000, 8))
    cases.append(Case((q, k), {}, "n=4000, memory", _stats(q, k), tol=1e-8, max_peak_bytes=4 * 2**20,
                      kind="memory limit on many vectors"))
    # the estimate agrees with the theorem on a large sample (sanity of the expected values)
    assert abs(_stats(q, k)[2] - scaling.dot_product_variance_theory(8) / 8) < 0.15
    return cases


def entropy_cases(rng):
    ent = scaling.attention_entropy
    cases = [
        Case((np.full(8, 1 / 8),), {}, "visible uniform", ent(np.full(8, 1 / 8)), kind="a visible self-check"),
        Case((np.array([0.0, 1.0, 0.0]),), {}, "visible one-hot", np.array(0.0), kind="a visible self-check"),
        Case((np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 0.0]]),), {}, "visible zeros",
             np.array([np.log(2), 0.0]), kind="a visible self-check"),
        Case((np.ones((3, 1)),), {}, "S=1", np.zeros(3), kind="a single key"),
    ]
    for shape in [(7,), (4, 9), (2, 3, 5)]:
        logits = 3.0 * rng.normal(size=shape)
        p = np.exp(logits - logits.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        cases.append(Case((p,), {}, f"softmax rows {shape}", ent(p), tol=1e-10,
                          kind="softmax rows of another shape"))
    p = np.exp(rng.normal(size=(2, 4, 6)))
    p /= p.sum(axis=-1, keepdims=True)
    p[0, 1] = 0.0                      # a fully masked row
    p[1, :, 2] = 0.0                   # a masked key (rows no longer sum to one: taken as given)
    p[1, 3] = np.array([1e-300, 0.0, 0.0, 1.0 - 1e-300, 0.0, 0.0])
    cases.append(Case((p,), {}, "masked rows and keys", ent(p), tol=1e-10, kind="masked rows and keys"))
    return cases


PARTS = [
    Part("test_attention", function="attention", cases=attention_cases),
    Part("test_additive_scores", function="additive_scores", cases=additive_cases),
    Part("test_dot_product_stats", function="dot_product_stats", cases=stats_cases, check=stats_check),
    Part("test_row_entropy", function="row_entropy", cases=entropy_cases),
]
