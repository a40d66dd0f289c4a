"""Conformance: every exact attention variant gives torch's answer under the rules of attnmath.core.

One hypothesis-driven test runs over the list ``VARIANTS``; a new variant is one adapter
function plus one line there. The problems are drawn as arrays (hypothesis.extra.numpy), not
seeds, so a failure shrinks to a small example. They cover empty lengths (``L = 0``, ``S = 0``),
``L != S``, grouped heads, ``D_v != D``, boolean masks with fully masked rows, additive biases
with ``-inf`` entries, both causal alignments, and float16/float32/float64.

The oracle is :func:`attnmath.testing.sdpa_oracle` (torch's SDPA) in float64 on the same
(rounded) inputs. Tolerances: float64 ``1e-10``; float32 ``1e-5``; float16: the largest error
against float64 may be at most twice torch's own float16 SDPA error on the same inputs plus one
rounding of the output (``2**-11`` of its largest entry), the GPU criterion of the Triton tests.
The non-finite policy: NaN or an infinity anywhere in ``q``, ``k``, ``v`` raises ``ValueError``
naming the argument, on every path. The Triton kernels run under ``TRITON_INTERPRET=1`` in a
child process (small sizes; the interpreter runs every program in Python).
"""

from __future__ import annotations

import re
from typing import Callable, NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attnmath import attention, chunked, core, flash, kv_cache, linear, programmable, recurrence, sparse, \
    testing
from attnmath.attention import attention_backward, scaled_dot_product_attention
from attnmath.chunked import chunked_attention
from attnmath.flash import flash_attention_backward, flash_attention_forward
from attnmath.kv_cache import KVCache, decode_step, kv_cache_append, kv_cache_init, prefill
from attnmath.sparse import sliding_window_attention
from attnmath.testing import random_qkv, sdpa_oracle

torch = pytest.importorskip("torch")

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DTYPES = (np.float16, np.float32, np.float64)
TOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-10}


class Problem(NamedTuple):
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    dout: np.ndarray
    mask: np.ndarray | None
    bias: np.ndarray | None
    causal: bool
    alignment: str
    window: int | None


# --------------------------------------------------------------------------- the variants


def _plain(p: Problem):
    return scaled_dot_product_attention(p.q, p.k, p.v, mask=p.mask, bias=p.bias, causal=p.causal,
                                        causal_alignment=p.alignment, window=p.window)[0]


def _plain_grads(p: Problem):
    _, cache = scaled_dot_product_attention(p.q, p.k, p.v, mask=p.mask, bias=p.bias,
                                            causal=p.causal, causal_alignment=p.alignment,
                                            window=p.window)
    return attention_backward(p.dout, cache)


def _chunked(p: Problem):
    return chunked_attention(p.q, p.k, p.v, chunk_size=2, mask=p.mask, bias=p.bias,
                             causal=p.causal, causal_alignment=p.alignment, window=p.window)


def _flash(p: Problem):
    return flash_attention_forward(p.q, p.k, p.v, block_q=2, block_k=3, mask=p.mask, bias=p.bias,
                                   causal=p.causal, causal_alignment=p.alignment,
                                   window=p.window)[0]


def _flash_grads(p: Problem):
    _, cache = flash_attention_forward(p.q, p.k, p.v, block_q=3, block_k=2, mask=p.mask,
                                       bias=p.bias, causal=p.causal, causal_alignment=p.alignment,
                                       window=p.window)
    return flash_attention_backward(p.dout, cache)


def _sliding_window(p: Problem):
    return sliding_window_attention(p.q, p.k, p.v, window=p.window)


def _kv_cache(p: Problem, S_past: int):
    B, H_kv, S, D = p.k.shape
    cache = kv_cache_init(B, H_kv, max(S, 1), D, p.v.shape[-1], dtype=p.k.dtype)
    return kv_cache_append(cache, p.k[:, :, :S_past], p.v[:, :, :S_past])


def _prefill(p: Problem):
    S_past = p.k.shape[2] - p.q.shape[2]
    cache = _kv_cache(p, S_past)
    return prefill(p.q, p.k[:, :, S_past:], p.v[:, :, S_past:], cache)[0]


def _decode(p: Problem):
    L, S = p.q.shape[2], p.k.shape[2]
    cache = _kv_cache(p, S - L)
    rows = []
    for t in range(L):
        cache = kv_cache_append(cache, p.k[:, :, S - L + t:S - L + t + 1], p.v[:, :, S - L + t:S - L + t + 1])
        rows.append(decode_step(p.q[:, :, t:t + 1], cache))
    if not rows:
        return np.zeros(p.q.shape[:-1] + (p.v.shape[-1],), dtype=p.q.dtype)
    return np.concatenate(rows, axis=2)


