"""The cases of exercise 17 (the flash-attention forward pass in Triton): one generator per part.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code and tolerances
(``attngrade.spec``). Expected values come from ``attnmath`` in float64, computed from the inputs
as your kernel sees them (already rounded to the run's dtype) before your function runs.

Every input is a NumPy float32 array ``(H, L, D)`` or ``(H, S, D)`` whose values are exact in the
run's dtype (``dtype`` = "float32", "float16" or "bfloat16": NumPy has no bfloat16, so the
launcher converts). The sizes are small, because without a GPU Triton's interpreter runs every
program of the grid in NumPy. Part 2 (speed) is timed only where the host has a GPU
(:mod:`attngrade.leaderboard`); elsewhere its cases are a correct forward pass at a small size.
"""

import numpy as np

from attnmath import flash
from attngrade import leaderboard
from attngrade.spec import Case, Part, allclose_check
from attngrade.visible import factor_hint

#: What the answers may import besides NumPy: torch to allocate and launch, triton for the kernel.
#: ``attngrade.grader`` reads it; every other assignment forbids torch.
ALLOWED_MODULES = ("torch", "triton")

#: Calls that compute attention for the student: naming one earns no credit (with ``attnmath``).
FORBIDDEN = ("attnmath", "scipy", "jax", "flash_attn", "xformers", "scaled_dot_product_attention",
             "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_for_cpu",
             "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
             "_scaled_dot_product_attention_math", "_scaled_dot_product_fused_attention_overrideable",
             "_flash_attention_forward", "_efficient_attention_forward", "flex_attention",
             "multi_head_attention_forward", "MultiheadAttention")

TOL = {"float32": 2e-3, "float16": 2e-3, "bfloat16": 1e-2}
BLOCK = 16  # the tile the diagnoser assumes (tl.dot needs tiles of at least 16)


