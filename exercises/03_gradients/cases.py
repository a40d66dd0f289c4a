"""The cases of exercise 03 (gradients): one generator per part, for the visible checks and the grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code, tolerances and memory
budgets (``attngrade.spec``). Expected values come from ``attnmath`` in float64, computed before
your function runs; your function gets its own copies of the inputs.
"""

import numpy as np

import attnmath.attention as att
from attngrade.spec import Case, Part, allclose_check
from attngrade.visible import factor_hint, like


def _grads(q, k, v, dout, mask=None):
    _, cache = att.scaled_dot_product_attention(q, k, v, mask=mask)
    return tuple(att.attention_backward(dout, cache))


def _dropout_grads(q, k, v, keep, p, dout):
    _, cache = att.scaled_dot_product_attention(q, k, v)
    return tuple(att.dropout_attention_backward(dout, att.DropoutCache(cache, keep, p)))


def grads_check(case, out):
    """A tuple (dq, dk, dv), each close to the library's gradient with the right shape."""
    assert isinstance(out, (tuple, list)) and len(out) == 3, "must return the tuple (dq, dk, dv)"
    for got, expected in zip(out, case.expected):
        allclose_check(Case(expected=expected, tol=case.tol), got)


def _qkv(rng, L, S, D, D_v, spread=1.0):
    return (spread * rng.normal(size=(L, D)), rng.normal(size=(S, D)), rng.normal(size=(S, D_v)),
            rng.normal(size=(L, D_v)))


def _random_mask(rng, L, S, p=0.6):
    """A random mask in which every query may see at least one key (empty rows are cases of their own)."""
    mask = rng.random((L, S)) < p
    mask[np.arange(L), rng.integers(0, S, size=L)] = True
    return mask


SHAPES = [(3, 5, 4, 2), (1, 1, 2, 3), (1, 6, 3, 2), (6, 1, 3, 2), (4, 7, 5, 3), (8, 8, 16, 4), (5, 3, 1, 6)]


def diagnose_grads(case, out):
    """The usual slips of a backward pass: a flipped sign, the scale 1/sqrt(D) missing or twice."""
    if not (isinstance(out, (tuple, list)) and len(out) == 3):
        return None
    D = np.shape(case.args[0])[-1]
    for name, got, expected in zip(("dq", "dk", "dv"), out, case.expected):
        found = factor_hint(got, expected, [(-1.0, f"{name}: its sign is flipped"),
                                            (np.sqrt(D), f"{name} lacks the factor s = 1/sqrt(D)"),
                                            (1.0 / np.sqrt(D), f"{name} has the factor s = 1/sqrt(D) twice"),
                                            (2.0, f"{name} is twice too large"),
                                            (0.5, f"{name} is half as large as it should be")])
        if found:
            return found
    return None


# ----------------------------------------------------------------------------- Part 1


def backward_cases(rng):
    cases = []
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


HINTS_BACKWARD = {
    "another shape": "dq, dk and dv have the shapes of q, k and v; L, S, D and D_v all differ here",
    "nearly one-hot attention rows": "compute the weights with the max-shifted softmax (attention_forward does)",
}

# ----------------------------------------------------------------------------- Part 2