def _multihead(p: Problem):
    # Identity projections turn the multi-head layer into the attention of (q, k, v) itself.
    from attnmath.multihead import MultiHeadParams, merge_heads, multihead_attention, split_heads

    B, H, L, D = p.q.shape
    H_kv, S = p.k.shape[1], p.k.shape[2]
    C, C_kv = H * D, H_kv * D
    x_q = merge_heads(p.q)  # (B, L, C)
    x_kv = np.concatenate([merge_heads(p.k), merge_heads(p.v)], axis=-1)  # (B, S, 2 C_kv)
    eye = np.eye(C_kv, dtype=p.q.dtype)
    zero = np.zeros((C_kv, C_kv), dtype=p.q.dtype)
    params = MultiHeadParams(np.eye(C, dtype=p.q.dtype), np.concatenate([eye, zero]),
                             np.concatenate([zero, eye]), np.eye(C, dtype=p.q.dtype))
    mask = p.mask
    if p.causal:
        offset = S - L if p.alignment == "bottom_right" else 0
        causal = np.arange(S)[None, :] <= np.arange(L)[:, None] + offset  # (L, S)
        mask = causal if mask is None else (mask & causal)
    out, _ = multihead_attention(x_q, x_kv, params, H, H_kv=H_kv, mask=mask, bias=p.bias)
    return split_heads(out, H)  # (B, H, L, D)


def _index_functions(p: Problem):
    """The problem's mask, bias, causal mask and window as FlexAttention's score and mask functions."""
    B, H, L, _ = p.q.shape
    S = p.k.shape[2]
    offset = S - L if p.alignment == "bottom_right" else 0
    mods = []
    if p.mask is not None:
        mask = np.broadcast_to(p.mask, (B, H, L, S))
        mods.append(lambda b, h, i, j: mask[b, h, i, j])
    if p.causal:
        mods.append(programmable.causal_mask_mod(offset))
    if p.window is not None:
        mods.append(lambda b, h, i, j: j > i + offset - p.window)
    score_mod = None
    if p.bias is not None:
        bias = np.broadcast_to(p.bias, (B, H, L, S))
        score_mod = lambda z, b, h, i, j: z + bias[b, h, i, j]  # noqa: E731
    return score_mod, (programmable.and_masks(*mods) if mods else None)


def _flex(p: Problem):
    score_mod, mask_mod = _index_functions(p)
    return programmable.flex_attention(p.q, p.k, p.v, score_mod=score_mod, mask_mod=mask_mod)[0]


def _block_sparse(p: Problem):
    score_mod, mask_mod = _index_functions(p)
    B, H, L, _ = p.q.shape
    block_mask = programmable.create_block_mask(mask_mod or (lambda b, h, i, j: j >= 0), B, H, L,
                                                p.k.shape[2], block_q=2, block_k=3)
    return programmable.block_sparse_attention(p.q, p.k, p.v, block_mask, score_mod=score_mod)[0]


class Variant(NamedTuple):
    name: str
    forward: Callable[[Problem], np.ndarray]
    backward: Callable[[Problem], tuple] | None = None
    masks: bool = True  # boolean mask and additive bias
    alignments: tuple = ("top_left", "bottom_right")  # causal alignments accepted
    non_causal: bool = True
    cross: bool = True  # L != S
    past: bool = False  # needs S >= L (keys of earlier tokens)
    window: str = "never"  # a sliding window: "never", "optional" or "always"
    same_dv: bool = False  # needs D_v == D
    exact_names: bool = True  # a non-finite q, k or v is reported under its own name


VARIANTS = [
    Variant("plain", _plain, _plain_grads, window="optional"),
    Variant("chunked", _chunked, window="optional"),
    Variant("flash", _flash, _flash_grads, window="optional"),
    Variant("sliding_window", _sliding_window, masks=False, non_causal=False, cross=False,
            window="always"),
    Variant("kv_prefill", _prefill, masks=False, alignments=("bottom_right",), non_causal=False,
            past=True),
    Variant("kv_decode", _decode, masks=False, alignments=("bottom_right",), non_causal=False,
            past=True),
    Variant("multihead", _multihead, same_dv=True, exact_names=False),
    Variant("flex", _flex, window="optional"),
    Variant("block_sparse", _block_sparse, window="optional"),
]


# --------------------------------------------------------------------------- the problems


def _values(dtype, lo=-3.0, hi=3.0):
    width = np.dtype(dtype).itemsize * 8
    return st.floats(lo, hi, width=width, allow_nan=False, allow_infinity=False)


