"""Tests for attnmath.attention: scaled dot-product attention, its backward and its relatives.

Oracles: ``torch.nn.functional.scaled_dot_product_attention`` and ``torch.autograd`` in float64,
central differences for every hand-written backward, and hypothesis for the mathematical claims.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnmath.attention import (
    AttentionCache,
    AttentionGrads,
    DropoutCache,
    additive_attention,
    additive_scores,
    attention_backward,
    dot_product_attention,
    dropout_attention,
    dropout_attention_backward,
    repeat_kv,
    scaled_dot_product_attention,
)
from attnmath.masking import causal_mask, padding_mask
from attnmath.testing import assert_close, check_gradient, random_qkv, sdpa_oracle, to_torch

SETTINGS = settings(max_examples=30, deadline=None)
TOL = dict(rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# inputs and the torch references
# ---------------------------------------------------------------------------------------------


def _make_case(lead=(2,), H=3, H_kv=None, L=5, S=None, D=4, D_v=None, mask=None, bias=None,
               scale=None, empty_rows=False, seed=0):
    """Random inputs. ``H=None`` gives plain ``(L, D)`` matrices (``lead`` is then ignored)."""
    rng = np.random.default_rng(seed)
    S = L if S is None else S
    D_v = D if D_v is None else D_v
    if H is None:
        lead, heads, kv_heads = (), (), ()
    else:
        heads, kv_heads = (H,), (H if H_kv is None else H_kv,)
    q = rng.standard_normal(lead + heads + (L, D))  # (B, H, L, D)
    k = rng.standard_normal(lead + kv_heads + (S, D))  # (B, H_kv, S, D)
    v = rng.standard_normal(lead + kv_heads + (S, D_v))  # (B, H_kv, S, D_v)
    mask_arr = None if mask is None else rng.random(mask) < 0.7
    if empty_rows:
        mask_arr[..., 1, :] = False  # query 1 sees nothing, in every batch and head
        mask_arr.reshape(-1, *mask_arr.shape[-2:])[0, L - 1, :] = False
    bias_arr = None if bias is None else 2.0 * rng.standard_normal(bias)
    return dict(q=q, k=k, v=v, mask=mask_arr, bias=bias_arr, scale=scale)


def _torch_attention(q, k, v, *, mask=None, bias=None, scale=None, is_causal=False, dout=None,
                     causal_alignment="top_left"):
    """The oracle :func:`attnmath.testing.sdpa_oracle` (torch, float64): ``(out, grads or None)``."""
    result = sdpa_oracle(q, k, v, mask=mask, bias=bias, scale=scale, causal=is_causal,
                         causal_alignment=causal_alignment, dout=dout)
    if dout is None:
        return result, None
    out, grads = result
    return out, AttentionGrads(*grads)


def _assert_grads(ours: AttentionGrads, ref: AttentionGrads, **tol):
    tol = tol or TOL
    for name in AttentionGrads._fields:
        assert_close(getattr(ours, name), getattr(ref, name), name=name, **tol)


def _full_mask(mask, q, k):
    """The mask broadcast to the score shape (B, H, L, S); all True without a mask."""
    shape = q.shape[:-1] + (k.shape[-2],)
    return np.ones(shape, bool) if mask is None else np.broadcast_to(mask, shape)


CASES = {
    "plain": dict(),
    "mask (L, S)": dict(L=5, S=7, mask=(5, 7)),
    "mask (B, 1, 1, S)": dict(L=5, S=7, mask=(2, 1, 1, 7)),
    "mask (1, H, L, S)": dict(L=5, S=7, mask=(1, 3, 5, 7)),
    "mask (B, H, L, S)": dict(L=5, S=7, mask=(2, 3, 5, 7)),
    "mask (B, 1, L, S)": dict(L=5, S=7, mask=(2, 1, 5, 7)),
    "bias (B, H, L, S)": dict(L=4, S=6, bias=(2, 3, 4, 6)),
    "bias (1, H, 1, S) and mask (L, S)": dict(L=4, S=6, bias=(1, 3, 1, 6), mask=(4, 6)),
    "multi-query H_kv=1": dict(H=4, H_kv=1, L=4, S=6, mask=(2, 1, 1, 6)),
    "grouped H_kv=2": dict(H=4, H_kv=2, L=4, S=6, mask=(2, 4, 4, 6), bias=(4, 1, 6)),
    "multi-head H_kv=H": dict(H=4, H_kv=4, L=4, S=6, mask=(4, 6)),
    "cross-attention L != S, D_v != D": dict(L=3, S=9, D=5, D_v=2, mask=(2, 1, 3, 9)),
    "custom scale 0.37": dict(scale=0.37, mask=(5, 5)),
    "custom scale 2.5": dict(scale=2.5, bias=(5, 5)),
    "fully masked rows": dict(L=4, S=5, mask=(2, 3, 4, 5), bias=(2, 3, 4, 5), empty_rows=True),
    "2-D (L, D)": dict(H=None, L=4, S=6, D=3, D_v=5, mask=(4, 6)),
    "3-D (H, L, D) grouped": dict(lead=(), H=4, H_kv=2, L=4, S=6, mask=(4, 1, 6)),
    "5-D (B, B2, H, L, D) grouped": dict(lead=(2, 2), H=2, H_kv=1, L=3, S=4, mask=(2, 1, 1, 3, 4)),
}
CASE_PARAMS = [pytest.param(case, id=name) for name, case in CASES.items()]


# ---------------------------------------------------------------------------------------------
# oracle: forward and backward against torch
# ---------------------------------------------------------------------------------------------


@pytest.mark.claim(
    "000 Scaled Dot-Product Attention",
    r"$\operatorname{Attention}(Q, K, V)$ $= \softmax(QK^\top / \sqrt{d_k})\, V$ with $Q$ "
    r"($n \times d_k$), $K$ ($m \times d_k$), $V$ ($m \times d_v$) and an $n \times d_v$ output",
    "verified",
    domain=r"16 shape cases against torch: $B$, $H$, $L$, $S$ with $L \ne S$, $D \ne D_v$, grouped "
           "and multi-query heads, every mask and bias broadcast shape, custom scales, fully "
           "masked rows, a plain $(L, D)$ matrix; float64")
@pytest.mark.claim(
    "001 Core Formula",
    r"$\operatorname{Attention}(Q, K, V)$ $= \softmax(QK^\top / \sqrt{d_k})\, V$: an "
    r"$n \times d_v$ matrix of weighted values",
    "verified",
    domain=r"16 shape cases against torch: $B$, $H$, $L$, $S$ with $L \ne S$, $D \ne D_v$, grouped "
           "and multi-query heads, every mask and bias broadcast shape, custom scales, fully "
           "masked rows, a plain $(L, D)$ matrix; float64")
@pytest.mark.parametrize("case", CASE_PARAMS)
def test_forward_matches_torch_scaled_dot_product_attention(case):
    inputs = _make_case(**case)
    out, cache = scaled_dot_product_attention(**inputs)
    expected, _ = _torch_attention(**inputs)
    assert isinstance(cache, AttentionCache)
    assert out.shape == inputs["q"].shape[:-1] + (inputs["v"].shape[-1],)
    assert cache.probs.shape == inputs["q"].shape[:-1] + (inputs["k"].shape[-2],)
    assert_close(out, expected, name="out", **TOL)


@pytest.mark.claim(
    "000 Gradient Analysis",
    r"$\partial L/\partial V = A^\top\, \partial L/\partial \mathrm{Output}$ and "
    r"$\partial L/\partial A = \partial L/\partial \mathrm{Output}\, V^\top$",
    "verified",
    domain=r"the same 16 shape cases against `torch.autograd`: $L \ne S$, $D \ne D_v$, grouped "
           "heads, masks, biases, fully masked rows; float64",
    chapter="03_gradients")
@pytest.mark.claim(
    "002 §3.2",
    r"$\partial L/\partial Q = (1/\sqrt{d_k})\, (\partial L/\partial S) K$ and "
    r"$\partial L/\partial K = (1/\sqrt{d_k})\, (\partial L/\partial S)^\top Q$",
    "verified",
    domain=r"the same 16 shape cases against `torch.autograd`: $L \ne S$, $D \ne D_v$, grouped "
           "heads, masks, biases, fully masked rows; float64",
    chapter="03_gradients")
@pytest.mark.parametrize("case", CASE_PARAMS)
def test_backward_matches_torch_autograd(case):
    inputs = _make_case(**case, seed=1)
    out, cache = scaled_dot_product_attention(**inputs)
    dout = np.random.default_rng(2).standard_normal(out.shape)
    _, ref = _torch_attention(**inputs, dout=dout)
    grads = attention_backward(dout, cache)
    assert isinstance(grads, AttentionGrads)
    assert grads.dq.shape == inputs["q"].shape
    assert grads.dk.shape == inputs["k"].shape
    assert grads.dv.shape == inputs["v"].shape
    _assert_grads(grads, ref)


@pytest.mark.parametrize("L, S", [(4, 4), (3, 7), (7, 3), (1, 5)])
@pytest.mark.parametrize("H_kv", [1, 2, 4])
def test_top_left_causal_mask_matches_torch_is_causal(L, S, H_kv):
    q, k, v = random_qkv(B=2, H=4, L=L, S=S, D=3, H_kv=H_kv, seed=L * 10 + S)
    out, cache = scaled_dot_product_attention(q, k, v, mask=causal_mask(L, S))
    dout = np.random.default_rng(0).standard_normal(out.shape)
    expected, ref = _torch_attention(q, k, v, is_causal=True, dout=dout)
    assert_close(out, expected, name="out", **TOL)
    _assert_grads(attention_backward(dout, cache), ref)


@pytest.mark.parametrize("L, S", [(4, 4), (3, 7), (7, 3), (1, 5)])
def test_bottom_right_causal_mask_matches_torch_causal_lower_right(L, S):
    q, k, v = random_qkv(B=2, H=2, L=L, S=S, D=3, seed=L * 10 + S)
    mask = causal_mask(L, S, alignment="bottom_right")
    out, cache = scaled_dot_product_attention(q, k, v, mask=mask)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns of empty rows when L > S
        # a causal mask alone: the oracle passes torch.nn.attention.bias.causal_lower_right
        expected, _ = _torch_attention(q, k, v, is_causal=True, causal_alignment="bottom_right")
    assert_close(out, expected, name="out", **TOL)
    # the same mask written explicitly as torch's tril(S - L), with gradients
    explicit = torch.ones(L, S, dtype=torch.bool).tril(diagonal=S - L).numpy()
    dout = np.random.default_rng(0).standard_normal(out.shape)
    expected, ref = _torch_attention(q, k, v, mask=explicit, dout=dout)
    assert_close(out, expected, name="out", **TOL)
    _assert_grads(attention_backward(dout, cache), ref)
    if L > S:
        assert not out[..., : L - S, :].any()


def test_fully_masked_row_is_zero():
    q, k, v = random_qkv(B=1, H=2, L=3, S=4, D=3, seed=0)
    mask = np.ones((3, 4), dtype=bool)
    mask[1] = False
    out, cache = scaled_dot_product_attention(q, k, v, mask=mask)
    assert not out[..., 1, :].any()
    assert not cache.probs[..., 1, :].any()
    # torch 2.13's fused attention also returns zeros there (a plain softmax of an all -inf row is NaN)
    expected, _ = _torch_attention(q, k, v, mask=mask)
    assert not expected[..., 1, :].any()
    assert torch.isnan(torch.softmax(torch.full((4,), -torch.inf), dim=-1)).all()
    # a bias of -inf on every key masks the row as well
    bias = np.zeros((3, 4))
    bias[2] = -np.inf
    out_b, _ = scaled_dot_product_attention(q, k, v, mask=mask, bias=bias)
    assert not out_b[..., 1:, :].any()
    # and an empty row gets no gradient in q, nor sends any to k and v
    grads = attention_backward(np.ones_like(out), cache)
    assert not grads.dq[..., 1, :].any()
    only_row_1 = np.zeros_like(out)
    only_row_1[..., 1, :] = 1.0
    grads = attention_backward(only_row_1, cache)
    assert not grads.dk.any() and not grads.dv.any()


@pytest.mark.claim(
    "004 Gradient Flow Through Attention",
    "`dL/dS = A * (dL/dA - (dL/dA * A).sum(dim=-1, keepdim=True))` through the row-wise softmax",
    "verified",
    domain=r"$1 \le H_{kv} \le 2$ with $H / H_{kv} \in \{1, 2\}$, $2 \le L \le 4$, "
           r"$1 \le S \le 5$ ($L \ne S$ included), $1 \le D, D_v \le 3$, random masks with and "
           "without fully masked rows, a bias, central differences in float64, hypothesis",
    chapter="03_gradients")
@settings(max_examples=15, deadline=None)
@given(H_kv=st.integers(1, 2), n_rep=st.integers(1, 2), L=st.integers(2, 4), S=st.integers(1, 5),
       D=st.integers(1, 3), D_v=st.integers(1, 3), empty_rows=st.booleans(), seed=st.integers(0, 2**16))
def test_gradient_matches_central_differences_with_a_mask_and_grouped_heads(H_kv, n_rep, L, S, D, D_v,
                                                                           empty_rows, seed):
    H = H_kv * n_rep
    inputs = _make_case(lead=(1,), H=H, H_kv=H_kv, L=L, S=S, D=D, D_v=D_v, mask=(1, H, L, S),
                        bias=(H, 1, S), empty_rows=empty_rows, seed=seed)
    q, k, v = inputs.pop("q"), inputs.pop("k"), inputs.pop("v")
    out, cache = scaled_dot_product_attention(q, k, v, **inputs)
    w = np.random.default_rng(12).standard_normal(out.shape)
    grads = attention_backward(w, cache)

    def loss(qq, kk, vv):
        return float(np.sum(w * scaled_dot_product_attention(qq, kk, vv, **inputs)[0]))

    check_gradient(lambda x: loss(x, k, v), q, grads.dq, name="q")
    check_gradient(lambda x: loss(q, x, v), k, grads.dk, name="k")
    check_gradient(lambda x: loss(q, k, x), v, grads.dv, name="v")


def test_repeat_kv_matches_torch_repeat_interleave():
    _, k, _ = random_qkv(B=2, H=6, H_kv=3, L=2, S=4, D=2, seed=0)
    expected = torch.from_numpy(k).repeat_interleave(2, dim=-3).numpy()
    np.testing.assert_array_equal(repeat_kv(k, 6), expected)
    assert repeat_kv(k, 3) is k


@settings(max_examples=30, deadline=None)
@given(B=st.integers(1, 2), H_kv=st.integers(1, 4), n_rep=st.integers(1, 4), S=st.integers(0, 3))
def test_repeat_kv_takes_the_query_heads_where_hugging_face_takes_n_rep(B, H_kv, n_rep, S):
    # Hugging Face's repeat_kv(x, n_rep): a new axis of n_rep copies after the head axis, then
    # merged into it. Ours takes H = n_rep * H_kv, the number of query heads.
    _, k, _ = random_qkv(B=B, H=H_kv, L=1, S=S, D=3, seed=S)
    t = torch.from_numpy(k)
    hf = t[:, :, None].expand(B, H_kv, n_rep, S, 3).reshape(B, H_kv * n_rep, S, 3).numpy()
    np.testing.assert_array_equal(repeat_kv(k, n_rep * H_kv), hf)
    if H_kv > 1:  # H must be a multiple of H_kv: n_rep is not a valid H
        with pytest.raises(ValueError, match="multiple of the H_kv"):
            repeat_kv(k, n_rep * H_kv + 1)


def test_dot_product_attention_is_attention_with_scale_one():
    inputs = _make_case(L=4, S=6, D=16, mask=(4, 6), bias=(3, 4, 6), seed=3)
    scale = inputs.pop("scale")
    assert scale is None
    out, cache = dot_product_attention(**inputs)
    ref, ref_cache = scaled_dot_product_attention(**inputs, scale=1.0)
    assert_close(out, ref, name="out", **TOL)
    assert cache.scale == 1.0
    expected, _ = _torch_attention(**inputs, scale=1.0)
    assert_close(out, expected, name="out against torch", **TOL)
    # the unscaled scores of q equal the default-scaled scores of sqrt(D) q
    scaled, _ = scaled_dot_product_attention(inputs["q"] * 4.0, inputs["k"], inputs["v"],
                                             mask=inputs["mask"], bias=inputs["bias"])
    assert_close(out, scaled, name="out with q * sqrt(D)", **TOL)
    dout = np.random.default_rng(0).standard_normal(out.shape)
    _, ref_grads = _torch_attention(**inputs, scale=1.0, dout=dout)
    _assert_grads(attention_backward(dout, cache), ref_grads)


# ---------------------------------------------------------------------------------------------
# additive (Bahdanau) attention
# ---------------------------------------------------------------------------------------------


def _additive_inputs(seed=0, L=4, S=6, D_q=3, D_k=5, A=7, D_v=2):
    rng = np.random.default_rng(seed)
    return dict(
        q=rng.standard_normal((2, L, D_q)), k=rng.standard_normal((2, S, D_k)),
        v=rng.standard_normal((2, S, D_v)), w_q=rng.standard_normal((D_q, A)),
        w_k=rng.standard_normal((D_k, A)), w_a=rng.standard_normal(A),
    )


def _torch_additive(q, k, v, w_q, w_k, w_a, mask=None):
    q, k, v, w_q, w_k, w_a = to_torch(q, k, v, w_q, w_k, w_a)
    hidden = torch.tanh((q @ w_q).unsqueeze(-2) + (k @ w_k).unsqueeze(-3))  # (B, L, S, A)
    scores = torch.einsum("blsa,a->bls", hidden, w_a)  # (B, L, S)
    masked = scores if mask is None else scores.masked_fill(~torch.from_numpy(mask), -torch.inf)
    probs = torch.softmax(masked, dim=-1)
    return scores.numpy(), probs.numpy(), (probs @ v).numpy()


def test_additive_scores_and_attention_match_a_torch_implementation():
    inputs = _additive_inputs()
    mask = np.random.default_rng(1).random((4, 6)) < 0.6
    mask[:, 0] = True
    scores_ref, probs_ref, out_ref = _torch_additive(**inputs, mask=mask)
    scores = additive_scores(inputs["q"], inputs["k"], inputs["w_q"], inputs["w_k"], inputs["w_a"])
    assert scores.shape == (2, 4, 6)
    assert_close(scores, scores_ref, name="scores", **TOL)
    out, probs = additive_attention(**inputs, mask=mask)
    assert_close(probs, probs_ref, name="probs", **TOL)
    assert_close(out, out_ref, name="out", **TOL)
    out_nomask, _ = additive_attention(**inputs)
    assert_close(out_nomask, _torch_additive(**inputs)[2], name="out without mask", **TOL)


def test_additive_attention_gives_zeros_on_a_fully_masked_row():
    inputs = _additive_inputs(seed=2)
    mask = np.ones((4, 6), dtype=bool)
    mask[2] = False
    out, probs = additive_attention(**inputs, mask=mask)
    assert not out[:, 2].any() and not probs[:, 2].any()
    assert_close(probs.sum(axis=-1)[:, [0, 1, 3]], np.ones((2, 3)), name="row sums")


def test_additive_functions_reject_bad_input():
    x = _additive_inputs()
    with pytest.raises(ValueError, match="w_q"):
        additive_scores(x["q"], x["k"], x["w_k"], x["w_k"], x["w_a"])
    with pytest.raises(ValueError, match="w_k"):
        additive_scores(x["q"], x["k"], x["w_q"], x["w_q"], x["w_a"])
    with pytest.raises(ValueError, match="A"):
        additive_scores(x["q"], x["k"], x["w_q"], x["w_k"], x["w_a"][:-1])
    with pytest.raises(ValueError, match="w_a"):
        additive_scores(x["q"], x["k"], x["w_q"], x["w_k"], x["w_a"][:, None])
    with pytest.raises(TypeError, match="q"):
        additive_scores(x["q"].astype(np.int64), x["k"], x["w_q"], x["w_k"], x["w_a"])
    with pytest.raises(ValueError, match="v"):
        additive_attention(x["q"], x["k"], x["v"][:, :-1], x["w_q"], x["w_k"], x["w_a"])
    with pytest.raises(ValueError, match=r"mask of shape \(3, 6\)"):
        additive_attention(**x, mask=np.ones((3, 6), dtype=bool))
    with pytest.raises(TypeError, match="mask"):
        additive_attention(**x, mask=np.ones((4, 6)))


# ---------------------------------------------------------------------------------------------
# dropout on the attention weights
# ---------------------------------------------------------------------------------------------


def test_dropout_with_p_zero_is_plain_attention():
    inputs = _make_case(H=4, H_kv=2, L=4, S=6, mask=(4, 6), bias=(4, 1, 6), seed=5)
    out, cache = scaled_dot_product_attention(**inputs)
    d_out, d_cache = dropout_attention(**inputs, p=0.0, rng=np.random.default_rng(0))
    assert isinstance(d_cache, DropoutCache)
    assert d_cache.keep.all()
    assert_close(d_out, out, name="out", **TOL)
    dout = np.random.default_rng(1).standard_normal(out.shape)
    _assert_grads(dropout_attention_backward(dout, d_cache), attention_backward(dout, cache))


def test_dropout_is_unbiased_in_expectation():
    q, k, v = random_qkv(B=1, H=2, L=3, S=5, D=4, D_v=2, seed=8)
    plain, _ = scaled_dot_product_attention(q, k, v)
    p, n = 0.3, 4000
    rng = np.random.default_rng(2024)
    samples = []
    kept = 0.0
    for _ in range(n):
        out, cache = dropout_attention(q, k, v, p=p, rng=rng)
        samples.append(out)
        kept += cache.keep.mean()
    samples = np.stack(samples)  # (n, B, H, L, D_v)
    mean, std_err = samples.mean(axis=0), samples.std(axis=0) / np.sqrt(n)
    assert (std_err > 0).all()  # dropout does change the output
    assert (np.abs(mean - plain) <= 5.0 * std_err).all()
    # the test has power: without the 1 / (1 - p) rescaling the mean would be (1 - p) * plain
    assert (np.abs(mean * (1 - p) - plain) > 5.0 * std_err).any()
    # each weight is kept with probability 1 - p
    n_weights = n * cache.keep.size
    assert abs(kept / n - (1 - p)) <= 5.0 * np.sqrt(p * (1 - p) / n_weights)


def _torch_dropout_replay(q, k, v, keep, p, *, mask=None, bias=None, scale=None, dout=None):
    """out = ((P * keep) / (1 - p)) @ V in torch with the same keep mask, and its autograd."""
    qt, kt, vt = to_torch(q, k, v, requires_grad=True)
    group = q.shape[-3] // k.shape[-3]
    k_rep, v_rep = kt.repeat_interleave(group, dim=-3), vt.repeat_interleave(group, dim=-3)
    s = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    scores = (qt @ k_rep.transpose(-1, -2)) * s  # (B, H, L, S)
    if bias is not None:
        scores = scores + torch.from_numpy(bias)
    allowed = torch.ones_like(scores, dtype=torch.bool)
    if mask is not None:
        allowed = allowed & torch.from_numpy(mask)
    empty = ~allowed.any(dim=-1, keepdim=True)  # rows with nothing to attend to
    scores = torch.where(empty, 0.0, scores.masked_fill(~allowed, -torch.inf))
    probs = torch.where(empty, 0.0, torch.softmax(scores, dim=-1))
    out = (probs * torch.from_numpy(keep) / (1.0 - p)) @ v_rep  # (B, H, L, D_v)
    out.backward(torch.from_numpy(dout))
    return out.detach().numpy(), AttentionGrads(qt.grad.numpy(), kt.grad.numpy(), vt.grad.numpy())


@pytest.mark.parametrize("H_kv", [1, 2, 4])
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_backward_matches_torch_autograd_with_the_same_keep_mask(H_kv, p):
    inputs = _make_case(H=4, H_kv=H_kv, L=4, S=6, D=3, D_v=5, mask=(2, 4, 4, 6), bias=(4, 6),
                        empty_rows=True, seed=H_kv)
    out, cache = dropout_attention(**inputs, p=p, rng=np.random.default_rng(9))
    assert not cache.keep.all() and cache.keep.any()
    dout = np.random.default_rng(10).standard_normal(out.shape)
    expected, ref = _torch_dropout_replay(**inputs, keep=cache.keep, p=p, dout=dout)
    assert_close(out, expected, name="out", **TOL)
    _assert_grads(dropout_attention_backward(dout, cache), ref)


def test_dropout_gradient_matches_central_differences():
    inputs = _make_case(lead=(1,), H=2, H_kv=1, L=3, S=4, D=3, D_v=2, mask=(3, 4), seed=13)
    q, k, v = inputs.pop("q"), inputs.pop("k"), inputs.pop("v")
    p = 0.4

    def run(qq, kk, vv):  # a fresh generator with one seed replays the same keep mask
        return dropout_attention(qq, kk, vv, p=p, rng=np.random.default_rng(77), **inputs)

    out, cache = run(q, k, v)
    assert not cache.keep.all()
    w = np.random.default_rng(14).standard_normal(out.shape)
    grads = dropout_attention_backward(w, cache)
    check_gradient(lambda x: float(np.sum(w * run(x, k, v)[0])), q, grads.dq, name="q")
    check_gradient(lambda x: float(np.sum(w * run(q, x, v)[0])), k, grads.dk, name="k")
    check_gradient(lambda x: float(np.sum(w * run(q, k, x)[0])), v, grads.dv, name="v")


def test_dropout_functions_reject_bad_input():
    q, k, v = random_qkv(B=1, H=2, L=3, S=4, D=3, seed=0)
    rng = np.random.default_rng(0)
    for bad in (1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match=r"p must lie in \[0, 1\)"):
            dropout_attention(q, k, v, p=bad, rng=rng)
    with pytest.raises(TypeError, match="p"):
        dropout_attention(q, k, v, p="0.1", rng=rng)
    with pytest.raises(TypeError, match="rng"):
        dropout_attention(q, k, v, p=0.1, rng=np.random.RandomState(0))
    with pytest.raises(ValueError, match="multiple"):
        dropout_attention(q, k[:, :1].repeat(3, axis=1), v[:, :1].repeat(3, axis=1), p=0.1, rng=rng)
    out, cache = dropout_attention(q, k, v, p=0.1, rng=rng)
    with pytest.raises(ValueError, match=r"dout must have the output's shape \(1, 2, 3, 3\)"):
        dropout_attention_backward(out[..., :2], cache)


# ---------------------------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------------------------


@st.composite
def attention_inputs(draw, with_mask=True):
    B = draw(st.integers(1, 2))
    H_kv = draw(st.integers(1, 2))
    H = H_kv * draw(st.integers(1, 2))
    L, S = draw(st.integers(1, 5)), draw(st.integers(1, 6))
    D, D_v = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    spread = draw(st.sampled_from([0.1, 1.0, 5.0]))  # soft to nearly one-hot weights
    rng = np.random.default_rng(seed)
    q = spread * rng.standard_normal((B, H, L, D))  # (B, H, L, D)
    k = rng.standard_normal((B, H_kv, S, D))  # (B, H_kv, S, D)
    v = rng.standard_normal((B, H_kv, S, D_v))  # (B, H_kv, S, D_v)
    mask = None
    if with_mask and draw(st.booleans()):
        mask = rng.random((B, H, L, S)) < draw(st.sampled_from([0.3, 0.7, 1.0]))
    return q, k, v, mask


@pytest.mark.claim(
    "002 §2.2",
    r"$\alpha_{ij} \ge 0$ and $\sum_j \alpha_{ij} = 1$ for every query $i$",
    "verified",
    domain=r"$1 \le B, H_{kv} \le 2$, $H_{kv} \le H \le 2 H_{kv}$, $1 \le L \le 5$, "
           r"$1 \le S \le 6$, $1 \le D \le 4$, $1 \le D_v \le 3$, soft to nearly one-hot scores, "
           "random masks including fully masked rows (zero rows then), hypothesis")
@pytest.mark.claim(
    "000 Step 3: Normalization",
    "Each row of the attention weight matrix $A$ sums to 1",
    "verified",
    domain=r"$1 \le B, H_{kv} \le 2$, $H_{kv} \le H \le 2 H_{kv}$, $1 \le L \le 5$, "
           r"$1 \le S \le 6$, $1 \le D \le 4$, $1 \le D_v \le 3$, soft to nearly one-hot scores, "
           "random masks including fully masked rows (zero rows then), hypothesis")
@SETTINGS
@given(attention_inputs())
def test_attention_weights_are_a_distribution_or_zero_on_each_row(inputs):
    q, k, v, mask = inputs
    _, cache = scaled_dot_product_attention(q, k, v, mask=mask)
    full = _full_mask(mask, q, k)
    assert (cache.probs >= 0).all()
    assert not cache.probs[~full].any()  # masked keys get exactly zero weight
    expected_sums = full.any(axis=-1).astype(np.float64)
    assert_close(cache.probs.sum(axis=-1), expected_sums, rtol=1e-12, atol=1e-12, name="row sums")


@SETTINGS
@given(attention_inputs(), st.randoms(use_true_random=False))
def test_permuting_queries_permutes_the_output_rows(inputs, random):
    q, k, v, mask = inputs
    L = q.shape[-2]
    perm = np.array(random.sample(range(L), L))
    full = _full_mask(mask, q, k)
    out, cache = scaled_dot_product_attention(q, k, v, mask=full)
    out_p, cache_p = scaled_dot_product_attention(q[..., perm, :], k, v, mask=full[..., perm, :])
    assert_close(out_p, out[..., perm, :], name="permuted output", **TOL)
    assert_close(cache_p.probs, cache.probs[..., perm, :], name="permuted probs", **TOL)


@SETTINGS
@given(attention_inputs(), st.randoms(use_true_random=False))
def test_permuting_keys_and_values_together_leaves_the_output_unchanged(inputs, random):
    q, k, v, mask = inputs
    S = k.shape[-2]
    perm = np.array(random.sample(range(S), S))
    full = _full_mask(mask, q, k)
    out, cache = scaled_dot_product_attention(q, k, v, mask=full)
    out_p, cache_p = scaled_dot_product_attention(q, k[..., perm, :], v[..., perm, :],
                                                  mask=full[..., perm])
    assert_close(out_p, out, name="output with permuted keys", **TOL)
    assert_close(cache_p.probs, cache.probs[..., perm], name="permuted probs", **TOL)


@SETTINGS
@given(attention_inputs())
def test_each_output_coordinate_lies_between_the_attended_values(inputs):
    q, k, v, mask = inputs
    out, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    full = _full_mask(mask, q, k)[..., None]  # (B, H, L, S, 1)
    v_rep = repeat_kv(v, q.shape[-3])[..., None, :, :]  # (B, H, 1, S, D_v)
    lo = np.where(full, v_rep, np.inf).min(axis=-2)  # (B, H, L, D_v)
    hi = np.where(full, v_rep, -np.inf).max(axis=-2)  # (B, H, L, D_v)
    attended = full.any(axis=-2)[..., 0]  # (B, H, L)
    tol = 1e-12 * (1 + np.abs(v).max())
    assert (out[attended] >= lo[attended] - tol).all()
    assert (out[attended] <= hi[attended] + tol).all()
    assert not out[~attended].any()


@SETTINGS
@given(attention_inputs(), st.floats(0.25, 4.0), st.floats(0.1, 2.0))
def test_moving_a_factor_between_the_keys_queries_and_scale_changes_nothing(inputs, c, s):
    q, k, v, mask = inputs
    out, _ = scaled_dot_product_attention(q, k, v, mask=mask, scale=s)
    out_k, _ = scaled_dot_product_attention(q, c * k, v, mask=mask, scale=s / c)
    out_q, _ = scaled_dot_product_attention(c * q, k, v, mask=mask, scale=s / c)
    assert_close(out_k, out, name="output with c k and s / c", rtol=1e-9, atol=1e-11)
    assert_close(out_q, out, name="output with c q and s / c", rtol=1e-9, atol=1e-11)
    default, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    explicit, _ = scaled_dot_product_attention(q, k, v, mask=mask, scale=1 / np.sqrt(q.shape[-1]))
    assert_close(default, explicit, name="default scale", **TOL)


@SETTINGS
@given(attention_inputs(), st.floats(-3.0, 3.0), st.floats(-3.0, 3.0))
def test_output_is_affine_in_the_values_on_attended_rows(inputs, a, b):
    q, k, v, mask = inputs
    out, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    out_ab, _ = scaled_dot_product_attention(q, k, a * v + b, mask=mask)
    attended = _full_mask(mask, q, k).any(axis=-1)[..., None]  # (B, H, L, 1)
    expected = np.where(attended, a * out + b, 0.0)
    assert_close(out_ab, expected, name="output with a v + b", rtol=1e-10, atol=1e-11)


@SETTINGS
@given(attention_inputs(), st.integers(0, 2**32 - 1))
def test_adding_a_constant_to_each_row_of_scores_changes_nothing(inputs, seed):
    q, k, v, mask = inputs
    shift = 40.0 * np.random.default_rng(seed).standard_normal(q.shape[:-1] + (1,))  # (B, H, L, 1)
    out, cache = scaled_dot_product_attention(q, k, v, mask=mask)
    out_s, cache_s = scaled_dot_product_attention(q, k, v, mask=mask, bias=shift)
    assert_close(out_s, out, name="output with a per-row shift", rtol=1e-9, atol=1e-11)
    assert_close(cache_s.probs, cache.probs, name="probs with a per-row shift", rtol=1e-9, atol=1e-12)
    dout = np.ones_like(out)
    _assert_grads(attention_backward(dout, cache_s), attention_backward(dout, cache),
                  rtol=1e-8, atol=1e-10)


@SETTINGS
@given(attention_inputs())
def test_grouped_heads_equal_multi_head_with_repeated_keys_and_values(inputs):
    q, k, v, mask = inputs
    H, H_kv = q.shape[-3], k.shape[-3]
    group = H // H_kv
    k_rep, v_rep = np.repeat(k, group, axis=-3), np.repeat(v, group, axis=-3)
    out, cache = scaled_dot_product_attention(q, k, v, mask=mask)
    out_rep, cache_rep = scaled_dot_product_attention(q, k_rep, v_rep, mask=mask)
    assert_close(out, out_rep, name="grouped output", **TOL)
    dout = np.random.default_rng(0).standard_normal(out.shape)
    g, g_rep = attention_backward(dout, cache), attention_backward(dout, cache_rep)
    B, _, S, D = k.shape
    assert_close(g.dq, g_rep.dq, name="dq", **TOL)
    assert_close(g.dk, g_rep.dk.reshape(B, H_kv, group, S, D).sum(axis=2), name="dk", **TOL)
    assert_close(g.dv, g_rep.dv.reshape(B, H_kv, group, S, -1).sum(axis=2), name="dv", **TOL)


def test_causal_output_row_depends_only_on_earlier_keys():
    q, k, v = random_qkv(B=1, H=2, L=6, D=3, seed=21)
    out, cache = scaled_dot_product_attention(q, k, v, mask=causal_mask(6))
    grads = attention_backward(_row(6, 2, 3), cache)  # the gradient of output row 2 alone
    assert not grads.dk[..., 3:, :].any() and not grads.dv[..., 3:, :].any()
    assert grads.dk[..., :3, :].any() and grads.dv[..., :3, :].any()


def _row(L, i, D_v):
    """dout that selects output row ``i``: ones there, zeros elsewhere, shape (1, 2, L, D_v)."""
    dout = np.zeros((1, 2, L, D_v))
    dout[..., i, :] = 1.0
    return dout


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------


def test_scaled_dot_product_attention_rejects_bad_input():
    q, k, v = random_qkv(B=2, H=4, L=3, S=5, D=4, D_v=2, seed=0)
    with pytest.raises(ValueError, match=r"head dim D.*D=4.*D=3"):
        scaled_dot_product_attention(q, k[..., :3], v)
    with pytest.raises(ValueError, match=r"k and v.*\(2, 4, 5, 4\).*\(2, 4, 4, 2\)"):
        scaled_dot_product_attention(q, k, v[..., :4, :])
    with pytest.raises(ValueError, match=r"H=4.*H_kv=3"):
        scaled_dot_product_attention(q, k[:, :3], v[:, :3])
    with pytest.raises(ValueError, match="batch"):
        scaled_dot_product_attention(q, k[:1], v[:1])
    with pytest.raises(ValueError, match="number of dimensions"):
        scaled_dot_product_attention(q, k[0], v[0])
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        scaled_dot_product_attention(q[0, 0, 0], k[0, 0, 0], v[0, 0, 0])
    with pytest.raises(ValueError, match=r"mask of shape \(3, 4\) does not broadcast.*\(2, 4, 3, 5\)"):
        scaled_dot_product_attention(q, k, v, mask=np.ones((3, 4), dtype=bool))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 1, 1, 5\)"):
        scaled_dot_product_attention(q, k, v, mask=np.ones((3, 1, 1, 5), dtype=bool))
    with pytest.raises(TypeError, match="mask must be boolean.*float64"):
        scaled_dot_product_attention(q, k, v, mask=np.ones((3, 5)))
    with pytest.raises(TypeError, match="mask must be boolean.*int64"):
        scaled_dot_product_attention(q, k, v, mask=np.ones((3, 5), dtype=np.int64))
    bad_bias = np.zeros((3, 5))
    bad_bias[1, 2] = np.nan
    with pytest.raises(ValueError, match="bias.*NaN"):
        scaled_dot_product_attention(q, k, v, bias=bad_bias)
    with pytest.raises(ValueError, match=r"bias of shape \(3, 4\)"):
        scaled_dot_product_attention(q, k, v, bias=np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"bias of shape \(1, 1, 1, 3, 5\)"):
        scaled_dot_product_attention(q, k, v, bias=np.zeros((1, 1, 1, 3, 5)))
    with pytest.raises(TypeError, match="q must have a floating dtype.*int64"):
        scaled_dot_product_attention(q.astype(np.int64), k, v)
    with pytest.raises(TypeError, match="v must have a floating dtype"):
        scaled_dot_product_attention(q, k, v.astype(np.int32))
    with pytest.raises(TypeError, match="torch tensor"):
        scaled_dot_product_attention(torch.from_numpy(q), k, v)
    with pytest.raises(TypeError, match="scale"):
        scaled_dot_product_attention(q, k, v, scale="0.5")
    with pytest.raises(ValueError, match="scale"):
        scaled_dot_product_attention(q, k, v, scale=np.inf)


def test_attention_backward_rejects_a_dout_of_the_wrong_shape():
    q, k, v = random_qkv(B=2, H=2, L=3, S=5, D=4, D_v=2, seed=0)
    out, cache = scaled_dot_product_attention(q, k, v)
    with pytest.raises(ValueError, match=r"dout must have the output's shape \(2, 2, 3, 2\).*\(2, 2, 3, 4\)"):
        attention_backward(np.zeros((2, 2, 3, 4)), cache)
    with pytest.raises(TypeError, match="dout"):
        attention_backward(out.astype(np.int64), cache)


def test_dot_product_attention_rejects_bad_input():
    q, k, v = random_qkv(B=1, H=2, L=3, S=5, D=4, seed=0)
    with pytest.raises(ValueError, match="head dim D"):
        dot_product_attention(q, k[..., :2], v)
    with pytest.raises(TypeError, match="mask must be boolean"):
        dot_product_attention(q, k, v, mask=np.ones((3, 5), dtype=np.float32))


def test_nan_in_the_queries_or_keys_is_reported_under_their_own_name():
    q, k, v = random_qkv(B=1, H=2, L=3, S=5, D=4, seed=0)
    q_nan, k_nan = q.copy(), k.copy()
    q_nan[0, 1, 2, 3] = np.nan
    k_nan[0, 0, 4, 0] = np.nan
    with pytest.raises(ValueError, match="q.*NaN"):
        scaled_dot_product_attention(q_nan, k, v)
    with pytest.raises(ValueError, match="k.*NaN"):
        scaled_dot_product_attention(q, k_nan, v)


def test_scale_accepts_any_real_number_including_numpy_integers():
    q, k, v = random_qkv(B=1, H=2, L=3, S=5, D=4, seed=0)
    ref, _ = scaled_dot_product_attention(q, k, v, scale=2.0)
    for scale in (2, np.int64(2), np.float32(2.0)):
        out, cache = scaled_dot_product_attention(q, k, v, scale=scale)
        assert cache.scale == 2.0
        assert_close(out, ref, name=f"out with scale={scale!r}", **TOL)


# ---------------------------------------------------------------------------------------------
# claims of the source documents repeated by the chapters on attention and on gradients
# ---------------------------------------------------------------------------------------------


@pytest.mark.claim(
    "001 Key Insight",
    "Attention is 'database lookup with soft matching': the query matches against the keys to "
    "retrieve weighted values",
    "clarified",
    correction="An analogy: each output is an average of all the values under weights that form a "
               "distribution ordered as the query's scores; it is the value of one key only in the "
               "limit of a large scale, and only when one key scores highest",
    box="corr-soft-lookup",
    domain=r"what the analogy states: each output is the average of the values under weights "
           "that form a distribution, ordered as the query-key scores, and the value of the best "
           r"key once the scale is large: $1 \le L \le 3$, $1 \le S \le 8$, $1 \le D, D_v \le 4$, "
           "hypothesis")
@SETTINGS
@given(L=st.integers(1, 3), S=st.integers(1, 8), D=st.integers(1, 4), D_v=st.integers(1, 4),
       seed=st.integers(0, 2**16))
def test_a_large_scale_turns_attention_into_a_hard_lookup_of_the_best_key(L, S, D, D_v, seed):
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((L, D)), rng.standard_normal((S, D)), rng.standard_normal((S, D_v))
    scores = q @ k.T  # (L, S)
    soft, cache = scaled_dot_product_attention(q, k, v)
    p = cache.probs
    assert (p > 0).all() and np.allclose(p.sum(axis=-1), 1.0, rtol=0, atol=1e-12)  # soft matching
    assert_close(soft, p @ v, name="weighted values")
    for i in range(L):  # a better match never gets less weight
        order = np.argsort(scores[i], kind="stable")
        assert (np.diff(p[i, order]) >= -1e-15).all()
    top2 = np.sort(scores, axis=-1)[:, -2:] if S > 1 else np.concatenate([scores - 1, scores], -1)
    gap = top2[:, 1] - top2[:, 0]  # (L,)
    if (gap > 1e-3).all():  # a unique best key in every row: a large scale makes it a lookup
        hard, cache = scaled_dot_product_attention(q, k, v, scale=60.0 / gap.min())
        best = np.argmax(scores, axis=-1)
        assert_close(cache.probs, np.eye(S)[best], rtol=0, atol=S * np.exp(-50.0), name="one-hot weights")
        assert_close(hard, v[best], rtol=1e-12, atol=1e-12 + S * np.exp(-50.0) * np.abs(v).max(),
                     name="the value of the best-matching key")


@pytest.mark.claim(
    "002 §2.2",
    r"High $q_i \cdot k_j$ $\to$ high $\alpha_{ij}$: position $i$ attends to position $j$",
    "verified",
    domain="every pair of keys in every row: $B$, $H$, $L$, $S$, $D$, $D_v$ as in the distribution "
           r"test ($L \ne S$ included), grouped heads, hypothesis")
@SETTINGS
@given(attention_inputs(with_mask=False))
def test_a_larger_score_gets_a_larger_weight_in_its_row(inputs):
    q, k, v, _ = inputs
    _, cache = scaled_dot_product_attention(q, k, v)
    scores = q @ np.swapaxes(repeat_kv(k, q.shape[-3]), -1, -2)  # (B, H, L, S)
    larger = scores[..., :, None] > scores[..., None, :] + 1e-9  # (B, H, L, S, S)
    heavier = cache.probs[..., :, None] > cache.probs[..., None, :]
    underflow = cache.probs[..., :, None] == 0.0  # both weights rounded to zero
    assert (heavier | underflow)[larger].all()


@pytest.mark.claim(
    "000 Self-Attention vs Cross-Attention",
    "Self-attention: $Q = K = V = X$",
    "clarified",
    correction=r"Right as the arguments of $\operatorname{MultiHead}(Q, K, V)$ in Vaswani et al., "
               "which projects them: the queries, keys and values are $X W_Q$, $X W_K$, $X W_V$. "
               r"Taken literally (no projections) the scores $X X^\top$ are symmetric and, for "
               "generic inputs, each token attends mostly to itself.",
    domain="a counterexample to the literal reading: 4 sequences of $L = 8$ tokens of width 64, "
           "float64",
    box="corr-self-attention-qkv")
@pytest.mark.claim(
    "004 Self-Attention vs Cross-Attention",
    r"Self-attention: $Q = K = V = X$, $\mathrm{attn}[i,j] = \mathrm{similarity}(X[i], X[j])$",
    "corrected",
    correction="$Q$, $K$ and $V$ are different linear projections of $X$ ($Q = X W_Q$ etc.); "
               "without them the score matrix is symmetric and self-dominated.",
    domain="a counterexample to the literal reading: 4 sequences of $L = 8$ tokens of width 64, "
           "float64",
    box="corr-self-attention-qkv")
@pytest.mark.claim(
    "000 Self-Attention vs Cross-Attention",
    "Cross-attention: $Q = X_1$, $K = V = X_2$",
    "clarified",
    correction=r"Right as the arguments of $\operatorname{MultiHead}(Q, K, V)$, which projects "
               "them: $Q = X_1 W_Q$, $K = X_2 W_K$, $V = X_2 W_V$, so keys and values are "
               "different maps of $X_2$, $D_v$ may differ from $D$, and the output need not be a "
               "mixture of keys.",
    domain="a counterexample to the literal reading: 4 sequences of $L = 8$ tokens of width 64, "
           "float64",
    box="corr-self-attention-qkv")
def test_self_attention_without_projections_has_symmetric_self_dominated_scores():
    rng = np.random.default_rng(9)
    L, C, D = 8, 64, 16
    x = rng.standard_normal((4, L, C))  # (B, L, C)
    out, plain = scaled_dot_product_attention(x, x, x)
    scores = x @ np.swapaxes(x, -1, -2)  # (B, L, L)
    assert_close(scores, np.swapaxes(scores, -1, -2), rtol=0, atol=0, name="symmetric scores")
    self_weight = np.diagonal(plain.probs, axis1=-2, axis2=-1)  # (B, L)
    assert (np.argmax(plain.probs, axis=-1) == np.arange(L)).all()
    assert self_weight.mean() > 0.95
    assert_close(out, x, rtol=0, atol=0.2, name="Q = K = V = X is close to the identity map")
    w_q, w_k, w_v = (rng.standard_normal((C, D)) / np.sqrt(C) for _ in range(3))
    _, proj = scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v)
    proj_scores = (x @ w_q) @ np.swapaxes(x @ w_k, -1, -2)
    assert np.abs(proj_scores - np.swapaxes(proj_scores, -1, -2)).max() > 0.5
    assert np.diagonal(proj.probs, axis1=-2, axis2=-1).mean() < 0.5
    # cross-attention: with K = V = X_2 the output is a mixture of the keys themselves
    x_enc = rng.standard_normal((3, 7, C))  # (B, S, C)
    q = rng.standard_normal((3, 2, C))
    mixed, cache = scaled_dot_product_attention(q, x_enc, x_enc)
    assert_close(mixed, cache.probs @ x_enc, name="mixture of keys")
    out, _ = scaled_dot_product_attention(q @ w_q, x_enc @ w_k, x_enc @ w_v[:, :5])
    expected, _ = _torch_attention(q @ w_q, x_enc @ w_k, x_enc @ w_v[:, :5])
    assert out.shape == (3, 2, 5)
    assert_close(out, expected, name="cross-attention with projections", **TOL)


@pytest.mark.claim(
    "004 Gradient Flow Through Attention",
    r"$\partial A_{ik}/\partial S_{ij} = A_{ik}(1 - A_{ik})$ if $i = j$, $-A_{ik} A_{ij}$ if "
    r"$i \ne j$",
    "corrected",
    correction="The condition compares the column indices: "
               r"$\partial A_{ik}/\partial S_{ij} = A_{ik} (\delta_{kj} - A_{ij})$, and "
               r"$\partial A_{ik}/\partial S_{lj} = 0$ for $l \ne i$ because each row is "
               "normalised separately.",
    domain="a counterexample for the literal condition and the full row-wise Jacobian of a "
           r"$3 \times 4$ score matrix against `torch.autograd`",
    chapter="03_gradients",
    box="corr-jacobian-indices")
def test_rowwise_softmax_derivative_compares_the_column_indices():
    z = np.random.default_rng(0).standard_normal((3, 4))
    a = torch.softmax(to_torch(z), dim=-1).numpy()
    jac = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, dim=-1), to_torch(z)).numpy()
    expected = np.zeros((3, 4, 3, 4))  # [i, k, l, j] = dA_ik / dS_lj
    for i in range(3):
        expected[i, :, i, :] = np.diag(a[i]) - np.outer(a[i], a[i])
    assert_close(jac, expected, rtol=1e-12, atol=1e-15, name="row-wise softmax Jacobian")
    # read literally, the source's 'i != j' branch gives dA_01/dS_01 = -A_01^2, the wrong sign
    assert jac[0, 1, 0, 1] == pytest.approx(a[0, 1] * (1 - a[0, 1]), rel=1e-12)
    assert jac[0, 1, 0, 1] > 0 > -a[0, 1] ** 2


@pytest.mark.claim(
    "004 Gradient Flow Through Attention",
    r"$\partial L/\partial X = \partial L/\partial Q\, \partial Q/\partial X$ "
    r"$+ \partial L/\partial K\, \partial K/\partial X$ "
    r"$+ \partial L/\partial V\, \partial V/\partial X$ ($Y$ depends on $X$ through $Q$, $K$ and "
    "$V$)",
    "verified",
    domain=r"$1 \le B \le 3$, $1 \le L \le 8$, $1 \le C \le 8$, $1 \le D, D_v \le 5$ ($D \ne D_v$ "
           "included), causal or not, against `torch.autograd`, hypothesis",
    chapter="03_gradients")
@SETTINGS
@given(B=st.integers(1, 3), L=st.integers(1, 8), C=st.integers(1, 8), D=st.integers(1, 5),
       D_v=st.integers(1, 5), causal=st.booleans(), seed=st.integers(0, 2**16))
def test_self_attention_input_gradient_is_the_sum_of_three_paths(B, L, C, D, D_v, causal, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, L, C))  # (B, L, C)
    w_q, w_k, w_v = rng.standard_normal((C, D)), rng.standard_normal((C, D)), rng.standard_normal((C, D_v))
    dy = rng.standard_normal((B, L, D_v))
    mask = causal_mask(L) if causal else None
    _, cache = scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, mask=mask)
    g = attention_backward(dy, cache)
    dx = g.dq @ w_q.T + g.dk @ w_k.T + g.dv @ w_v.T  # (B, L, C)
    xt, wqt, wkt, wvt = to_torch(x, w_q, w_k, w_v, requires_grad=True)
    yt = F.scaled_dot_product_attention(xt @ wqt, xt @ wkt, xt @ wvt, is_causal=causal)
    yt.backward(torch.from_numpy(dy))
    assert_close(dx, xt.grad, name="dX", **TOL)
    for w, wt, dpart in ((w_q, wqt, g.dq), (w_k, wkt, g.dk), (w_v, wvt, g.dv)):
        assert_close(np.einsum("blc,bld->cd", x, dpart), wt.grad, name="dW", **TOL)


def _rnn_jacobian_norms(w, u, x):
    """||d h_T / d x_t||_2 for h_t = tanh(W h_{t-1} + U x_t), by torch.autograd; shape (T,)."""
    wt, ut = to_torch(w, u)

    def last_state(xt):
        h = torch.zeros(w.shape[0], dtype=torch.float64)
        for t in range(len(xt)):
            h = torch.tanh(wt @ h + ut @ xt[t])
        return h

    jac = torch.autograd.functional.jacobian(last_state, to_torch(x))  # (H, T, C)
    return torch.linalg.matrix_norm(jac.permute(1, 0, 2), ord=2).numpy()


def _rnn_input_jacobian_norms(gain, *, T=32, C=8, H=16, seed=0):
    """The norms of :func:`_rnn_jacobian_norms` for W with i.i.d. N(0, gain^2 / H) entries."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((T, C))
    w = gain * rng.standard_normal((H, H)) / np.sqrt(H)
    u = rng.standard_normal((H, C)) / np.sqrt(C)
    return _rnn_jacobian_norms(w, u, x)