def _round(x, dtype):
    """``x`` as float32 values that are exact in ``dtype`` (round to nearest even)."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "float16":
        return x.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        bits = x.view(np.uint32).astype(np.uint64)
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return bits.astype(np.uint32).view(np.float32)
    return x


def _expected(q, k, v, causal, lse=False):
    out, cache = flash.flash_attention_forward(*(a.astype(np.float64) for a in (q, k, v)), causal=causal)
    return cache.lse if lse else out


def _case(q, k, v, causal, dtype, kind, lse=False):
    q, k, v = (_round(a, dtype) for a in (q, k, v))
    H, L, D = q.shape
    label = f"H={H} L={L} S={k.shape[1]} D={D} {dtype} causal={causal}"
    return Case((q, k, v), {"causal": causal, "dtype": dtype}, label, _expected(q, k, v, causal, lse),
                tol=TOL[dtype], kind=kind)


def _qkv(rng, H, L, S, D, scale=1.0):
    return (rng.standard_normal((H, L, D)) * scale, rng.standard_normal((H, S, D)) * scale,
            rng.standard_normal((H, S, D)))


#: (H, L, S, D, causal, dtype, kind) of the plain cases, in the order the checks meet them.
PLAIN = [
    (2, 32, 32, 16, False, "float32", "float32, lengths a multiple of the tile"),
    (1, 21, 37, 16, False, "float32", "ragged lengths, not a multiple of the tile"),
    (1, 18, 18, 32, False, "float32", "another head size"),
    (2, 32, 32, 16, True, "float32", "causal"),
    (1, 27, 27, 16, True, "float32", "causal, ragged lengths"),
    (1, 20, 45, 16, True, "float32", "causal, more keys than queries"),
    (1, 24, 40, 16, False, "float16", "float16 input"),
    (1, 33, 33, 16, True, "float16", "float16 input, causal"),
    (1, 19, 29, 16, False, "bfloat16", "bfloat16 input"),
    (1, 40, 40, 16, True, "bfloat16", "bfloat16 input, causal"),
]


def _hundreds(rng):
    """Causal scores in the hundreds (e^s overflows float32), and for every row but the last a
    masked key far above its visible ones: a maximum taken before the mask underflows them all."""
    q, k, v = _qkv(rng, 1, 20, 20, 16, scale=8.0)
    k[:, -1, :] = 3.0 * q[:, 0, :]  # key 19: score about 3 |q_0|^2 / 4, seen by row 19 only
    return q, k, v


def forward_cases(rng):
    cases = []
    for H, L, S, D, causal, dtype, kind in PLAIN:
        cases.append(_case(*_qkv(rng, H, L, S, D), causal, dtype, kind))
    # Scores rise from key tile to key tile: the running maximum grows at every tile.
    q = np.abs(rng.standard_normal((1, 16, 16))) * 0.5 + 0.5
    k = rng.standard_normal((1, 64, 16)) * 0.2 + np.linspace(0.0, 4.0, 64)[None, :, None]
    cases.append(_case(q, k, rng.standard_normal((1, 64, 16)), False, "float32",
                       "a larger maximum in every key tile"))
    q, k, v = _hundreds(rng)
    cases.append(_case(q, k, v, True, "float32", "scores in the hundreds, causal"))
    cases.append(_case(*_large_values(rng), False, "float16", "float16 input, large values"))
    return cases


def _large_values(rng):
    """Nearly uniform weights over 48 positive values near 1500: P V summed in float16 overflows."""
    q, k = rng.standard_normal((1, 16, 16)) * 0.05, rng.standard_normal((1, 48, 16)) * 0.05
    return q, k, rng.uniform(1000.0, 2000.0, (1, 48, 16))


def _blocked(q, k, v, causal, scale=None, offset=0, pad=0, rescale=True, block=BLOCK):
    """The forward pass as a mistake computes it, tile by tile over the keys: another scale, the
    causal diagonal moved by ``offset``, ``pad`` zero keys left unmasked at the end, or the running
    sum and output not rescaled when the maximum grows."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    H, L, D = q.shape
    if pad:
        k = np.concatenate([k, np.zeros((H, pad, D))], axis=1)
        v = np.concatenate([v, np.zeros((H, pad, v.shape[2]))], axis=1)
    s = q @ np.swapaxes(k, 1, 2) * (1.0 / np.sqrt(D) if scale is None else scale)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[1:], dtype=bool), offset), s, -np.inf)
    m, total, acc = np.full((H, L), -np.inf), np.zeros((H, L)), np.zeros((H, L, v.shape[2]))
    with np.errstate(all="ignore"):
        for j in range(0, s.shape[2], block):
            tile = s[:, :, j:j + block]
            m_new = np.maximum(m, tile.max(axis=2))
            p = np.exp(tile - m_new[..., None])
            alpha = np.exp(m - m_new) if rescale else np.ones_like(m)
            total = total * alpha + p.sum(axis=2)
            acc = acc * alpha[..., None] + p @ v[:, j:j + block]
            m = m_new
        return acc / total[..., None]


def diagnose_forward(case, out):
    q, k, v = case.args
    causal = case.kwargs["causal"]
    D, S = q.shape[2], k.shape[1]
    variants = [(dict(scale=1.0), "the scores are not scaled: multiply q . k by 1/sqrt(D)"),
                (dict(scale=1.0 / D), "the scores are divided by D instead of sqrt(D)"),
                (dict(causal=not causal), "causal=True hides the later keys (j > i)" if causal else
                 "causal=False: every query sees every key"),
                (dict(rescale=False), "the running sum and output are not rescaled: multiply both by "
                                      "exp(m_old - m_new) when the maximum grows")]
    if causal:
        variants += [(dict(offset=-1), "off by one: query i may attend to keys 0 to i, itself included"),
                     (dict(offset=1), "off by one: query i may not attend to key i + 1")]
    if S % BLOCK:
        variants.append((dict(pad=BLOCK - S % BLOCK), "the keys past S in the last tile are not masked: give "
                                                      "their scores -inf (offs_n < S), not 0"))
    for change, words in variants:
        if _matches(out, _blocked(q, k, v, **{"causal": causal, **change}), case.expected, case.tol):
            return words
    return factor_hint(out, case.expected, [(-1.0, "its sign is flipped")])