@st.composite
def problems(draw, variant: Variant, *, sizes=(0, 6), dtypes=DTYPES, dims=(1, 4)):
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    B, H_kv, group = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    H = H_kv * group
    L = draw(st.integers(*sizes))
    S = L if not variant.cross else draw(st.integers(L if variant.past else sizes[0], sizes[1]))
    D = draw(st.integers(*dims))
    D_v = D if variant.same_dv else draw(st.integers(*dims))
    q = draw(hnp.arrays(dtype, (B, H, L, D), elements=_values(dtype)))
    k = draw(hnp.arrays(dtype, (B, H_kv, S, D), elements=_values(dtype)))
    v = draw(hnp.arrays(dtype, (B, H_kv, S, D_v), elements=_values(dtype)))
    dout = draw(hnp.arrays(dtype, (B, H, L, D_v), elements=_values(dtype, -1.0, 1.0)))
    mask = bias = None
    if variant.masks:
        mask_shape = draw(st.sampled_from([None, (L, S), (B, 1, L, S), (B, H, L, S)]))
        if mask_shape is not None:
            mask = draw(hnp.arrays(np.bool_, mask_shape))
        if draw(st.booleans()):
            bias_values = st.one_of(_values(dtype, -2.0, 2.0), st.just(-np.inf))
            bias = draw(hnp.arrays(dtype, (H, L, S), elements=bias_values))
    choices = ([False] if variant.non_causal else []) + [True] * bool(variant.alignments)
    causal = draw(st.sampled_from(choices))
    alignment = draw(st.sampled_from(variant.alignments or ("top_left",)))
    window = None
    if variant.window == "always" or (variant.window == "optional" and draw(st.booleans())):
        window = draw(st.integers(1, sizes[1] + 1))
    return Problem(q, k, v, dout, mask, bias, causal, alignment, window)


def _oracle(p: Problem, dtype=np.float64, dout=False):
    return sdpa_oracle(p.q, p.k, p.v, mask=p.mask, bias=p.bias, causal=p.causal,
                       causal_alignment=p.alignment, window=p.window,
                       dout=p.dout if dout else None, dtype=dtype)


def _check(name: str, actual, expected, torch_half, dtype, ulps: float = 0.0):
    """Compare with the float64 oracle under the tolerance of the input ``dtype``.

    ``ulps``: float16 units in the last place allowed on top, at the largest expected magnitude,
    for kernels that round their matmul inputs (P, dS) to float16 by design (Triton).
    """
    assert actual.shape == expected.shape, f"{name}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == dtype, f"{name}: dtype {actual.dtype}, expected the input's {dtype}"
    if actual.size == 0:
        return
    err = float(np.max(np.abs(actual.astype(np.float64) - expected)))
    if dtype == np.float16:
        torch_err = float(np.max(np.abs(torch_half.astype(np.float64) - expected)))
        top = max(1.0, float(np.max(np.abs(expected))))
        bound = 2.0 * torch_err + 2.0**-13 * top + ulps * float(np.spacing(np.float16(top)))
    else:
        bound = TOL[np.dtype(dtype)] * max(1.0, float(np.max(np.abs(expected))))
    assert err <= bound, f"{name}: max error {err:.3e} > {bound:.3e} (dtype {dtype})"


# --------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
@SETTINGS
@given(data=st.data())
def test_every_variant_matches_the_torch_oracle_in_every_dtype(variant, data):
    p = data.draw(problems(variant))
    dtype = p.q.dtype
    expected = _oracle(p)
    torch_half = _oracle(p, np.float16) if dtype == np.float16 else None
    _check("out", variant.forward(p), expected, torch_half, dtype)
    if variant.backward is not None:
        _, grads = _oracle(p, dout=True)
        half_grads = _oracle(p, np.float16, dout=True)[1] if dtype == np.float16 else (None,) * 3
        for name, actual, exp, half in zip(("dq", "dk", "dv"), variant.backward(p), grads, half_grads):
            _check(name, actual, exp, half, dtype)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(data=st.data())
