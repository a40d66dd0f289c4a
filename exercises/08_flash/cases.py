"""The cases of exercise 08 (flash attention): one generator per part, for the visible checks and the grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code, tolerances and memory
budgets (``attngrade.spec``). Expected values come from ``attnmath`` in float64, computed before
your function runs; your function gets its own copies of the inputs. The memory cases run
L = S = 2048 with tiles that do not divide the lengths and allow less than one ``(2048, 2048)``
*boolean* array (4 MiB), so neither a score matrix nor a full causal mask fits.
"""

import numpy as np

from attnmath import chunked, flash
from attngrade.spec import Case, Part, allclose_check
from attngrade.visible import factor_hint, like

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


def _matches(out, variant, expected) -> bool:
    """Whether ``out`` is what a mistake computes (``variant``), NaN where it has NaN, and that
    differs from ``expected``: ``attngrade.visible.like`` for variants that are not finite."""
    try:
        o, w, e = (np.asarray(a, dtype=np.float64) for a in (out, variant, expected))
    except (TypeError, ValueError):
        return False
    if not o.shape == w.shape == e.shape:
        return False
    if np.isfinite(w).all():
        return like(out, variant, expected)
    bad = ~np.isfinite(w)
    return bool(np.array_equal(bad, ~np.isfinite(o)) and np.allclose(o[~bad], w[~bad], rtol=1e-6, atol=1e-9))


# ----------------------------------------------------------------------------- Part 1


def _float32_exact(x):
    """``x`` rounded to float32 values, kept in float64: the float32 case's expected values are then
    those of its own inputs."""
    return x.astype(np.float32).astype(np.float64)


def softmax_cases(rng):
    cases = []
    for shape in [(5,), (1,), (37,), (4, 9), (2, 3, 16), (2, 3, 6)]:
        x = rng.normal(scale=5.0, size=shape)
        n = shape[-1]
        for b in sorted({1, 2, 3, 7, n, n + 5}):
            cases.append(Case((x, b), {}, f"shape {shape} block {b}", chunked.online_softmax(x, block_size=b),
                              kind="another shape and block size"))
    rows = rng.normal(scale=2.0, size=(2, 7))
    rows[0, :2] = -np.inf  # a whole first block of -inf for blocks of 1 and 2
    rows[0, 6] = 1000.0 + rng.normal()
    rows[1, [1, 4]] = -np.inf
    for b in (1, 3):
        cases.append(Case((rows, b), {}, f"short masked rows, block {b}", chunked.online_softmax(rows, block_size=b),
                          kind="rows with masked entries"))
    x = rng.normal(scale=3.0, size=(6, 20))
    x[rng.random((6, 20)) < 0.5] = -np.inf  # masked entries, whole blocks of them
    x[:, 13] = rng.normal(size=6)  # one finite entry per row, late in the row
    x[2, :13] = -np.inf
    for b in (1, 4, 6):
        cases.append(Case((x, b), {}, f"masked, block {b}", chunked.online_softmax(x, block_size=b),
                          kind="rows with masked entries"))
    x = _float32_exact(np.array([[1e4, -1e4, 0.0, 9990.0, 1e4 - 1.0], [-1e4, -1e4, -1e4, -1e4, -1e4]])
                       + np.array([[0.0, 0.0, 1.0, 3.0, 0.5], [0.0, 2.0, 2.0, 2.0, 2.0]]) * rng.uniform(-1, 1, (2, 5)))
    cases.append(Case((x, 2), {}, "extreme float64", chunked.online_softmax(x, block_size=2),
                      kind="rows of +-1e4"))
    # float32 spacing near 1e4 is 1e-3: a log-sum-exp formula exp(x - lse) is accurate to about that.
    cases.append(Case((x.astype(np.float32), 2), {}, "extreme float32", chunked.online_softmax(x, block_size=2),
                      tol=1e-3, kind="rows of +-1e4, float32 input"))
    # Increasing maxima in every block: the rescaling is used at every step.
    for low, high, n, b in [(-50.0, 700.0, 31, 4), (-20.0, 300.0, 12, 3)]:
        x = np.sort(rng.uniform(low, high, size=n))
        cases.append(Case((x, b), {}, f"rising logits, block {b}", chunked.online_softmax(x, block_size=b),
                          kind="a larger maximum in every block"))
    return cases


