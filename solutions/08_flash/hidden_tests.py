"""Hidden tests of exercise 08 (flash attention). Not released to students.

Each part's cases include the visible self-checks' inputs, so the notebook runner and the grading
pipeline agree on every submission. Expected values come from ``attnmath`` in float64. The
memory cases run L = S = 2048 with tiles that do not divide the lengths and allow less than one
``(2048, 2048)`` *boolean* array (4 MiB), so neither a score matrix nor a full causal mask fits.
"""

import numpy as np

from attnmath import chunked, flash
from attngrade.spec import Case, Part, allclose_check

MiB = 2**20


def _qkv(rng, lead, L, S, D, D_v, scale=1.0, dtype=np.float64):
    q = (rng.standard_normal(lead + (L, D)) * scale).astype(dtype)
    k = (rng.standard_normal(lead + (S, D)) * scale).astype(dtype)
    v = rng.standard_normal(lead + (S, D_v)).astype(dtype)
    return q, k, v


def tuple_check(names):
    """Check an output that must be a tuple (or list) of arrays, one per name."""

    def check(case, out):
        assert isinstance(out, (tuple, list)), f"expected a tuple {tuple(names)}, got {type(out).__name__}"
        assert len(out) == len(names), f"expected {len(names)} arrays {tuple(names)}, got {len(out)}"
        for name, got, expected in zip(names, out, case.expected):
            try:
                allclose_check(Case(expected=expected, tol=case.tol), got)
            except AssertionError as exc:
                raise AssertionError(f"{name}: {exc}") from None

    return check


# ----------------------------------------------------------------------------- online softmax


def visible_softmax_inputs():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    rows = np.array([[-np.inf, -np.inf, 0.5, 2.0, -1.0, 3.0, 1000.0],
                     [4.0, -np.inf, 1.0, 1.0, -np.inf, 0.0, -3.0]])
    return x, rows


def softmax_cases(rng):
    x, rows = visible_softmax_inputs()
    cases = [Case((x, 2), {}, "visible vector", chunked.online_softmax(x, block_size=2),
                  kind="a visible self-check")]
    cases += [Case((rows, b), {}, f"visible rows, block {b}", chunked.online_softmax(rows, block_size=b),
                   kind="a visible self-check")
              for b in (1, 3)]
    for shape in [(1,), (37,), (4, 9), (2, 3, 16)]:
        x = rng.normal(scale=5.0, size=shape)
        n = shape[-1]
        for b in sorted({1, 2, 3, 7, n, n + 5}):
            cases.append(Case((x, b), {}, f"shape {shape} block {b}", chunked.online_softmax(x, block_size=b),
                              kind="another shape and block size"))
    x = rng.normal(scale=3.0, size=(6, 20))
    x[rng.random((6, 20)) < 0.5] = -np.inf  # masked entries, whole blocks of them
    x[:, 13] = rng.normal(size=6)  # one finite entry per row, late in the row
    x[2, :13] = -np.inf
    for b in (1, 4, 6):
        cases.append(Case((x, b), {}, f"masked, block {b}", chunked.online_softmax(x, block_size=b),
                          kind="rows with masked entries"))
    x = np.array([[1e4, -1e4, 0.0, 9990.0, 1e4 - 1.0], [-1e4, -1e4, -1e4, -1e4, -1e4]])
    cases.append(Case((x, 2), {}, "extreme float64", chunked.online_softmax(x, block_size=2),
                      kind="rows of +-1e4"))
    # float32 spacing near 1e4 is 1e-3: a log-sum-exp formula exp(x - lse) is accurate to about that.
    cases.append(Case((x.astype(np.float32), 2), {}, "extreme float32", chunked.online_softmax(x, block_size=2),
                      tol=1e-3, kind="rows of +-1e4, float32 input"))
    # Increasing maxima in every block: the rescaling is used at every step.
    x = np.linspace(-50.0, 700.0, 31)
    cases.append(Case((x, 4), {}, "rising logits", chunked.online_softmax(x, block_size=4),
                      kind="a larger maximum in every block"))
    return cases


# ----------------------------------------------------------------------------- flash forward


def visible_forward_inputs():
    rng = np.random.default_rng(0)
    return rng.standard_normal((5, 4)), rng.standard_normal((7, 4)), rng.standard_normal((7, 3))


def _forward(q, k, v, bq, bk, causal):
    out, cache = flash.flash_attention_forward(q, k, v, block_q=bq, block_k=bk, causal=causal)
    return out, cache.lse


