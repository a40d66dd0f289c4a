"""Hidden tests of exercise 13 (serving attention). Not released to students.

Each part's cases include the visible self-checks' inputs, so the notebook runner and the grading
pipeline agree on every submission. Expected values come from ``attnmath.serving`` and
``attnmath.flash`` in float64.
"""

import numpy as np

import attnmath.flash as flash
import attnmath.serving as ref
from attngrade.spec import Case, Part

MiB = 2**20
VISIBLE_POOL = np.arange(4 * 2 * 3 * 1, dtype=np.float64).reshape(4, 2, 3, 1)


# ----------------------------------------------------------------------------- Part 1: gather


def gather_cases(rng):
    inputs = [("visible", VISIBLE_POOL, np.array([2, 0]), 5, "a visible self-check"),
              ("visible full", VISIBLE_POOL, np.array([3, 1, 2]), 9, "a visible self-check")]
    for num_blocks, H_kv, block_size, D in [(8, 1, 4, 3), (16, 4, 2, 5), (6, 3, 5, 2), (32, 2, 16, 8)]:
        pool = rng.standard_normal((num_blocks, H_kv, block_size, D))
        for n in (1, 2, min(5, num_blocks)):
            table = rng.permutation(num_blocks)[:n]  # scattered, in any order
            full = n * block_size
            inputs.append((f"pool {num_blocks}x{H_kv}x{block_size}x{D} n={n} full", pool, table, full,
                           "another pool and block table"))
            partial = full - int(rng.integers(1, block_size)) if block_size > 1 else full
            inputs.append((f"pool {num_blocks}x{H_kv}x{block_size}x{D} n={n} partial", pool, table,
                           partial, "a partly filled last block"))
    pool = rng.standard_normal((5, 2, 1, 3))
    inputs.append(("block size 1", pool, np.array([4, 1, 3, 0]), 4, "blocks of one token"))
    inputs.append(("empty", pool, np.zeros(0, dtype=np.int64), 0, "an empty sequence"))
    return [Case((pool, table, length), {}, label, ref.gather_blocks(pool, table, length), kind=kind)
            for label, pool, table, length, kind in inputs]


def _exact_check(case, out):
    assert out is not None, "returned None"
    out = np.asarray(out)
    expected = np.asarray(case.expected)
    assert out.dtype.kind == "f", f"output dtype {out.dtype} is not floating"
    assert out.shape == expected.shape, f"shape {out.shape} != expected {expected.shape}"
    assert np.array_equal(out, expected), "wrong tokens or order"


# ----------------------------------------------------------------------------- Part 2: merge


def _states(q, k, v, bounds, mask=None):
    """The (out, lse) states of the key chunks [b_t, b_{t+1})."""
    states = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        m = None if mask is None else mask[..., a:b]
        s = flash.attention_state(q, k[..., a:b, :], v[..., a:b, :], mask=m)
        states.append((s.out, s.lse))
    return states


def _merged(states):
    s = flash.merge_attention_states([flash.AttentionState(o, lse) for o, lse in states])
    return s.out, s.lse


def merge_cases(rng):
    visible = [
        [(np.array([[1.0, 1.0]]), np.array([0.0])), (np.array([[3.0, -1.0]]), np.array([0.0]))],
        [(np.array([[1.0, 2.0]]), np.array([0.5])), (np.array([[7.0, 7.0]]), np.array([-np.inf]))],
        [(np.zeros((1, 2)), np.array([-np.inf])), (np.zeros((1, 2)), np.array([-np.inf]))],
        [(np.array([[1.0]]), np.array([1000.0])), (np.array([[3.0]]), np.array([1000.0 + np.log(3.0)]))],
    ]
    inputs = [("visible", st, "a visible self-check") for st in visible]
    for lead, L, S, D, D_v, bounds in [((), 3, 8, 4, 2, [0, 3, 8]), ((2, 3), 4, 10, 3, 5, [0, 2, 5, 9, 10]),
                                       ((1, 2), 1, 7, 2, 2, [0, 1, 2, 3, 4, 5, 6, 7]),
                                       ((2,), 5, 6, 4, 4, [0, 6])]:
        q, k, v = (rng.standard_normal(lead + shape) for shape in ((L, D), (S, D), (S, D_v)))
        inputs.append((f"{lead} L={L} S={S} {len(bounds) - 1} states", _states(q, k, v, bounds),
                       "another number of states and leading axes"))
    q, k, v = (rng.standard_normal((2, 4, n)) for n in (3, 3, 2))
    inputs.append(("empty chunk", _states(q, k, v, [0, 2, 2, 4]), "a state over no keys"))
    mask = rng.random((2, 4, 4)) < 0.5
    mask[0, 1, :] = False  # a row that sees no key in any state
    mask[1, :, 2:] = False  # a state whose rows see nothing
    inputs.append(("masked rows", _states(q, k, v, [0, 2, 4], mask=mask), "fully masked rows"))
    q, k, v = (rng.standard_normal((3, n)) for n in (4, 4, 3))
    inputs.append(("huge scores", _states(60.0 * q, 60.0 * k, v, [0, 1, 3]), "log-sum-exps in the thousands"))
    return [Case((states,), {}, label, _merged(states), kind=kind) for label, states, kind in inputs]