def test_float16_error_is_at_most_twice_torchs_on_longer_sequences(variant, data):
    # Long enough rows (8..40 keys, D up to 16) for float16 rounding inside the softmax and the
    # products to show: computing the score tiles or P in float16 fails this test.
    p = data.draw(problems(variant, sizes=(8, 40), dtypes=(np.float16,), dims=(8, 16)))
    _check("out", variant.forward(p), _oracle(p), _oracle(p, np.float16), np.dtype(np.float16))
    if variant.backward is not None:
        _, grads = _oracle(p, dout=True)
        _, half_grads = _oracle(p, np.float16, dout=True)
        for name, actual, exp, half in zip(("dq", "dk", "dv"), variant.backward(p), grads, half_grads):
            _check(name, actual, exp, half, np.dtype(np.float16))


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_nan_and_infinities_in_q_k_v_raise_a_value_error_naming_the_argument(variant, data):
    p = data.draw(problems(variant, sizes=(1, 4)))
    name = data.draw(st.sampled_from(["q", "k", "v"]))
    x = getattr(p, name).copy()
    index = tuple(data.draw(st.integers(0, n - 1)) for n in x.shape)
    x[index] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    p = p._replace(**{name: x})
    pattern = rf"\b{name}\w* contains" if variant.exact_names else r"\b\w*(q|k|v)\w* contains"
    with pytest.raises(ValueError, match=pattern):
        variant.forward(p)


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v.masks], ids=lambda v: v.name)
@SETTINGS
@given(data=st.data())
def test_fully_masked_rows_give_zeros_and_zero_gradients(variant, data):
    p = data.draw(problems(variant, sizes=(1, 5)))
    L = p.q.shape[2]
    dead = data.draw(st.integers(0, L - 1))
    mask = np.ones(p.q.shape[:-1] + (p.k.shape[2],), dtype=bool) if p.mask is None else \
        np.broadcast_to(p.mask, p.q.shape[:-1] + (p.k.shape[2],)).copy()
    mask[..., dead, :] = False
    p = p._replace(mask=mask)
    out = variant.forward(p)
    assert not np.any(out[..., dead, :]), "a fully masked row must be exactly zero"
    assert np.isfinite(out).all()
    if variant.backward is not None:
        dq, dk, dv = variant.backward(p)
        assert not np.any(dq[..., dead, :]), "a fully masked row must get a zero dq"
        for g in (dq, dk, dv):
            assert np.isfinite(g).all()


# --------------------------------------------------------------------------- Triton (interpreted)


# The kernels: fixture ``triton_kernels`` (tests/attnmath/conftest.py), one process per test run
# shared with test_flash_triton.py.


@st.composite
def triton_problems(draw):
    # The kernels take no mask or bias, only the top-left causal mask, D = D_v a power of two
    # in [16, 256], and float16, bfloat16 or float32; the interpreter keeps the sizes small.
    dtype = np.dtype(draw(st.sampled_from([np.float16, np.float32])))
    H_kv, group = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    L, S, D = draw(st.integers(0, 20)), draw(st.integers(0, 20)), 16
    q = draw(hnp.arrays(dtype, (1, H_kv * group, L, D), elements=_values(dtype)))
    k = draw(hnp.arrays(dtype, (1, H_kv, S, D), elements=_values(dtype)))
    v = draw(hnp.arrays(dtype, (1, H_kv, S, D), elements=_values(dtype)))
    dout = draw(hnp.arrays(dtype, (1, H_kv * group, L, D), elements=_values(dtype, -1.0, 1.0)))
    return Problem(q, k, v, dout, None, None, draw(st.booleans()), "top_left", None)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(p=triton_problems())
def test_triton_kernels_match_the_torch_oracle(triton_kernels, p):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tq, tk, tv, tdo = (torch.from_numpy(x).to(device) for x in (p.q, p.k, p.v, p.dout))
    out, cache = triton_kernels.flash_attention_triton(tq, tk, tv, causal=p.causal)
    grads = triton_kernels.flash_attention_triton_backward(tdo, cache)
    expected, exp_grads = _oracle(p, dout=True)
    half = _oracle(p, np.float16, dout=True) if p.q.dtype == np.float16 else (None, (None,) * 3)
    dtype = p.q.dtype
    # The kernels feed P and dS to tensor-core matmuls in the input's dtype (as flash kernels
    # do): up to two float16 ulps more than torch's float16 SDPA, which rounds only at the end.
    _check("out", out.cpu().numpy(), expected, half[0], dtype, ulps=2)
    for name, actual, exp, h in zip(("dq", "dk", "dv"), grads, exp_grads, half[1]):
        # float32 backward: products in float32 with sums over up to 20 keys of |dS K| <= ~20
        actual = actual.cpu().numpy()
        if dtype == np.float32:
            assert actual.dtype == dtype
            err = float(np.max(np.abs(actual - exp))) if actual.size else 0.0
            assert err <= 1e-4 * max(1.0, float(np.max(np.abs(exp))) if exp.size else 1.0), (name, err)
        else:
            _check(name, actual, exp, h, dtype, ulps=2)


def test_triton_non_finite_inputs_raise_naming_the_argument(triton_kernels):
    q = torch.zeros(1, 2, 4, 16, dtype=torch.float16)
    for name, value in (("q", float("nan")), ("k", float("inf")), ("v", float("-inf"))):
        args = {"q": q.clone(), "k": q.clone(), "v": q.clone()}
        args[name][0, 1, 2, 3] = value
        with pytest.raises(ValueError, match=rf"{name} contains"):
            # On the CPU the call raises; on a GPU the check reports at the next wait, not in the call.
            triton_kernels.flash_attention_triton(args["q"], args["k"], args["v"])
            triton_kernels.wait_for_input_checks()


