"""Every public function of the NumPy modules below refuses bad input with a clear error.

For each function one valid call is listed; from it, bad variants are derived argument by
argument (a string for an array, a bool or a float for an integer, ``"no"`` for a flag, NaN for
a real number, a plain tuple for a NamedTuple ...), and further bad calls are listed by hand
(empty arrays, mismatched shapes, negative seeds and lengths, per-row biases ...). Each must
raise ``ValueError`` or ``TypeError`` from inside ``attnmath`` (never a NumPy message from deep
inside) whose message names the argument. A test also checks that the table covers every public
function of these modules.
"""

from __future__ import annotations

import importlib
import inspect
import math
import pathlib
import re
import traceback

import numpy as np
import pytest

import attnmath
from attnmath import (counting, encoder, masking, moe, multihead, positional, scaling, serving, softmax,
                      theory)
from attnmath import long_context
from attnmath import induction
from attnmath import flash  # only its IO-complexity functions are probed here

MODULES = (softmax, masking, multihead, counting, encoder, positional, moe, theory, scaling, serving,
           long_context, induction)
PACKAGE_DIR = pathlib.Path(attnmath.__file__).resolve().parent

_rng = np.random.default_rng(0)


def _a(*shape):
    return _rng.standard_normal(shape)


def _probs(*shape):
    return softmax.softmax(_a(*shape))


X3 = _a(2, 3, 4)
MHA = multihead.init_multihead_params(8, 2)
MHA_CACHE = multihead.self_attention(_a(2, 3, 8), MHA, 2)[1]
BLOCK = encoder.init_encoder_block_params(8, 2, 16)
MOE_X, MOE_WG, MOE_W1, MOE_W2 = _a(5, 4), _a(4, 3), _a(3, 4, 6), _a(3, 6, 4)
MOE_CACHE = moe.moe_forward(MOE_X, MOE_WG, MOE_W1, MOE_W2, 2)[1]
ROUTING = moe.top_k_route(_probs(5, 3), 2)
LAW = theory.gd_linear_attention_weights(2, 4, lr=0.1)
REG = (_a(4, 2), _a(4), _a(2))
PERM = np.array([2, 0, 1])
POS = np.arange(3)
PAGED = serving.paged_append(serving.paged_cache_init(4, 1, 2, 3), 0, _a(1, 3, 3), _a(1, 3, 3))
MLA = serving.init_mla_params(8, 2, 3, 4, 2)
MLA_LATENT = serving.mla_latent(_a(5, 8), MLA, np.arange(5))
LLAMA = serving.PUBLISHED_MODELS["Llama-2-7B"]
CAUSAL = _probs(2, 5, 5) * np.tril(np.ones((5, 5)))  # (2, 5, 5): attention-like patterns
TINY_RUN = induction.InductionConfig(V=8, T=3, min_T=2, C=8, H=2, steps=1, batch=2, log_every=1,
                                     eval_batch=2)
INDUCTION_DATA = str(PACKAGE_DIR.parents[1] / "book" / "data" / "induction.npz")

