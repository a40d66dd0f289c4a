"""The cases of exercise 07 (efficiency): one generator per part, for the visible checks and the grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code, tolerances and memory
budgets (``attngrade.spec``). Expected values come from ``attnmath`` in float64, computed before
your function runs; your function gets its own copies of the inputs. The memory cases bound what
one call may allocate: far below one ``L x S`` float64 array, far above what a tiled or
summarised answer needs.
"""

import numpy as np

from attnmath import chunked, flash, linear, sparse
from attngrade.spec import Case, Part
from attngrade.visible import factor_hint, like

MiB = 2**20


def _qkv(rng, lead, L, S, D, D_v, scale=1.0, dtype=np.float64):
    q = (rng.standard_normal(lead + (L, D)) * scale).astype(dtype)
    k = (rng.standard_normal(lead + (S, D)) * scale).astype(dtype)
    v = rng.standard_normal(lead + (S, D_v)).astype(dtype)
    return q, k, v


def _f64(*arrays):
    return tuple(a.astype(np.float64) for a in arrays)


def _rows_hint(out, expected):
    """Where only the last query rows are wrong: the loop over the chunks (or positions) stops early."""
    o, e = np.asarray(out, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if o.shape != e.shape or o.ndim < 2 or o.shape[-2] < 2:
        return None
    with np.errstate(invalid="ignore"):
        right = np.isclose(o, e, rtol=1e-6, atol=1e-9).all(axis=-1)
    right = right.reshape(-1, right.shape[-1]).all(axis=0)  # per query row, over the leading axes
    if right.all() or not right[0]:
        return None
    first_wrong = int(np.argmin(right))
    if right[first_wrong:].any():
        return None
    return ("only the last query rows are wrong: loop over range(0, L, chunk_size) and clip the last chunk to "
            "min(L, i0 + chunk_size), which may hold a single row")

# ----------------------------------------------------------------------------- Part 1


def _some_key_allowed(rng, mask):
    """``mask`` with one random key allowed in each row, so that no row is empty by chance."""
    mask = mask.copy()
    mask[np.arange(len(mask)), rng.integers(0, mask.shape[-1], size=len(mask))] = True
    return mask


def chunked_cases(rng):
    cases = []
    for lead, L, S, D, D_v, chunk in [((), 6, 5, 4, 3, 2), ((), 6, 5, 4, 3, 4), ((), 7, 5, 4, 3, 3),
                                      ((2, 3), 10, 13, 8, 5, 4), ((3,), 9, 9, 2, 6, 1), ((1, 2), 5, 8, 3, 3, 64),
                                      ((), 1, 1, 1, 1, 1)]:
        q, k, v = _qkv(rng, lead, L, S, D, D_v)
        cases.append(Case((q, k, v, chunk), {}, f"{lead} L={L} S={S} chunk={chunk}",
                          chunked.chunked_attention(q, k, v, chunk_size=chunk),
                          kind="another shape and chunk size"))
        mask = _some_key_allowed(rng, rng.random((L, S)) > 0.4)
        mask[L // 2] = False  # a fully masked row: zeros
        cases.append(Case((q, k, v, chunk), {"mask": mask}, f"{lead} L={L} S={S} chunk={chunk} mask",
                          chunked.chunked_attention(q, k, v, chunk_size=chunk, mask=mask),
                          kind="another shape and chunk size, a mask with a fully masked row"))
    q, k, v = _qkv(rng, (2,), 11, 7, 4, 4, scale=30.0)  # scores in the thousands: needs the max shift
    cases.append(Case((q, k, v, 5), {}, "huge scores", chunked.chunked_attention(q, k, v, chunk_size=5),
                      kind="scores in the thousands"))
    q, k, v = _qkv(rng, (2,), 12, 9, 8, 4, dtype=np.float32)
    cases.append(Case((q, k, v, 5), {}, "float32", chunked.chunked_attention(*_f64(q, k, v), chunk_size=5),
                      tol=1e-4, kind="float32 input"))
    # Memory: one (2048, 2048) float64 score matrix is 32 MiB (plain attention peaks near 100 MiB);
    # a block of 100 rows is 1.6 MiB, and a few temporaries of that size are fine.
    # (The expected values come from chunks of 2048 rows, which is faster and the same attention.)
    q, k, v = _qkv(rng, (1,), 2048, 2048, 16, 16)
    mask = np.tril(np.ones((2048, 2048), dtype=bool))
    cases.append(Case((q, k, v, 64), {}, "memory", chunked.chunked_attention(q, k, v, chunk_size=2048),
                      max_peak_bytes=16 * MiB, kind="memory limit on long rows"))
    cases.append(Case((q, k, v, 100), {"mask": mask}, "memory, mask",
                      chunked.chunked_attention(q, k, v, chunk_size=2048, mask=mask), max_peak_bytes=16 * MiB,
                      kind="memory limit on long rows, with a mask"))
    return cases


def diagnose_chunked(case, out):
    q, k, v, chunk = case.args
    mask = case.kwargs.get("mask")
    D = q.shape[-1]
    q, k, v = _f64(q, k, v)
    variants = [(dict(scale=1.0), "the scores are not scaled: multiply them by 1/sqrt(D)"),
                (dict(scale=1.0 / D), "the scores are divided by D instead of sqrt(D)")]
    if mask is not None:
        variants += [(dict(mask=None), "the mask is not applied: np.where(mask[i0:i1], scores, -np.inf)"),
                     (dict(mask=~mask), "the mask is inverted: True marks the keys a query may attend to")]
    for change, words in variants:
        if like(out, chunked.chunked_attention(q, k, v, chunk_size=chunk, **{"mask": mask, **change}), case.expected):
            return words
    return _rows_hint(out, case.expected)


HINTS_CHUNKED = {
    "another shape and chunk size": "keep the leading axes (np.swapaxes(k, -1, -2)); chunk_size need not divide L "
                                    "and may exceed it",
    "another shape and chunk size, a mask with a fully masked row": "a fully masked row gives zeros, not NaN: "
                                                                   "replace a -inf row maximum by 0 and divide by "
                                                                   "1 where the sum is 0; slice the mask as the "
                                                                   "queries, mask[i0:i1]",
    "scores in the thousands": "subtract each row's maximum before exp",
    "float32 input": "compute in at least float32 (never float16)",
    "memory limit on long rows": "only one (chunk_size, S) block of scores may exist at a time",
    "memory limit on long rows, with a mask": "only one (chunk_size, S) block of scores and of the mask may exist "
                                              "at a time: no (L, S) bias or copy of the mask",
}

# ----------------------------------------------------------------------------- Part 2


def linear_cases(rng):
    cases = []
    for lead, L, S, D, D_v in [((), 3, 4, 2, 3), ((), 7, 5, 4, 3), ((2, 3), 10, 13, 8, 5), ((3,), 1, 9, 2, 6),
                               ((), 1, 1, 1, 1)]:
        q, k, v = _qkv(rng, lead, L, S, D, D_v, scale=2.0)
        cases.append(Case((q, k, v), {}, f"{lead} L={L} S={S}", linear.linear_attention(q, k, v),
                          kind="another shape"))
    q, k, v = _qkv(rng, (2,), 6, 7, 4, 3)
    q[0, 0, 0], k[1, 2, 1] = 800.0, 750.0  # exp overflows there: the x + 1 branch must be used
    cases.append(Case((q, k, v), {}, "large positive", linear.linear_attention(q, k, v), tol=1e-8,
                      kind="large positive scores"))
    q, k, v = _qkv(rng, (2,), 8, 8, 4, 4, dtype=np.float32)
    cases.append(Case((q, k, v), {}, "float32", linear.linear_attention(*_f64(q, k, v)), tol=1e-4,
                      kind="float32 input"))
    # Memory: (4096, 4096) float64 is 128 MiB; the (D, D_v) summary is a few hundred bytes.
    q, k, v = _qkv(rng, (), 4096, 4096, 16, 16)
    cases.append(Case((q, k, v), {}, "memory", linear.linear_attention(q, k, v), max_peak_bytes=8 * MiB,
                      kind="memory limit on long rows"))
    return cases


def _feature_variants(q, k, v, attend):
    """What a mistake in the feature map or the normaliser computes, with the words that name it
    (``attend(feature_map, q, k, v, normalise=True)`` is the part's attention)."""
    with np.errstate(all="ignore"):
        return [(attend(linear.elu_feature_map, q, k, v, normalise=False),
                 "each row must be divided by its own denominator phi(q)^T (phi(K)^T 1)"),
                (attend(np.exp, q, k, v), "phi(x) = elu(x) + 1: x + 1 for x > 0, exp(x) otherwise, not exp(x)"),
                (attend(lambda x: np.maximum(x, 0.0) + 1.0, q, k, v), "phi(x) = exp(x) for x <= 0, not 1")]


def _linear_with(feature_map, q, k, v, normalise=True):
    phi_q, phi_k = feature_map(q), feature_map(k)
    numerator = phi_q @ (np.swapaxes(phi_k, -1, -2) @ v)
    return numerator / (phi_q @ phi_k.sum(axis=-2)[..., None]) if normalise else numerator


def diagnose_linear(case, out):
    q, k, v = _f64(*case.args)
    for variant, words in _feature_variants(q, k, v, _linear_with):
        if like(out, variant, case.expected):
            return words
    return None


HINTS_LINEAR = {
    "another shape": "summarise phi(K)^T V, (..., D, D_v), and phi(K)^T 1 first; keep the leading axes",
    "large positive scores": "pick the branch with np.where and exp only min(x, 0): exp(800) is inf, and 0 * inf "
                             "is NaN",
    "float32 input": "compute in at least float32 (never float16)",
    "memory limit on long rows": "never form the (L, S) matrix phi(Q) phi(K)^T: use the (D, D_v) summary",
}

# ----------------------------------------------------------------------------- Part 3


def causal_linear_cases(rng):
    cases = []
    for lead, L, D, D_v in [((), 4, 2, 3), ((), 7, 4, 3), ((2, 3), 10, 8, 5), ((3,), 1, 2, 6), ((), 2, 1, 1),
                            ((2,), 33, 5, 2)]:
        q, k, v = _qkv(rng, lead, L, L, D, D_v, scale=2.0)
        cases.append(Case((q, k, v), {}, f"{lead} L={L}", linear.causal_linear_attention(q, k, v), tol=1e-8,
                          kind="another shape"))
    q, k, v = _qkv(rng, (2,), 9, 9, 4, 4, dtype=np.float32)
    cases.append(Case((q, k, v), {}, "float32", linear.causal_linear_attention(*_f64(q, k, v)), tol=1e-4,
                      kind="float32 input"))
    # Memory: the (2048, 2048) causal weight matrix is 32 MiB; prefix sums (L, D, D_v) take 1 MiB.
    q, k, v = _qkv(rng, (), 2048, 2048, 8, 8)
    cases.append(Case((q, k, v), {}, "memory", linear.causal_linear_attention(q, k, v), tol=1e-8,
                      max_peak_bytes=8 * MiB, kind="memory limit on long rows"))
    return cases


def _causal_with(feature_map, q, k, v, normalise=True, shift=0):
    """Causal linear attention as a mistake computes it: another feature map, no denominator, or
    position t seeing the keys j <= t + shift."""
    phi_q, phi_k = feature_map(q), feature_map(k)
    L = q.shape[-2]
    kernel = np.where(np.tril(np.ones((L, L), dtype=bool), shift), phi_q @ np.swapaxes(phi_k, -1, -2), 0.0)
    numerator = kernel @ v
    with np.errstate(divide="ignore", invalid="ignore"):
        return numerator / kernel.sum(axis=-1, keepdims=True) if normalise else numerator


def diagnose_causal_linear(case, out):
    q, k, v = _f64(*case.args)
    if q.shape[-2] > 64:
        return None
    variants = _feature_variants(q, k, v, _causal_with)
    variants += [(linear.linear_attention(q, k, v), "every position sees the whole sequence: position t sees only "
                                                    "the keys j <= t (update a running state)"),
                 (_causal_with(linear.elu_feature_map, q, k, v, shift=-1), "position t sees itself too: add phi(k_t) "
                                                                           "v_t^T to the state before computing o_t")]
    for variant, words in variants:
        if like(out, variant, case.expected):
            return words
    return None


HINTS_CAUSAL_LINEAR = {
    "another shape": "carry a state (..., D, D_v) and z (..., D) over t, keeping the leading axes",
    "float32 input": "compute in at least float32 (never float16)",
    "memory limit on long rows": "carry a running (D, D_v) state over the positions; never form the masked (L, L) "
                                 "kernel",
}

# ----------------------------------------------------------------------------- Part 4


def _window_expected(q_t, k_cache, v_cache, length, window):
    """Row ``length - 1`` of causal sliding-window attention over the first ``length`` tokens."""
    lead = q_t.shape[:-2]
    q_full = np.zeros(lead + (length, q_t.shape[-1]))
    q_full[..., -1:, :] = q_t
    out = sparse.sliding_window_attention(q_full, k_cache[..., :length, :], v_cache[..., :length, :],
                                          window=window)
    return out[..., -1:, :]


def _cache(rng, lead, S_max, length, D, D_v, spread=1.0):
    q_t = rng.standard_normal(lead + (1, D)) * spread
    k_cache = rng.standard_normal(lead + (S_max, D)) * spread
    v_cache = rng.standard_normal(lead + (S_max, D_v))
    # Unused slots hold garbage: reading them poisons the output.
    k_cache[..., length:, :] = np.nan
    v_cache[..., length:, :] = 1e300
    return q_t, k_cache, v_cache


def decode_cases(rng):
    q_t, k_cache, v_cache = _cache(rng, (), 8, 5, 4, 2)
    cases = [Case((q_t, k_cache, v_cache, 5, w), {}, f"one cache w={w}", _window_expected(q_t, k_cache, v_cache, 5, w),
                  kind="window 1, shorter than, equal to and longer than the cache") for w in (3, 1, 5, 100)]
    for lead, S_max, length, window, D, D_v in [((), 10, 7, 3, 4, 3), ((2, 3), 16, 16, 4, 8, 5),
                                                ((2,), 9, 1, 4, 2, 2), ((1, 2), 12, 6, 1, 3, 4),
                                                ((2,), 8, 6, 4, 4, 2), ((), 64, 50, 17, 8, 8)]:
        q_t, k_cache, v_cache = _cache(rng, lead, S_max, length, D, D_v)
        cases.append(Case((q_t, k_cache, v_cache, length, window), {}, f"{lead} length={length} window={window}",
                          _window_expected(q_t, k_cache, v_cache, length, window),
                          kind="another cache, length and window"))
    q_t, k_cache, v_cache = _cache(rng, (), 20, 20, 4, 2, spread=40.0)
    cases.append(Case((q_t, k_cache, v_cache, 20, 8), {}, "huge scores",
                      _window_expected(q_t, k_cache, v_cache, 20, 8), kind="scores in the thousands"))
    return cases


def diagnose_decode(case, out):
    q_t, k_cache, v_cache, length, window = case.args
    D = q_t.shape[-1]
    start = max(0, length - window)
    scores = q_t @ np.swapaxes(k_cache[..., start:length, :], -1, -2) / np.sqrt(D)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    variants = [(weights @ v_cache[..., start:length, :], "the weights are not normalised: divide them by their sum"),
                (_window_expected(q_t, k_cache, v_cache, length, window + 1), "the window is one token too wide: "
                                                                              "the newest token and the window - 1 "
                                                                              "before it"),
                (_window_expected(q_t, k_cache, v_cache, length, max(window - 1, 1)), "the window is one token too "
                                                                                      "narrow: it includes the "
                                                                                      "newest token"),
                (_window_expected(q_t * np.sqrt(D), k_cache, v_cache, length, window), "the scores are not scaled: "
                                                                                       "divide them by sqrt(D)")]
    for variant, words in variants:
        if like(out, variant, case.expected):
            return words
    return None


HINTS_DECODE = {
    "window 1, shorter than, equal to and longer than the cache": "attend to positions max(0, length - window) .. "
                                                                  "length - 1: window 1 is the newest token alone",
    "another cache, length and window": "positions length and beyond hold garbage: slice k_cache[..., start:length, :]"
                                        " and keep the leading axes (np.swapaxes(k, -1, -2))",
    "scores in the thousands": "subtract the maximum score before exp",
}

# ----------------------------------------------------------------------------- Part 5


def _costs(ns, d, bytes_per_elem):
    return np.array([[linear.attention_flops(n, n, d, d), linear.linear_attention_flops(n, n, d, d),
                      flash.attention_matrix_bytes(n, n, bytes_per_elem=bytes_per_elem)] for n in ns],
                    dtype=np.int64)


def costs_cases(rng):
    problem = [100, 500, 1000, 2000, 5000]
    cases = [Case((problem, 32), {}, "problem 4", _costs(problem, 32, 4), kind="the chapter's table")]
    for size, n_range, d_range, b in [(1, (1, 10), (1, 4), 4), (4, (7, 70), (32, 129), 2),
                                      (1, (1000, 5000), (256, 1025), 2), (3, (2, 3000), (64, 257), 8),
                                      (13, (1, 40), (8, 33), 4)]:
        ns = [int(n) for n in rng.integers(*n_range, size=size)]
        d = int(rng.integers(*d_range))
        cases.append(Case((ns, d), {"bytes_per_elem": b}, f"{size} lengths bytes={b}", _costs(ns, d, b),
                          kind="other lengths, width and bytes per element"))
    return cases


def diagnose_costs(case, out):
    ns, d = case.args
    o = np.asarray(out, dtype=np.float64) if np.ndim(out) == 2 else None
    if o is None or o.shape != case.expected.shape:
        return None
    for column, words in [(0, "softmax FLOPs: count 2abc for each of the two products, QK^T and PV"),
                          (1, "linear-attention FLOPs: count all four products, the two with the vector 1 too"),
                          (2, "the matrix bytes: n * n numbers of bytes_per_elem bytes each")]:
        if not np.allclose(o[:, column], case.expected[:, column], rtol=1e-9, atol=0.5):
            return words
    return None


HINTS_COSTS = {"the chapter's table": "one row per n, in order: softmax FLOPs, linear FLOPs, matrix bytes",
               "other lengths, width and bytes per element": "one row per n, even for a single n: shape "
                                                             "(len(ns), 3); use bytes_per_elem"}

PARTS = [
    Part("test_chunked_attention", function="chunked_attention", cases=chunked_cases, hints=HINTS_CHUNKED,
         diagnose=diagnose_chunked),
    Part("test_linear_attention", function="linear_attention", cases=linear_cases, hints=HINTS_LINEAR,
         diagnose=diagnose_linear),
    Part("test_causal_linear_attention", function="causal_linear_attention", cases=causal_linear_cases,
         hints=HINTS_CAUSAL_LINEAR, diagnose=diagnose_causal_linear),
    Part("test_decode_step_window", function="decode_step_window", cases=decode_cases, hints=HINTS_DECODE,
         diagnose=diagnose_decode),
    Part("test_attention_costs", function="attention_costs", cases=costs_cases, hints=HINTS_COSTS,
         diagnose=diagnose_costs),
]