def _online_variant(x, b, rescale=True, start=-np.inf, last=True):
    """The online softmax as a mistake computes it: no rescaling of the running sum, a running
    maximum started at ``start``, or the last partial block left out (``last=False``)."""
    n = x.shape[-1]
    m, total = np.full(x.shape[:-1], start), np.zeros(x.shape[:-1])
    with np.errstate(all="ignore"):
        for j0 in range(0, n - (n % b if n % b and not last else 0), b):
            block = x[..., j0:j0 + b]
            m_new = np.maximum(m, block.max(axis=-1))
            shift = np.where(np.isfinite(m_new), m_new, 0.0)
            total = (total * np.exp(m - shift) if rescale else total) + np.exp(block - shift[..., None]).sum(axis=-1)
            m = m_new
        return np.exp(x - m[..., None]) / total[..., None]


def diagnose_softmax(case, out):
    x, b = case.args
    x = np.asarray(x, dtype=np.float64)
    for change, words in [(dict(rescale=False), "the running sum is not rescaled: multiply it by e^(m_old - m_new) "
                                                "when the maximum grows"),
                          (dict(start=0.0), "the running maximum starts at 0: start it at -inf"),
                          (dict(last=False), "the last block is left out: range(0, n, block_size) covers every "
                                             "entry, and the last block may be shorter")]:
        if _matches(out, _online_variant(x, b, **change), case.expected):
            return words
    return None


HINTS_SOFTMAX = {
    "another shape and block size": "blocks run over the last axis, range(0, n, block_size); the last block may be "
                                    "shorter, and a block may be longer than the row",
    "rows with masked entries": "while the running maximum is -inf, shift by 0 instead (e^(-inf - (-inf)) is NaN)",
    "rows of +-1e4": "shift every block by the running maximum before exp",
    "rows of +-1e4, float32 input": "shift every block by the running maximum; compute in at least float32",
    "a larger maximum in every block": "rescale the running sum by e^(m_old - m_new) whenever the maximum grows",
}

# ----------------------------------------------------------------------------- Part 2


def _forward(q, k, v, bq, bk, causal, scale=None):
    out, cache = flash.flash_attention_forward(q, k, v, block_q=bq, block_k=bk, causal=causal, scale=scale)
    return out, cache.lse


def forward_cases(rng):
    cases = []
    for lead, L, S, D, D_v, bq, bk in [((), 5, 7, 4, 3, 2, 3), ((), 7, 7, 4, 4, 3, 2), ((2, 3), 10, 13, 8, 5, 4, 5),
                                       ((1, 2), 13, 6, 3, 2, 5, 4), ((2,), 6, 4, 4, 2, 4, 2),
                                       ((2,), 9, 16, 4, 4, 16, 3), ((), 1, 1, 1, 1, 1, 1), ((), 6, 11, 2, 3, 1, 1),
                                       ((3,), 8, 8, 4, 4, 8, 8)]:
        q, k, v = _qkv(rng, lead, L, S, D, D_v)
        for c in (False, True):
            cases.append(Case((q, k, v, bq, bk), {"causal": c}, f"{lead} L={L} S={S} tiles {bq}x{bk} causal={c}",
                              _forward(q, k, v, bq, bk, c),
                              kind="another shape and tile size" + (", causal" if c else "")))
    q, k, v = _qkv(rng, (2,), 11, 9, 4, 4, scale=30.0)  # scores in the thousands
    k[..., 0, :] = -q[..., 0, :]  # query 0's only causal score is far below 0
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


def _dense(q, k, v, causal, scale=None, offset=0):
    """Attention through the full score matrix, with the causal diagonal moved by ``offset``."""
    s = q @ np.swapaxes(k, -1, -2) * (1.0 / np.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool), offset), s, -np.inf)
    with np.errstate(all="ignore"):
        m = s.max(axis=-1, keepdims=True)
        lse = m[..., 0] + np.log(np.exp(s - m).sum(axis=-1))
        return np.exp(s - lse[..., None]) @ v, lse


def diagnose_forward(case, out):
    q, k, v, bq, bk = (np.asarray(a, dtype=np.float64) if np.ndim(a) else a for a in case.args)
    causal = case.kwargs.get("causal", False)
    if not (isinstance(out, (tuple, list)) and len(out) == 2) or q.shape[-2] * k.shape[-2] > 10**5:
        return None
    D = q.shape[-1]
    variants = [(dict(scale=1.0), "the scores are not scaled: multiply them by 1/sqrt(D)"),
                (dict(scale=1.0 / D), "the scores are divided by D instead of sqrt(D)"),
                (dict(causal=not causal), "causal=True hides the later keys (j > i)" if causal else
                 "causal=False: every query sees every key")]
    if causal:
        variants += [(dict(offset=-1), "off by one: query i may attend to keys 0 to i, itself included"),
                     (dict(offset=1), "off by one: query i may not attend to key i + 1")]
    for change, words in variants:
        wrong = _dense(q, k, v, **{"causal": causal, **change})
        if all(_matches(o, w, e) or np.allclose(w, e) for o, w, e in zip(out, wrong, case.expected)) and any(
                _matches(o, w, e) for o, w, e in zip(out, wrong, case.expected)):
            return words
    if causal and case.kind.startswith("another shape") and not np.isfinite(np.asarray(out[0], dtype=float)).all():
        return "NaN or inf with causal=True: query i may attend to keys 0 to i, itself included (off by one?)"
    return None