# function -> (args, kwargs) of one valid call
VALID = {
    induction.repeated_sequence: ((np.array([3, 1, 2]), 7), {}),
    induction.predictable_mask: ((4,), {"L": 12}),
    induction.repeated_batch: ((2, 4, 8, 0), {"min_T": 2}),
    induction.previous_token_score: ((CAUSAL,), {}),
    induction.first_token_score: ((CAUSAL,), {}),
    induction.mean_attention_distance: ((CAUSAL,), {}),
    induction.induction_score: ((CAUSAL, np.array([0, 1, 2, 1, 2])), {}),
    induction.ov_circuit: ((_a(5, 4), _a(4, 2), _a(2, 4), _a(4, 5)), {}),
    induction.copying_score: ((_a(4, 4),), {}),
    induction.phase_change: ((np.arange(5), np.array([3.0, 2.9, 1.0, 0.2, 0.1])), {"plateau": 0}),
    induction.train_induction: ((TINY_RUN,), {}),
    induction.load_run: ((INDUCTION_DATA,), {}),
    softmax.softmax: ((X3,), {"axis": -1, "temperature": 1.0}),
    softmax.log_softmax: ((X3,), {"axis": -1, "temperature": 1.0}),
    softmax.logsumexp: ((X3,), {"axis": -1, "keepdims": False}),
    softmax.masked_softmax: ((X3, np.ones((3, 4), bool)), {"axis": -1}),
    softmax.softmax_jacobian: ((X3,), {"temperature": 1.0}),
    softmax.softmax_vjp: ((_probs(2, 3), _a(2, 3)), {"axis": -1, "temperature": 1.0}),
    masking.causal_mask: ((3, 4), {"alignment": "top_left"}),
    masking.padding_mask: ((np.array([2, 3]), 4), {}),
    masking.left_padding_mask: ((np.array([2, 3]), 4), {}),
    masking.combine_masks: ((np.ones((3, 3), bool), np.ones((1, 3), bool)), {}),
    masking.sliding_window_mask: ((3, 2, 4), {"alignment": "top_left"}),
    masking.broadcast_mask: ((np.ones((1, 3), bool), (2, 3)), {"name": "mask"}),
    masking.mask_to_bias: ((np.ones((2, 3), bool),), {"dtype": np.float32}),
    multihead.split_heads: ((_a(2, 3, 8), 2), {}),
    multihead.merge_heads: ((_a(2, 2, 3, 4),), {}),
    multihead.init_multihead_params: ((8, 2), {"H_kv": 1, "bias": True, "seed": 0}),
    multihead.params_from_in_proj: ((_a(24, 8), _a(24), _a(8, 8), _a(8)), {}),
    multihead.params_to_in_proj: ((MHA,), {}),
    multihead.multihead_attention: ((_a(2, 3, 8), _a(2, 5, 8), MHA, 2), {"H_kv": 2}),
    multihead.multihead_attention_backward: ((_a(2, 3, 8), MHA_CACHE), {}),
    multihead.grouped_query_attention: ((_a(2, 3, 8), _a(2, 5, 8), MHA, 2, 2), {}),
    multihead.multi_query_attention: (
        (_a(2, 3, 8), _a(2, 5, 8), multihead.init_multihead_params(8, 2, H_kv=1), 2), {}),
    multihead.self_attention: ((_a(2, 3, 8), MHA, 2), {"H_kv": 2}),
    multihead.self_attention_backward: ((_a(2, 3, 8), MHA_CACHE), {}),
    multihead.output_projection_as_sum: ((_a(2, 2, 3, 4), _a(8, 5)), {}),
    multihead.torch_mha_attn_mask: ((np.ones((1, 1, 3, 4), bool), 2, 2, 3, 4), {}),
    multihead.torch_key_padding_mask: ((np.ones((2, 4), bool),), {}),
    counting.multihead_param_count: ((8, 2), {"H_kv": 1, "bias": True}),
    counting.multihead_flops: ((2, 3, 4, 8, 2), {"H_kv": 1}),
    encoder.layer_norm: ((X3, np.ones(4), np.zeros(4)), {"eps": 1e-5}),
    encoder.feed_forward: ((X3, _a(4, 6), _a(6), _a(6, 4), _a(4)), {"activation": "relu"}),
    encoder.init_encoder_block_params: ((8, 2, 16), {"seed": 0}),
    encoder.encoder_block_forward: ((_a(2, 3, 8), BLOCK, 2), {"activation": "relu", "eps": 1e-5}),
    encoder.pre_norm_encoder_block_forward: ((_a(2, 3, 8), BLOCK, 2), {"activation": "relu", "eps": 1e-5}),
    positional.alibi_bias: ((2, 3, 4), {"alignment": "top_left"}),
    positional.alibi_bias_symmetric: ((2, 3, 4), {"alignment": "top_left"}),
    positional.alibi_slopes: ((4,), {}),
    positional.apply_rope: ((_a(2, 3, 4), POS), {"base": 100.0}),
    positional.apply_rope_half: ((_a(2, 3, 4), POS), {"base": 100.0}),
    positional.apply_rope_half_inverse: ((_a(2, 3, 4), POS), {"base": 100.0}),
    positional.apply_rope_inverse: ((_a(2, 3, 4), POS), {"base": 100.0}),
    positional.half_to_interleaved: ((_a(3, 4),), {}),
    positional.interleaved_to_half: ((_a(3, 4),), {}),
    positional.relative_rotation_matrix: ((2, 4), {"base": 100.0}),
    positional.rope_angles: ((POS, 4), {"base": 100.0}),
    positional.sinusoidal_dot_product: ((4, np.arange(3)), {"base": 100.0}),
    positional.sinusoidal_encoding: ((3, 4), {"base": 100.0}),
    positional.sinusoidal_frequencies: ((4,), {"base": 100.0}),
    moe.softmax_gating: ((MOE_X, MOE_WG), {}),
    moe.top_k_route: ((_probs(5, 3), 2), {}),
    moe.top_k_route_renormalized: ((_probs(5, 3), 2), {}),
    moe.expert_capacity: ((5, 2, 3, 1.25), {}),
    moe.apply_capacity: ((ROUTING, 1.0), {}),
    moe.load_balancing_loss: ((_probs(5, 3), ROUTING.expert_index), {}),
    moe.moe_forward: ((MOE_X, MOE_WG, MOE_W1, MOE_W2, 2), {"capacity_factor": 1.0}),
    moe.moe_forward_renormalized: ((MOE_X, MOE_WG, MOE_W1, MOE_W2, 2), {"capacity_factor": 1.0}),
    moe.moe_backward: ((_a(5, 4), MOE_CACHE), {}),
    theory.dot_product_log_kernel: ((_a(3, 2), _a(4, 2)), {"scale": 0.5}),
    theory.gaussian_log_kernel: ((_a(3, 2), _a(4, 2)), {"bandwidth": 0.5}),
    theory.nadaraya_watson: ((_a(3, 2), _a(4, 2), _a(4, 5)),
                             {"log_kernel": lambda a, b: theory.dot_product_log_kernel(a, b)}),
    theory.kernel_smoother: ((_a(3, 2), _a(4, 2), _a(4, 5)), {"scale": 0.5}),
    theory.gaussian_kernel_smoother: ((_a(3, 2), _a(4, 2), _a(4, 5), 0.5), {}),
    theory.gd_one_step_prediction: (REG + (0.1,), {}),
    theory.gd_prediction: (REG, {"lr": 0.1, "n_steps": 2}),
    theory.least_squares_prediction: (REG, {}),
    theory.gd_linear_attention_weights: ((2, 4), {"lr": 0.1}),
    theory.in_context_tokens: (REG, {}),
    theory.linear_self_attention: ((theory.in_context_tokens(*REG), LAW), {}),
    theory.linear_self_attention_gd_step: (REG, {"lr": 0.1}),
    theory.permutation_equivariance_gap: ((_a(3, 2), _a(3, 2), _a(3, 2), PERM), {"mask": None}),
    theory.permutation_invariance_gap: ((_a(3, 2), _a(3, 2), _a(3, 2), PERM), {"mask": None}),
    theory.key_value_permutation_gap: ((_a(2, 2), _a(3, 2), _a(3, 2), PERM), {"mask": None}),
    theory.is_permutation_equivariant: ((_a(3, 2), _a(3, 2), _a(3, 2), PERM), {"rtol": 1e-9}),
    theory.attention_output_rank: ((_probs(3, 4), _a(4, 2)), {"tol": 1e-9}),
    theory.attention_rank_bound: ((3, 4, 2), {}),
    theory.multi_head_output_rank: ((_probs(2, 3, 4), _a(2, 4, 2), _a(4, 5)), {"tol": 1e-9}),
    theory.multi_head_rank_bound: ((3, 4, 2, 2, 5), {}),
    scaling.dot_product_variance: ((4,), {"n_samples": 100, "seed": 0, "mean_q": 0.0, "mean_k": 0.0,
                                          "var_q": 1.0, "var_k": 1.0}),
    scaling.dot_product_mean_theory: ((4,), {"mean_q": 0.0, "mean_k": 0.0}),
    scaling.dot_product_variance_theory: ((4,), {"var_q": 1.0, "var_k": 1.0, "mean_q": 0.0, "mean_k": 0.0}),
    scaling.attention_entropy: ((_probs(3, 4),), {"axis": -1}),
    scaling.max_weight: ((_probs(3, 4),), {"axis": -1}),
    scaling.saturation_curve: (([2, 4],), {"n_keys": 4, "n_queries": 4, "seed": 0}),
    scaling.softmax_jacobian_norm: ((_a(3, 4),), {"axis": -1}),
    scaling.softmax_gradient_norm: ((_a(3, 4),), {"axis": -1}),
    scaling.gradient_magnitude_curve: (([2, 4],), {"n_keys": 4, "n_queries": 4, "seed": 0}),
    serving.paged_cache_init: ((4, 1, 2, 3), {"D_v": 2, "dtype": np.float64}),
    serving.paged_append: ((PAGED, 0, _a(1, 2, 3), _a(1, 2, 3)), {}),
    serving.paged_free: ((PAGED, 0), {}),
    serving.gather_blocks: ((PAGED.k_pool, np.array([0, 1]), 3), {}),
    serving.paged_gather: ((PAGED, 0), {}),
    serving.paged_attention: ((_a(2, 1, 3), PAGED, 0), {"scale": 0.5}),
    serving.paged_unused_slots: ((PAGED,), {}),
    serving.flash_decoding: ((_a(1, 2, 1, 3), _a(1, 1, 5, 3), _a(1, 1, 5, 2)),
                             {"num_splits": 2, "mask": np.ones((1, 5), bool), "scale": 0.5}),
    serving.init_mla_params: ((8, 2, 3, 4, 2), {"D_v": 3, "seed": 0}),
    serving.mla_latent: ((_a(5, 8), MLA, np.arange(5)), {}),
    serving.mla_attention: ((_a(2, 8),) + MLA_LATENT + (MLA,), {"q_positions": np.arange(3, 5)}),
    serving.mla_attention_absorbed: ((_a(2, 8),) + MLA_LATENT + (MLA,),
                                     {"q_positions": np.arange(3, 5)}),
    serving.quantize_symmetric: ((_a(4, 3),), {"bits": 8, "per": "channel"}),
    serving.dequantize: ((serving.quantize_symmetric(_a(4, 3), bits=4, per="token"),), {}),
    serving.quantized_attention_error_bound: ((_a(2, 3), _a(4, 2), _a(4, 3) ** 2, _a(4, 2) ** 2),
                                              {"scale": 0.5}),
    serving.kv_bytes_per_token: ((LLAMA,), {"itemsize": 2}),
    serving.decoder_param_count: ((LLAMA,), {}),
    serving.step_cost: ((LLAMA,), {"B": 2, "L": 1, "S": 10, "itemsize": 2}),
    serving.roofline: ((np.array([1.0, 500.0]),), {"peak_flops": 1e15, "bandwidth": 3e12}),
    long_context.interpolated_frequencies: ((8, 4.0), {"base": 100.0}),
    long_context.ntk_frequencies: ((8, 4.0), {"base": 100.0}),
    long_context.yarn_frequencies: ((8, 4.0, 64), {"base": 100.0, "beta_fast": 32.0, "beta_slow": 1.0}),
    long_context.yarn_ramp: ((np.array([0.5, 4.0, 40.0]),), {"beta_fast": 32.0, "beta_slow": 1.0}),
    long_context.yarn_attention_factor: ((4.0,), {}),
    long_context.rope_rotations: ((np.array([1.0, 0.1]), 64), {}),
    long_context.sink_cache_kept: ((10,), {"n_sink": 2, "window": 3}),
    long_context.sink_window_mask: ((4, 6), {"n_sink": 1, "window": 2, "alignment": "top_left"}),
    long_context.streaming_attention: ((_a(1, 2, 5, 4), _a(1, 1, 5, 4), _a(1, 1, 5, 3)),
                                       {"n_sink": 1, "window": 2, "rope_base": 100.0, "scale": 0.5}),
    long_context.ring_attention: ((_a(1, 2, 5, 4), _a(1, 1, 6, 4), _a(1, 1, 6, 3)),
                                  {"P": 2, "causal": True, "causal_alignment": "top_left", "scale": 0.5}),
    long_context.ring_step_cost: ((64, 16), {"D_v": 8, "H": 4, "H_kv": 2, "bytes_per_elem": 2}),
    long_context.ring_min_block: ((1e12, 1e10), {"bytes_per_elem": 2, "H": 4, "H_kv": 2}),
    long_context.marker_batch: ((2, 5), {"V": 3, "p_marker": 0.5, "seed": 0}),
    long_context.extrapolation_experiment: ((long_context.ExtrapolationConfig(
        positions=("alibi",), L_train=4, lengths=(6,), seeds=(0,), steps=1, batch=2, eval_batch=2),), {}),
    flash.flash_block_sizes: ((8, 200), {}),
    flash.standard_attention_io: ((16, 8, 200), {}),
    flash.flash_attention_io: ((16, 8, 200), {"block_r": 2, "block_c": 4}),
    flash.flash_attention_2_io: ((16, 8, 200), {"block_r": 4, "block_c": 2}),
}

