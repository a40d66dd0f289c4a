"""Hidden tests of exercise 07 (efficiency). Not released to students.

Each part's cases include the visible self-checks' inputs, so the notebook runner and the grading
pipeline agree on every submission. Expected values come from ``attnmath`` in float64. The
memory cases bound what one call may allocate (``tracemalloc``): far below one ``L x S`` float64
array, far above what a tiled or summarised answer needs.
"""

import numpy as np

from attnmath import chunked, flash, linear, sparse
from attngrade.spec import Case, Part

MiB = 2**20


def _qkv(rng, lead, L, S, D, D_v, scale=1.0, dtype=np.float64):
    q = (rng.standard_normal(lead + (L, D)) * scale).astype(dtype)
    k = (rng.standard_normal(lead + (S, D)) * scale).astype(dtype)
    v = rng.standard_normal(lead + (S, D_v)).astype(dtype)
    return q, k, v


def _f64(*arrays):
    return tuple(a.astype(np.float64) for a in arrays)


# ----------------------------------------------------------------------------- chunked attention


def visible_chunked_inputs():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((6, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 3))
    mask = np.ones((6, 5), dtype=bool)
    mask[2, 3:] = False
    return q, k, v, mask


def chunked_cases(rng):
    q, k, v, mask = visible_chunked_inputs()
    cases = [
        Case((q, k, v, 2), {}, "visible, no mask", chunked.chunked_attention(q, k, v, chunk_size=2),
             kind="a visible self-check"),
        Case((q, k, v, 4), {"mask": mask}, "visible, mask",
             chunked.chunked_attention(q, k, v, chunk_size=4, mask=mask), kind="a visible self-check"),
    ]
    for lead, L, S, D, D_v, chunk in [((), 7, 5, 4, 3, 3), ((2, 3), 10, 13, 8, 5, 4), ((3,), 9, 9, 2, 6, 1),
                                      ((1, 2), 5, 8, 3, 3, 64), ((), 1, 1, 1, 1, 1)]:
        q, k, v = _qkv(rng, lead, L, S, D, D_v)
        cases.append(Case((q, k, v, chunk), {}, f"{lead} L={L} S={S} chunk={chunk}",
                          chunked.chunked_attention(q, k, v, chunk_size=chunk),
                          kind="another shape and chunk size"))
        mask = rng.random((L, S)) > 0.4
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
    q, k, v = _qkv(rng, (1,), 2048, 2048, 16, 16)
    mask = np.tril(np.ones((2048, 2048), dtype=bool))
    cases.append(Case((q, k, v, 64), {}, "memory", chunked.chunked_attention(q, k, v, chunk_size=64),
                      max_peak_bytes=16 * MiB, kind="memory limit on long rows"))
    cases.append(Case((q, k, v, 100), {"mask": mask}, "memory, mask",
                      chunked.chunked_attention(q, k, v, chunk_size=100, mask=mask), max_peak_bytes=16 * MiB,
                      kind="memory limit on long rows, with a mask"))
    return cases


# ----------------------------------------------------------------------------- linear attention


def linear_cases(rng):
    q = np.array([[0.5, -1.0], [2.0, 0.0], [-0.3, 0.7]])
    k = np.array([[1.0, 0.0], [0.0, -2.0], [0.4, 0.4], [-1.0, 1.0]])
    v = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, -1.0], [3.0, 0.0, 1.0], [-2.0, 1.0, 1.0]])
    cases = [Case((q, k, v), {}, "visible", linear.linear_attention(q, k, v), kind="a visible self-check")]
    for lead, L, S, D, D_v in [((), 7, 5, 4, 3), ((2, 3), 10, 13, 8, 5), ((3,), 1, 9, 2, 6), ((), 1, 1, 1, 1)]:
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


def causal_linear_cases(rng):
    q = np.array([[0.5, -1.0], [2.0, 0.0], [-0.3, 0.7], [1.0, 1.0]])
    k = np.array([[1.0, 0.0], [0.0, -2.0], [0.4, 0.4], [-1.0, 1.0]])
    v = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, -1.0], [3.0, 0.0, 1.0], [-2.0, 1.0, 1.0]])
    cases = [Case((q, k, v), {}, "visible", linear.causal_linear_attention(q, k, v), tol=1e-8,
                  kind="a visible self-check")]
    for lead, L, D, D_v in [((), 7, 4, 3), ((2, 3), 10, 8, 5), ((3,), 1, 2, 6), ((), 2, 1, 1), ((2,), 33, 5, 2)]:
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