def _lstm_input_jacobian_norms(forget_bias, *, T=64, C=4, H=8, seed=0):
    """||d h_T / d x_t||_2 of a one-layer ``torch.nn.LSTM`` with its forget-gate bias set; (T,)."""
    torch.manual_seed(seed)
    lstm = torch.nn.LSTM(C, H, dtype=torch.float64)
    with torch.no_grad():  # torch's gate order (input, forget, cell, output): forget is [H, 2H)
        lstm.bias_ih_l0[H: 2 * H] = forget_bias
        lstm.bias_hh_l0[H: 2 * H] = 0.0
    x = to_torch(np.random.default_rng(seed).standard_normal((T, C)))
    jac = torch.autograd.functional.jacobian(lambda xt: lstm(xt)[0][-1], x)  # (H, T, C)
    return torch.linalg.matrix_norm(jac.permute(1, 0, 2), ord=2).numpy()


def _attention_input_jacobian_norms(sharpness, *, T=32, C=8, D=16, seed=0):
    """||d y_T / d x_t||_F for the last row of self-attention, by attention_backward; shape (T,)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((T, C))
    w_q, w_k, w_v = (rng.standard_normal((C, D)) / np.sqrt(C) for _ in range(3))
    w_q = sharpness * w_q
    out, cache = scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v)
    sq = np.zeros(T)
    for a in range(D):
        dout = np.zeros_like(out)
        dout[-1, a] = 1.0
        g = attention_backward(dout, cache)
        sq += np.sum((g.dq @ w_q.T + g.dk @ w_k.T + g.dv @ w_v.T) ** 2, axis=-1)
    return np.sqrt(sq)


def _far_over_near(norms):
    """The gradient reaching the first 8 tokens over that reaching the 8 before the last (medians)."""
    return np.median(norms[:8]) / np.median(norms[-9:-1])


@pytest.mark.claim(
    "000 Optimization",
    "Attention provides direct paths between all positions: shortest path length $O(1)$ compared "
    "to $O(n)$ for RNNs",
    "verified",
    domain=r"tanh RNNs with $1 \le T \le 16$ steps, hidden size $1 \le H \le 6$, input width "
           r"$1 \le C \le 3$, $\lVert W \rVert_2$ from 0.1 to 3, every pair $s \le t$: "
           r"$\partial h_t / \partial x_s$ against the product of its $t - s$ step Jacobians "
           "(autograd), zero for $s > t$; one causal self-attention layer of the same length: "
           r"$\partial y_t / \partial x_s \ne 0$ for every $s \le t$; hypothesis",
    chapter="03_gradients")
@settings(max_examples=20, deadline=None)
@given(T=st.integers(1, 16), H=st.integers(1, 6), C=st.integers(1, 3),
       rho=st.floats(0.1, 3.0), seed=st.integers(0, 2**16))
def test_an_rnn_reaches_back_t_minus_s_steps_through_t_minus_s_jacobians_attention_in_one(T, H, C, rho, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((T, C))
    g = rng.standard_normal((H, H))
    w, u = rho * g / np.linalg.norm(g, 2), rng.standard_normal((H, C))
    wt, ut = to_torch(w, u)

    def states(xt):  # (T, H)
        h, out = torch.zeros(H, dtype=torch.float64), []
        for t in range(T):
            h = torch.tanh(wt @ h + ut @ xt[t])
            out.append(h)
        return torch.stack(out)

    jac = torch.autograd.functional.jacobian(states, to_torch(x)).numpy()  # (T, H, T, C)
    h = states(to_torch(x)).detach().numpy()
    for t in range(T):
        for s in range(t + 1):
            assert_close(jac[t, :, s], _chain(h, w, u, t, s), rtol=1e-9, atol=1e-14,
                         name=f"d h_{t} / d x_{s}")
        assert not jac[t, :, t + 1:].any(), "a state depends on a later input"
    # one attention layer: every output reads every allowed input directly
    w_q, w_k, w_v = (torch.from_numpy(rng.standard_normal((C, 4))) for _ in range(3))
    mask = torch.ones(T, T, dtype=torch.bool).tril()

    def attend(xt):
        return F.scaled_dot_product_attention(xt @ w_q, xt @ w_k, xt @ w_v, attn_mask=mask)

    dy = torch.autograd.functional.jacobian(attend, to_torch(x)).numpy()  # (T, 4, T, C)
    reach = np.abs(dy).sum(axis=(1, 3)) > 0  # (T, T)
    assert np.array_equal(reach, np.tril(np.ones((T, T), dtype=bool)))


def _chain(h, w, u, t, s):
    """d h_t / d x_s written as the product of the t - s step Jacobians diag(1 - h_r^2) W."""
    m = (1 - h[s] ** 2)[:, None] * u  # (H, C)
    for r in range(s + 1, t + 1):
        m = ((1 - h[r] ** 2)[:, None] * w) @ m
    return m


@pytest.mark.claim(
    "001 Attention vs Traditional Mechanisms",
    "RNN/LSTM struggle with long-range dependencies (vanishing gradients); attention has direct "
    "connections",
    "clarified",
    correction=r"The gradient reaching an RNN input $d$ steps back is a product of $d$ step "
               r"Jacobians: it vanishes geometrically when the steps contract (tanh with "
               r"$\lVert W \rVert_2 = \rho < 1$: at most $\lVert U \rVert_2 \rho^d$) and through "
               "an LSTM whose forget gates stay well below 1 (torch's initialisation), but an "
               "LSTM whose forget gates are near 1 keeps it over long distances (what its gates "
               "are for), and an RNN with a large gain explodes instead. One attention layer's "
               "gradient does not decay with the distance.",
    domain=r"tanh RNNs with $\rho$ from 0.2 to 0.95, $4 \le T \le 40$, hidden size 8: the bound at "
           r"every distance; `torch.nn.LSTM` (hidden size 8, $T = 64$) with forget-gate bias 0 "
           r"and 4, median of 3 draws; one self-attention layer of length 32, median of 8 "
           "draws; hypothesis over the seeds",
    chapter="03_gradients",
    box="corr-rnn-explode")
@settings(max_examples=5, deadline=None)
@given(rho=st.floats(0.2, 0.95), T=st.integers(4, 40), seed=st.integers(0, 2**16))
def test_recurrent_gradients_vanish_with_distance_when_the_steps_contract_attention_does_not(rho, T, seed):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((8, 8))
    w, u = rho * g / np.linalg.norm(g, 2), rng.standard_normal((8, 3))
    norms = _rnn_jacobian_norms(w, u, rng.standard_normal((T, 3)))  # (T,)
    bound = np.linalg.norm(u, 2) * rho ** np.arange(T - 1, -1, -1)
    assert (norms <= bound * (1 + 1e-9)).all()
    # LSTM: the forget gate decides (sigmoid(0) = 1/2 halves the cell path at every step)
    forget_half = np.median([_lstm_input_jacobian_norms(0.0, seed=seed + i) for i in range(3)], axis=0)
    forget_near_one = np.median([_lstm_input_jacobian_norms(4.0, seed=seed + i) for i in range(3)], axis=0)
    # 62 steps back. Over 1,716 seeds (one in 38 of 0..2^16): forget gates at 1/2 leave at most 6e-10
    # of the gradient, gates near 1 keep 6e-3 to 1 of it, and the second is at least 3e8 times the first.
    assert _far_over_near(forget_half) < 1e-6  # gone
    assert _far_over_near(forget_near_one) > 1e-3  # kept
    assert _far_over_near(forget_near_one) > 1e6 * _far_over_near(forget_half)
    # attention (T = 32): the same order of magnitude at every distance (0.53 to 1.6 over 676 seeds)
    att = np.median([_attention_input_jacobian_norms(1.0, T=32, seed=seed + i) for i in range(8)], axis=0)
    near, far = np.median(att[16:-1]), np.median(att[:16])
    assert 0.25 < far / near < 4.0


@pytest.mark.claim(
    "004 Why Attention Has Good Gradients",
    r"RNN: $\partial L/\partial h_0 = \partial L/\partial h_T$ "
    r"$\times \partial h_T/\partial h_{T-1}$ $\times \dots \times \partial h_1/\partial h_0$, a "
    "product of $T$ terms -> vanishing",
    "corrected",
    correction="A product of $T$ Jacobians can vanish or explode: it vanishes geometrically when "
               r"the factors are contractive (e.g. $\lVert W \rVert_2 < 1$ with tanh), grows when "
               "they expand enough, and can still vanish when most factors expand (gain 1: "
               r"$\lVert W \rVert_2$ about 1.8): the decay is a property of the product, not of "
               "each factor.",
    domain="tanh RNN, hidden size 16, $T = 32$, gains 0.5 and 4, the median of 8 random draws",
    chapter="03_gradients",
    box="corr-rnn-explode")
def test_rnn_input_gradient_can_explode_as_well_as_vanish():
    T = 32
    small = np.median([_rnn_input_jacobian_norms(0.5, T=T, seed=s) for s in range(8)], axis=0)
    large = np.median([_rnn_input_jacobian_norms(4.0, T=T, seed=s) for s in range(8)], axis=0)
    assert small[0] < 1e-10 * small[T - 2]  # vanishing
    assert large[0] > 30.0 * large[T - 2]  # exploding



def _rnn_step_jacobians(gain, *, T=32, C=8, H=16, seed=0):
    """The factors dh_t/dh_{t-1} = diag(1 - h_t^2) W of the product, and W: ((T, H, H), (H, H))."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((T, C))
    w = gain * rng.standard_normal((H, H)) / np.sqrt(H)
    u = rng.standard_normal((H, C)) / np.sqrt(C)
    h, steps = np.zeros(H), []
    for t in range(T):
        h = np.tanh(w @ h + u @ x[t])
        steps.append((1.0 - h**2)[:, None] * w)  # (H, H)
    return np.array(steps), w