def _matches(out, variant, expected, tol) -> bool:
    """Whether ``out`` is what a mistake computes (``variant``, to float32 rounding) and that
    differs from ``expected`` by more than the tolerance."""
    try:
        o, w, e = (np.asarray(a, dtype=np.float64) for a in (out, variant, expected))
    except (TypeError, ValueError):
        return False
    if not o.shape == w.shape == e.shape:
        return False
    bad = ~np.isfinite(w)  # NaN where the mistake leaves a row with nothing to sum
    if not np.array_equal(bad, ~np.isfinite(o)):
        return False
    o, w, e = o[~bad], w[~bad], e[~bad]
    apart = bad.any() or np.any(np.abs(w - e) > tol * (1 + np.abs(e)))
    return bool(apart and np.all(np.abs(o - w) <= 1e-4 * (1 + np.abs(w))))


HINTS_FORWARD = {
    "float32, lengths a multiple of the tile": "one program per (query tile, head); loop over the key tiles with "
                                               "a running maximum m, sum l and output acc, all float32",
    "ragged lengths, not a multiple of the tile": "mask the loads past L and S (other=0.0) and give the scores of "
                                                   "keys past S the value -inf; store only rows < L",
    "another head size": "D is a tl.constexpr: use tl.arange(0, D) for the columns, never a fixed 16",
    "causal": "query i attends to keys j <= i: tl.where(offs_n[None, :] <= offs_m[:, None], s, -inf)",
    "causal, ragged lengths": "mask both ways: keys past S and keys j > i get -inf",
    "causal, more keys than queries": "the causal mask is top-left: query i sees keys 0 to i even when S > L",
    "float16 input": "convert each loaded tile to float32 (.to(tl.float32)) and accumulate in float32",
    "float16 input, causal": "convert each loaded tile to float32 and keep m, l and acc in float32",
    "bfloat16 input": "convert each loaded tile to float32 before tl.dot: Triton's CPU interpreter multiplies "
                      "bfloat16 tiles wrongly",
    "bfloat16 input, causal": "convert each loaded tile to float32 before tl.dot; return float32",
    "a larger maximum in every key tile": "when the maximum grows, rescale l and acc by exp(m_old - m_new)",
    "scores in the hundreds, causal": "subtract the running maximum before exp, start it at -inf, and take it "
                                      "over the visible keys only (mask before the maximum)",
    "float16 input, large values": "accumulate P V in float32: in float16 the sum overflows",
}


def lse_cases(rng):
    """The log-sum-exp of every row: a few of the forward's kinds, and scores in the hundreds."""
    cases = [_case(*_qkv(rng, H, L, S, D), causal, dtype, kind, lse=True)
             for H, L, S, D, causal, dtype, kind in PLAIN if kind in HINTS_LSE]
    q, k, v = _hundreds(rng)
    return cases + [_case(q, k, v, True, "float32", "scores in the hundreds, causal", lse=True)]


def _row_max(q, k, causal):
    """Each row's largest scaled score (over the keys it may see)."""
    q, k = (np.asarray(a, dtype=np.float64) for a in (q, k))
    s = q @ np.swapaxes(k, 1, 2) / np.sqrt(q.shape[2])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[1:], dtype=bool)), s, -np.inf)
    return s.max(axis=2)


def diagnose_lse(case, out):
    q, k, v = case.args
    expected = np.asarray(case.expected, dtype=np.float64)
    if _matches(out, expected - _row_max(q, k, case.kwargs["causal"]), expected, case.tol):
        return "the running maximum is left out: lse = m + log(l)"
    return factor_hint(out, expected, [(1.0 / np.log(2.0), "the log-sum-exp is in base 2: use tl.log, not tl.log2")])