# Bad calls written by hand: (function, args, kwargs, the argument the message must name).
E = np.empty


def _with(fn, name, value):
    """The valid call of ``fn`` with argument ``name`` replaced by ``value``."""
    args, kwargs = VALID[fn]
    params = list(inspect.signature(fn).parameters)
    args, kwargs = list(args), dict(kwargs)
    i = params.index(name)
    if i < len(args):
        args[i] = value
    else:
        kwargs[name] = value
    return fn, tuple(args), kwargs, name


EXTRA = [
    _with(induction.repeated_batch, "T", 8),  # T > V - 1
    _with(induction.repeated_batch, "min_T", 5),  # min_T > T
    _with(induction.repeated_sequence, "segment", np.array([0, 1])),  # 0 is BOS
    _with(induction.previous_token_score, "probs", _a(2, 3, 4)),  # not square
    _with(induction.induction_score, "tokens", np.array([0, 1, 2, 3, 4])),  # nothing repeats
    _with(induction.induction_score, "tokens", np.array([0, 1, 2, 1])),  # wrong length
    _with(induction.ov_circuit, "W_O", _a(3, 4)),
    _with(induction.copying_score, "M", np.zeros((3, 3))),
    _with(induction.phase_change, "loss", np.full(5, np.nan)),
    _with(induction.phase_change, "steps", np.array([0, 2, 1, 3, 4])),
    _with(induction.phase_change, "plateau", 4),
    _with(induction.train_induction, "config", "text"),
    _with(induction.train_induction, "config", induction.InductionConfig(V=8, T=8)),
    # empty arrays where the result would be meaningless (an empty softmax is empty, as torch's)
    _with(scaling.attention_entropy, "probs", E((3, 0))),
    _with(scaling.max_weight, "probs", E((3, 0))),
    _with(scaling.softmax_gradient_norm, "scores", E((3, 0))),
    _with(encoder.layer_norm, "x", E((2, 0))),
    _with(moe.softmax_gating, "w_g", E((4, 0))),
    _with(moe.top_k_route, "probs", E((5, 0))),
    _with(moe.load_balancing_loss, "probs", E((0, 3))),
    _with(theory.gd_one_step_prediction, "X", E((0, 2))),
    _with(theory.least_squares_prediction, "X", E((0, 2))),
    _with(theory.attention_output_rank, "probs", E((3, 0))),
    _with(positional.apply_rope, "x", E((2, 3, 0))),
    _with(scaling.saturation_curve, "d_k_values", []),
    # sizes of the IO-complexity simulations: a fast memory too small, blocks that do not fit
    _with(flash.flash_block_sizes, "M", 36),
    _with(flash.standard_attention_io, "M", 16),
    _with(flash.flash_attention_io, "block_c", 40),
    _with(flash.flash_attention_2_io, "block_r", 40),
    _with(flash.flash_attention_io, "N", 0),
    # wrong number of dimensions
    _with(softmax.softmax, "x", 1.0),
    _with(multihead.merge_heads, "x", _a(3, 4)),
    _with(multihead.multihead_attention, "x_q", _a(3, 8)),
    _with(moe.moe_forward, "x", _a(2, 5, 4)),
    _with(positional.apply_rope, "positions", np.zeros((1, 1, 3), int)),
    _with(theory.linear_self_attention, "z", _a(2, 3, 4)),
    _with(masking.padding_mask, "lengths", np.array([[2, 3]])),
    _with(multihead.torch_key_padding_mask, "mask", np.ones((2, 1, 4), bool)),
    # mismatched shapes, heads and dims
    _with(softmax.softmax_vjp, "grad_p", _a(2, 4)),
    _with(softmax.masked_softmax, "mask", np.ones((2, 2, 3, 4), bool)),  # would enlarge the output
    _with(softmax.masked_softmax, "mask", np.ones((5,), bool)),
    _with(theory.kernel_smoother, "k", _a(4, 3)),
    _with(theory.kernel_smoother, "v", _a(5, 5)),
    (theory.kernel_smoother, (_a(3, 3, 2), _a(2, 4, 2), _a(2, 4, 5)), {}, "k"),  # batch axes 3 vs 2
    _with(theory.dot_product_log_kernel, "x_keys", _a(4, 3)),
    _with(theory.gaussian_kernel_smoother, "y", _a(3, 5)),
    _with(theory.nadaraya_watson, "values", _a(2, 4, 5)),
    _with(theory.multi_head_output_rank, "w_o", _a(5, 5)),
    _with(theory.multi_head_output_rank, "v", _a(3, 4, 2)),
    _with(theory.permutation_equivariance_gap, "perm", np.array([0, 0, 1])),
    _with(theory.permutation_equivariance_gap, "k", _a(4, 2)),
    _with(theory.permutation_equivariance_gap, "mask", np.ones((2, 2), bool)),
    _with(multihead.output_projection_as_sum, "w_o", _a(7, 5)),
    _with(multihead.multihead_attention, "x_kv", _a(3, 5, 8)),
    _with(multihead.multihead_attention, "mask", np.ones((2, 3, 3, 5), bool)),
    _with(multihead.multihead_attention_backward, "dout", _a(2, 3, 5)),
    _with(multihead.params_from_in_proj, "in_proj_bias", _a(23)),
    _with(encoder.feed_forward, "b_1", _a(3, 6)),  # a per-row bias
    _with(encoder.feed_forward, "b_2", _a(2, 3, 4)),
    _with(encoder.feed_forward, "w_2", _a(6, 5)),
    _with(encoder.layer_norm, "gamma", np.ones(3)),
    _with(moe.moe_forward, "w1", _a(2, 4, 6)),
    _with(moe.moe_forward, "w2", _a(3, 5, 4)),
    _with(moe.moe_backward, "dout", _a(5, 3)),
    _with(moe.load_balancing_loss, "expert_index", np.array([[0, 5]] * 5)),
    _with(moe.load_balancing_loss, "expert_index", np.array([[0, 1]] * 4)),
    _with(moe.top_k_route, "k", 4),
    _with(moe.top_k_route, "probs", np.array([[0.5, 0.6, -0.1]] * 2)),
    _with(positional.apply_rope, "x", _a(2, 3, 5)),
    _with(positional.apply_rope, "positions", np.arange(4)),
    _with(positional.apply_rope_half, "positions", np.zeros((3, 3), int)),  # (B, L) with B=3 != 2
    (masking.combine_masks, (np.ones((2, 3), bool), np.ones((4, 1), bool)), {}, "mask 1"),
    (masking.combine_masks, (np.ones((2, 3), bool), np.ones((2, 3))), {}, "mask 1"),
    _with(masking.broadcast_mask, "mask", np.ones((3, 3), bool)),
    _with(masking.broadcast_mask, "shape", "abc"),
    _with(multihead.torch_mha_attn_mask, "mask", np.ones((3, 3, 3, 4), bool)),
    _with(theory.in_context_tokens, "y", _a(5)),
    _with(theory.linear_self_attention, "z", _a(5, 4)),
    # negative or non-integer seeds, lengths and counts
    _with(multihead.init_multihead_params, "seed", -1),
    _with(multihead.init_multihead_params, "H_kv", 3),
    _with(encoder.init_encoder_block_params, "seed", -2),
    _with(scaling.dot_product_variance, "seed", -1),
    _with(scaling.dot_product_variance, "n_samples", 1),
    _with(scaling.saturation_curve, "seed", -5),
    _with(scaling.saturation_curve, "d_k_values", [2, 0]),
    _with(masking.padding_mask, "lengths", np.array([2, -1])),
    _with(masking.padding_mask, "lengths", np.array([2, 5])),
    _with(masking.left_padding_mask, "lengths", np.array([2, -1])),
    _with(masking.causal_mask, "L", -1),
    _with(masking.causal_mask, "S", 0),
    _with(masking.sliding_window_mask, "window", 0),
    _with(counting.multihead_flops, "B", -1),
    _with(counting.multihead_param_count, "C", 7),
    _with(theory.gd_prediction, "n_steps", -1),
    _with(theory.attention_rank_bound, "D_v", 0),
    _with(positional.sinusoidal_encoding, "C", 5),
    _with(positional.alibi_slopes, "H", 0),
    _with(moe.expert_capacity, "N", -1),
    _with(serving.paged_attention, "q", _a(2, 4, 3)),  # more queries than cached tokens
    _with(serving.paged_append, "k_new", _a(2, 2, 3)),
    _with(serving.paged_free, "seq", 5),
    _with(serving.gather_blocks, "length", 5),
    _with(serving.gather_blocks, "block_table", np.array([0, 9])),
    _with(serving.flash_decoding, "num_splits", 0),
    _with(serving.flash_decoding, "mask", np.ones((1, 4), bool)),
    _with(serving.init_mla_params, "d_rope", 3),
    _with(serving.mla_attention, "q_positions", np.arange(3)),
    _with(serving.mla_attention, "c_kv", _a(5, 3)),
    _with(serving.quantize_symmetric, "bits", 9),
    _with(serving.quantize_symmetric, "x", np.full((2, 2), np.nan)),
    _with(serving.quantized_attention_error_bound, "k_error", -_a(4, 3) ** 2),
    _with(serving.roofline, "intensity", np.array([-1.0])),
    _with(serving.decoder_param_count, "shape", serving.PUBLISHED_MODELS["Falcon-7B"]),
    _with(serving.kv_bytes_per_token, "shape", LLAMA._replace(H_kv=3)),
    _with(long_context.ntk_frequencies, "D", 2),
    _with(long_context.interpolated_frequencies, "D", 7),
    _with(long_context.interpolated_frequencies, "scale", 0.5),
    _with(long_context.yarn_frequencies, "original_context", 0),
    _with(long_context.yarn_ramp, "beta_fast", 0.5),
    _with(long_context.yarn_ramp, "rotations", np.array([-1.0])),
    _with(long_context.rope_rotations, "inv_freq", np.zeros((2, 2))),
    _with(long_context.rope_rotations, "inv_freq", np.array([1.0, -0.1])),
    _with(long_context.sink_cache_kept, "window", 0),
    _with(long_context.sink_cache_kept, "n_sink", -1),
    _with(long_context.streaming_attention, "k", _a(1, 1, 4, 4)),
    _with(long_context.streaming_attention, "q", np.full((1, 2, 5, 4), np.nan)),
    _with(long_context.ring_attention, "P", 0),
    _with(long_context.ring_attention, "v", _a(1, 1, 5, 3)),
    _with(long_context.ring_step_cost, "H_kv", 3),
    _with(long_context.ring_min_block, "bytes_per_s", 0.0),
    _with(long_context.marker_batch, "p_marker", 1.5),
    _with(long_context.marker_batch, "V", 1),
    # bad values of numbers and flags
    _with(softmax.softmax, "temperature", 0.0),
    _with(softmax.softmax, "axis", 3),
    _with(encoder.layer_norm, "eps", -1e-5),
    _with(theory.gaussian_log_kernel, "bandwidth", -1.0),
    _with(theory.is_permutation_equivariant, "rtol", 0.0),
    _with(moe.apply_capacity, "capacity_factor", 0.0),
    _with(scaling.dot_product_variance, "var_q", -1.0),
    _with(masking.mask_to_bias, "dtype", int),
    _with(masking.mask_to_bias, "dtype", bool),
    _with(masking.mask_to_bias, "dtype", np.int8),
    _with(multihead.init_multihead_params, "bias", "no"),
    _with(multihead.init_multihead_params, "bias", 0),
    _with(counting.multihead_param_count, "bias", None),
    _with(encoder.feed_forward, "activation", "tanh"),
    # non-finite input where a finite one is required
    _with(encoder.layer_norm, "x", np.full((2, 4), np.nan)),
    _with(moe.softmax_gating, "x", np.full((5, 4), np.inf)),
    _with(theory.kernel_smoother, "q", np.full((3, 2), np.nan)),
    _with(positional.apply_rope, "x", np.full((2, 3, 4), np.nan)),
]