# --------------------------------------------------------------------------- bad input, everywhere
#
# Every public function of the attention modules is called with bad arguments: wrong kinds and
# dtypes, empty or wrongly shaped arrays, mismatched heads and dims, negative sizes and seeds,
# non-finite values, another method's cache. Each call must raise TypeError or ValueError whose
# message names the argument (as a word); a numpy-internal message, another exception type or no
# exception at all fails. ``_probes()`` lists each function with its valid arguments and the bad values
# of each argument; ``_probe_outcomes`` classifies every call.

_NAN = float("nan")


def _nonfinite(x):
    x = np.array(x, dtype=np.float64, copy=True)
    x.flat[0] = _NAN
    return x


def _arrays(x):
    """Bad values of any float array argument ``x``: kinds, dtypes, ndim, non-finite entries."""
    x = np.asarray(x)
    bad = ["text", None, np.ones(x.shape, dtype=bool), np.ones(x.shape, dtype=np.int64),
           np.zeros(()), _nonfinite(x)]
    if torch is not None:
        bad.append(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64)))
    return bad


_INT1 = [0, -1, 1.5, True, "3", None]  # an integer >= 1
_INT0 = [-1, 2.5, False, "0", None]  # an integer >= 0
_SEED = [-1, 1.5, "seed", None]
_REAL = ["x", _NAN, float("inf"), True]
_FLAG = [1, "yes", None]
_ALIGN = ["diagonal", 2.5, None, True]  # an integer is an offset (masking.causal_offset)