def masked_cases(rng):
    q, k, v, dout = _qkv(rng, 4, 5, 3, 2)
    mask = np.ones((4, 5), dtype=bool)
    mask[:, rng.integers(0, 5)] = False            # a key that no query may see
    mask[rng.integers(0, 4)] = False               # a query that sees nothing
    cases = [Case((q, k, v, mask, dout), {}, "a masked row and key", _grads(q, k, v, dout, mask), tol=1e-8,
                  kind="a fully masked row and key")]
    for L, S, D, D_v in SHAPES[2:]:
        q, k, v, dout = _qkv(rng, L, S, D, D_v)
        mask = _random_mask(rng, L, S)
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
    mask = np.insert(_random_mask(rng, 5, 6, p=0.5), 4, False, axis=1)   # key 4: seen by no query
    mask[1] = False
    mask[3] = np.arange(7) == 2          # one allowed key: P is one-hot, dq and dk vanish
    cases.append(Case((q, k, v, mask, dout), {}, "large scores, empty row and column",
                      _grads(q, k, v, dout, mask), tol=1e-8, kind="large scores, a fully masked row and key"))
    # scores in the thousands: exp overflows in float64 unless the row maximum is subtracted
    q, k, v, dout = _qkv(rng, 5, 6, 8, 2, spread=1000.0)
    mask = np.insert(_random_mask(rng, 5, 5, p=0.7), 1, False, axis=1)   # key 1: seen by no query
    mask[0] = False
    cases.append(Case((q, k, v, mask, dout), {}, "overflowing scores, empty row and column",
                      _grads(q, k, v, dout, mask), tol=1e-8, kind="large scores, a fully masked row and key"))
    return cases


def diagnose_masked(case, out):
    q, k, v, mask, dout = case.args
    if isinstance(out, (tuple, list)) and len(out) == 3 and mask.any() and not mask.all():
        unmasked = _grads(q, k, v, dout)
        if all(like(o, u, e) or np.allclose(u, e) for o, u, e in zip(out, unmasked, case.expected)):
            return "the forward pass ignores the mask: recompute P with the mask (attention_forward(q, k, v, mask))"
    return diagnose_grads(case, out)


HINTS_MASKED = {
    "a fully masked row and key": "a masked entry has P = 0 and passes no gradient: a fully masked row's weights "
                                  "are zeros, not NaN",
    "every key masked": "no query sees anything: every gradient is zero (no NaN, no error)",
    "large scores, a fully masked row and key": "shift each row by its maximum over the allowed keys only, and give "
                                                "a fully masked row zero weights",
    "random mask": "a masked entry has P = 0 exactly: mask the scores with -inf before the softmax",
}

# ----------------------------------------------------------------------------- Part 3


def numerical_cases(rng):
    cases = []
    for (L, S, D, D_v), wrt in [((3, 4, 2, 3), "v"), ((3, 4, 2, 3), "q"), ((4, 5, 3, 2), "q"), ((4, 5, 3, 2), "k"),
                                ((2, 6, 4, 3), "v"), ((5, 1, 2, 2), "k"), ((3, 3, 2, 4), "q")]:
        q, k, v, w = _qkv(rng, L, S, D, D_v)
        expected = dict(zip("qkv", _grads(q, k, v, w)))[wrt]
        cases.append(Case((q, k, v, w, wrt), {}, f"wrt {wrt} L={L} S={S}", expected, tol=1e-6,
                          kind=f"gradient with respect to {wrt}"))
    q, k, v, w = _qkv(rng, 3, 4, 3, 2)
    # eps = 1e-3: a central difference errs by about 1e-8 here, a one-sided one by about 1e-5 to 1e-4,
    # so the part tells the two schemes apart on every draw
    cases.append(Case((q, k, v, w, "k"), {"eps": 1e-3}, "explicit eps", dict(zip("qkv", _grads(q, k, v, w)))["k"],
                      tol=1e-6, kind="eps passed by keyword"))
    return cases


def diagnose_numerical(case, out):
    q, k, v, w, wrt = case.args
    exact = dict(zip("qkv", _grads(q, k, v, w)))
    for other in "qkv":
        if other != wrt and like(out, exact[other], case.expected):
            return f"this is the gradient with respect to {other}: perturb `{wrt}`, the argument `wrt` names"
    if like(out, np.zeros_like(case.expected), case.expected):
        return f"a zero gradient: is the loss evaluated at the perturbed {wrt}?"
    return factor_hint(out, case.expected, [(-1.0, "the sign is flipped: (L(x + eps) - L(x - eps)) / (2 eps)"),
                                            (2.0, "twice too large: divide by 2 eps"),
                                            (0.5, "half as large as it should be: divide by 2 eps, not 4 eps")])


