"""The cases of exercise 13 (serving attention): one generator per part, for the visible checks and
the grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code, tolerances and memory
budgets (``attngrade.spec``). Expected values come from ``attnmath.serving`` and
``attnmath.flash`` in float64, computed before your function runs; your function gets its own
copies of the inputs.
"""

import numpy as np

import attnmath.flash as flash
import attnmath.serving as ref
from attngrade.spec import Case, Part
from attngrade.visible import like

MiB = 2**20

# ----------------------------------------------------------------------------- Part 1: gather


def gather_cases(rng):
    inputs = []
    for num_blocks, H_kv, block_size, D in [(4, 2, 3, 1), (8, 1, 4, 3), (16, 4, 2, 5), (6, 3, 5, 2), (32, 2, 16, 8)]:
        pool = rng.standard_normal((num_blocks, H_kv, block_size, D))
        for n in (1, 2, min(5, num_blocks) if num_blocks > 4 else 3):
            table = rng.permutation(num_blocks)[:n]  # scattered, in any order
            full = n * block_size
            inputs.append((f"pool {num_blocks}x{H_kv}x{block_size}x{D} n={n} full", pool, table, full,
                           "another pool and block table"))
            partial = full - 1 - (n - 1) % (block_size - 1)  # fixed: the output's shape is part of the case
            inputs.append((f"pool {num_blocks}x{H_kv}x{block_size}x{D} n={n} partial", pool, table,
                           partial, "a partly filled last block"))
    pool = rng.standard_normal((5, 2, 1, 3))
    inputs.append(("block size 1", pool, rng.permutation(5)[:4], 4, "blocks of one token"))
    inputs.append(("empty", pool, np.zeros(0, dtype=np.int64), 0, "an empty sequence"))
    pool = rng.standard_normal((6, 2, 4, 3))
    inputs.append(("empty, another pool", pool, np.zeros(0, dtype=np.int64), 0, "an empty sequence"))
    return [Case((pool, table, length), {}, label, ref.gather_blocks(pool, table, length), kind=kind)
            for label, pool, table, length, kind in inputs]


def _exact_check(case, out):
    assert out is not None, "returned None"
    out = np.asarray(out)
    expected = np.asarray(case.expected)
    assert out.dtype.kind == "f", f"output dtype {out.dtype} is not floating"
    assert out.shape == expected.shape, f"shape {out.shape} != expected {expected.shape}"
    assert np.array_equal(out, expected), "wrong tokens or order"


def diagnose_gather(case, out):
    pool, table, length = case.args
    H_kv, block_size, D = pool.shape[1:]
    n = len(table)
    out = np.asarray(out)
    right = np.swapaxes(pool[table], 0, 1).reshape(H_kv, n * block_size, D)
    if length < n * block_size and out.shape == right.shape and np.array_equal(out, right):
        return "keep only the first `length` tokens: the last block may be partly filled"
    for blocks, words in [(pool[table].reshape(H_kv, n * block_size, D), "tokens of different heads are mixed up: "
                                                                        "flatten blocks and slots into tokens for "
                                                                        "each head separately (move the head axis "
                                                                        "first)"),
                          (np.swapaxes(pool[np.sort(table)], 0, 1).reshape(H_kv, n * block_size, D),
                           "the blocks come in the table's order, not sorted by id")]:
        if np.array_equal(blocks, right):
            continue
        if any(out.shape == v.shape and np.array_equal(out, v) for v in (blocks[:, :length], blocks)):
            return words
    return None


HINTS_GATHER = {
    "another pool and block table": "the output is (H_kv, length, D): for each head, the blocks of the table in its "
                                    "order, slot after slot",
    "a partly filled last block": "keep only the first `length` tokens: the last block may be partly filled",
    "blocks of one token": "blocks of one slot: token t of each head is the one slot of block table[t], in the "
                           "table's order",
    "an empty sequence": "an empty block table gives shape (H_kv, 0, D)",
}

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


def _small_states(rng):
    """(label, states, kind): one row of two values per state, lses chosen to make a point."""
    lse = rng.standard_normal()
    found = [("two states, equal lse", [(rng.standard_normal((1, 2)), np.array([lse])),
                                        (rng.standard_normal((1, 2)), np.array([lse]))],
              "another number of states and leading axes"),
             ("a state that saw no key", [(rng.standard_normal((1, 2)), rng.standard_normal(1)),
                                          (rng.standard_normal((1, 2)), np.array([-np.inf]))],
              "a state over no keys"),
             ("two states that saw no key", [(rng.standard_normal((1, 2)), np.array([-np.inf])),
                                             (rng.standard_normal((1, 2)), np.array([-np.inf]))],
              "fully masked rows")]
    big = 1000.0 + rng.standard_normal(2)
    found.append(("lses near 1000", [(rng.standard_normal((1, 1)), big[:1]), (rng.standard_normal((1, 1)), big[1:])],
                  "log-sum-exps in the thousands"))
    return found