def _probes():
    q, k, v = random_qkv(B=1, H=2, L=3, S=4, D=2, D_v=3, H_kv=1, seed=0)
    dout = np.ones((1, 2, 3, 3))
    mask = np.ones((3, 4), dtype=bool)
    bias = np.zeros((2, 3, 4))
    qkv = dict(q=q, k=k, v=v)
    heads = np.concatenate([k, k, k], axis=1)  # H_kv = 3 does not divide H = 2
    shape_bad = {"q": [q[0, 0, 0], q[..., :1], q[None]], "k": [k[..., :1], heads],
                 "v": [v[..., :2, :], v[0]]}
    attn_bad = {name: _arrays(x) + shape_bad[name] for name, x in qkv.items()}
    masks_bad = {"mask": [np.ones((3, 4)), np.ones((5, 5), dtype=bool), "text"],
                 "bias": [np.ones((3, 4), dtype=bool), np.full((3, 4), _NAN), np.full((3, 4), np.inf),
                          np.zeros((5, 5)), "text"],
                 "scale": _REAL}
    causal_bad = {"causal": _FLAG, "causal_alignment": _ALIGN, "window": [0, -2, 1.5, "w"]}
    _, att_cache = attention.scaled_dot_product_attention(q, k, v)
    _, fl_cache = flash.flash_attention_forward(q, k, v)
    _, dr_cache = attention.dropout_attention(q, k, v, p=0.5, rng=np.random.default_rng(0))
    caches_bad = [None, (1, 2), att_cache, fl_cache, dr_cache, KVCache(k, v, 4)]
    k2 = np.concatenate([k, -k], axis=1)  # (1, 2, 4, 2): H_kv = H for additive scores
    w_q, w_k, w_a = np.ones((2, 5)), np.ones((2, 5)), np.ones(5)
    kv0 = kv_cache.kv_cache_init(1, 1, 6, 2, 3)
    kv_bad = [None, att_cache, KVCache(kv0.k, kv0.v, -1), KVCache(kv0.k, kv0.v, 7),
              KVCache(kv0.k, kv0.v[:, :, :5], 0), KVCache(kv0.k[0], kv0.v, 0), KVCache(kv0.k, kv0.v, 1.5)]
    x = np.random.default_rng(1).standard_normal((3, 4))
    omega = np.ones((5, 4))
    P = [
        (attention.scaled_dot_product_attention, qkv, {**attn_bad, **masks_bad, **causal_bad}),
        (attention.attention_backward, dict(dout=dout, cache=att_cache),
         {"dout": _arrays(dout) + [dout[..., :1]], "cache": [c for c in caches_bad if c is not att_cache]
          + [att_cache._replace(probs=att_cache.probs[..., :2])]}),
        (attention.dot_product_attention, qkv, {**attn_bad, "mask": masks_bad["mask"],
                                                "bias": masks_bad["bias"]}),
        (attention.additive_scores, dict(q=q, k=k2, w_q=w_q, w_k=w_k, w_a=w_a),
         {"q": _arrays(q) + [q[0, 0, 0], q[..., :1], q[None]], "k": _arrays(k2) + [k2[0, 0, 0], k2[None], k],
          "w_q": _arrays(w_q) + [w_q[:1], w_q[:, :2]], "w_k": _arrays(w_k) + [w_k[:, :2]],
          "w_a": _arrays(w_a) + [w_a[:2], w_q]}),
        (attention.additive_attention, dict(q=q, k=k2, v=v[:, [0, 0]], w_q=w_q, w_k=w_k, w_a=w_a),
         {"v": _arrays(v) + [v[..., :2, :], v[0], v], "mask": masks_bad["mask"]}),
        (attention.dropout_attention, dict(qkv, p=0.2, rng=np.random.default_rng(0)),
         {**attn_bad, "p": [-0.1, 1.0, "x", _NAN, None], "rng": [3, None, "rng"], **masks_bad}),
        (attention.dropout_attention_backward, dict(dout=dout, cache=dr_cache),
         {"dout": _arrays(dout) + [dout[..., :1]], "cache": [c for c in caches_bad if c is not dr_cache]
          + [dr_cache._replace(keep=dr_cache.keep[..., :2]), dr_cache._replace(p=1.5)]}),
        # repeat_kv moves values as they are (NaN included): only kinds and shapes are wrong here
        (core.repeat_kv, dict(x=k2, H=4), {"x": _arrays(k2)[:-2] + [k2[0, 0]], "H": [3, 0, -2, 1.5, True, "4"]}),
        (chunked.chunked_attention, dict(qkv, chunk_size=2),
         {**attn_bad, **masks_bad, **causal_bad, "chunk_size": _INT1}),
        (chunked.online_softmax, dict(x=x, block_size=2),
         {"x": ["text", None, np.ones(3, dtype=bool), np.zeros(()), _nonfinite(x), np.full(3, np.inf),
                np.full(3, -np.inf)], "block_size": _INT1, "axis": [5, -3, 1.5, "0"]}),
        (chunked.online_logsumexp, dict(x=x, block_size=2),
         {"x": ["text", None, np.ones(3, dtype=bool), np.zeros(()), _nonfinite(x)],
          "block_size": _INT1, "axis": [5, 1.5], "keepdims": ["yes", 1, None]}),
        (flash.flash_attention_forward, qkv,
         {**attn_bad, **masks_bad, **causal_bad, "block_q": _INT1, "block_k": _INT1}),
        (flash.flash_attention_backward, dict(dout=dout, cache=fl_cache),
         {"dout": _arrays(dout) + [dout[..., :1]], "cache": [c for c in caches_bad if c is not fl_cache]
          + [fl_cache._replace(lse=fl_cache.lse[..., :1]), fl_cache._replace(scale=_NAN),
             fl_cache._replace(causal=1), fl_cache._replace(block_q=0)]}),
        (flash.attention_state, qkv,
         {**attn_bad, **masks_bad, **causal_bad, "block_q": _INT1, "block_k": _INT1}),
        (flash.merge_attention_states, dict(states=[flash.attention_state(**qkv)]),
         {"states": [None, "text", [], flash.attention_state(**qkv), [None], [(1, 2, 3)],
                     [flash.AttentionState(dout, dout)], [flash.AttentionState(_nonfinite(dout), dout[..., 0])],
                     [flash.AttentionState(dout, np.full(dout.shape[:-1], np.nan))],
                     [flash.attention_state(**qkv), flash.AttentionState(dout[..., :1, :], dout[..., :1, 0])]]}),
        (flash.attention_matrix_bytes, dict(L=4, S=4),
         {"L": _INT1, "S": _INT1, "H": _INT1, "B": _INT1, "bytes_per_elem": _INT1}),
        (sparse.local_mask, dict(L=4, radius=1), {"L": _INT1, "S": [0, -1, 1.5], "radius": _INT0}),
        (sparse.strided_local_mask, dict(L=4, stride=2), {"L": _INT1, "stride": _INT1}),
        (sparse.strided_column_mask, dict(L=4, stride=2), {"L": _INT1, "stride": _INT1}),
        (sparse.strided_mask, dict(L=4, stride=2), {"L": _INT1, "stride": _INT1}),
        (sparse.global_local_mask, dict(L=4, radius=1, global_tokens=[0]),
         {"L": _INT1, "radius": _INT0, "global_tokens": [[1.5], [-1], [4], "ab", [[0]], None]}),
        (sparse.random_mask, dict(L=4, n_random=2, seed=0),
         {"L": _INT1, "S": [0, -1], "n_random": _INT0, "seed": _SEED}),
        (sparse.bigbird_mask, dict(L=4, radius=1, global_tokens=[0], n_random=1, seed=0),
         {"L": _INT1, "radius": _INT0, "global_tokens": [[7], "ab"], "n_random": _INT0, "seed": _SEED}),
        (sparse.mask_density, dict(mask=mask), {"mask": [np.ones((3, 4)), np.ones(3, dtype=bool),
                                                         np.ones((0, 4), dtype=bool), "text", None]}),
        (sparse.sliding_window_attention, dict(q=q, k=k[..., :3, :], v=v[..., :3, :], window=2),
         {"q": _arrays(q) + [q[..., :1]], "k": _arrays(k) + [heads[..., :3, :]], "v": _arrays(v),
          "window": _INT1, "scale": _REAL}),
        (kv_cache.kv_cache_init, dict(B=1, H_kv=1, S_max=4, D=2),
         {"B": _INT1, "H_kv": _INT1, "S_max": _INT1, "D": _INT1, "D_v": [0, -1, 1.5],
          "dtype": [np.int32, "foo", bool, None, "text"]}),
        (kv_cache.kv_cache_append, dict(cache=kv0, k_new=k, v_new=v),
         {"cache": kv_bad, "k_new": _arrays(k) + [k[..., :1], k[0], heads],
          "v_new": _arrays(v) + [v[..., :1], v[..., :2, :]]}),
        (kv_cache.decode_step, dict(q_t=q[:, :, :1], cache=kv_cache.kv_cache_append(kv0, k, v)),
         {"q_t": _arrays(q[:, :, :1]) + [q, q[..., :1], q[[0, 0], :, :1]], "cache": kv_bad,
          "scale": _REAL}),
        (kv_cache.prefill, dict(q=q, k_new=k[:, :, :3], v_new=v[:, :, :3], cache=kv0),
         {"q": _arrays(q) + [q[..., :1]], "k_new": _arrays(k[:, :, :3]) + [k],
          "v_new": _arrays(v[:, :, :3]) + [v], "cache": kv_bad, "scale": _REAL}),
        (kv_cache.kv_cache_bytes, dict(B=1, H_kv=1, S=4, D=2),
         {"B": _INT1, "H_kv": _INT1, "S": _INT1, "D": _INT1, "D_v": [0, 1.5], "n_layers": _INT1,
          "itemsize": _INT1}),
        (linear.elu_feature_map, dict(x=x), {"x": ["text", None, np.ones(3, dtype=bool), _nonfinite(x)]}),
        (linear.linear_attention, qkv,
         {**attn_bad, "feature_map": [3, "elu", lambda z: z[..., :1, :], lambda z: -np.ones(z.shape)]}),
        (linear.linear_attention_quadratic, qkv,
         {**attn_bad, "feature_map": [3, lambda z: -np.ones(z.shape)], "mask": masks_bad["mask"]}),
        (linear.causal_linear_attention, dict(q=q, k=k[..., :3, :], v=v[..., :3, :]),
         {"q": _arrays(q) + [q[..., :1]], "k": _arrays(k), "v": _arrays(v), "feature_map": [3]}),
        (linear.draw_gaussian_features, dict(m=4, D=2, seed=0), {"m": _INT1, "D": _INT1, "seed": _SEED}),
        (linear.draw_orthogonal_features, dict(m=4, D=2, seed=0), {"m": _INT1, "D": _INT1, "seed": _SEED}),
        (linear.random_feature_map, dict(x=x, omega=omega),
         {"x": ["text", None, np.ones(4, dtype=bool), _nonfinite(x), np.ones((3, 3))],
          "omega": _arrays(omega) + [omega[:, :2], omega[0]]}),
        (linear.performer_attention, dict(qkv, n_features=4, seed=0),
         {**attn_bad, "n_features": _INT1, "seed": _SEED, "scale": _REAL + [-1.0]}),
        (linear.attention_flops, dict(L=1, S=1, D=1, D_v=1), {n: _INT1 for n in ("L", "S", "D", "D_v")}),
        (linear.linear_attention_flops, dict(L=1, S=1, D_phi=1, D_v=1),
         {n: _INT1 for n in ("L", "S", "D_phi", "D_v")}),
        (core.prepare, qkv, {**attn_bad, **masks_bad, **causal_bad}),
        (core.check_finite, dict(x=x, name="x"), {"x": ["text", None, _nonfinite(x)], "name": [3, None]}),
        (core.check_causal, dict(causal=True, causal_alignment="top_left"),
         {"causal": _FLAG, "causal_alignment": _ALIGN}),
        (core.grouped, dict(x=q, H_kv=1), {"x": ["text", np.zeros(3)], "H_kv": [0, 3, 1.5, True]}),
        (core.softmax_rows_inplace, dict(x=x.copy()), {"x": ["text", np.ones(3, dtype=np.int64), [1.0, 2.0]]}),
        (core.check_cache, dict(cache=att_cache, cls=attention.AttentionCache, forward="f", backward="b"),
         {"cache": [None, fl_cache]}),
        (core.check_dout, dict(dout=dout, shape=dout.shape), {"dout": _arrays(dout) + [dout[..., :1]]}),
        (testing.random_qkv, dict(),
         {"B": _INT1, "H": _INT1, "L": [-1, 1.5], "S": [-1, 1.5], "D": _INT1, "D_v": [0, 1.5],
          "H_kv": [0, 1.5], "seed": _SEED, "dtype": [np.int32, "foo", bool]}),
        (testing.assert_close, dict(actual=x, expected=x),
         {"rtol": [-1.0, "x", _NAN], "atol": [-1.0, "x"], "name": [3]}),
        (testing.numerical_gradient, dict(f=lambda z: float(np.sum(z)), x=x),
         {"f": [3, None], "x": ["text", np.ones(3, dtype=bool)], "eps": [0.0, -1e-6, "x", _NAN]}),
        *_recurrence_probes(q, k, v),
    ]
    return P