def _merge_check(case, out):
    assert isinstance(out, (tuple, list)) and len(out) == 2, "return a tuple (out, lse)"
    exp_out, exp_lse = case.expected
    o, lse = np.asarray(out[0]), np.asarray(out[1])
    assert o.dtype.kind == "f" and lse.dtype.kind == "f", "out and lse must be floating arrays"
    assert o.shape == exp_out.shape, f"out shape {o.shape} != {exp_out.shape}"
    assert lse.shape == exp_lse.shape, f"lse shape {lse.shape} != {exp_lse.shape}"
    assert np.isfinite(o).all(), "NaN or inf in out"
    assert not np.isnan(lse).any(), "NaN in lse"
    assert np.array_equal(np.isneginf(lse), np.isneginf(exp_lse)), "lse must be -inf exactly for rows that saw no key"
    finite = np.isfinite(exp_lse)
    assert np.all(np.abs(lse[finite] - exp_lse[finite]) <= case.tol * (1 + np.abs(exp_lse[finite]))), "wrong lse"
    assert np.all(np.abs(o - exp_out) <= case.tol * (1 + np.abs(exp_out))), "wrong out"


# ----------------------------------------------------------------------------- Part 3: MLA


def _mla_inputs(rng, L, S, C, H, D, D_v, d_c):
    x, c_kv = rng.standard_normal((L, C)), rng.standard_normal((S, d_c))
    w_q = rng.standard_normal((H, C, D)) / np.sqrt(C)
    w_uk = rng.standard_normal((H, d_c, D)) / np.sqrt(d_c)
    w_uv = rng.standard_normal((H, d_c, D_v)) / np.sqrt(d_c)
    w_o = rng.standard_normal((H, D_v, C)) / np.sqrt(D_v)
    return x, c_kv, w_q, w_uk, w_uv, w_o


def _mla_expected(x, c_kv, w_q, w_uk, w_uv, w_o):
    """Every query sees all S cached tokens: one decode step (L = 1) per query row."""
    H, C, _ = w_q.shape
    S = c_kv.shape[0]
    params = ref.MLAParams(np.zeros((C, c_kv.shape[1])), w_uk, w_uv, w_q, np.zeros((H, C, 0)),
                           np.zeros((C, 0)), w_o)
    rows = [ref.mla_attention_absorbed(x[i:i + 1], c_kv, np.zeros((S, 0)), params, q_positions=[S - 1])
            for i in range(x.shape[0])]
    return np.concatenate(rows, axis=0)  # (L, C)


