"""Tests of attnmath.encoder: layer norm, feed-forward and the encoder block against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnmath.encoder import (
    EncoderBlockParams,
    encoder_block_forward,
    feed_forward,
    init_encoder_block_params,
    layer_norm,
    pre_norm_encoder_block_forward,
)
from attnmath.multihead import params_from_in_proj, torch_key_padding_mask
from attnmath.testing import assert_close, to_torch


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def test_layer_norm_matches_torch():
    x, g, b = _x(2, 3, 6), 1 + _x(6, seed=1), _x(6, seed=2)
    expected = F.layer_norm(torch.from_numpy(x), (6,), torch.from_numpy(g), torch.from_numpy(b), eps=1e-5)
    assert_close(layer_norm(x, g, b), expected)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_feed_forward_matches_torch(activation):
    x, w1, b1, w2, b2 = _x(2, 3, 4), _x(4, 7, seed=1), _x(7, seed=2), _x(7, 4, seed=3), _x(4, seed=4)
    t = to_torch(x, w1, b1, w2, b2)
    act = F.relu if activation == "relu" else F.gelu
    expected = F.linear(act(F.linear(t[0], t[1].T, t[2])), t[3].T, t[4])
    assert_close(feed_forward(x, w1, b1, w2, b2, activation=activation), expected)


def _params_from_torch_layer(layer) -> EncoderBlockParams:
    sa = layer.self_attn

    def n(t):
        return t.detach().numpy()

    attn = params_from_in_proj(n(sa.in_proj_weight), n(sa.in_proj_bias), n(sa.out_proj.weight),
                               n(sa.out_proj.bias))
    return EncoderBlockParams(attn, n(layer.linear1.weight).T, n(layer.linear1.bias),
                              n(layer.linear2.weight).T, n(layer.linear2.bias),
                              n(layer.norm1.weight), n(layer.norm1.bias),
                              n(layer.norm2.weight), n(layer.norm2.bias))


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_block_matches_torch_transformer_encoder_layer(norm_first, activation):
    B, L, C, H, F_ = 2, 5, 8, 2, 16
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(C, H, F_, dropout=0.0, activation=activation, batch_first=True,
                                             norm_first=norm_first, dtype=torch.float64).eval()
    with torch.no_grad():
        for prm in layer.parameters():  # nonzero biases and non-unit norms, so every term matters
            prm.add_(0.1 * torch.randn_like(prm))
    params = _params_from_torch_layer(layer)
    x = _x(B, L, C, seed=35)
    valid = np.array([[True] * L, [True] * 3 + [False] * (L - 3)])
    forward = pre_norm_encoder_block_forward if norm_first else encoder_block_forward
    ours = forward(x, params, H, mask=valid[:, None, None, :], activation=activation)
    with torch.enable_grad():  # keeps torch on its reference path
        expected = layer(torch.from_numpy(x).requires_grad_(True),
                         src_key_padding_mask=torch.from_numpy(torch_key_padding_mask(valid)))
    assert_close(ours, expected, name="block output")


def test_pre_norm_and_post_norm_blocks_differ():
    p = init_encoder_block_params(8, 2, 16, seed=1)
    x = _x(2, 3, 8)
    assert not np.allclose(encoder_block_forward(x, p, 2), pre_norm_encoder_block_forward(x, p, 2))


def test_encoder_block_reference_rejects_bad_input():
    p = init_encoder_block_params(8, 2, 16)
    with pytest.raises(ValueError, match="activation must be 'relu' or 'gelu'"):
        encoder_block_forward(_x(1, 3, 8), p, 2, activation="tanh")
    with pytest.raises(TypeError, match="EncoderBlockParams"):
        encoder_block_forward(_x(1, 3, 8), p.attn, 2)
    with pytest.raises(ValueError, match=r"gamma and beta must have shape \(C,\) = \(8,\)"):
        layer_norm(_x(1, 8), np.ones(4), np.zeros(4))


def test_feed_forward_refuses_per_row_biases():
    x, w1, w2 = _x(2, 3, 4), _x(4, 6, seed=1), _x(6, 4, seed=2)
    with pytest.raises(ValueError, match=r"b_1 must have shape \(6,\)"):
        feed_forward(x, w1, _x(3, 6), w2, None)  # one bias per row would broadcast silently
    with pytest.raises(ValueError, match=r"b_2 must have shape \(4,\)"):
        feed_forward(x, w1, None, w2, _x(2, 3, 4))
    assert_close(feed_forward(x, w1, None, w2, None), np.maximum(x @ w1, 0) @ w2)


def test_layer_norm_refuses_non_finite_input_and_an_empty_feature_axis():
    with pytest.raises(ValueError, match="x contains NaN"):
        layer_norm(np.full((2, 4), np.nan), np.ones(4), np.zeros(4))
    with pytest.raises(ValueError, match=r"C >= 1"):
        layer_norm(np.zeros((2, 0)), np.ones(0), np.zeros(0))

