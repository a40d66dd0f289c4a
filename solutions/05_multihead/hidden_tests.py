"""Hidden tests of exercise 05 (multi-head attention in NumPy). Not released to students.

Each part's cases include the visible self-checks' inputs, so the notebook runner and the grading
pipeline agree on every submission. Expected values come from ``attnmath`` in float64.
"""

import numpy as np

import attnmath.multihead as ref
from attngrade.spec import Case, Part, allclose_check
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


# --------------------------------------------------------------------------------------------


def split_cases(rng):
    x = np.arange(2 * 3 * 6, dtype=float).reshape(2, 3, 6)
    cases = [Case((x, 3), {}, "visible", ref.split_heads(x, 3), kind="a visible self-check"),
             Case((x, 1), {}, "visible H=1", ref.split_heads(x, 1), kind="a visible self-check")]
    for shape, H in [((2, 5, 12), 4), ((1, 1, 4), 4), ((3, 7, 6), 2), ((2, 3, 10), 5), ((1, 4, 9), 3)]:
        x = rng.standard_normal(shape)
        cases.append(Case((x, H), {}, f"shape {shape} H={H}", ref.split_heads(x, H),
                          kind="another shape and head count"))
    x = rng.standard_normal((2, 3, 8)).astype(np.float32)
    cases.append(Case((x, 2), {}, "float32", ref.split_heads(x, 2), kind="float32 input"))
    return cases


def merge_cases(rng):
    heads = np.arange(2 * 3 * 4 * 2, dtype=float).reshape(2, 3, 4, 2)
    cases = [Case((heads,), {}, "visible", ref.merge_heads(heads), kind="a visible self-check")]
    for shape in [(1, 1, 1, 1), (3, 2, 4, 5), (2, 6, 3, 1), (1, 1, 7, 3), (2, 4, 5, 2)]:
        h = rng.standard_normal(shape)
        cases.append(Case((h,), {}, f"shape {shape}", ref.merge_heads(h), kind="another shape"))
    return cases


def _kind(H, L, causal):
    """The kind of a case, for the student's feedback: no shapes, no values."""
    return ", ".join(
        ["causal" if causal else "not causal", "one head" if H == 1 else "several heads"]
        + (["one token"] if L == 1 else [])
    )


def forward_cases(rng):
    cases = []
    vis = np.random.default_rng(0)
    x = vis.standard_normal((2, 4, 6))
    ws = tuple(vis.standard_normal((6, 6)) * 0.5 for _ in range(4))
    for H, causal in [(2, False), (1, False), (2, True)]:
        cases.append(Case((x, *ws, H), {"causal": causal}, f"visible H={H} causal={causal}",
                          _forward(x, *ws, H, causal)[0], kind="a visible self-check"))
    for (B, L, C, H) in [(2, 5, 12, 3), (1, 1, 4, 2), (3, 7, 6, 1), (2, 6, 8, 8), (2, 9, 16, 4), (1, 3, 5, 5)]:
        for causal in (False, True):
            x = rng.standard_normal((B, L, C))
            ws = _weights(rng, C, H)
            cases.append(Case((x, *ws, H), {"causal": causal}, f"B={B} L={L} C={C} H={H} causal={causal}",
                              _forward(x, *ws, H, causal)[0], kind=_kind(H, L, causal)))
    # Value width different from the query/key width, and an output width equal to C.
    x = rng.standard_normal((2, 5, 8))
    ws = _weights(rng, 8, 2, D=3, D_v=5)
    for causal in (False, True):
        cases.append(Case((x, *ws, 2), {"causal": causal}, f"D=3 D_v=5 causal={causal}",
                          _forward(x, *ws, 2, causal)[0], kind="head widths other than C / H"))
    # Scores in the thousands: a softmax that does not subtract the maximum overflows.
    x = 60.0 * rng.standard_normal((2, 6, 8))
    ws = _weights(rng, 8, 2, scale=1.0)
    for causal in (False, True):
        cases.append(Case((x, *ws, 2), {"causal": causal}, f"large scores causal={causal}",
                          _forward(x, *ws, 2, causal)[0], tol=1e-8, kind="scores in the thousands"))
    return cases