@pytest.mark.claim(
    "004 Why Attention Has Good Gradients",
    r"RNN: $\partial L/\partial h_0 = \partial L/\partial h_T$ "
    r"$\times \partial h_T/\partial h_{T-1}$ $\times \dots \times \partial h_1/\partial h_0$, a "
    "product of $T$ terms -> vanishing",
    "corrected",
    correction="A product of $T$ Jacobians can vanish or explode: it vanishes geometrically when "
               r"the factors are contractive (e.g. $\lVert W \rVert_2 < 1$ with tanh), grows when "
               "they expand enough, and can still vanish when most factors expand (gain 1: "
               r"$\lVert W \rVert_2$ about 1.8): the decay is a property of the product, not of "
               "each factor.",
    domain="tanh RNN with gain 1, hidden size 16, $T = 32$, 8 draws per example, hypothesis over "
           "the seeds",
    chapter="03_gradients",
    box="corr-rnn-explode")
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_rnn_product_vanishes_with_gain_one_although_most_factors_expand(seed):
    # Chapter 03: with gain 1 most factors have spectral norm > 1, yet 32 of them multiply to a
    # tiny matrix: the decay is a property of the product, not of each factor.
    draws = [_rnn_step_jacobians(1.0, seed=seed + i) for i in range(8)]
    w_norms = [np.linalg.norm(w, 2) for _, w in draws]
    step_norms = np.concatenate([np.linalg.norm(steps, 2, axis=(1, 2)) for steps, _ in draws])
    products = [np.linalg.norm(np.linalg.multi_dot(list(steps[::-1])), 2) for steps, _ in draws]
    assert np.median(w_norms) > 1.5
    assert np.mean(step_norms > 1.0) > 0.8
    assert np.median(products) < 1e-3 < np.prod(np.median(step_norms) ** len(draws[0][0]))