def forward_cases(rng):
    q, k, v = visible_forward_inputs()
    cases = [Case((q, k, v, 2, 3), {"causal": c}, f"visible causal={c}", _forward(q, k, v, 2, 3, c),
                  kind="a visible self-check")
             for c in (False, True)]
    for lead, L, S, D, D_v, bq, bk in [((), 7, 7, 4, 4, 3, 2), ((2, 3), 10, 13, 8, 5, 4, 5),
                                       ((1, 2), 13, 6, 3, 2, 5, 4), ((2,), 9, 16, 4, 4, 16, 3),
                                       ((), 1, 1, 1, 1, 1, 1), ((), 6, 11, 2, 3, 1, 1), ((3,), 8, 8, 4, 4, 8, 8)]:
        q, k, v = _qkv(rng, lead, L, S, D, D_v)
        for c in (False, True):
            cases.append(Case((q, k, v, bq, bk), {"causal": c}, f"{lead} L={L} S={S} tiles {bq}x{bk} causal={c}",
                              _forward(q, k, v, bq, bk, c),
                              kind="another shape and tile size" + (", causal" if c else "")))
    q, k, v = _qkv(rng, (2,), 11, 9, 4, 4, scale=30.0)  # scores in the thousands
    for c in (False, True):
        cases.append(Case((q, k, v, 4, 3), {"causal": c}, f"huge scores causal={c}", _forward(q, k, v, 4, 3, c),
                          kind="scores in the thousands" + (", causal" if c else "")))
    q, k, v = _qkv(rng, (2,), 12, 10, 8, 4, dtype=np.float32)
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    cases.append(Case((q, k, v, 5, 4), {"causal": True}, "float32", _forward(q64, k64, v64, 5, 4, True), tol=1e-4,
                      kind="float32 input, causal"))
    # Memory: tiles of 100 x 128 and 64 x 96 over L = S = 2048.
    q, k, v = _qkv(rng, (1,), 2048, 2048, 16, 16)
    cases.append(Case((q, k, v, 100, 128), {}, "memory", _forward(q, k, v, 100, 128, False),
                      max_peak_bytes=3 * MiB, kind="memory limit on long rows"))
    cases.append(Case((q, k, v, 64, 96), {"causal": True}, "memory causal", _forward(q, k, v, 64, 96, True),
                      max_peak_bytes=3 * MiB, kind="memory limit on long rows, causal"))
    return cases


# ----------------------------------------------------------------------------- flash backward


def _backward_case(q, k, v, dout, bq, bk, causal, label, **kw):
    out, cache = flash.flash_attention_forward(q, k, v, block_q=bq, block_k=bk, causal=causal)
    grads = flash.flash_attention_backward(dout, cache)
    return Case((q, k, v, out, cache.lse, dout, bq, bk), {"causal": causal}, label, tuple(grads), **kw)


def visible_backward_inputs():
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((5, 4)), rng.standard_normal((7, 4)), rng.standard_normal((7, 3))
    return q, k, v, rng.standard_normal((5, 3))


def backward_cases(rng):
    q, k, v, dout = visible_backward_inputs()
    cases = [_backward_case(q, k, v, dout, 2, 3, c, f"visible causal={c}", kind="a visible self-check")
             for c in (False, True)]
    for lead, L, S, D, D_v, bq, bk in [((), 7, 7, 4, 4, 3, 2), ((2, 3), 10, 13, 8, 5, 4, 5),
                                       ((1, 2), 13, 6, 3, 2, 5, 4), ((2,), 9, 16, 4, 4, 16, 3),
                                       ((), 1, 1, 1, 1, 1, 1), ((), 6, 11, 2, 3, 1, 1)]:
        q, k, v = _qkv(rng, lead, L, S, D, D_v)
        dout = rng.standard_normal(lead + (L, D_v))
        for c in (False, True):
            cases.append(_backward_case(q, k, v, dout, bq, bk, c, f"{lead} L={L} S={S} tiles {bq}x{bk} causal={c}",
                                        kind="another shape and tile size" + (", causal" if c else "")))
    q, k, v = _qkv(rng, (2,), 11, 9, 4, 4, scale=30.0)
    dout = rng.standard_normal((2, 11, 4))
    cases.append(_backward_case(q, k, v, dout, 4, 3, True, "huge scores", tol=1e-8,
                                kind="scores in the thousands, causal"))
    # Memory: L = S = 2048, tiles 64 x 80 and 128 x 100.
    q, k, v = _qkv(rng, (1,), 2048, 2048, 16, 16)
    dout = rng.standard_normal((1, 2048, 16))
    cases.append(_backward_case(q, k, v, dout, 64, 80, False, "memory", max_peak_bytes=3 * MiB,
                                kind="memory limit on long rows"))
    cases.append(_backward_case(q, k, v, dout, 128, 100, True, "memory causal", max_peak_bytes=3 * MiB,
                                kind="memory limit on long rows, causal"))
    return cases


PARTS = [
    Part("test_online_softmax", function="online_softmax", cases=softmax_cases),
    Part("test_flash_forward", function="flash_forward", cases=forward_cases, check=tuple_check(("out", "lse"))),
    Part("test_flash_backward", function="flash_backward", cases=backward_cases,
         check=tuple_check(("dq", "dk", "dv"))),
]
