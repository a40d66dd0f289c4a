"""Hidden tests of exercise 03 (the backward pass of attention). Not released to students.

Each part's cases include the visible self-checks' inputs, so the notebook runner and the grading
pipeline agree on every submission. Expected values come from ``attnmath`` in float64.
"""

import numpy as np

import attnmath.attention as att
from attngrade.spec import Case, Part, allclose_check


def _grads(q, k, v, dout, mask=None):
    _, cache = att.scaled_dot_product_attention(q, k, v, mask=mask)
    return tuple(att.attention_backward(dout, cache))


def _dropout_grads(q, k, v, keep, p, dout):
    _, cache = att.scaled_dot_product_attention(q, k, v)
    return tuple(att.dropout_attention_backward(dout, att.DropoutCache(cache, keep, p)))


def grads_check(case, out):
    """A tuple (dq, dk, dv), each close to the library's gradient with the right shape."""
    assert isinstance(out, (tuple, list)) and len(out) == 3, "must return the tuple (dq, dk, dv)"
    for name, got, expected in zip(("dq", "dk", "dv"), out, case.expected):
        allclose_check(Case(expected=expected, tol=case.tol), got)


def _qkv(rng, L, S, D, D_v, spread=1.0):
    return (spread * rng.normal(size=(L, D)), rng.normal(size=(S, D)), rng.normal(size=(S, D_v)),
            rng.normal(size=(L, D_v)))


SHAPES = [(1, 1, 2, 3), (1, 6, 3, 2), (6, 1, 3, 2), (4, 7, 5, 3), (8, 8, 16, 4), (5, 3, 1, 6)]


def backward_cases(rng):
    r = np.random.default_rng(0)
    q, k, v, dout = r.normal(size=(3, 4)), r.normal(size=(5, 4)), r.normal(size=(5, 2)), r.normal(size=(3, 2))
    cases = [Case((q, k, v, dout), {}, "visible", _grads(q, k, v, dout), kind="a visible self-check")]
    for L, S, D, D_v in SHAPES:
        q, k, v, dout = _qkv(rng, L, S, D, D_v)
        cases.append(Case((q, k, v, dout), {}, f"L={L} S={S} D={D} D_v={D_v}", _grads(q, k, v, dout), tol=1e-8,
                          kind="another shape"))
    # nearly one-hot rows: scores of several hundred need the max-shifted softmax
    q, k, v, dout = _qkv(rng, 5, 6, 8, 3, spread=80.0)
    cases.append(Case((q, k, v, dout), {}, "nearly one-hot rows", _grads(q, k, v, dout), tol=1e-8,
                      kind="nearly one-hot attention rows"))
    # scores in the thousands: exp overflows in float64 unless the row maximum is subtracted
    q, k, v, dout = _qkv(rng, 4, 5, 8, 3, spread=400.0)
    cases.append(Case((q, k, v, dout), {}, "one-hot rows, overflowing scores", _grads(q, k, v, dout), tol=1e-8,
                      kind="nearly one-hot attention rows"))
    return cases


def masked_cases(rng):
    r = np.random.default_rng(1)
    q, k, v, dout = r.normal(size=(4, 3)), r.normal(size=(5, 3)), r.normal(size=(5, 2)), r.normal(size=(4, 2))
    mask = np.ones((4, 5), dtype=bool)
    mask[:, 3] = False
    mask[2] = False
    cases = [Case((q, k, v, mask, dout), {}, "visible", _grads(q, k, v, dout, mask),
                  kind="a visible self-check")]
    for L, S, D, D_v in SHAPES[1:]:
        q, k, v, dout = _qkv(rng, L, S, D, D_v)
        mask = rng.random((L, S)) < 0.6
        cases.append(Case((q, k, v, mask, dout), {}, f"random mask L={L} S={S}",
                          _grads(q, k, v, dout, mask), tol=1e-8, kind="random mask"))
    q, k, v, dout = _qkv(rng, 6, 6, 4, 3)
    causal = np.tril(np.ones((6, 6), dtype=bool))
    cases.append(Case((q, k, v, causal, dout), {}, "causal", _grads(q, k, v, dout, causal), tol=1e-8,
                      kind="causal mask"))
    everything = np.ones((6, 6), dtype=bool)
    cases.append(Case((q, k, v, everything, dout), {}, "no key masked", _grads(q, k, v, dout), tol=1e-8,
                      kind="a mask that masks nothing"))
    nothing = np.zeros((6, 6), dtype=bool)
    zeros = (np.zeros_like(q), np.zeros_like(k), np.zeros_like(v))
    cases.append(Case((q, k, v, nothing, dout), {}, "everything masked", zeros, tol=1e-12,
                      kind="every key masked"))
    q, k, v, dout = _qkv(rng, 5, 7, 8, 2, spread=80.0)
    mask = rng.random((5, 7)) < 0.5
    mask[1] = False
    mask[:, 4] = False
    mask[3] = np.arange(7) == 2          # one allowed key: P is one-hot, dq and dk vanish
    cases.append(Case((q, k, v, mask, dout), {}, "large scores, empty row and column",
                      _grads(q, k, v, dout, mask), tol=1e-8, kind="large scores, a fully masked row and key"))
    # scores in the thousands: exp overflows in float64 unless the row maximum is subtracted
    q, k, v, dout = _qkv(rng, 5, 6, 8, 2, spread=1000.0)
    mask = rng.random((5, 6)) < 0.7
    mask[0] = False
    mask[:, 1] = False
    cases.append(Case((q, k, v, mask, dout), {}, "overflowing scores, empty row and column",
                      _grads(q, k, v, dout, mask), tol=1e-8, kind="large scores, a fully masked row and key"))
    return cases