def _recurrence_probes(q, k, v):
    """attnmath.recurrence: causal self-attention (one length), gates in log space (<= 0)."""
    k, v = k[..., :3, :], v[..., :3, :]  # (1, 1, 3, 2), (1, 1, 3, 3): the length of q
    gate, beta = -np.ones((1, 2, 3)), np.ones((1, 2, 3))
    def wrong(x):  # None, integers and scalars are valid here (no state; a gate for every step)
        return ["text", np.ones(x.shape, dtype=bool), _nonfinite(x), np.full(x.shape, np.inf)]

    state = np.zeros((1, 2, 2, 3))
    layer = {"q": _arrays(q) + [q[..., :1]], "k": _arrays(k) + [k[..., :2, :]], "v": _arrays(v) + [v[..., :2, :]],
             "scale": _REAL, "initial_state": wrong(state) + [np.zeros((1, 2, 3, 2))]}
    gates = {"log_alpha": wrong(gate) + [gate[..., :2], -gate]}
    return [
        (recurrence.ssd_quadratic, dict(q=q, k=k, v=v, log_alpha=gate), {**layer, **gates}),
        (recurrence.ssd_recurrent, dict(q=q, k=k, v=v, log_alpha=gate), {**layer, **gates}),
        (recurrence.ssd_chunked, dict(q=q, k=k, v=v, log_alpha=gate, chunk_size=2),
         {**layer, **gates, "chunk_size": _INT1}),
        (recurrence.gla_chunked, dict(q=q, k=k, v=v, log_alpha=gate[..., None], chunk_size=2),
         {**layer, "log_alpha": [np.ones((1, 2, 3, 1)), -np.ones((1, 2, 3, 5))], "chunk_size": _INT1}),
        (recurrence.delta_rule_chunked, dict(q=q, k=k, v=v, beta=beta, chunk_size=2),
         {**layer, **gates, "beta": wrong(beta) + [beta[..., :2]], "chunk_size": _INT1}),
        (recurrence.semiseparable_mask, dict(log_alpha=gate), {"log_alpha": wrong(gate) + [np.zeros(())]}),
        (recurrence.ssd_chunked_cost, dict(L=4, D=2, D_v=3, chunk_size=2),
         {"L": [-1, 1.5, True], "D": _INT1, "D_v": _INT1, "chunk_size": _INT1}),
        (recurrence.recall_pairs, dict(trials=1, n_pairs=2, D=2),
         {"trials": _INT1, "n_pairs": _INT1, "D": _INT1, "D_v": [0, 1.5], "seed": _SEED}),
    ]