def merge_cases(rng):
    inputs = _small_states(rng)
    for lead, L, S, D, D_v, bounds in [((), 3, 6, 4, 2, [0, 2, 6]), ((), 3, 8, 4, 2, [0, 3, 8]),
                                       ((2,), 3, 7, 4, 2, [0, 2, 3, 7]), ((2, 3), 4, 10, 3, 5, [0, 2, 5, 9, 10]),
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


def _merge_variants(states):
    """(out, lse) as mistakes compute them, with what each mistake is."""
    outs = np.stack([np.asarray(o, dtype=np.float64) for o, _ in states])
    lses = np.stack([np.asarray(l, dtype=np.float64) for _, l in states])
    m = lses.max(axis=0)
    shift = np.where(np.isneginf(m), 0.0, m)
    w = np.exp(lses - shift)
    total = w.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (w[..., None] * outs).sum(axis=0) / np.where(total > 0, total, 1.0)[..., None]
        lse = np.where(total > 0, shift + np.log(np.where(total > 0, total, 1.0)), -np.inf)
        return [((w[..., None] * outs).sum(axis=0), "the weights exp(lse_t - lse) of a row sum to one: divide the "
                                                    "weighted sum of the outputs by their total"),
                (outs.mean(axis=0), "weigh each state by exp(lse_t - lse): states that saw more mass count more"),
                ((out, shift + total), "lse is the log of the sum of exp(lse_t), not the sum itself"),
                ((out, m), "lse is the log of the sum of exp(lse_t) over the states, not their maximum")], (out, lse)


def diagnose_merge(case, out):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        return None
    (states,) = case.args
    variants, _right = _merge_variants(states)
    exp_out, exp_lse = case.expected
    for variant, words in variants:
        if isinstance(variant, tuple):
            finite = np.isfinite(exp_lse)
            if like(np.asarray(out[1])[finite], np.asarray(variant[1])[finite], exp_lse[finite]):
                return words
        elif like(out[0], variant, exp_out):
            return words
    return None


HINTS_MERGE = {
    "another number of states and leading axes": "o = sum_t exp(lse_t - lse) o_t with lse = log sum_t exp(lse_t), "
                                                 "for any number of states and leading axes",
    "a state over no keys": "a state with lse = -inf saw no key: it gets weight 0",
    "fully masked rows": "a row that saw no key in any state gets out = 0 and lse = -inf, without warnings or NaN "
                         "(divide only where the total is positive)",
    "log-sum-exps in the thousands": "NaN or inf for large lse: subtract the largest lse of the row before "
                                     "exponentiating",
}

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
    for L, S, C, H, D, D_v, d_c in [(2, 5, 6, 2, 3, 4, 4), (1, 1, 4, 1, 2, 2, 3), (1, 17, 8, 4, 5, 3, 6),
                                    (3, 9, 12, 3, 4, 6, 2), (3, 7, 5, 3, 2, 3, 6), (4, 30, 16, 8, 8, 8, 16),
                                    (2, 6, 5, 2, 7, 1, 1)]:
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


def _mla_naive(x, c_kv, w_q, w_uk, w_uv, w_o, scale):
    """The paper's form: up-project every cached latent, then attend, with another scale."""
    q, k = np.einsum("lc,hcd->hld", x, w_q), np.einsum("sc,hcd->hsd", c_kv, w_uk)
    z = q @ np.swapaxes(k, 1, 2) * scale
    p = np.exp(z - z.max(-1, keepdims=True))
    v = np.einsum("sc,hcd->hsd", c_kv, w_uv)
    return np.einsum("hld,hdc->lc", p / p.sum(-1, keepdims=True) @ v, w_o)


def diagnose_mla(case, out):
    x, c_kv, w_q, w_uk, w_uv, w_o = case.args
    if c_kv.shape[0] * w_q.shape[0] * w_q.shape[2] > 10**6:
        return None  # the long cache: its hint says it
    D, d_c = w_q.shape[2], c_kv.shape[1]
    for scale, words in [(1 / np.sqrt(d_c), "the scores are scaled by 1/sqrt(d_c): the scale is 1/sqrt(D), the head "
                                            "dim before absorbing"),
                         (1.0, "the scores are not scaled: divide them by sqrt(D)"),
                         (1 / D, "the scores are divided by D instead of sqrt(D)")]:
        if like(out, _mla_naive(*case.args, scale), case.expected):
            return words
    return None


HINTS_MLA = {
    "another shape": "the absorbed form must equal attention with up-projected keys and values, scores scaled by "
                     "1/sqrt(D)",
    "scores in the hundreds": "NaN or inf for large scores: subtract each row's maximum before exp",
    "a long cache under a memory limit": "absorb the up-projections into the query and output weights instead of "
                                         "up-projecting every cached latent",
}

# ----------------------------------------------------------------------------- Part 4: int8


def quant_cases(rng):
    inputs = []
    for S, D in [(4, 4), (7, 3), (32, 16), (1, 5), (50, 2)]:
        inputs.append((f"S={S} D={D}", rng.standard_normal((S, D)) * rng.uniform(0.01, 10, size=D),
                       "another shape and channel scales"))
    for S, D, channels in [(64, 12, [2, 9]), (3, 3, [1])]:
        x = rng.standard_normal((S, D))
        x[:, channels] *= 30.0
        inputs.append((f"outliers, S={S} D={D}", x, "outlier channels"))
    for S, D, channel in [(10, 6, 4), (4, 4, 2)]:
        x = rng.standard_normal((S, D))
        x[:, channel] = 0.0
        inputs.append((f"zero channel, S={S} D={D}", x, "a channel of zeros"))
    cases = []
    for label, x, kind in inputs:
        qt = ref.quantize_symmetric(x, bits=8, per="channel")
        cases.append(Case((x,), {}, label, (qt.codes, qt.scale.reshape(-1)), kind=kind))
    return cases


def _quant_check(case, out):
    assert isinstance(out, (tuple, list)) and len(out) == 2, "return a tuple (codes, scale)"
    codes, scale = np.asarray(out[0]), np.asarray(out[1])
    exp_codes, exp_scale = case.expected
    assert codes.dtype == np.int8, f"codes have dtype {codes.dtype}, expected an int8 array"
    assert codes.shape == exp_codes.shape, f"codes shape {codes.shape} != {exp_codes.shape}"
    assert scale.dtype.kind == "f", f"scale has dtype {scale.dtype}, expected floats"
    assert scale.shape == exp_scale.shape, f"scale shape {scale.shape} != {exp_scale.shape}"
    assert np.all(np.abs(scale - exp_scale) <= 1e-12 * (1 + np.abs(exp_scale))), "wrong scales"
    x = np.asarray(case.args[0], dtype=np.float64)
    ratio = x / exp_scale
    tie = np.abs(np.abs(ratio - np.floor(ratio)) - 0.5) <= 1e-9  # either neighbour is nearest
    diff = np.abs(codes.astype(np.int64) - exp_codes.astype(np.int64))
    assert np.all(np.where(tie, diff <= 1, diff == 0)), "wrong codes"


def diagnose_quant(case, out):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        return None
    x = np.asarray(case.args[0], dtype=np.float64)
    codes, scale = (np.asarray(a) for a in out)
    exp_codes, exp_scale = case.expected
    amax = np.abs(x).max(axis=0)
    for variant, words in [(np.abs(x).max(axis=1) / 127.0, "one scale per channel (column), not per token: the "
                                                           "largest |x| of each column maps to 127"),
                           (np.full_like(exp_scale, np.abs(x).max() / 127.0), "one scale per channel (column), not "
                                                                               "one for the whole array"),
                           (np.where(amax > 0, amax / 128.0, 1.0), "symmetric int8 uses the codes -127 .. 127: "
                                                                   "scale = max |x| / 127")]:
        if like(scale, variant, exp_scale):
            return words
    if codes.dtype.kind in "iu" and codes.shape == exp_codes.shape and np.allclose(scale, exp_scale):
        if (codes == np.trunc(x / exp_scale)).all():
            return "round to the nearest code (np.rint), not toward zero"
    return None


HINTS_QUANT = {
    "another shape and channel scales": "codes: an int8 array of the shape of x; scale: one number per channel "
                                        "(column), shape (D,), its largest |x| mapping to 127",
    "outlier channels": "an outlier channel sets its own scale only: one scale per channel, largest |x| / 127",
    "a channel of zeros": "a channel of zeros gets scale 1 and codes 0 (nothing divides by zero)",
}

PARTS = [
    Part("test_gather_sequence", function="gather_sequence", cases=gather_cases, check=_exact_check,
         precision="Exact: the gathered numbers are copies of the pool's entries and must equal them "
                   "entry by entry, in a floating array.", hints=HINTS_GATHER, diagnose=diagnose_gather),
    Part("test_merge_states", function="merge_states", cases=merge_cases, check=_merge_check,
         precision="`out` and `lse` are compared with a float64 reference entry by entry, "
                   "`|x - ref| <= 1e-9 * (1 + |ref|)`; `lse` must be `-inf` exactly in the rows "
                   "that saw no key in any state (and only there), with `out` zero there; the merge must "
                   "not warn.", no_warnings=True, outputs=("out", "lse"), hints=HINTS_MERGE,
         diagnose=diagnose_merge),
    Part("test_mla_absorbed", function="mla_absorbed", cases=mla_cases, hints=HINTS_MLA, diagnose=diagnose_mla),
    Part("test_quantize_int8", function="quantize_int8_per_channel", cases=quant_cases, check=_quant_check,
         precision="`scale` must be within `1e-12 * (1 + |ref|)` of the reference, and `codes` an int8 "
                   "array equal to the reference's codes, except where `x / scale` lies within `1e-9` of "
                   "a half-integer: there either neighbour is accepted.", outputs=("codes", "scale"),
         hints=HINTS_QUANT, diagnose=diagnose_quant),
]