def _bad_values(value):
    """Generic bad values for an argument whose valid value is ``value``."""
    if isinstance(value, (bool, np.bool_)):
        return ["no", 1, None]
    if isinstance(value, (int, np.integer)):
        return [True, 2.5, "3"]
    if isinstance(value, float):
        return ["x", True, math.nan]
    if isinstance(value, str):
        return ["bogus", 3]
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple: params or cache
        return [tuple(value), "params"]
    if isinstance(value, np.ndarray):
        if value.dtype == np.bool_:
            return ["text", value.astype(np.float64)]
        if np.issubdtype(value.dtype, np.integer):
            return ["text", value.astype(np.float64) + 0.5, value.astype(bool)]
        return ["text", value.astype(bool), value.astype(np.complex128), {"a": 1}]
    if isinstance(value, list):
        return ["text", [2.5, 3.0]]
    if callable(value) and not isinstance(value, type):
        return ["text"]
    if isinstance(value, type):  # a dtype
        return ["text"]
    return []


def _generic_cases():
    for fn, (args, kwargs) in VALID.items():
        params = list(inspect.signature(fn).parameters)
        named = dict(zip(params, args))
        named.update(kwargs)
        for name, value in named.items():
            if name == "masks":  # combine_masks(*masks): handled by hand
                continue
            for bad in [3] if name == "name" else _bad_values(value):  # any string is a name
                yield _with(fn, name, bad)