@pytest.mark.claim(
    "004 Why Attention Has Good Gradients",
    r"Attention: $\partial L/\partial X_i$ directly from $\partial L/\partial Y_i$. No long chain "
    "-> stable gradients",
    "corrected",
    correction=r"$\partial L/\partial X_i$ collects gradient from every output $Y_j$ ($X_i$ makes "
               "key $i$ and value $i$); the path length is $O(1)$, but every path to $y_T$ carries "
               "the weight $P_{Tt}$, so gradients still vanish through a saturated softmax.",
    domain="one self-attention layer, $L = 8$, $C = 8$, $D = 16$: the gradient of one output row "
           "reaches every input, and vanishes when the queries are scaled up (saturated rows)",
    chapter="03_gradients",
    box="corr-short-paths")
@pytest.mark.claim(
    "004 Summary",
    "Gradient Flow: Direct paths -> No vanishing gradients",
    "corrected",
    correction="Direct paths remove the decay with distance, not vanishing gradients: through a "
               "saturated (nearly one-hot) softmax the gradient to every non-attended input "
               "vanishes.",
    domain="one self-attention layer, $L = 8$, $C = 8$, $D = 16$: the gradient of one output row "
           "reaches every input, and vanishes when the queries are scaled up (saturated rows)",
    chapter="03_gradients",
    box="corr-short-paths")
