"""The cases of exercise 05 (multi-head attention): one generator per part, for the visible checks and the grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code, tolerances and memory
budgets (``attngrade.spec``). Expected values come from ``attnmath`` in float64, computed before
your function runs; your function gets its own copies of the inputs.
"""

import numpy as np

import attnmath.multihead as ref
from attngrade.spec import Case, Part, allclose_check
from attngrade.visible import factor_hint, like
from attnmath.masking import causal_mask

GRAD_NAMES = ("x", "w_q", "w_k", "w_v", "w_o")


def _params(w_q, w_k, w_v, w_o):
    return ref.MultiHeadParams(w_q, w_k, w_v, w_o)


def _forward(x, w_q, w_k, w_v, w_o, H, causal=False, H_kv=None):
    mask = causal_mask(x.shape[1]) if causal else None
    return ref.self_attention(x, _params(w_q, w_k, w_v, w_o), H, H_kv=H_kv, mask=mask)


def _grads(x, w_q, w_k, w_v, w_o, H, dout, causal=False):
    _, cache = _forward(x, w_q, w_k, w_v, w_o, H, causal)
    g = ref.self_attention_backward(dout, cache)
    return g.dx, g.dw_q, g.dw_k, g.dw_v, g.dw_o


def _weights(rng, C, H, D=None, D_v=None, H_kv=None, scale=0.5):
    D = C // H if D is None else D
    D_v = D if D_v is None else D_v
    H_kv = H if H_kv is None else H_kv
    return (rng.standard_normal((C, H * D)) * scale, rng.standard_normal((C, H_kv * D)) * scale,
            rng.standard_normal((C, H_kv * D_v)) * scale, rng.standard_normal((H * D_v, C)) * scale)


def _kind(H, L, causal):
    """The kind of a case, for the student's feedback: no shapes, no values."""
    return ", ".join(
        ["causal" if causal else "not causal", "one head" if H == 1 else "several heads"]
        + (["one token"] if L == 1 else [])
    )