HINTS_FORWARD = {
    "another shape and tile size": "tiles need not divide L or S and may exceed them: clip each to min(L, i0 + "
                                   "block_q) and min(S, j0 + block_k); keep the leading axes",
    "another shape and tile size, causal": "mask one tile at a time, np.arange(j0, j1)[None, :] <= np.arange(i0, "
                                           "i1)[:, None]; with fewer keys than queries stop at min(S, i1)",
    "scores in the thousands": "subtract the running maximum before exp",
    "scores in the thousands, causal": "start the running maximum at -inf, not 0: a query's visible scores may all "
                                       "be far below 0",
    "float32 input, causal": "compute in at least float32 (never float16)",
    "memory limit on long rows": "work tile by tile: one (block_q, block_k) tile of scores at a time",
    "memory limit on long rows, causal": "build the causal mask of one tile only, never an (L, S) mask",
}

# ----------------------------------------------------------------------------- Part 3


def _backward_case(q, k, v, dout, bq, bk, causal, label, **kw):
    out, cache = flash.flash_attention_forward(q, k, v, block_q=bq, block_k=bk, causal=causal)
    grads = flash.flash_attention_backward(dout, cache)
    return Case((q, k, v, out, cache.lse, dout, bq, bk), {"causal": causal}, label, tuple(grads), **kw)


def backward_cases(rng):
    cases = []
    for lead, L, S, D, D_v, bq, bk in [((), 5, 7, 4, 3, 2, 3), ((), 7, 7, 4, 4, 3, 2), ((2, 3), 10, 13, 8, 5, 4, 5),
                                       ((1, 2), 13, 6, 3, 2, 5, 4), ((2,), 6, 5, 4, 2, 4, 2),
                                       ((2,), 9, 16, 4, 4, 16, 3), ((), 1, 1, 1, 1, 1, 1), ((), 6, 11, 2, 3, 1, 1)]:
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


def diagnose_backward(case, out):
    """The usual slips of a backward pass: a flipped sign, the scale 1/sqrt(D) missing or twice."""
    if not (isinstance(out, (tuple, list)) and len(out) == 3):
        return None
    D = np.shape(case.args[0])[-1]
    for name, got, expected in zip(("dq", "dk", "dv"), out, case.expected):
        found = factor_hint(got, expected, [(-1.0, f"{name}: its sign is flipped"),
                                            (np.sqrt(D), f"{name} lacks the factor 1/sqrt(D)"),
                                            (1.0 / np.sqrt(D), f"{name} has the factor 1/sqrt(D) twice")])
        if found:
            return found
    return None


HINTS_BACKWARD = {
    "another shape and tile size": "recompute P = exp(s q_i . k_j - lse_i) tile by tile, D_i = rowsum(dO * O), and "
                                   "accumulate dq, dk, dv with += on slices; keep the leading axes",
    "another shape and tile size, causal": "mask each tile as in the forward; for key tile j0 the first row tile to "
                                           "visit is the one holding row j0",
    "scores in the thousands, causal": "recompute the weights as exp(scores - lse), never exp(scores) / exp(lse)",
    "memory limit on long rows": "work tile by tile: neither the weights nor dP may be (L, S)",
    "memory limit on long rows, causal": "build the causal mask of one tile only, never an (L, S) mask",
}

PARTS = [
    Part("test_online_softmax", function="online_softmax", cases=softmax_cases, hints=HINTS_SOFTMAX,
         diagnose=diagnose_softmax),
    Part("test_flash_forward", function="flash_forward", cases=forward_cases, check=tuple_check(("out", "lse")),
         outputs=("out", "lse"), hints=HINTS_FORWARD, diagnose=diagnose_forward),
    Part("test_flash_backward", function="flash_backward", cases=backward_cases,
         check=tuple_check(("dq", "dk", "dv")), outputs=("dq", "dk", "dv"), hints=HINTS_BACKWARD,
         diagnose=diagnose_backward),
]