def numerical_cases(rng):
    cases = []
    vis = np.random.default_rng(1)
    x, dout = vis.standard_normal((1, 3, 4)), vis.standard_normal((1, 3, 4))
    ws = tuple(vis.standard_normal((4, 4)) * 0.5 for _ in range(4))
    grads = _grads(x, *ws, 2, dout, True)
    cases.append(Case((x, *ws, 2, dout, "w_q"), {"causal": True}, "visible w_q", grads[1], tol=1e-5,
                      kind="a visible self-check"))
    cases.append(Case((x, *ws, 2, dout, "x"), {}, "visible x", _grads(x, *ws, 2, dout)[0], tol=1e-5,
                      kind="a visible self-check"))
    for (B, L, C, H), causal in [((2, 3, 4, 2), False), ((1, 4, 6, 3), True), ((2, 2, 3, 1), True)]:
        x, dout = rng.standard_normal((B, L, C)), rng.standard_normal((B, L, C))
        ws = _weights(rng, C, H)
        grads = _grads(x, *ws, H, dout, causal)
        for name, g in zip(GRAD_NAMES, grads):
            cases.append(Case((x, *ws, H, dout, name), {"causal": causal},
                              f"B={B} L={L} C={C} H={H} causal={causal} wrt={name}", g, tol=1e-5,
                              kind=f"gradient with respect to {name}" + (", causal" if causal else "")))
    return cases


def grads_check(case, out):
    """The five gradients, each checked as an array."""
    assert isinstance(out, (tuple, list)), "return a tuple (dx, dw_q, dw_k, dw_v, dw_o)"
    assert len(out) == 5, f"expected 5 gradients, got {len(out)}"
    for got, expected in zip(out, case.expected):
        allclose_check(Case(expected=expected, tol=case.tol), got)


def backward_cases(rng):
    cases = []
    vis = np.random.default_rng(2)
    x, dout = vis.standard_normal((2, 3, 4)), vis.standard_normal((2, 3, 4))
    ws = tuple(vis.standard_normal((4, 4)) * 0.5 for _ in range(4))
    cases.append(Case((x, *ws, 2, dout), {"causal": True}, "visible", _grads(x, *ws, 2, dout, True), tol=1e-8,
                      kind="a visible self-check"))
    cases.append(Case((x[:, :1], *ws, 2, dout[:, :1]), {}, "visible one token",
                      _grads(x[:, :1], *ws, 2, dout[:, :1]), tol=1e-8, kind="a visible self-check"))
    for (B, L, C, H) in [(2, 5, 12, 3), (1, 1, 4, 2), (3, 6, 6, 1), (2, 4, 8, 8), (1, 7, 10, 5)]:
        for causal in (False, True):
            x, dout = rng.standard_normal((B, L, C)), rng.standard_normal((B, L, C))
            ws = _weights(rng, C, H)
            cases.append(Case((x, *ws, H, dout), {"causal": causal}, f"B={B} L={L} C={C} H={H} causal={causal}",
                              _grads(x, *ws, H, dout, causal), tol=1e-8, kind=_kind(H, L, causal)))
    x, dout = rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 5, 8))
    ws = _weights(rng, 8, 2, D=3, D_v=5)
    cases.append(Case((x, *ws, 2, dout), {"causal": True}, "D=3 D_v=5", _grads(x, *ws, 2, dout, True), tol=1e-8,
                      kind="head widths other than C / H"))
    return cases


def gqa_cases(rng):
    vis = np.random.default_rng(4)
    x = vis.standard_normal((2, 3, 8))
    w_q, w_o = vis.standard_normal((8, 8)) * 0.5, vis.standard_normal((8, 8)) * 0.5
    w_k, w_v = vis.standard_normal((8, 4)) * 0.5, vis.standard_normal((8, 4)) * 0.5
    cases = [Case((x, w_q, w_k, w_v, w_o, 4, 2), {}, "visible",
                  _forward(x, w_q, w_k, w_v, w_o, 4, H_kv=2)[0], kind="a visible self-check"),
             Case((x[:, :1], w_q, w_k, w_v, w_o, 4, 2), {}, "visible one token",
                  _forward(x[:, :1], w_q, w_k, w_v, w_o, 4, H_kv=2)[0], kind="a visible self-check")]
    for (B, L, C, H, H_kv) in [(2, 5, 12, 6, 3), (1, 4, 8, 4, 1), (2, 6, 8, 4, 4), (3, 3, 16, 8, 2), (1, 1, 6, 6, 2)]:
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
    cases.append(Case((x, *ws, 4, 2), {"causal": True}, "large scores", _forward(x, *ws, 4, True, H_kv=2)[0],
                      tol=1e-8, kind="scores in the thousands"))
    return cases


PARTS = [
    Part("test_split_heads", function="split_heads", cases=split_cases),
    Part("test_merge_heads", function="merge_heads", cases=merge_cases),
    Part("test_mha_forward", function="mha_forward", cases=forward_cases),
    Part("test_numerical_gradient", function="numerical_gradient", cases=numerical_cases),
    Part("test_mha_backward", function="mha_backward", cases=backward_cases, check=grads_check),
    Part("test_gqa_forward", function="gqa_forward", cases=gqa_cases),
]