def _heads(a, H):
    B, L, C = a.shape
    return a.reshape(B, L, H, C // H).transpose(0, 2, 1, 3)


def _variant(x, w_q, w_k, w_v, w_o, H, H_kv=None, causal=False, scale=None, diagonal=True, tile=False,
             normalise=True):
    """Multi-head (or grouped-query) attention as a mistake computes it: another scale, a causal
    mask with or without its diagonal, key/value heads tiled, or weights not normalised."""
    H_kv = H if H_kv is None else H_kv
    G, (B, L, _) = H // H_kv, x.shape
    q = _heads(x @ w_q, H)
    k, v = (np.tile(a, (1, G, 1, 1)) if tile else np.repeat(a, G, axis=1)
            for a in (_heads(x @ w_k, H_kv), _heads(x @ w_v, H_kv)))
    scores = q @ k.swapaxes(-1, -2) * (1.0 / np.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        scores = np.where(np.tril(np.ones((L, L), dtype=bool), 0 if diagonal else -1), scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", over="ignore"):
        p = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
        if normalise:
            total = p.sum(axis=-1, keepdims=True)
            p = np.divide(p, total, out=np.zeros_like(p), where=total > 0)
        return (p @ v).transpose(0, 2, 1, 3).reshape(B, L, -1) @ w_o


def diagnose_forward(case, out):
    """The usual slips of a forward pass, recognised from the case's own inputs."""
    x, w_q, w_k, w_v, w_o, H = case.args[:6]
    H_kv = case.args[6] if len(case.args) > 6 else H
    causal = case.kwargs.get("causal", False)
    C, D = x.shape[-1], w_q.shape[1] // H
    variants = [(dict(scale=1.0 / np.sqrt(C)), "the scores are scaled by sqrt(C): D is the width of one head, "
                                                "w_q.shape[1] // H"),
                (dict(scale=1.0 / np.sqrt(C // H)), "the scores are scaled by sqrt(C / H): D is the head width of "
                                                    "q and k, w_q.shape[1] // H"),
                (dict(scale=1.0), "the scores are not scaled: divide them by sqrt(D)"),
                (dict(scale=1.0 / D), "the scores are divided by D instead of sqrt(D)"),
                (dict(causal=not causal), "the causal mask is left out: with causal=True query i sees keys j <= i"
                                          if causal else "a causal mask is applied although causal=False"),
                (dict(diagonal=False), "the causal mask must include the diagonal: a token attends to itself"),
                (dict(normalise=False), "the weights are not normalised: divide by each row's sum"),
                (dict(tile=True), "the key/value heads are tiled: query head h uses key/value head h // G "
                                  "(np.repeat, not np.tile)")]
    for change, words in variants:
        if like(out, _variant(x, w_q, w_k, w_v, w_o, H, H_kv, **{"causal": causal, **change}), case.expected):
            return words
    return None

# ----------------------------------------------------------------------------- Parts 1 and 2


def split_cases(rng):
    cases = []
    for shape, H in [((2, 3, 6), 3), ((2, 5, 12), 4), ((1, 1, 4), 4), ((3, 7, 6), 2), ((2, 3, 10), 5), ((1, 4, 9), 3)]:
        x = rng.standard_normal(shape)
        cases.append(Case((x, H), {}, f"shape {shape} H={H}", ref.split_heads(x, H),
                          kind="another shape and head count"))
    x = rng.standard_normal((2, 3, 6))
    cases.append(Case((x, 1), {}, "H=1", ref.split_heads(x, 1), kind="one head"))
    x = rng.standard_normal((2, 3, 8)).astype(np.float32)
    cases.append(Case((x, 4), {}, "float32", ref.split_heads(x, 4), kind="float32 input"))
    return cases


def diagnose_split(case, out):
    x, H = case.args
    B, L, C = x.shape
    for variant, words in [(x.reshape(B, H, L, C // H), "a reshape straight to (B, H, L, D) has the right shape and "
                                                        "the wrong contents: reshape to (B, L, H, D), then swap "
                                                        "axes 1 and 2"),
                           (x.reshape(B, L, C // H, H).transpose(0, 3, 1, 2), "head h holds the consecutive "
                                                                              "features h*D:(h+1)*D, not every H-th "
                                                                              "feature")]:
        if like(out, variant, case.expected):
            return words
    return None


def merge_cases(rng):
    cases = []
    for shape, kind in [((2, 3, 4, 2), "several heads and a batch"), ((3, 2, 4, 5), "several heads and a batch"),
                        ((2, 4, 5, 2), "several heads and a batch"), ((1, 1, 7, 3), "one head"),
                        ((2, 6, 3, 1), "heads of width one"), ((1, 1, 1, 1), "every axis of size one")]:
        h = rng.standard_normal(shape)
        cases.append(Case((h,), {}, f"shape {shape}", ref.merge_heads(h), kind=kind))
    return cases


def diagnose_merge(case, out):
    (x,) = case.args
    B, H, L, D = x.shape
    if like(out, x.reshape(B, L, H * D), case.expected):
        return "the heads are merged without the transpose: swap axes 1 and 2 back, then reshape to (B, L, H*D)"
    return None


HINTS_SPLIT = {"another shape and head count": "D = C // H; head h holds the features h*D:(h+1)*D of every token",
               "one head": "one head holds every feature: the shape is (B, 1, L, C)",
               "float32 input": "head h holds the features h*D:(h+1)*D of every token"}
_MERGE = "head h lands in the features h*D:(h+1)*D of each position"
HINTS_MERGE = {
    "several heads and a batch": _MERGE + ": move the heads next to their features, then reshape to (B, L, H*D)",
    "one head": _MERGE + "; with one head the output is (B, L, D)",
    "heads of width one": _MERGE + "; with D = 1 the heads are the features, in head order",
    "every axis of size one": _MERGE + "; keep every axis, even of size 1",
}

# ----------------------------------------------------------------------------- Part 3


def forward_cases(rng):
    cases = []
    for (B, L, C, H) in [(2, 4, 6, 2), (2, 4, 6, 1), (2, 5, 12, 3), (1, 1, 4, 2), (3, 7, 6, 1), (2, 6, 8, 8),
                         (2, 9, 16, 4), (1, 3, 5, 5)]:
        for causal in (False, True):
            x = rng.standard_normal((B, L, C))
            ws = _weights(rng, C, H)
            cases.append(Case((x, *ws, H), {"causal": causal}, f"B={B} L={L} C={C} H={H} causal={causal}",
                              _forward(x, *ws, H, causal)[0], kind=_kind(H, L, causal)))
    # Value width different from the query/key width, and an output width equal to C.
    for C, D, D_v in [(8, 3, 5), (6, 4, 2)]:
        x = rng.standard_normal((2, 5, C))
        ws = _weights(rng, C, 2, D=D, D_v=D_v)
        for causal in (False, True):
            cases.append(Case((x, *ws, 2), {"causal": causal}, f"C={C} D={D} D_v={D_v} causal={causal}",
                              _forward(x, *ws, 2, causal)[0], kind="head widths other than C / H"))
    # Scores in the thousands: a softmax that does not subtract the maximum overflows.
    x = 60.0 * rng.standard_normal((2, 6, 8))
    ws = _weights(rng, 8, 2, scale=1.0)
    for causal in (False, True):
        cases.append(Case((x, *ws, 2), {"causal": causal}, f"large scores causal={causal}",
                          _forward(x, *ws, 2, causal)[0], tol=1e-8, kind="scores in the thousands"))
    return cases


HINTS_FORWARD = {
    "not causal, several heads": "split q, k and v into heads, scale each head's scores by sqrt(D), softmax over the "
                                 "keys, merge the heads and project with w_o",
    "causal, several heads": "np.where(np.tril(np.ones((L, L), dtype=bool)), scores, -np.inf): query i sees j <= i",
    "not causal, one head": "with H = 1 the layer is softmax(x W_Q (x W_K)^T / sqrt(D)) x W_V W_O",
    "causal, one head": "with H = 1 and causal=True the mask still applies",
    "not causal, several heads, one token": "one token attends only to itself: its output is x W_V W_O; keep "
                                            "every axis, even of size 1",
    "causal, several heads, one token": "the causal mask includes the diagonal: a token attends to itself",
    "head widths other than C / H": "D is the head width of q and k, w_q.shape[1] // H, and D_v that of v: scale by "
                                    "sqrt(D), not sqrt(C / H)",
    "scores in the thousands": "subtract each row's maximum before exp",
}

# ----------------------------------------------------------------------------- Part 4


def numerical_cases(rng):
    cases = []
    x, dout = rng.standard_normal((1, 3, 4)), rng.standard_normal((1, 3, 4))
    ws = _weights(rng, 4, 2, scale=0.5)
    cases.append(Case((x, *ws, 2, dout, "w_q"), {"causal": True}, "small w_q causal",
                      _grads(x, *ws, 2, dout, True)[1], tol=1e-5, kind="gradient with respect to w_q, causal"))
    for (B, L, C, H), causal in [((1, 3, 4, 2), False), ((2, 3, 4, 2), False), ((1, 4, 6, 3), True),
                                 ((2, 2, 3, 1), True)]:
        x, dout = rng.standard_normal((B, L, C)), rng.standard_normal((B, L, C))
        ws = _weights(rng, C, H)
        grads = _grads(x, *ws, H, dout, causal)
        for name, g in zip(GRAD_NAMES, grads):
            cases.append(Case((x, *ws, H, dout, name), {"causal": causal},
                              f"B={B} L={L} C={C} H={H} causal={causal} wrt={name}", g, tol=1e-5,
                              kind=f"gradient with respect to {name}" + (", causal" if causal else "")))
    return cases


def diagnose_numerical(case, out):
    x, w_q, w_k, w_v, w_o, H, dout, wrt = case.args
    causal = case.kwargs.get("causal", False)
    exact = dict(zip(GRAD_NAMES, _grads(x, w_q, w_k, w_v, w_o, H, dout, causal)))
    for other in GRAD_NAMES:
        if other != wrt and like(out, exact[other], case.expected):
            return f"this is the gradient with respect to {other}: perturb `{wrt}`, the argument `wrt` names"
    flipped = dict(zip(GRAD_NAMES, _grads(x, w_q, w_k, w_v, w_o, H, dout, not causal)))[wrt]
    if like(out, flipped, case.expected):
        return ("the loss ignores causal: pass causal on to mha_forward" if causal else
                "the loss is causal although causal=False: pass causal on to mha_forward")
    if like(out, np.zeros_like(case.expected), case.expected):
        return (f"a zero gradient: evaluate the loss at {wrt} + eps e_i and at {wrt} - eps e_i, on the array you "
                "perturb")
    return factor_hint(out, case.expected, [(-1.0, "the sign is flipped: (L(x + eps) - L(x - eps)) / (2 eps)"),
                                            (2.0, "twice too large: divide by 2 eps"),
                                            (0.5, "half as large as it should be: divide by 2 eps, not 4 eps")])


HINTS_NUMERICAL = {f"gradient with respect to {name}" + suffix:
                   f"perturb one entry of {name} at a time, on a copy (the inputs must stay unchanged), and "
                   "evaluate sum(mha_forward(...) * dout) with the same causal"
                   for name in GRAD_NAMES for suffix in ("", ", causal")}

# ----------------------------------------------------------------------------- Part 5


def grads_check(case, out):
    """The five gradients, each checked as an array."""
    assert isinstance(out, (tuple, list)), "return a tuple (dx, dw_q, dw_k, dw_v, dw_o)"
    assert len(out) == 5, f"expected 5 gradients, got {len(out)}"
    for got, expected in zip(out, case.expected):
        allclose_check(Case(expected=expected, tol=case.tol), got)


def backward_cases(rng):
    cases = []
    for (B, L, C, H) in [(2, 3, 4, 2), (2, 5, 12, 3), (1, 1, 4, 2), (3, 6, 6, 1), (2, 4, 8, 8), (1, 7, 10, 5)]:
        for causal in (False, True):
            x, dout = rng.standard_normal((B, L, C)), rng.standard_normal((B, L, C))
            ws = _weights(rng, C, H)
            cases.append(Case((x, *ws, H, dout), {"causal": causal}, f"B={B} L={L} C={C} H={H} causal={causal}",
                              _grads(x, *ws, H, dout, causal), tol=1e-8, kind=_kind(H, L, causal)))
    for C, D, D_v in [(8, 3, 5), (4, 3, 2)]:
        x, dout = rng.standard_normal((2, 5, C)), rng.standard_normal((2, 5, C))
        ws = _weights(rng, C, 2, D=D, D_v=D_v)
        cases.append(Case((x, *ws, 2, dout), {"causal": True}, f"C={C} D={D} D_v={D_v}",
                          _grads(x, *ws, 2, dout, True), tol=1e-8, kind="head widths other than C / H"))
    return cases


def diagnose_backward(case, out):
    x, w_q, w_k, w_v, w_o, H, dout = case.args
    causal = case.kwargs.get("causal", False)
    if not (isinstance(out, (tuple, list)) and len(out) == 5):
        return None
    flipped = _grads(x, w_q, w_k, w_v, w_o, H, dout, not causal)
    alike = [like(o, f, e) for o, f, e in zip(out, flipped, case.expected)]
    if any(alike) and all(a or np.allclose(f, e) for a, f, e in zip(alike, flipped, case.expected)):
        return ("the backward pass ignores causal: recompute P with the causal mask" if causal else
                "the backward pass applies a causal mask although causal=False")
    D = w_q.shape[1] // H
    unscaled = list(_grads(x, w_q * np.sqrt(D), w_k, w_v, w_o, H, dout, causal))  # scores q k^T, not / sqrt(D)
    unscaled[1] = unscaled[1] * np.sqrt(D)
    alike = [like(o, u, e) for o, u, e in zip(out, unscaled, case.expected)]
    if any(alike) and all(a or np.allclose(u, e) for a, u, e in zip(alike, unscaled, case.expected)):
        return "the backward pass leaves out the scale: the scores are q k^T / sqrt(D), and dq, dk carry 1/sqrt(D)"
    got, dw_o = np.asarray(out[4]), case.expected[4]
    if (got.shape == dw_o.shape[::-1] and np.allclose(got.T, dw_o, rtol=1e-6, atol=1e-9)
            and not np.allclose(dw_o, dw_o.T)):
        return "dw_o is transposed: Z^T dO has the shape of w_o, (H*D_v, C)"
    for name, got, expected in zip(("dx", "dw_q", "dw_k", "dw_v", "dw_o"), out, case.expected):
        found = factor_hint(got, expected, [(-1.0, f"{name}: its sign is flipped"),
                                            (np.sqrt(D), f"{name} lacks the factor 1/sqrt(D)"),
                                            (1.0 / np.sqrt(D), f"{name} has the factor 1/sqrt(D) twice")])
        if found:
            return found
    return None


HINTS_BACKWARD = {
    "not causal, several heads": "dx has three terms, dQ W_Q^T + dK W_K^T + dV W_V^T, and every product with x^T "
                                 "sums over the batch",
    "causal, several heads": "recompute P with the causal mask; the masked weights are zero, the rest follows",
    "not causal, one head": "dx has three terms, dQ W_Q^T + dK W_K^T + dV W_V^T",
    "causal, one head": "recompute P with the causal mask",
    "not causal, several heads, one token": "with one token W_Q and W_K get no gradient; keep every axis, even of "
                                            "size 1",
    "causal, several heads, one token": "with one token W_Q and W_K get no gradient; keep every axis",
    "head widths other than C / H": "scale by sqrt(D) with D = w_q.shape[1] // H, not sqrt(C / H); dw_o has the "
                                    "shape of w_o, (H*D_v, C)",
}

# ----------------------------------------------------------------------------- Part 6


def gqa_cases(rng):
    cases = []
    for (B, L, C, H, H_kv) in [(2, 3, 8, 4, 2), (2, 5, 12, 6, 3), (1, 4, 8, 4, 1), (2, 6, 8, 4, 4), (3, 3, 16, 8, 2),
                               (1, 1, 6, 6, 2), (2, 1, 8, 4, 2)]:
        for causal in (False, True):
            x = rng.standard_normal((B, L, C))
            ws = _weights(rng, C, H, H_kv=H_kv)
            cases.append(Case((x, *ws, H, H_kv), {"causal": causal},
                              f"B={B} L={L} C={C} H={H} H_kv={H_kv} causal={causal}",
                              _forward(x, *ws, H, causal, H_kv=H_kv)[0],
                              kind=_kind(H, L, causal)
                              + (", grouped key-value heads" if H_kv < H else ", one key-value head per head")))
    x = 60.0 * rng.standard_normal((2, 5, 8))
    ws = _weights(rng, 8, 4, H_kv=2, scale=1.0)
    for causal in (False, True):
        cases.append(Case((x, *ws, 4, 2), {"causal": causal}, f"large scores causal={causal}",
                          _forward(x, *ws, 4, causal, H_kv=2)[0], tol=1e-8, kind="scores in the thousands"))
    return cases


HINTS_GQA = {
    "not causal, several heads, grouped key-value heads": "query head h uses key/value head h // G, G = H // H_kv: "
                                                          "np.repeat(k, G, axis=1)",
    "causal, several heads, grouped key-value heads": "query head h uses key/value head h // G, and query i sees "
                                                      "keys j <= i",
    "not causal, several heads, one key-value head per head": "with H_kv = H this is multi-head attention",
    "causal, several heads, one key-value head per head": "with H_kv = H this is causal multi-head attention",
    "not causal, several heads, one token, grouped key-value heads": "one token returns the value of its key/value "
                                                                     "head; keep every axis, even of size 1",
    "causal, several heads, one token, grouped key-value heads": "the causal mask includes the diagonal: a token "
                                                                 "attends to itself",
    "scores in the thousands": "subtract each row's maximum before exp",
}

PARTS = [
    Part("test_split_heads", function="split_heads", cases=split_cases, hints=HINTS_SPLIT, diagnose=diagnose_split),
    Part("test_merge_heads", function="merge_heads", cases=merge_cases, hints=HINTS_MERGE, diagnose=diagnose_merge),
    Part("test_mha_forward", function="mha_forward", cases=forward_cases, hints=HINTS_FORWARD,
         diagnose=diagnose_forward),
    Part("test_numerical_gradient", function="numerical_gradient", cases=numerical_cases, keeps_inputs=True,
         hints=HINTS_NUMERICAL, diagnose=diagnose_numerical),
    Part("test_mha_backward", function="mha_backward", cases=backward_cases, check=grads_check,
         outputs=("dx", "dw_q", "dw_k", "dw_v", "dw_o"), hints=HINTS_BACKWARD, diagnose=diagnose_backward),
    Part("test_gqa_forward", function="gqa_forward", cases=gqa_cases, hints=HINTS_GQA, diagnose=diagnose_forward),
]