HINTS_LSE = {
    "float32, lengths a multiple of the tile": "after the loop, lse = m + log(l) for each row (natural log), float32",
    "ragged lengths, not a multiple of the tile": "store only rows < L: mask the store of lse too",
    "float16 input": "m and l are float32, and so is lse",
    "bfloat16 input, causal": "m and l are float32, and so is lse",
    "scores in the hundreds, causal": "lse = m + log(l), never log(sum of exp(s)): that overflows",
}


UNTIMED_RAGGED = f"{leaderboard.NOT_TIMED}, no GPU: ragged lengths, causal"
UNTIMED_LARGE = f"{leaderboard.NOT_TIMED}, no GPU: scores in the hundreds, causal"
UNTIMED_VALUES = f"{leaderboard.NOT_TIMED}, no GPU: float16 input, large values"
SPEED_HINTS = {leaderboard.NOT_TIMED_KIND: HINTS_FORWARD["float16 input"],
               UNTIMED_RAGGED: HINTS_FORWARD["causal, ragged lengths"],
               UNTIMED_LARGE: HINTS_FORWARD["scores in the hundreds, causal"],
               UNTIMED_VALUES: HINTS_FORWARD["float16 input, large values"],
               leaderboard.TIMED_KIND: HINTS_FORWARD["float16 input"]}


def speed_cases(rng):
    """On a host with a GPU: the fixed sizes the speed is timed at (:data:`leaderboard.SPEED_SIZES`).
    Elsewhere: a correct forward pass at small sizes earns the points (the task says so), on the
    kinds a tuned kernel gets wrong most easily."""
    if leaderboard.gpu_available():
        return [_case(*_qkv(rng, H, N, N, D), causal, "float16", leaderboard.TIMED_KIND)
                for H, N, D, causal in leaderboard.SPEED_SIZES]
    return [_case(*_qkv(rng, 1, 32, 32, 16), False, "float16", leaderboard.NOT_TIMED_KIND),
            _case(*_qkv(rng, 1, 27, 40, 16), True, "float16", UNTIMED_RAGGED),
            _case(*_hundreds(rng), True, "float16", UNTIMED_LARGE),
            _case(*_large_values(rng), False, "float16", UNTIMED_VALUES)]


PRECISION = ("Each output is compared with a float64 reference computed from the inputs as your kernel "
             "sees them (rounded to the run's dtype), entry by entry, `|out - ref| <= tol * (1 + |ref|)`, "
             "with tol = 0.002 for runs in float32 and float16 and 0.01 for runs in bfloat16. It leaves room "
             "for TF32 products on a GPU, for the probabilities rounded to the input's dtype before P V, and "
             "for the result stored in the input's dtype, as FlashAttention-2 does: one rounding costs at "
             "most 2^-11 |ref| in float16 and 2^-8 |ref| in bfloat16, well inside tol. So you may store the "
             "output and the log-sum-exp in float32 or in the input's dtype, and return either (float32 for "
             "bfloat16 runs: NumPy has no bfloat16). Keep the running maximum, the "
             "running sum and the accumulator in float32: in float16 the sum P V overflows on large values, "
             "which one case checks.")

PARTS = [
    Part("test_triton_forward", function="triton_flash_forward", cases=forward_cases, forbidden=FORBIDDEN,
         precision=PRECISION, hints=HINTS_FORWARD, diagnose=diagnose_forward),
    Part("test_triton_lse", function="triton_flash_lse", cases=lse_cases, forbidden=FORBIDDEN,
         precision=PRECISION, hints=HINTS_LSE, diagnose=diagnose_lse),
    Part("test_triton_speed", function="fast_flash_forward", cases=speed_cases, forbidden=FORBIDDEN,
         check=leaderboard.timed(allclose_check), precision=PRECISION, hints=SPEED_HINTS,
         diagnose=diagnose_forward),
]