# ----------------------------------------------------------------------------- KV-cache decoding with a window


def _window_expected(q_t, k_cache, v_cache, length, window):
    """Row ``length - 1`` of causal sliding-window attention over the first ``length`` tokens."""
    lead = q_t.shape[:-2]
    q_full = np.zeros(lead + (length, q_t.shape[-1]))
    q_full[..., -1:, :] = q_t
    out = sparse.sliding_window_attention(q_full, k_cache[..., :length, :], v_cache[..., :length, :],
                                          window=window)
    return out[..., -1:, :]


def visible_decode_inputs():
    rng = np.random.default_rng(1)
    q_t = rng.standard_normal((1, 4))
    k_cache, v_cache = np.zeros((8, 4)), np.zeros((8, 2))
    k_cache[:5], v_cache[:5] = rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    return q_t, k_cache, v_cache


def decode_cases(rng):
    q_t, k_cache, v_cache = visible_decode_inputs()
    cases = [Case((q_t, k_cache, v_cache, 5, w), {}, f"visible w={w}",
                  _window_expected(q_t, k_cache, v_cache, 5, w), kind="a visible self-check") for w in (3, 5, 100)]
    for lead, S_max, length, window, D, D_v in [((), 10, 7, 3, 4, 3), ((2, 3), 16, 16, 4, 8, 5),
                                                ((2,), 9, 1, 4, 2, 2), ((1, 2), 12, 6, 1, 3, 4),
                                                ((), 64, 50, 17, 8, 8)]:
        q_t = rng.standard_normal(lead + (1, D))
        k_cache = rng.standard_normal(lead + (S_max, D))
        v_cache = rng.standard_normal(lead + (S_max, D_v))
        # Unused slots hold garbage: reading them poisons the output.
        k_cache[..., length:, :] = np.nan
        v_cache[..., length:, :] = 1e300
        cases.append(Case((q_t, k_cache, v_cache, length, window), {},
                          f"{lead} length={length} window={window}",
                          _window_expected(q_t, k_cache, v_cache, length, window),
                          kind="another cache, length and window"))
    q_t = rng.standard_normal((1, 4)) * 40
    k_cache = rng.standard_normal((20, 4)) * 40
    v_cache = rng.standard_normal((20, 2))
    cases.append(Case((q_t, k_cache, v_cache, 20, 8), {}, "huge scores",
                      _window_expected(q_t, k_cache, v_cache, 20, 8), kind="scores in the thousands"))
    return cases


# ----------------------------------------------------------------------------- cost table


def _costs(ns, d, bytes_per_elem):
    return np.array([[linear.attention_flops(n, n, d, d), linear.linear_attention_flops(n, n, d, d),
                      flash.attention_matrix_bytes(n, n, bytes_per_elem=bytes_per_elem)] for n in ns],
                    dtype=np.int64)


def costs_cases(rng):
    cases = [Case(([100, 500, 1000, 2000, 5000], 32), {}, "visible, problem 4", _costs([100, 500, 1000, 2000, 5000], 32, 4),
                  kind="a visible self-check")]
    for ns, d, b in [([1], 1, 4), ([7, 64, 65, 66], 64, 2), ([4096], 768, 2), ([2048, 512, 3], 128, 8),
                     (list(range(1, 40, 3)), 16, 4)]:
        cases.append(Case((ns, d), {"bytes_per_elem": b}, f"ns={ns} d={d} bytes={b}", _costs(ns, d, b),
                          kind="other lengths, width and bytes per element"))
    return cases


PARTS = [
    Part("test_chunked_attention", function="chunked_attention", cases=chunked_cases),
    Part("test_linear_attention", function="linear_attention", cases=linear_cases),
    Part("test_causal_linear_attention", function="causal_linear_attention", cases=causal_linear_cases),
    Part("test_decode_step_window", function="decode_step_window", cases=decode_cases),
    Part("test_attention_costs", function="attention_costs", cases=costs_cases),
]
