"""Tests of attnmath.multihead: oracles (torch, float64), gradients, properties, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnmath.multihead import (
    MultiHeadParams,
    grouped_query_attention,
    init_multihead_params,
    merge_heads,
    multi_query_attention,
    multihead_attention,
    multihead_attention_backward,
    output_projection_as_sum,
    params_from_in_proj,
    params_to_in_proj,
    self_attention,
    self_attention_backward,
    split_heads,
    torch_key_padding_mask,
    torch_mha_attn_mask,
)
from attnmath.testing import assert_close, check_gradient, to_torch

SETTINGS = settings(max_examples=30, deadline=None)
GRAD_NAMES = ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _torch_mha(params: MultiHeadParams, H: int) -> torch.nn.MultiheadAttention:
    """nn.MultiheadAttention (float64, batch_first) holding ``params``."""
    in_w, in_b, out_w, out_b = params_to_in_proj(params)
    C = in_w.shape[1]
    mha = torch.nn.MultiheadAttention(C, H, bias=in_b is not None, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(in_w))
        mha.out_proj.weight.copy_(torch.from_numpy(out_w))
        if in_b is not None:
            mha.in_proj_bias.copy_(torch.from_numpy(in_b))
            mha.out_proj.bias.copy_(torch.from_numpy(out_b))
    return mha


def _torch_mha_grads(mha: torch.nn.MultiheadAttention, C: int) -> dict:
    """Weight gradients of ``mha`` in the row-vector convention of MultiHeadParams."""
    gw, gb = mha.in_proj_weight.grad, mha.in_proj_bias.grad if mha.in_proj_bias is not None else None
    out = {
        "w_q": gw[:C].T, "w_k": gw[C:2 * C].T, "w_v": gw[2 * C:].T, "w_o": mha.out_proj.weight.grad.T,
    }
    if gb is not None:
        out.update(b_q=gb[:C], b_k=gb[C:2 * C], b_v=gb[2 * C:], b_o=mha.out_proj.bias.grad)
    return out


def _torch_gqa(x_q, x_kv, params, H, H_kv, mask=None):
    """Grouped-query attention in torch: F.linear projections and sdpa(enable_gqa=True)."""
    w_q, w_k, w_v, w_o = params[:4]
    b_q, b_k, b_v, b_o = params[4:]
    B, L, _ = x_q.shape
    S = x_kv.shape[1]
    q = F.linear(x_q, w_q.T, b_q).view(B, L, H, -1).transpose(1, 2)  # (B, H, L, D)
    k = F.linear(x_kv, w_k.T, b_k).view(B, S, H_kv, -1).transpose(1, 2)  # (B, H_kv, S, D)
    v = F.linear(x_kv, w_v.T, b_v).view(B, S, H_kv, -1).transpose(1, 2)  # (B, H_kv, S, D_v)
    heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)  # (B, H, L, D_v)
    return F.linear(heads.transpose(1, 2).reshape(B, L, -1), w_o.T, b_o)  # (B, L, C)


# ------------------------------------------------------------------------------------------
# Heads
# ------------------------------------------------------------------------------------------


@SETTINGS
@given(B=st.integers(1, 3), L=st.integers(1, 5), H=st.integers(1, 4), D=st.integers(1, 4))
def test_merge_heads_inverts_split_heads(B, L, H, D):
    x = _x(B, L, H * D)
    assert_close(merge_heads(split_heads(x, H)), x, rtol=0, atol=0)


def test_split_heads_matches_torch_view_transpose():
    x = _x(2, 5, 12)
    expected = torch.from_numpy(x).view(2, 5, 3, 4).transpose(1, 2)
    assert_close(split_heads(x, 3), expected, rtol=0, atol=0)


def test_split_heads_rejects_width_not_divisible_by_heads():
    with pytest.raises(ValueError, match=r"C=10.*H=3"):
        split_heads(_x(2, 4, 10), 3)


def test_merge_heads_rejects_too_few_dimensions():
    with pytest.raises(ValueError, match=r"\(\.\.\., H, L, D\)"):
        merge_heads(_x(4, 6))


# ------------------------------------------------------------------------------------------
# Parameters and the torch conversion
# ------------------------------------------------------------------------------------------


def test_params_survive_the_round_trip_through_torch_in_proj_layout():
    p = init_multihead_params(8, 2, seed=3)
    back = params_from_in_proj(*params_to_in_proj(p))
    for name, a, b in zip(MultiHeadParams._fields, p, back):
        assert_close(b, a, rtol=0, atol=0, name=name)


def test_in_proj_rows_are_the_transposed_query_key_value_weights():
    mha = torch.nn.MultiheadAttention(6, 2, batch_first=True, dtype=torch.float64)
    w = mha.in_proj_weight.detach().numpy()
    p = params_from_in_proj(w, mha.in_proj_bias.detach().numpy(), mha.out_proj.weight.detach().numpy(),
                            mha.out_proj.bias.detach().numpy())
    x = _x(1, 3, 6)
    q_torch = F.linear(torch.from_numpy(x), mha.in_proj_weight[:6], mha.in_proj_bias[:6])
    assert_close(x @ p.w_q + p.b_q, q_torch, name="queries")


def test_init_multihead_params_has_the_documented_shapes():
    p = init_multihead_params(12, 4, H_kv=2, seed=0)
    assert [a.shape for a in p] == [(12, 12), (12, 6), (12, 6), (12, 12), (12,), (6,), (6,), (12,)]
    assert init_multihead_params(12, 4, bias=False).b_q is None


def test_init_multihead_params_rejects_bad_heads():
    with pytest.raises(ValueError, match=r"C=10.*H=4"):
        init_multihead_params(10, 4)
    with pytest.raises(ValueError, match=r"H=4.*H_kv=3"):
        init_multihead_params(12, 4, H_kv=3)


def test_params_from_in_proj_rejects_wrong_shape():
    with pytest.raises(ValueError, match=r"in_proj_weight must have shape \(3C, C\)"):
        params_from_in_proj(_x(8, 4), None, _x(4, 4), None)


def test_params_to_in_proj_rejects_a_non_params_object():
    with pytest.raises(TypeError, match="MultiHeadParams"):
        params_to_in_proj((1, 2, 3, 4))


# ------------------------------------------------------------------------------------------
# Oracle: torch.nn.MultiheadAttention
# ------------------------------------------------------------------------------------------


@pytest.mark.claim(
    "000 Multi-Head Attention",
    r"$\operatorname{MultiHead}(Q, K, V)$ "
    r"$= \operatorname{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h) W^O$ where "
    r"$\mathrm{head}_i = \operatorname{Attention}(Q W_i^Q, K W_i^K, V W_i^V)$",
    "verified",
    domain=r"$1 \le B \le 2$, $1 \le L \le 8$, $1 \le H \le 4$, $C = H D$ with "
           r"$1 \le D \le 3$, with and without biases, weights included, against "
           "`torch.nn.MultiheadAttention`, hypothesis")
@pytest.mark.claim(
    "003 §3.1",
    r"Multi-head attention runs $h$ heads of width $d_k = d_v = d_{\mathrm{model}} / h$ in "
    r"parallel and projects their concatenation with $W^O \in \R^{h d_v \times d_{\mathrm{model}}}$",
    "verified",
    domain=r"$1 \le B \le 2$, $1 \le L \le 8$, $1 \le H \le 4$, $C = H D$ with "
           r"$1 \le D \le 3$, with and without biases, weights included, against "
           "`torch.nn.MultiheadAttention`, hypothesis")
@SETTINGS
@given(B=st.integers(1, 2), L=st.integers(1, 8), H=st.integers(1, 4), D=st.integers(1, 3),
       bias=st.booleans(), seed=st.integers(0, 2**16))
def test_self_attention_matches_torch_multihead_attention(B, L, H, D, bias, seed):
    C = H * D
    p = init_multihead_params(C, H, bias=bias, seed=seed)
    x = _x(B, L, C, seed=seed + 1)
    out, cache = self_attention(x, p, H)
    xt = torch.from_numpy(x)
    expected, weights = _torch_mha(p, H)(xt, xt, xt, need_weights=True, average_attn_weights=False)
    assert_close(out, expected, name="out")
    assert_close(cache.attention.probs, weights, name="attention weights")


@pytest.mark.claim(
    "002 §7",
    r"$\operatorname{CrossAttention}(X_{\mathrm{dec}}, X_{\mathrm{enc}})$ "
    r"$= \operatorname{Attention}(X_{\mathrm{dec}} W^Q,$ "
    r"$X_{\mathrm{enc}} W^K, X_{\mathrm{enc}} W^V)$: queries from the decoder, keys and values "
    "from the encoder",
    "verified",
    domain=r"$1 \le B \le 2$, $1 \le L, S \le 8$ ($L \ne S$ included), $1 \le H \le 4$, "
           r"$C = H D$ with $1 \le D \le 3$, with and without biases, against "
           "`torch.nn.MultiheadAttention`, hypothesis")
@pytest.mark.claim(
    "000 Self-Attention vs Cross-Attention",
    "Cross-attention: $Q$ from one source, $K$ and $V$ from another (the decoder attending to the "
    "encoder output)",
    "verified",
    domain=r"$1 \le B \le 2$, $1 \le L, S \le 8$ ($L \ne S$ included), $1 \le H \le 4$, "
           r"$C = H D$ with $1 \le D \le 3$, with and without biases, against "
           "`torch.nn.MultiheadAttention`, hypothesis")
@SETTINGS
@given(B=st.integers(1, 2), L=st.integers(1, 8), S=st.integers(1, 8), H=st.integers(1, 4),
       D=st.integers(1, 3), bias=st.booleans(), seed=st.integers(0, 2**16))
def test_cross_attention_with_different_lengths_matches_torch(B, L, S, H, D, bias, seed):
    C = H * D
    p = init_multihead_params(C, H, bias=bias, seed=seed)
    x_q, x_kv = _x(B, L, C, seed=seed + 1), _x(B, S, C, seed=seed + 2)
    out, _ = multihead_attention(x_q, x_kv, p, H)
    xq, xkv = to_torch(x_q, x_kv)
    expected, _ = _torch_mha(p, H)(xq, xkv, xkv, need_weights=False)
    assert out.shape == (B, L, C)
    assert_close(out, expected, name="out")


def test_masks_convert_to_torch_flipped_convention():
    B, L, S, C, H = 2, 4, 6, 8, 2
    p = init_multihead_params(C, H, seed=7)
    x_q, x_kv = _x(B, L, C, seed=8), _x(B, S, C, seed=9)
    rng = np.random.default_rng(10)
    mask = rng.random((B, H, L, S)) < 0.7
    valid = np.array([[True] * S, [True] * 4 + [False] * 2])  # (B, S): the second sequence has 2 pads
    mask[..., 0] = True  # every row keeps key 0, so no row is fully masked (NaN in torch's weights path)
    full = mask & valid[:, None, None, :]  # (B, H, L, S)
    out, _ = multihead_attention(x_q, x_kv, p, H, mask=full)
    xq, xkv = to_torch(x_q, x_kv)
    expected, _ = _torch_mha(p, H)(
        xq, xkv, xkv,
        attn_mask=torch.from_numpy(torch_mha_attn_mask(mask, B, H, L, S)),
        key_padding_mask=torch.from_numpy(torch_key_padding_mask(valid[:, None, None, :])),
        need_weights=False,
    )
    assert_close(out, expected, name="masked out")
    # Passing the True = may-attend mask unconverted attends to the complement: a different answer.
    unconverted = torch.from_numpy(~torch_mha_attn_mask(mask, B, H, L, S))
    wrong, _ = _torch_mha(p, H)(xq, xkv, xkv, attn_mask=unconverted, need_weights=False)
    assert not np.allclose(out, wrong.detach().numpy(), equal_nan=True)


def test_torch_mha_attn_mask_is_batch_major_and_negated():
    mask = np.zeros((2, 3, 1, 1), dtype=bool)
    mask[1, 2] = True
    converted = torch_mha_attn_mask(mask, 2, 3, 1, 1)
    assert converted.shape == (6, 1, 1)
    assert converted[:, 0, 0].tolist() == [True, True, True, True, True, False]


def test_torch_mask_converters_reject_bad_input():
    with pytest.raises(ValueError, match="does not broadcast"):
        torch_mha_attn_mask(np.ones((3, 5), dtype=bool), 2, 2, 4, 6)
    with pytest.raises(TypeError, match="boolean"):
        torch_key_padding_mask(np.ones((2, 5)))
    with pytest.raises(ValueError, match=r"\(B, 1, 1, S\) or \(B, S\)"):
        torch_key_padding_mask(np.ones((2, 2, 1, 5), dtype=bool))


@pytest.mark.parametrize("bias", [True, False])
def test_cross_attention_gradients_match_torch_autograd(bias):
    B, L, S, C, H = 2, 3, 5, 8, 2
    p = init_multihead_params(C, H, bias=bias, seed=11)
    x_q, x_kv, dout = _x(B, L, C, seed=12), _x(B, S, C, seed=13), _x(B, L, C, seed=14)
    mask = np.random.default_rng(15).random((B, 1, L, S)) < 0.8
    mask[..., 0] = True
    out, cache = multihead_attention(x_q, x_kv, p, H, mask=mask)
    g = multihead_attention_backward(dout, cache)
    mha = _torch_mha(p, H)
    xq, xkv = to_torch(x_q, x_kv, requires_grad=True)
    blocked = torch.from_numpy(torch_mha_attn_mask(mask, B, H, L, S))
    y, _ = mha(xq, xkv, xkv, attn_mask=blocked, need_weights=False)
    y.backward(torch.from_numpy(dout))
    assert_close(g.dx_q, xq.grad, name="dx_q")
    assert_close(g.dx_kv, xkv.grad, name="dx_kv")
    expected = _torch_mha_grads(mha, C)
    for name in GRAD_NAMES:
        ours = getattr(g, "d" + name)
        if name.startswith("b") and not bias:
            assert ours is None
        else:
            assert_close(ours, expected[name], name="d" + name)


def test_self_attention_backward_adds_the_query_and_key_value_paths():
    B, L, C, H = 2, 4, 8, 4
    p = init_multihead_params(C, H, seed=16)
    x, dout = _x(B, L, C, seed=17), _x(B, L, C, seed=18)
    out, cache = self_attention(x, p, H)
    g = self_attention_backward(dout, cache)
    g_two = multihead_attention_backward(dout, cache)
    xt = to_torch(x, requires_grad=True)
    y, _ = _torch_mha(p, H)(xt, xt, xt, need_weights=False)
    y.backward(torch.from_numpy(dout))
    assert_close(g.dx, xt.grad, name="dx")
    assert_close(g.dx, g_two.dx_q + g_two.dx_kv, name="dx = dx_q + dx_kv")
    assert not np.allclose(g_two.dx_q, xt.grad.numpy()), "dx_q alone is not the gradient of x"


# ------------------------------------------------------------------------------------------
# Grouped-query and multi-query attention
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("H, H_kv", [(4, 2), (6, 3), (4, 1)])
def test_grouped_query_attention_and_gradients_match_torch_enable_gqa(H, H_kv):
    B, L, S, D = 2, 3, 5, 2
    C = H * D
    p = init_multihead_params(C, H, H_kv=H_kv, seed=19)
    x_q, x_kv, dout = _x(B, L, C, seed=20), _x(B, S, C, seed=21), _x(B, L, C, seed=22)
    mask = np.random.default_rng(23).random((B, H, L, S)) < 0.7
    out, cache = grouped_query_attention(x_q, x_kv, p, H, H_kv, mask=mask)
    g = multihead_attention_backward(dout, cache)
    xq, xkv = to_torch(x_q, x_kv, requires_grad=True)
    tp = [None if a is None else to_torch(a, requires_grad=True) for a in p]
    y = _torch_gqa(xq, xkv, tp, H, H_kv, mask=torch.from_numpy(mask))
    assert_close(out, y, name="out")
    y.backward(torch.from_numpy(dout))
    assert_close(g.dx_q, xq.grad, name="dx_q")
    assert_close(g.dx_kv, xkv.grad, name="dx_kv")
    for name, t in zip(GRAD_NAMES, tp):
        assert_close(getattr(g, "d" + name), t.grad, name="d" + name)


def test_multi_query_attention_is_grouped_query_attention_with_one_kv_head():
    B, L, C, H = 2, 4, 8, 4
    p = init_multihead_params(C, H, H_kv=1, seed=24)
    x = _x(B, L, C, seed=25)
    out_mqa, _ = multi_query_attention(x, x, p, H)
    out_gqa, _ = grouped_query_attention(x, x, p, H, 1)
    xt = torch.from_numpy(x)
    assert_close(out_mqa, out_gqa, rtol=0, atol=0)
    assert_close(out_mqa, _torch_gqa(xt, xt, list(map(lambda a: torch.from_numpy(a), p)), H, 1), name="mqa")


@pytest.mark.claim(
    "002 §9",
    "Grouped-query attention shares the $K$, $V$ projections across groups of query heads",
    "verified",
    domain=r"group size $1 \le G \le 3$, $1 \le H_{kv} \le 3$, hypothesis")
@SETTINGS
@given(G=st.integers(1, 3), H_kv=st.integers(1, 3), seed=st.integers(0, 10_000))
def test_grouped_query_attention_equals_multi_head_with_repeated_kv_weights(G, H_kv, seed):
    H, D, B, L = G * H_kv, 2, 2, 3
    C = H * D
    p = init_multihead_params(C, H, H_kv=H_kv, seed=seed)

    def repeat_blocks(w, axis):  # (.., H_kv*D) -> (.., H*D): each kv head's block copied G times
        blocks = np.split(w, H_kv, axis=axis)
        return np.concatenate([b for b in blocks for _ in range(G)], axis=axis)

    full = p._replace(w_k=repeat_blocks(p.w_k, 1), w_v=repeat_blocks(p.w_v, 1),
                      b_k=repeat_blocks(p.b_k, 0), b_v=repeat_blocks(p.b_v, 0))
    x = _x(B, L, C, seed=seed)
    assert_close(grouped_query_attention(x, x, p, H, H_kv)[0], multihead_attention(x, x, full, H)[0])


def test_grouped_query_attention_requires_h_kv_dividing_h():
    p = init_multihead_params(12, 6, H_kv=2)
    x = _x(1, 2, 12)
    with pytest.raises(ValueError, match=r"H=6.*H_kv=4"):
        grouped_query_attention(x, x, p, 6, 4)


def test_grouped_weights_without_h_kv_raise_a_clear_error():
    p = init_multihead_params(8, 4, H_kv=2)
    x = _x(1, 2, 8)
    with pytest.raises(ValueError, match="pass H_kv"):
        multihead_attention(x, x, p, 4)


def test_multi_query_attention_rejects_multi_head_weights():
    p = init_multihead_params(8, 4)
    x = _x(1, 2, 8)
    with pytest.raises(ValueError, match=r"w_k must have shape"):
        multi_query_attention(x, x, p, 4)


# ------------------------------------------------------------------------------------------
# Central differences
# ------------------------------------------------------------------------------------------


@pytest.mark.claim(
    "003 Problem 2",
    "Gradient check: the analytic gradients of a NumPy multi-head attention layer agree with "
    "numerical differentiation",
    "verified",
    domain=r"$B = 2$, $L = 3 \ne S = 4$, $(H, H_{kv}) = (2, 2)$ and $(4, 2)$, a random mask with a "
           "fully masked row")
@pytest.mark.parametrize("H, H_kv", [(2, 2), (4, 2)])
def test_multihead_backward_matches_central_differences(H, H_kv):
    B, L, S, D = 2, 3, 4, 2
    C = H * D
    p = init_multihead_params(C, H, H_kv=H_kv, seed=26)
    x_q, x_kv, dout = _x(B, L, C, seed=27), _x(B, S, C, seed=28), _x(B, L, C, seed=29)
    mask = np.random.default_rng(30).random((B, 1, L, S)) < 0.7
    mask[0, 0, 1] = False  # one fully masked row: its output is b_o, its gradients zero
    _, cache = multihead_attention(x_q, x_kv, p, H, H_kv=H_kv, mask=mask)
    g = multihead_attention_backward(dout, cache)

    def loss(xq=x_q, xkv=x_kv, params=p):
        return float(np.sum(multihead_attention(xq, xkv, params, H, H_kv=H_kv, mask=mask)[0] * dout))

    check_gradient(lambda a: loss(xq=a), x_q, g.dx_q, name="x_q")
    check_gradient(lambda a: loss(xkv=a), x_kv, g.dx_kv, name="x_kv")
    for i, name in enumerate(GRAD_NAMES):
        check_gradient(lambda a, i=i: loss(params=p._replace(**{GRAD_NAMES[i]: a})), p[i],
                       getattr(g, "d" + name), name=name)


def test_self_attention_backward_matches_central_differences():
    B, L, C, H = 2, 3, 4, 2
    p = init_multihead_params(C, H, seed=31)
    x, dout = _x(B, L, C, seed=32), _x(B, L, C, seed=33)
    g = self_attention_backward(dout, self_attention(x, p, H)[1])
    check_gradient(lambda a: float(np.sum(self_attention(a, p, H)[0] * dout)), x, g.dx, name="x")


def test_backward_rejects_wrong_dout_shape():
    p = init_multihead_params(4, 2)
    _, cache = self_attention(_x(1, 3, 4), p, 2)
    with pytest.raises(ValueError, match=r"dout must have the output's shape \(1, 3, 4\)"):
        multihead_attention_backward(_x(1, 3, 5), cache)


# ------------------------------------------------------------------------------------------
# Properties
# ------------------------------------------------------------------------------------------


@pytest.mark.claim(
    "002 §4.2",
    r"Intuition 2: $\operatorname{MultiHead} = \sum_i \mathrm{head}_i W_i^O$, an ensemble of heads",
    "verified",
    domain=r"$1 \le B \le 3$, $1 \le H \le 4$, $1 \le L \le 4$, $1 \le D_v \le 4$, "
           r"$1 \le C \le 6$, hypothesis")
@SETTINGS
@given(B=st.integers(1, 3), H=st.integers(1, 4), L=st.integers(1, 4), D_v=st.integers(1, 4),
       C=st.integers(1, 6), seed=st.integers(0, 10_000))
def test_output_projection_is_a_sum_of_per_head_projections(B, H, L, D_v, C, seed):
    heads, w_o = _x(B, H, L, D_v, seed=seed), _x(H * D_v, C, seed=seed + 1)
    assert_close(output_projection_as_sum(heads, w_o), merge_heads(heads) @ w_o)


def test_output_projection_as_sum_rejects_mismatched_w_o():
    with pytest.raises(ValueError, match=r"H\*D_v=6"):
        output_projection_as_sum(_x(1, 2, 3, 3), _x(5, 4))


@pytest.mark.claim(
    "002 §4.2",
    "Intuition 1: head 1 projects to a subspace capturing syntactic relationships, head 2 semantic "
    "relationships",
    "corrected",
    correction="An interpretation, not a theorem: nothing in the architecture gives a head a role "
               "(permuting the heads' weight blocks leaves the layer unchanged). Any specialisation "
               "is learned, has to be measured, and is often partial.",
    domain=r"$H \in \{1, 2, 3, 6\}$, every random permutation of the heads, hypothesis",
    box="corr-head-roles")
@pytest.mark.claim(
    "003 §3.2",
    "Each head operates in a different subspace: a syntactic head, a semantic head, a positional head",
    "corrected",
    correction="An interpretation, not a theorem: the heads are interchangeable by construction "
               "(permuting them leaves the layer unchanged); which relation a trained head tracks, "
               "if any, is an empirical question.",
    domain=r"$H \in \{1, 2, 3, 6\}$, every random permutation of the heads, hypothesis",
    box="corr-head-roles")
@SETTINGS
@given(H=st.sampled_from([1, 2, 3, 6]), seed=st.integers(0, 10_000))
def test_permuting_heads_leaves_the_output_unchanged(H, seed):
    C, D = 6, 6 // H
    p = init_multihead_params(C, H, seed=seed)
    perm = np.random.default_rng(seed).permutation(H)
    cols = np.concatenate([np.arange(h * D, (h + 1) * D) for h in perm])
    q = p._replace(w_q=p.w_q[:, cols], w_k=p.w_k[:, cols], w_v=p.w_v[:, cols], w_o=p.w_o[cols],
                   b_q=p.b_q[cols], b_k=p.b_k[cols], b_v=p.b_v[cols])
    x = _x(2, 3, C, seed=seed)
    assert_close(self_attention(x, q, H)[0], self_attention(x, p, H)[0])


@pytest.mark.claim(
    "003 §3.1",
    "`multi_head_attention` with per-head lists of projections `W_Q[i]`, `W_K[i]`, `W_V[i]` "
    r"($d_{\mathrm{model}} \times d_k$), one attention per head, the heads concatenated and "
    "multiplied by `W_O`",
    "verified",
    domain=r"$1 \le B \le 2$, $1 \le L \le 7$, $1 \le H \le 4$, $C = H D$ with "
           r"$1 \le D \le 4$, causal mask, hypothesis")
@SETTINGS
@given(B=st.integers(1, 2), L=st.integers(1, 7), H=st.integers(1, 4), D=st.integers(1, 4),
       seed=st.integers(0, 2**16))
def test_per_head_weight_lists_are_the_column_blocks_of_the_fused_projections(B, L, H, D, seed):
    C = H * D
    p = init_multihead_params(C, H, bias=False, seed=seed)
    x = _x(B, L, C, seed=seed + 1)
    mask = np.tril(np.ones((L, L), dtype=bool))
    w_q = [p.w_q[:, h * D:(h + 1) * D] for h in range(H)]  # the lists of the source's loop
    w_k = [p.w_k[:, h * D:(h + 1) * D] for h in range(H)]
    w_v = [p.w_v[:, h * D:(h + 1) * D] for h in range(H)]
    heads = []
    for h in range(H):
        scores = (x @ w_q[h]) @ (x @ w_k[h]).transpose(0, 2, 1) / np.sqrt(D)  # (B, L, L)
        scores = np.where(mask, scores, -np.inf)
        probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        heads.append(probs @ (x @ w_v[h]))  # (B, L, D)
    looped = np.concatenate(heads, axis=-1) @ p.w_o  # (B, L, C)
    assert_close(self_attention(x, p, H, mask=mask)[0], looped)


@pytest.mark.claim(
    "002 §4.2",
    "Intuition 3: single attention has limited rank; multi-head can achieve higher effective rank "
    "through concatenation",
    "clarified",
    correction=r"True against one head of width $C/H$ (rank at most $\min(L, S, C/H)$). Against "
               "one head of the full width $C$ the answer depends on $S$: $H$ heads reach "
               r"$\min(L, C, 1 + H(S - 1))$ (every head's column space holds the all-ones vector), "
               r"one wide head $\min(L, S, C)$; equal when $S \ge C$ (e.g. self-attention with "
               r"$L = S \ge C$), more for $H$ heads when $S < C$ and $L > S$ (cross-attention with "
               "few keys). Generic weights attain both bounds.",
    domain=r"cross-attention layers with generic random weights: $1 \le L, S \le 12$ ($L \ne S$ "
           r"included), $1 \le H \le 4$, $1 \le D_v = C/H \le 3$, float64, hypothesis",
    box="corr-multihead-rank")
@SETTINGS
@given(L=st.integers(1, 12), S=st.integers(1, 12), H=st.integers(1, 4), D_v=st.integers(1, 3),
       seed=st.integers(0, 2**31 - 1))
def test_h_heads_reach_rank_min_l_c_1_plus_h_s_minus_1_and_one_wide_head_min_l_s_c(L, S, H, D_v, seed):
    from attnmath.theory import multi_head_rank_bound

    C = H * D_v
    x_q, x_kv = _x(1, L, C, seed=seed), _x(1, S, C, seed=seed + 1)  # (B, L, C), (B, S, C)
    multi, cache = multihead_attention(x_q, x_kv, init_multihead_params(C, H, bias=False, seed=seed), H)
    narrow = cache.concat[0, :, :D_v]  # (L, D_v): the first head alone
    wide, _ = multihead_attention(x_q, x_kv, init_multihead_params(C, 1, bias=False, seed=seed + 2), 1)
    rank_multi, rank_narrow, rank_wide = (int(np.linalg.matrix_rank(a)) for a in (multi[0], narrow, wide[0]))
    assert rank_multi == min(L, C, 1 + H * (S - 1)) == multi_head_rank_bound(L, S, H, D_v, C)
    assert rank_narrow == min(L, S, D_v)
    assert rank_wide == min(L, S, C)
    assert rank_multi >= rank_narrow
    # H heads beat one wide head exactly when 1 < S < C and L > S: cross-attention with few keys
    assert (rank_multi > rank_wide) == (1 < S < C and L > S and H > 1)


def test_fully_masked_query_row_outputs_the_output_bias():
    p = init_multihead_params(8, 2, seed=34)
    x = _x(1, 3, 8)
    mask = np.ones((3, 3), dtype=bool)
    mask[1] = False
    out, _ = self_attention(x, p, 2, mask=mask)
    assert_close(out[0, 1], p.b_o, name="row of a query that sees no key")


def test_multihead_attention_rejects_bad_input():
    p = init_multihead_params(8, 2)
    x = _x(2, 3, 8)
    with pytest.raises(ValueError, match=r"w_q must have shape \(C, H\*D\) with C=6"):
        multihead_attention(_x(2, 3, 6), x, p, 2)
    with pytest.raises(ValueError, match="same batch size"):
        multihead_attention(x, _x(3, 3, 8), p, 2)
    with pytest.raises(ValueError, match="x_q must have 3 dimensions"):
        multihead_attention(x[0], x, p, 2)
    with pytest.raises(ValueError, match="not divisible by the number of heads H=3"):
        multihead_attention(x, x, p, 3)
    with pytest.raises(TypeError, match="MultiHeadParams"):
        multihead_attention(x, x, tuple(p), 2)
    with pytest.raises(ValueError, match="does not broadcast"):
        multihead_attention(x, x, p, 2, mask=np.ones((2, 3, 4), dtype=bool))


@pytest.mark.parametrize("flag", ["no", 0, 1, None])
def test_init_multihead_params_refuses_a_bias_flag_that_is_not_a_bool(flag):
    with pytest.raises(TypeError, match="bias must be True or False"):
        init_multihead_params(8, 2, bias=flag)
    assert init_multihead_params(8, 2, bias=False).b_q is None


def test_init_multihead_params_refuses_a_negative_seed():
    with pytest.raises(ValueError, match="seed must be >= 0, got -1"):
        init_multihead_params(8, 2, seed=-1)



@pytest.mark.parametrize("dtype, rtol", [(np.float16, 4 * 2.0 ** -11), (np.float32, 1e-5)])
def test_multihead_attention_returns_the_input_dtype_computed_in_at_least_float32(dtype, rtol):
    p = init_multihead_params(8, 2, seed=3)
    x = _x(2, 5, 8, seed=4)
    low = MultiHeadParams(*(None if a is None else a.astype(dtype) for a in p))
    out, _ = self_attention(x.astype(dtype), low, 2)
    assert out.dtype == dtype
    # the reference sees the same rounded inputs: only the computation's own error remains
    same_inputs, _ = self_attention(x.astype(dtype).astype(np.float64),
                                    MultiHeadParams(*(None if a is None else a.astype(np.float64) for a in low)), 2)
    assert np.max(np.abs(out - same_inputs)) <= rtol * np.max(np.abs(same_inputs))