def test_attention_gradient_reaches_every_input_but_vanishes_through_a_saturated_softmax():
    rng = np.random.default_rng(8)
    L, C, D = 8, 8, 16
    x = rng.standard_normal((L, C))
    w_q, w_k, w_v = (rng.standard_normal((C, D)) / np.sqrt(C) for _ in range(3))
    out, cache = scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v)
    only_row_5 = np.zeros_like(out)
    only_row_5[5] = 1.0
    g = attention_backward(only_row_5, cache)
    dx = g.dq @ w_q.T + g.dk @ w_k.T + g.dv @ w_v.T
    assert (np.linalg.norm(dx, axis=-1) > 1e-3).all()  # not only X_5: every input gets gradient
    # d y_T / d x_t = P_Tt (W_V^T + s (v_t - y_T)^T q_T W_K^T): the weight P_Tt multiplies every path
    s, q, k, v, P = cache.scale, cache.q, cache.k, cache.v, cache.probs
    for t in range(L - 1):
        formula = P[-1, t] * (w_v.T + s * np.outer(v[t] - out[-1], q[-1] @ w_k.T))  # (D_v, C)
        rows = []
        for a in range(D):
            dout = np.zeros_like(out)
            dout[-1, a] = 1.0
            ga = attention_backward(dout, cache)
            rows.append((ga.dq @ w_q.T + ga.dk @ w_k.T + ga.dv @ w_v.T)[t])
        assert_close(np.stack(rows), formula, name=f"d y_T / d x_{t}")
    # saturation: sharper queries leave most inputs with (almost) no gradient
    fractions = []
    for sharpness in (1.0, 8.0, 32.0):
        norms = np.concatenate([_attention_input_jacobian_norms(sharpness, T=16, seed=s)[:-1] for s in range(8)])
        fractions.append(np.mean(norms < 1e-6))
    assert fractions[0] == 0.0
    assert fractions[1] > 0.1 and fractions[2] > 0.6