def _label(case):
    fn, args, kwargs, name = case
    return f"{fn.__module__.split('.')[-1]}.{fn.__name__}[{name}]"


CASES = list(_generic_cases()) + EXTRA


def test_every_public_function_has_a_valid_call_in_the_table():
    public = {getattr(m, n) for m in MODULES for n in m.__all__ if inspect.isfunction(getattr(m, n))}
    assert public - set(VALID) == set(), "functions without a bad-input probe"


@pytest.mark.parametrize("fn", list(VALID), ids=lambda f: f"{f.__module__.split('.')[-1]}.{f.__name__}")
def test_the_valid_calls_run(fn):
    args, kwargs = VALID[fn]
    fn(*args, **kwargs)


def _raised_inside_attnmath(exc: BaseException) -> bool:
    frames = traceback.extract_tb(exc.__traceback__)
    return pathlib.Path(frames[-1].filename).resolve().is_relative_to(PACKAGE_DIR)


@pytest.mark.parametrize("case", CASES, ids=[_label(c) for c in CASES])
def test_bad_input_raises_a_clear_error_naming_the_argument(case):
    fn, args, kwargs, name = case
    with pytest.raises((ValueError, TypeError)) as info:
        fn(*args, **kwargs)
    message = str(info.value)
    assert re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message), (
        f"{_label(case)}: the message does not name {name!r}: {message}"
    )
    assert _raised_inside_attnmath(info.value), f"{_label(case)}: raised outside attnmath: {message}"


def probe_summary() -> dict:
    """Counts for the report: functions probed, bad calls, and how each call ended."""
    outcomes: dict[str, int] = {}
    for fn, args, kwargs, name in CASES:
        try:
            fn(*args, **kwargs)
            key = "no error (silent)"
        except (ValueError, TypeError) as exc:
            named = re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", str(exc))
            inside = _raised_inside_attnmath(exc)
            key = f"{type(exc).__name__}" + ("" if named and inside else " (obscure)")
        except Exception as exc:  # noqa: BLE001 - the summary counts every kind
            key = f"{type(exc).__name__} (other)"
        outcomes[key] = outcomes.get(key, 0) + 1
    return {"functions": len(VALID), "bad calls": len(CASES), "outcomes": outcomes}


if __name__ == "__main__":  # pragma: no cover - prints the counts quoted in the report
    importlib.import_module("attnmath")
    print(probe_summary())