def _names_argument(message: str, name: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message) is not None


def _probe_outcomes():
    """``[(function, argument, bad value, outcome, message)]`` for every probe call."""
    results = []
    for fn, good, bad in _probes():
        for arg, values in bad.items():
            for value in values:
                call = (lambda f=fn, kw={**good, arg: value}: f(**kw))
                try:
                    call()
                except (TypeError, ValueError) as exc:
                    message = str(exc)
                    outcome = "clear" if _names_argument(message, arg.split(".")[0]) else "obscure"
                except Exception as exc:  # noqa: BLE001 - classified, then reported
                    message, outcome = f"{type(exc).__name__}: {exc}", "wrong exception type"
                else:
                    message, outcome = "", "no error"
                results.append((fn.__name__, arg, value, outcome, message))
    return results


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_every_public_function_rejects_bad_input_with_an_error_naming_the_argument():
    results = _probe_outcomes()
    functions = {r[0] for r in results}
    assert len(functions) >= 45 and len(results) >= 500, (len(functions), len(results))
    bad = [r for r in results if r[3] != "clear"]
    report = "\n".join(f"{f}({a}={v!r:.60}): {o}: {m[:160]}" for f, a, v, o, m in bad)
    assert not bad, f"{len(bad)} of {len(results)} bad calls were not clear errors:\n{report}"