def numerical_cases(rng):
    r = np.random.default_rng(2)
    q, k, v, w = r.normal(size=(3, 2)), r.normal(size=(4, 2)), r.normal(size=(4, 3)), r.normal(size=(3, 3))
    exact = dict(zip("qkv", _grads(q, k, v, w)))
    cases = [Case((q, k, v, w, "v"), {}, "visible v", exact["v"], tol=1e-6, kind="a visible self-check"),
             Case((q, k, v, w, "q"), {}, "visible q", exact["q"], tol=1e-6, kind="a visible self-check")]
    for (L, S, D, D_v), wrt in [((4, 5, 3, 2), "q"), ((4, 5, 3, 2), "k"), ((2, 6, 4, 3), "v"),
                                ((5, 1, 2, 2), "k"), ((3, 3, 2, 4), "q")]:
        q, k, v, w = _qkv(rng, L, S, D, D_v)
        expected = dict(zip("qkv", _grads(q, k, v, w)))[wrt]
        cases.append(Case((q, k, v, w, wrt), {}, f"wrt {wrt} L={L} S={S}", expected, tol=1e-6,
                          kind=f"gradient with respect to {wrt}"))
    q, k, v, w = _qkv(rng, 3, 4, 3, 2)
    cases.append(Case((q, k, v, w, "k"), {"eps": 1e-5}, "explicit eps", dict(zip("qkv", _grads(q, k, v, w)))["k"],
                      tol=1e-6, kind="eps passed by keyword"))
    return cases


def dropout_cases(rng):
    r = np.random.default_rng(3)
    q, k, v, dout = r.normal(size=(3, 4)), r.normal(size=(6, 4)), r.normal(size=(6, 2)), r.normal(size=(3, 2))
    keep = np.array([[1, 0, 1, 0, 1, 0], [0, 1, 1, 0, 0, 1], [1, 1, 0, 0, 1, 0]], dtype=bool)
    cases = [Case((q, k, v, keep, 0.5, dout), {}, "visible", _dropout_grads(q, k, v, keep, 0.5, dout),
                  kind="a visible self-check")]
    for (L, S, D, D_v), p in [((4, 5, 3, 2), 0.1), ((2, 7, 4, 3), 0.3), ((6, 6, 8, 8), 0.9), ((1, 3, 2, 1), 0.5)]:
        q, k, v, dout = _qkv(rng, L, S, D, D_v)
        keep = rng.random((L, S)) >= p
        cases.append(Case((q, k, v, keep, p, dout), {}, f"p={p} L={L} S={S}",
                          _dropout_grads(q, k, v, keep, p, dout), tol=1e-8, kind="another dropout rate"))
    q, k, v, dout = _qkv(rng, 4, 5, 3, 2)
    keep = np.ones((4, 5), dtype=bool)
    cases.append(Case((q, k, v, keep, 0.0, dout), {}, "p=0 is plain attention", _grads(q, k, v, dout), tol=1e-8,
                      kind="dropout rate zero"))
    keep = rng.random((4, 5)) >= 0.4
    keep[2] = False                      # every weight of a row dropped: zero output, no gradient
    cases.append(Case((q, k, v, keep, 0.4, dout), {}, "a fully dropped row",
                      _dropout_grads(q, k, v, keep, 0.4, dout), tol=1e-8, kind="a fully dropped row"))
    return cases


PARTS = [
    Part("test_attention_backward", function="attention_backward", cases=backward_cases, check=grads_check),
    Part("test_masked_attention_backward", function="masked_attention_backward", cases=masked_cases,
         check=grads_check),
    Part("test_numerical_attention_gradient", function="numerical_attention_gradient", cases=numerical_cases),
    Part("test_dropout_attention_backward", function="dropout_attention_backward", cases=dropout_cases,
         check=grads_check),
]