@pytest.mark.claim(
    "004 Attention Dropout",
    "`attn = dropout(attn, p=0.1)` zeroes out 10% of the attention connections",
    "verified",
    domain=r"torch's dropout with $p = 0.1$ on $400 \times 50$ attention weights: the zeroed "
           "fraction within 5 standard errors, the survivors scaled by $1/(1 - p)$",
    chapter="03_gradients")
def test_torch_dropout_on_attention_weights_zeroes_a_fraction_p_and_rescales_the_rest():
    torch.manual_seed(0)
    attn = torch.softmax(torch.randn(400, 50, dtype=torch.float64), dim=-1)
    dropped = F.dropout(attn, p=0.1, training=True)
    kept = dropped != 0
    frac = 1.0 - kept.double().mean().item()
    assert abs(frac - 0.1) < 5 * np.sqrt(0.1 * 0.9 / attn.numel())
    # the survivors are rescaled by 1 / (1 - p): torch's dropout is the inverted dropout of the library
    assert_close(dropped[kept], attn[kept] / 0.9, rtol=1e-15, atol=0, name="survivors")
    q, k, v = random_qkv(B=1, H=1, L=3, S=5, D=4, seed=1)
    out, cache = dropout_attention(q, k, v, p=0.1, rng=np.random.default_rng(3))
    replay = to_torch(cache.attention.probs)
    expected = (replay * torch.from_numpy(cache.keep) / 0.9) @ to_torch(v)
    assert_close(out, expected, name="library dropout = torch's convention with the same mask")