HINTS_NUMERICAL = {
    "eps passed by keyword": "the step is the keyword argument `eps`",
    "gradient with respect to q": "perturb one entry of q at a time, evaluate the loss sum(w * O) at q + eps e_i "
                                  "and q - eps e_i",
    "gradient with respect to k": "perturb one entry of k at a time, on a copy",
}

# ----------------------------------------------------------------------------- Part 4


def dropout_cases(rng):
    q, k, v, dout = _qkv(rng, 3, 6, 4, 2)
    keep = _random_mask(rng, 3, 6, p=0.5)
    cases = [Case((q, k, v, keep, 0.5, dout), {}, "p=0.5", _dropout_grads(q, k, v, keep, 0.5, dout), tol=1e-8,
                  kind="another dropout rate")]
    for (L, S, D, D_v), p in [((4, 5, 3, 2), 0.1), ((2, 7, 4, 3), 0.3), ((6, 6, 8, 8), 0.9), ((1, 3, 2, 1), 0.5)]:
        q, k, v, dout = _qkv(rng, L, S, D, D_v)
        keep = _random_mask(rng, L, S, p=1.0 - p)
        cases.append(Case((q, k, v, keep, p, dout), {}, f"p={p} L={L} S={S}",
                          _dropout_grads(q, k, v, keep, p, dout), tol=1e-8, kind="another dropout rate"))
    q, k, v, dout = _qkv(rng, 4, 5, 3, 2)
    keep = np.ones((4, 5), dtype=bool)
    cases.append(Case((q, k, v, keep, 0.0, dout), {}, "p=0 is plain attention", _grads(q, k, v, dout), tol=1e-8,
                      kind="dropout rate zero"))
    keep = _random_mask(rng, 4, 5, p=0.6)
    keep[rng.integers(0, 4)] = False     # every weight of a row dropped: zero output, no gradient
    cases.append(Case((q, k, v, keep, 0.4, dout), {}, "a fully dropped row",
                      _dropout_grads(q, k, v, keep, 0.4, dout), tol=1e-8, kind="a fully dropped row"))
    return cases


def diagnose_dropout(case, out):
    q, k, v, keep, p, dout = case.args
    if isinstance(out, (tuple, list)) and len(out) == 3 and 0.0 < p < 1.0 and p != 0.5:
        by_p = _dropout_grads(q, k, v, keep, 1.0 - p, dout)
        if all(like(o, b, e) or np.allclose(b, e) for o, b, e in zip(out, by_p, case.expected)):
            return "the kept weights are divided by p: inverted dropout divides them by 1 - p"
    return diagnose_grads(case, out)


HINTS_DROPOUT = {
    "another dropout rate": "dv uses the dropped weights R * P / (1 - p); the softmax step uses P itself",
    "dropout rate zero": "p = 0 keeps every weight: the gradients are those of attention without dropout",
    "a fully dropped row": "a fully dropped row passes no gradient to its query (and no NaN)",
}

PARTS = [
    Part("test_attention_backward", function="attention_backward", cases=backward_cases, check=grads_check,
         outputs=("dq", "dk", "dv"), hints=HINTS_BACKWARD, diagnose=diagnose_grads),
    Part("test_masked_attention_backward", function="masked_attention_backward", cases=masked_cases,
         check=grads_check, outputs=("dq", "dk", "dv"), hints=HINTS_MASKED, diagnose=diagnose_masked),
    Part("test_numerical_attention_gradient", function="numerical_attention_gradient", cases=numerical_cases,
         keeps_inputs=True, hints=HINTS_NUMERICAL, diagnose=diagnose_numerical),
    Part("test_dropout_attention_backward", function="dropout_attention_backward", cases=dropout_cases,
         check=grads_check, outputs=("dq", "dk", "dv"), hints=HINTS_DROPOUT, diagnose=diagnose_dropout),
]