def mla_cases(rng):
    cases = []
    visible_rng = np.random.default_rng(13)
    args = _mla_inputs(visible_rng, 2, 5, 6, 2, 3, 4, 4)
    cases.append(Case(args, {}, "visible", _mla_expected(*args), kind="a visible self-check"))
    for L, S, C, H, D, D_v, d_c in [(1, 1, 4, 1, 2, 2, 3), (1, 17, 8, 4, 5, 3, 6), (3, 9, 12, 3, 4, 6, 2),
                                    (4, 30, 16, 8, 8, 8, 16), (2, 6, 5, 2, 7, 1, 1)]:
        args = _mla_inputs(rng, L, S, C, H, D, D_v, d_c)
        cases.append(Case(args, {}, f"L={L} S={S} H={H} D={D} d_c={d_c}", _mla_expected(*args),
                          kind="another shape"))
    args = list(_mla_inputs(rng, 2, 12, 8, 4, 4, 4, 8))
    args[1] = args[1] * 40.0  # large latents: scores in the hundreds
    cases.append(Case(tuple(args), {}, "huge scores", _mla_expected(*args), kind="scores in the hundreds"))
    # A long cache: the up-projected keys (H, S, D) would take 164 MB, one head's keys 20 MB.
    args = _mla_inputs(rng, 1, 20_000, 16, 8, 128, 16, 8)
    cases.append(Case(args, {}, "memory", _mla_expected(*args), max_peak_bytes=12 * MiB,
                      kind="a long cache under a memory limit"))
    return cases


# ----------------------------------------------------------------------------- Part 4: int8


def quant_cases(rng):
    inputs = [("visible", np.array([[1.0, -2.0, 0.0, 0.5], [-0.5, 4.0, 0.0, 0.25],
                                    [0.25, 1.0, 0.0, -1.0], [0.0, -3.0, 0.0, 0.125]]), "a visible self-check")]
    for S, D in [(7, 3), (32, 16), (1, 5), (50, 2)]:
        inputs.append((f"S={S} D={D}", rng.standard_normal((S, D)) * rng.uniform(0.01, 10, size=D),
                       "another shape and channel scales"))
    x = rng.standard_normal((64, 12))
    x[:, [2, 9]] *= 30.0
    inputs.append(("outliers", x, "outlier channels"))
    x = rng.standard_normal((10, 6))
    x[:, 4] = 0.0
    inputs.append(("zero channel", x, "a channel of zeros"))
    cases = []
    for label, x, kind in inputs:
        qt = ref.quantize_symmetric(x, bits=8, per="channel")
        cases.append(Case((x,), {}, label, (qt.codes, qt.scale.reshape(-1)), kind=kind))
    return cases


def _quant_check(case, out):
    assert isinstance(out, (tuple, list)) and len(out) == 2, "return a tuple (codes, scale)"
    codes, scale = np.asarray(out[0]), np.asarray(out[1])
    exp_codes, exp_scale = case.expected
    assert codes.dtype.kind == "i", f"codes have dtype {codes.dtype}, expected an integer array"
    assert codes.shape == exp_codes.shape, f"codes shape {codes.shape} != {exp_codes.shape}"
    assert scale.dtype.kind == "f", f"scale has dtype {scale.dtype}, expected floats"
    assert scale.shape == exp_scale.shape, f"scale shape {scale.shape} != {exp_scale.shape}"
    assert np.all(np.abs(scale - exp_scale) <= 1e-12 * (1 + np.abs(exp_scale))), "wrong scales"
    x = np.asarray(case.args[0], dtype=np.float64)
    ratio = x / exp_scale
    tie = np.abs(np.abs(ratio - np.floor(ratio)) - 0.5) <= 1e-9  # either neighbour is nearest
    diff = np.abs(codes.astype(np.int64) - exp_codes.astype(np.int64))
    assert np.all(np.where(tie, diff <= 1, diff == 0)), "wrong codes"


PARTS = [
    Part("test_gather_sequence", function="gather_sequence", cases=gather_cases, check=_exact_check,
         precision="Exact: the gathered numbers are copies of the pool's entries and must equal them "
                   "entry by entry, in a floating array."),
    Part("test_merge_states", function="merge_states", cases=merge_cases, check=_merge_check,
         precision="`out` and `lse` are compared with a float64 reference entry by entry, "
                   "`|x - ref| <= 1e-9 * (1 + |ref|)`; `lse` must be `-inf` exactly in the rows "
                   "that saw no key in any state (and only there), with `out` zero there."),
    Part("test_mla_absorbed", function="mla_absorbed", cases=mla_cases),
    Part("test_quantize_int8", function="quantize_int8_per_channel", cases=quant_cases, check=_quant_check,
         precision="`scale` must be within `1e-12 * (1 + |ref|)` of the reference, and `codes` an integer "
                   "array equal to the reference's codes, except where `x / scale` lies within `1e-9` of "
                   "a half-integer: there either neighbour is accepted."),
]
