"""Every public callable of attnmath refuses bad input with a clear error.

The surface is read from the package itself: every module's ``__all__``, each public function,
each class with a constructor of its own (records, NamedTuples and plain dataclasses, are checked
where they are used), and every public method that takes an argument (``classmethod``s included).
:func:`test_every_public_callable_has_a_valid_call_and_a_bad_input_case` fails when a public
callable has no row in ``VALID``, so a new public name cannot escape this file.

For each callable one valid call is listed; from it, bad variants are derived argument by
argument (a string for an array, a bool or a float for an integer, ``"no"`` for a flag, NaN or
infinity for a real number or placed in a float array, a plain tuple for a NamedTuple, a NumPy
array for a tensor ...), and further bad calls are listed by hand (empty arrays, mismatched
shapes, negative seeds and lengths, per-row biases ...). Each must raise ``ValueError`` or
``TypeError`` from inside ``attnmath`` (never a NumPy or torch message from deep inside) whose
message names the argument: :func:`outcome` classifies a call, and ``bench/probe_bad_input.py``
prints the counts of its classes. Where non-finite input has a documented result instead of an
error, ``NONFINITE_DOCUMENTED`` names it and a test checks that result.

:mod:`attnmath.flash_triton` needs Triton's interpreter switched on before ``triton`` is first
imported, so its surface is probed in a child process (:class:`attnmath.testing.TritonProcess`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import math
import pathlib
import pkgutil
import re
import traceback

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import attnmath  # noqa: E402
from attnmath import (attention, chunked, core, counting, encoder, flash, induction, kv_cache,  # noqa: E402
                      linear, long_context, masking, moe, multihead, nn, positional, programmable,
                      recurrence,
                      scaling, serving, softmax, sparse, testing, theory)

PACKAGE_DIR = pathlib.Path(attnmath.__file__).resolve().parent
CHILD_PROCESS_MODULES = ("flash_triton",)  # probed in a child process, see the end of this file

_rng = np.random.default_rng(0)


def _a(*shape):
    return _rng.standard_normal(shape)


def _probs(*shape):
    return softmax.softmax(_a(*shape))


def _method(cls, name, make=None, after=None):
    """A function that calls method ``name`` of ``cls``, named and signed as that method.

    ``make()`` builds a fresh instance for an instance method; ``__init__`` calls ``cls`` itself
    and a ``classmethod`` is called on ``cls``. ``after`` receives the result (to close it).
    """
    if name == "__init__":
        target, sig = (lambda: cls), inspect.signature(cls)
    elif make is None:
        target, sig = (lambda: getattr(cls, name)), inspect.signature(getattr(cls, name))
    else:
        target, sig = (lambda: getattr(make(), name)), inspect.signature(getattr(make(), name))

    def call(*args, **kwargs):
        result = target()(*args, **kwargs)
        return after(result) if after is not None else result

    call.__module__, call.__name__ = cls.__module__, name
    call.__qualname__ = f"{cls.__qualname__}.{name}"
    call.__signature__ = sig  # type: ignore[attr-defined]
    return call


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
# the attention core: q (1, 2, 3, 2), k (1, 1, 4, 2), v (1, 1, 4, 3)
Q, K, V = testing.random_qkv(B=1, H=2, L=3, S=4, D=2, D_v=3, H_kv=1, seed=0)
QKV = (Q, K, V)
K2 = np.concatenate([K, -K], axis=1)  # (1, 2, 4, 2): H_kv = H for additive scores
DOUT = np.ones((1, 2, 3, 3))
MASK = np.ones((3, 4), dtype=bool)
BIAS = np.zeros((2, 3, 4))
ATT_CACHE = attention.scaled_dot_product_attention(*QKV)[1]
FLASH_CACHE = flash.flash_attention_forward(*QKV)[1]
DROP_CACHE = attention.dropout_attention(*QKV, p=0.5, rng=np.random.default_rng(0))[1]
STATE = flash.attention_state(*QKV)
KV0 = kv_cache.kv_cache_init(1, 1, 6, 2, 3)
KV4 = kv_cache.kv_cache_append(KV0, K, V)
X34 = _a(3, 4)
PROBLEM = core.prepare(*QKV)
MASKS = {"mask": MASK, "bias": BIAS, "scale": 0.5}
CAUSAL_ARGS = {"causal": True, "causal_alignment": "top_left", "window": 2}
T_X, T_KV = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
T_MASK = torch.ones(2, 1, 3, 5, dtype=torch.bool)
TOKENS = torch.tensor([[0, 1, 2, 3, 1], [0, 4, 5, 6, 4]])


QS, KS, VS = testing.random_qkv(B=1, H=2, L=4, D=2, D_v=3, H_kv=1, seed=1)  # self-attention, L = S = 4
QI, KI, WI = _a(1, 2, 4, 3), _a(1, 4, 3), np.abs(_a(1, 2, 4))
FP8_TINY = programmable.FP8OutlierConfig(sizes=(1.0, 10.0), seeds=(0,), L=8, D=4, block=4, share=0.1)
SINK_TINY = dict(steps=1, batch=2, seeds=(0,), gates=("headwise",), V=5, L=4, C=4, H=2)
# attnmath.recurrence: q (1, 2, 5, 3), k and v (1, 1, 5, ...): grouped heads, one length
RQ, RK, RV = testing.random_qkv(B=1, H=2, L=5, D=3, D_v=2, H_kv=1, seed=1)
R_GATE, R_BETA, R_STATE = -np.full((1, 2, 5), 0.5), np.full((1, 2, 5), 0.5), _a(1, 2, 3, 2)
R_ARGS = {"scale": 0.5, "initial_state": R_STATE}
RECURRENCE = {
    recurrence.segment_sum: ((R_GATE,), {}),
    recurrence.semiseparable_mask: ((R_GATE,), {}),
    recurrence.ssd_quadratic: ((RQ, RK, RV, R_GATE), R_ARGS),
    recurrence.ssd_recurrent: ((RQ, RK, RV, R_GATE), R_ARGS),
    recurrence.ssd_chunked: ((RQ, RK, RV, R_GATE), {"chunk_size": 2, **R_ARGS}),
    recurrence.gla_quadratic: ((RQ, RK, RV, -np.full((1, 2, 5, 3), 0.5)), R_ARGS),
    recurrence.gla_recurrent: ((RQ, RK, RV, -np.full((1, 2, 5, 3), 0.5)), R_ARGS),
    recurrence.gla_chunked: ((RQ, RK, RV, -np.full((1, 2, 5, 3), 0.5)), {"chunk_size": 2, **R_ARGS}),
    recurrence.retention_decay: ((3,), {}),
    recurrence.ssd_quadratic_cost: ((5, 3, 2), {}),
    recurrence.ssd_recurrent_cost: ((5, 3, 2), {}),
    recurrence.ssd_chunked_cost: ((5, 3, 2, 2), {}),
    recurrence.delta_rule_step: ((R_STATE, _a(1, 2, 3), _a(1, 2, 2), np.full((1, 2), 0.5)),
                                 {"log_alpha": -np.full((1, 2), 0.5)}),
    recurrence.delta_rule_recurrent: ((RQ, RK, RV, R_BETA), {"log_alpha": R_GATE, **R_ARGS}),
    recurrence.delta_rule_chunked: ((RQ, RK, RV, R_BETA), {"chunk_size": 2, "log_alpha": R_GATE, **R_ARGS}),
    recurrence.wy_representation: ((_a(4, 3), _a(4, 2), np.full(4, 0.5)), {"log_alpha": -np.full(4, 0.5)}),
    recurrence.recall_pairs: ((2, 3, 4), {"D_v": 2, "seed": 0}),
    recurrence.recall_experiment: (((2,), 2), {"seeds": (0,), "trials": 1, "betas": (1.0,),
                                              "softmax_scale": 8.0}),
}
PROGRAMMABLE = {
    programmable.take: ((np.array([0.5, 0.25, 1.0]), np.array([0, 2])), {}),
    programmable.flex_attention: (QKV, {"score_mod": lambda z, b, h, i, j: z - (i - j),
                                        "mask_mod": lambda b, h, i, j: j <= i + 1, "scale": 0.5}),
    programmable.create_mask: ((lambda b, h, i, j: j <= i, 1, 2, 3, 4), {}),
    programmable.and_masks: ((lambda b, h, i, j: j <= i, lambda b, h, i, j: j >= 0), {}),
    programmable.or_masks: ((lambda b, h, i, j: j <= i, lambda b, h, i, j: j >= 0), {}),
    programmable.causal_mask_mod: ((1,), {}),
    programmable.sliding_window_mask_mod: ((3, 1), {}),
    programmable.sink_window_mask_mod: ((1, 3, 1), {}),
    programmable.padding_mask_mod: ((np.array([2, 3]),), {}),
    programmable.document_mask_mod: ((np.array([0, 0, 1, 1]),), {}),
    programmable.prefix_lm_mask_mod: ((np.array([1, 2]),), {}),
    programmable.alibi_score_mod: ((np.array([0.5, 0.25]), 1), {}),
    programmable.softcap_score_mod: ((5.0,), {}),
    programmable.create_block_mask: ((lambda b, h, i, j: j <= i, 1, 2, 3, 4), {"block_q": 2, "block_k": 2}),
    programmable.block_sparse_attention: ((Q, K, V, programmable.create_block_mask(
        programmable.causal_mask_mod(1), 1, 2, 3, 4, block_q=2, block_k=2)), {"score_mod": None, "scale": 0.5}),
    programmable.nsa_compress: ((K, V), {"block": 2, "stride": 1}),
    programmable.nsa_attention: ((QS, KS, VS, np.full((1, 2, 4, 3), 0.5)),
                                 {"block": 2, "n_select": 3, "window": 2, "scale": 0.5}),
    programmable.nsa_tokens_per_query: ((100,), {"block": 8, "stride": 4, "select_block": 8, "n_select": 2,
                                                 "window": 16}),
    programmable.moba_attention: ((QS, KS, VS), {"block": 2, "top_k": 2, "scale": 0.5}),
    programmable.moba_keys_per_query: ((8,), {"block": 2, "top_k": 2}),
    programmable.dsa_index_scores: ((QI, KI, WI), {}),
    programmable.dsa_attention: ((QS, KS, VS, QI, KI, WI), {"top_k": 2, "scale": 0.5}),
    programmable.dsa_cost: ((16,), {"top_k": 4, "H": 2, "D": 3, "D_v": 3, "H_index": 2, "D_index": 4}),
    programmable.gated_attention: ((*QKV, _a(1, 2, 3, 1)), {"mask": MASK, "causal": False, "scale": 0.5}),
    programmable.differential_lambda_init: ((3,), {}),
    programmable.differential_attention: ((Q, Q, K, K, V, 0.5), {"causal": False, "scale": 0.5}),
    programmable.fp8_round: ((X34, "e4m3"), {}),
    programmable.fp8_quantize: ((X34, "e5m2"), {"block": 2}),
    programmable.hadamard_rotation: ((4, 0), {}),
    programmable.fp8_attention: (QKV, {"fmt": "e4m3", "block_q": 2, "block_k": 2, "rotation": np.eye(2)[::-1],
                                       "quantize_probs": True, "scale": 0.5}),
    programmable.fp8_attention_error_bound: (QKV, {"fmt": "e5m2", "block_q": 2, "block_k": 2,
                                                   "rotation": np.eye(2)[::-1], "scale": 0.5}),
    _method(programmable.GatedSinkConfig, "__init__"): ((), {**SINK_TINY, "p_trigger": 0.2, "lr": 1e-3}),
    programmable.sink_batch: ((3, programmable.GatedSinkConfig(**SINK_TINY), 0), {}),
    programmable.gated_sink_experiment: ((programmable.GatedSinkConfig(**SINK_TINY),), {}),
    programmable.fp8_outlier_inputs: ((0, 10.0, FP8_TINY), {}),
    programmable.fp8_outlier_experiment: ((FP8_TINY,), {}),
}


def _square(z):
    return float(np.sum(z ** 2))


def _held(n):
    memory = flash.FastMemory(64)
    memory.hold(n)
    return memory


def _closed(proc):
    proc.close()


# callable -> (args, kwargs) of one valid call
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
    masking.causal_offset: ((3, 4), {"alignment": "top_left"}),
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
    counting.attention_core_flops: ((2, 3, 16, 8), {"causal": True, "backward": True}),
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
    serving.attention_step_cost: ((serving.PUBLISHED_MODELS["DeepSeek-V2"],),
                                  {"B": 2, "L": 1, "S": 10, "itemsize": 2}),
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
    attention.scaled_dot_product_attention: (QKV, {**MASKS, **CAUSAL_ARGS}),
    attention.attention_backward: ((DOUT, ATT_CACHE), {}),
    attention.dot_product_attention: (QKV, {"mask": MASK, "bias": BIAS}),
    attention.additive_scores: ((Q, K2, np.ones((2, 5)), np.ones((2, 5)), np.ones(5)), {}),
    attention.additive_attention: ((Q, K2, V[:, [0, 0]], np.ones((2, 5)), np.ones((2, 5)), np.ones(5)),
                                   {"mask": MASK}),
    attention.dropout_attention: (QKV, {"p": 0.2, "rng": np.random.default_rng(0), **MASKS}),
    attention.dropout_attention_backward: ((DOUT, DROP_CACHE), {}),
    core.check_finite: ((X34, "x"), {}),
    core.check_causal: ((True, "top_left"), {}),
    core.grouped: ((Q, 1), {}),
    core.repeat_kv: ((K2, 4), {}),
    core.softmax_rows_inplace: ((X34.copy(),), {}),
    core.prepare: (QKV, {**MASKS, **CAUSAL_ARGS}),
    core.check_cache: ((ATT_CACHE, attention.AttentionCache, "f", "b"), {}),
    core.check_dout: ((DOUT, DOUT.shape), {}),
    _method(core.Problem, "allowed", lambda: PROBLEM): ((slice(0, 3), slice(0, 4), (1, 1, 2, 3, 4)), {}),
    _method(core.Problem, "scores", lambda: PROBLEM): ((PROBLEM.q5, slice(0, 3), slice(0, 4)), {}),
    _method(core.Problem, "finish", lambda: PROBLEM): ((np.zeros((1, 1, 2, 3, 3)),), {}),
    chunked.chunked_attention: (QKV, {"chunk_size": 2, **MASKS, **CAUSAL_ARGS}),
    chunked.online_softmax: ((X34,), {"block_size": 2, "axis": -1}),
    chunked.online_logsumexp: ((X34,), {"block_size": 2, "axis": -1, "keepdims": False}),
    flash.flash_attention_forward: (QKV, {"block_q": 2, "block_k": 2, **MASKS, **CAUSAL_ARGS}),
    flash.flash_attention_backward: ((DOUT, FLASH_CACHE), {}),
    flash.causal_tile_schedule: ((5, 7), {"block_q": 2, "block_k": 3, "causal_alignment": "top_left"}),
    flash.attention_matrix_bytes: ((4, 4), {"H": 2, "B": 1, "bytes_per_elem": 4}),
    flash.attention_state: (QKV, {"block_q": 2, "block_k": 2, **MASKS, **CAUSAL_ARGS}),
    flash.merge_attention_states: (([STATE, STATE],), {}),
    _method(flash.FastMemory, "__init__"): ((64,), {}),
    _method(flash.FastMemory, "load", lambda: flash.FastMemory(64)): ((4,), {}),
    _method(flash.FastMemory, "hold", lambda: flash.FastMemory(64)): ((4,), {}),
    _method(flash.FastMemory, "store", lambda: _held(8)): ((4,), {}),
    _method(flash.FastMemory, "free", lambda: _held(8)): ((4,), {}),
    kv_cache.kv_cache_init: ((1, 1, 6, 2), {"D_v": 3, "dtype": np.float64}),
    kv_cache.kv_cache_append: ((KV0, K, V), {}),
    kv_cache.decode_step: ((Q[:, :, :1], KV4), {"scale": 0.5}),
    kv_cache.prefill: ((Q, K[:, :, :3], V[:, :, :3], KV0), {"scale": 0.5}),
    kv_cache.kv_cache_bytes: ((1, 1, 4, 2), {"D_v": 3, "n_layers": 2, "itemsize": 2}),
    linear.elu_feature_map: ((X34,), {}),
    linear.linear_attention: (QKV, {"feature_map": linear.elu_feature_map}),
    linear.linear_attention_quadratic: (QKV, {"feature_map": linear.elu_feature_map, "mask": MASK}),
    linear.causal_linear_attention: ((Q, K[..., :3, :], V[..., :3, :]), {"feature_map": linear.elu_feature_map}),
    linear.draw_gaussian_features: ((4, 2, 0), {}),
    linear.draw_orthogonal_features: ((4, 2, 0), {}),
    linear.random_feature_map: ((X34, np.ones((5, 4))), {}),
    linear.performer_attention: (QKV, {"n_features": 4, "seed": 0, "scale": 0.5}),
    linear.attention_flops: ((2, 3, 4, 5), {}),
    linear.linear_attention_flops: ((2, 3, 4, 5), {}),
    sparse.local_mask: ((4,), {"S": 5, "radius": 1}),
    sparse.strided_local_mask: ((4,), {"stride": 2}),
    sparse.strided_column_mask: ((4,), {"stride": 2}),
    sparse.strided_mask: ((4,), {"stride": 2}),
    sparse.global_local_mask: ((4,), {"radius": 1, "global_tokens": [0]}),
    sparse.random_mask: ((4,), {"S": 5, "n_random": 2, "seed": 0}),
    sparse.bigbird_mask: ((4,), {"radius": 1, "global_tokens": [0], "n_random": 1, "seed": 0}),
    sparse.mask_density: ((MASK,), {}),
    sparse.sliding_window_attention: ((Q, K[..., :3, :], V[..., :3, :]), {"window": 2, "scale": 0.5}),
    testing.assert_close: ((X34, X34.copy()), {"rtol": 1e-10, "atol": 1e-12, "name": "value"}),
    testing.numerical_gradient: ((_square, X34), {"eps": 1e-6}),
    testing.check_gradient: ((_square, X34, 2 * X34), {"name": "x", "eps": 1e-6, "rtol": 1e-5, "atol": 1e-7}),
    testing.random_qkv: ((), {"B": 1, "H": 2, "L": 3, "S": 4, "D": 2, "D_v": 3, "H_kv": 1, "seed": 0,
                              "dtype": np.float64}),
    testing.to_torch: ((X34, X34), {"requires_grad": True}),
    testing.sdpa_oracle: (QKV, {**MASKS, **CAUSAL_ARGS, "dout": DOUT, "dtype": np.float64}),
    testing.triton_child_env: ((False,), {}),
    testing.uses_reference: ((_square,), {"forbidden": ("attnmath", "torch")}),
    _method(testing.TritonProcess, "__init__", after=_closed): ((True,), {"helpers": ""}),
    _method(nn.MultiHeadAttention, "__init__"): ((8, 2), {"H_kv": 1, "bias": True, "dropout": 0.0}),
    _method(nn.MultiHeadAttention, "forward", lambda: nn.MultiHeadAttention(8, 2)):
        ((T_X,), {"x_kv": T_KV, "mask": T_MASK, "is_causal": False, "need_weights": False}),
    _method(nn.MultiHeadAttention, "load_from_torch", lambda: nn.MultiHeadAttention(8, 2)):
        ((torch.nn.MultiheadAttention(8, 2, batch_first=True),), {}),
    _method(nn.MultiHeadAttention, "from_numpy_params"): ((MHA, 2), {"H_kv": 2, "dropout": 0.0}),
    _method(nn.TransformerEncoderBlock, "__init__"):
        ((8, 2, 16), {"dropout": 0.0, "activation": "relu", "norm_first": False, "layer_norm_eps": 1e-5,
                      "H_kv": 1, "bias": True}),
    _method(nn.TransformerEncoderBlock, "forward", lambda: nn.TransformerEncoderBlock(8, 2, 16)):
        ((T_X,), {"mask": torch.ones(2, 1, 3, 3, dtype=torch.bool), "is_causal": False}),
    _method(nn.TransformerEncoderBlock, "load_from_torch", lambda: nn.TransformerEncoderBlock(8, 2, 16)):
        ((torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),), {}),
    _method(nn.TransformerEncoderBlock, "from_numpy_params"):
        ((BLOCK, 2), {"H_kv": 2, "activation": "relu", "norm_first": False, "layer_norm_eps": 1e-5,
                      "dropout": 0.0}),
    _method(induction.AttentionOnlyTransformer, "__init__"): ((8, 6, 8, 2), {"n_layers": 1}),
    _method(induction.AttentionOnlyTransformer, "forward", lambda: induction.AttentionOnlyTransformer(8, 6, 8, 2)):
        ((TOKENS,), {"need_weights": True}),
    _method(induction.AttentionOnlyTransformer, "head_ov_circuits",
            lambda: induction.AttentionOnlyTransformer(8, 6, 8, 2)): ((0,), {}),
    _method(long_context.ExtrapolationConfig, "__init__"):
        ((), {"positions": ("alibi",), "L_train": 4, "lengths": (6,), "seeds": (0,), "steps": 1, "batch": 2,
              "eval_batch": 2, "C": 8, "H": 2, "V": 4, "p_marker": 0.25, "lr": 3e-3, "rope_base": 100.0}),
    **{fn: value for fn, value in PROGRAMMABLE.items()},
    **RECURRENCE,
}

# Bad calls written by hand: (callable, args, kwargs, the argument the message must name).
E = np.empty


def _with(fn, name, value):
    """The valid call of ``fn`` with argument ``name`` replaced by ``value``."""
    args, kwargs = VALID[fn]
    params = inspect.signature(fn).parameters
    positional = [p for p in params if params[p].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                          inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    args, kwargs = list(args), dict(kwargs)
    if name in positional and positional.index(name) < len(args):
        args[positional.index(name)] = value
    else:
        kwargs[name] = value
    return fn, tuple(args), kwargs, name


def _valid(qualname):
    """The callable of ``VALID`` named ``module.Class.method`` (for methods' rows)."""
    return next(fn for fn in VALID if _name(fn) == qualname)


def _name(fn):
    return f"{fn.__module__.split('.')[-1]}.{fn.__qualname__}"


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
    _with(counting.attention_core_flops, "N", 0),
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
    # the named cases
    _with(multihead.params_to_in_proj, "params", MHA._replace(b_q=_a(7))),
    _with(multihead.params_to_in_proj, "params", MHA._replace(w_k=_a(8, 7))),
    _with(theory.permutation_equivariance_gap, "q", E((0, 2))),
    _with(theory.permutation_invariance_gap, "q", E((0, 2))),
    _with(theory.key_value_permutation_gap, "k", E((0, 2))),
    _with(theory.gd_prediction, "X", E((0, 2))),
    _with(theory.gd_prediction, "y", np.array([1.0, np.nan, 0.0, 2.0])),
    _with(_valid("nn.MultiHeadAttention.from_numpy_params"), "params", MHA._replace(b_q=_a(7))),
    _with(_valid("nn.MultiHeadAttention.from_numpy_params"), "params", MHA._replace(b_o=_a(7))),
    _with(_valid("nn.TransformerEncoderBlock.from_numpy_params"), "params", BLOCK._replace(b_1=_a(15))),
    _with(_valid("nn.TransformerEncoderBlock.from_numpy_params"), "params", BLOCK._replace(ln1_gamma=_a(7))),
    _with(testing.numerical_gradient, "f", lambda z: z),
    _with(testing.numerical_gradient, "f", lambda z: float("nan")),
    _with(testing.assert_close, "actual", np.array(["a", "b"])),
    (testing.to_torch, ("text",), {}, "arrays"),
    (testing.to_torch, (np.array(["a"]),), {}, "arrays"),
    _with(testing.uses_reference, "fn", "text"),
    _with(testing.uses_reference, "forbidden", "attnmath"),
    _with(testing.sdpa_oracle, "dout", _a(1, 2, 3, 2)),
    _with(_valid("testing.TritonProcess.__init__"), "helpers", 3),
    # methods
    _with(_valid("flash.FastMemory.load"), "n", 65),
    _with(_valid("flash.FastMemory.store"), "n", 9),
    _with(_valid("flash.FastMemory.free"), "n", 9),
    _with(_valid("core.Problem.allowed"), "rows", 3),
    _with(_valid("core.Problem.allowed"), "shape", (1, 1, 2, 3, 5)),
    _with(_valid("core.Problem.scores"), "q_rows", PROBLEM.q5[..., :2, :]),
    _with(_valid("core.Problem.finish"), "out5", np.zeros((1, 1, 2, 3))),
    _with(_valid("nn.MultiHeadAttention.forward"), "x_q", torch.randn(2, 3, 7)),
    _with(_valid("nn.MultiHeadAttention.forward"), "x_kv", torch.randn(3, 5, 8)),
    _with(_valid("nn.MultiHeadAttention.forward"), "mask", torch.ones(2, 2, 3, 4, dtype=torch.bool)),
    _with(_valid("nn.MultiHeadAttention.load_from_torch"), "mha", torch.nn.MultiheadAttention(8, 4)),
    _with(_valid("nn.MultiHeadAttention.load_from_torch"), "mha", torch.nn.MultiheadAttention(4, 2)),
    _with(_valid("nn.TransformerEncoderBlock.load_from_torch"), "layer",
          torch.nn.TransformerEncoderLayer(8, 2, 8, dropout=0.0)),
    _with(_valid("nn.TransformerEncoderBlock.__init__"), "activation", "tanh"),
    _with(_valid("induction.AttentionOnlyTransformer.forward"), "tokens", TOKENS.repeat(1, 2)),
    _with(_valid("induction.AttentionOnlyTransformer.forward"), "tokens", TOKENS + 8),
    _with(_valid("induction.AttentionOnlyTransformer.head_ov_circuits"), "layer", 2),  # of 2 layers
    _with(_valid("long_context.ExtrapolationConfig.__init__"), "C", 6),
    # the attention core: shapes, heads, caches
    _with(attention.scaled_dot_product_attention, "k", K[..., :1]),
    _with(attention.scaled_dot_product_attention, "v", V[..., :2, :]),
    _with(attention.scaled_dot_product_attention, "mask", np.ones((5, 5), dtype=bool)),
    _with(attention.attention_backward, "cache", FLASH_CACHE),
    _with(attention.attention_backward, "dout", DOUT[..., :1]),
    _with(flash.flash_attention_backward, "cache", ATT_CACHE),
    _with(flash.merge_attention_states, "states", []),
    _with(kv_cache.kv_cache_append, "cache", kv_cache.KVCache(KV0.k, KV0.v, 7)),
    _with(kv_cache.decode_step, "q_t", Q),
    _with(sparse.global_local_mask, "global_tokens", [4]),
    _with(sparse.mask_density, "mask", np.ones((0, 4), dtype=bool)),
    _with(linear.linear_attention, "feature_map", lambda z: -np.ones(z.shape)),
    _with(linear.random_feature_map, "omega", np.ones((5, 2))),
    _with(chunked.online_softmax, "axis", 5),
]


EXTRA_RECURRENCE = [
    _with(recurrence.ssd_quadratic, "k", RK[:, :, :4]),  # another length: not causal self-attention
    _with(recurrence.ssd_chunked, "log_alpha", R_GATE + 1.0),  # a growth, not a decay
    _with(recurrence.ssd_recurrent, "log_alpha", R_GATE[..., :3]),
    _with(recurrence.gla_recurrent, "log_alpha", -np.ones((1, 2, 5, 2))),
    _with(recurrence.ssd_recurrent, "initial_state", _a(1, 2, 2, 3)),  # (D_v, D): Mamba's layout
    _with(recurrence.delta_rule_recurrent, "beta", np.ones((1, 2, 4))),
    _with(recurrence.delta_rule_step, "k", _a(1, 2, 2)),
    _with(recurrence.delta_rule_step, "beta", np.ones(3)),
    _with(recurrence.delta_rule_step, "log_alpha", np.full((1, 2), 0.5)),
    _with(recurrence.wy_representation, "beta", np.ones(3)),
    _with(recurrence.wy_representation, "log_alpha", np.full(4, 0.5)),
    _with(recurrence.segment_sum, "log_alpha", np.array(0.5)),
    _with(recurrence.recall_experiment, "D", 3),
    _with(recurrence.recall_experiment, "betas", (2.5,)),
    _with(recurrence.recall_experiment, "n_pairs", ()),
]

EXTRA_PROGRAMMABLE = [
    (programmable.and_masks, (), {}, "and_masks"),
    (programmable.and_masks, ("text",), {}, "and_masks"),
    (programmable.or_masks, (programmable.causal_mask_mod(), 3), {}, "or_masks"),
    (programmable.flex_attention, QKV, {"mask_mod": programmable.document_mask_mod(np.zeros(2, int))}, "mask_mod"),
    (programmable.flex_attention, QKV, {"mask_mod": lambda b, h, i, j: i - j}, "mask_mod"),
    (programmable.flex_attention, QKV, {"score_mod": lambda z, b, h, i, j: z * np.nan}, "score_mod"),
    (programmable.flex_attention, (Q[0], K[0], V[0]), {}, "q"),  # no batch axis for b
    (programmable.block_sparse_attention, (Q, K, V, programmable.create_block_mask(
        programmable.causal_mask_mod(), 1, 2, 4, 4)), {}, "block_mask"),  # made for L = 4
    _with(programmable.create_block_mask, "L", -1),
    _with(programmable.nsa_attention, "gates", np.full((1, 2, 4, 3), 2.0)),
    _with(programmable.nsa_attention, "k", _a(1, 1, 5, 2)),  # L != S
    _with(programmable.nsa_compress, "v", _a(1, 1, 3, 2)),
    _with(programmable.dsa_attention, "k_index", _a(1, 5, 3)),
    _with(programmable.dsa_index_scores, "w_index", _a(1, 2, 5)),
    _with(programmable.gated_attention, "gate_logits", _a(2, 3, 5)),
    _with(programmable.differential_attention, "k2", _a(1, 1, 5, 2)),
    _with(programmable.hadamard_rotation, "D", 6),
    _with(programmable.fp8_attention, "rotation", 2 * np.eye(2)),
    _with(programmable.fp8_quantize, "x", _a(4)),
    _with(programmable.take, "index", np.array([0.5])),
    _with(_valid("programmable.GatedSinkConfig.__init__"), "C", 15),
    _with(_valid("programmable.GatedSinkConfig.__init__"), "gates", ("sigmoid",)),
]


_NAN = float("nan")


def _nonfinite(x, value=_NAN):
    """A float copy of ``x`` with ``value`` in its first entry."""
    x = np.array(x, dtype=np.float64 if not np.issubdtype(np.asarray(x).dtype, np.floating)
                 else np.asarray(x).dtype, copy=True)
    x.flat[0] = value
    return x


def _bad_tensors(value):
    array = value.detach().cpu().numpy()  # a NumPy array for a tensor (a CUDA one too)
    if value.dtype == torch.bool:
        return ["text", value.to(torch.float32), array]
    if not value.is_floating_point():
        return ["text", value.to(torch.float32), array, value[0]]
    bad = value.detach().clone()
    bad.view(-1)[0] = _NAN
    return ["text", array, value.to(torch.float64), value[0], bad]


def _bad_arrays(value):
    if value.dtype == np.bool_:
        return ["text", value.astype(np.float64)]
    if np.issubdtype(value.dtype, np.integer):
        return ["text", value.astype(np.float64) + 0.5, value.astype(bool)]
    bad = ["text", value.astype(bool), value.astype(np.complex128), {"a": 1}]
    if value.size:
        bad += [_nonfinite(value), _nonfinite(value, math.inf)]
    return bad


def _bad_values(value):
    """Generic bad values for an argument whose valid value is ``value``."""
    if isinstance(value, (bool, np.bool_)):
        return ["no", 1, None]
    if isinstance(value, (int, np.integer)):
        return [True, 2.5, "3"]
    if isinstance(value, float):
        return ["x", True, math.nan, math.inf]
    if isinstance(value, str):
        return ["bogus", 3]
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple: params or cache
        return [tuple(value), "params"]
    if isinstance(value, torch.Tensor):
        return _bad_tensors(value)
    if isinstance(value, np.ndarray):
        return _bad_arrays(value)
    if isinstance(value, (list, tuple)):
        return ["text", [2.5, 3.0]]
    if isinstance(value, slice):
        return ["text", 3]
    return ["text"]  # a callable, a dtype, a module, a generator ...


# Non-finite values whose result is documented instead of an error: (callable, argument) ->
# the exception raised (AssertionError for a failed check) or None where the values pass through.
NONFINITE_DOCUMENTED = {
    (testing.assert_close, "actual"): AssertionError,  # NaN only matches NaN; inf only inf
    (testing.assert_close, "expected"): AssertionError,
    (testing.check_gradient, "analytic"): AssertionError,  # a failed gradient check
    (core.repeat_kv, "x"): None,  # moves values as they are, as torch's repeat_interleave
    (_valid("core.Problem.finish"), "out5"): None,  # reshapes and casts only
    (core.grouped, "x"): None,  # a view
    (multihead.split_heads, "x"): None,  # reshapes move values as they are
    (multihead.merge_heads, "x"): None,
    (multihead.params_from_in_proj, "in_proj_weight"): None,
    (multihead.params_from_in_proj, "in_proj_bias"): None,
    (multihead.params_from_in_proj, "out_proj_weight"): None,
    (multihead.params_from_in_proj, "out_proj_bias"): None,
    (positional.interleaved_to_half, "x"): None,
    (positional.half_to_interleaved, "x"): None,
    (serving.gather_blocks, "pool"): None,
}
# Infinities with a documented result instead of an error: -inf is a masked entry of logits and
# additive biases (NaN and +inf are refused there), and log-sum-exp of +inf is +inf.
_MASKED = {-math.inf}
INFINITY_DOCUMENTED = {
    (softmax.softmax, "x"): _MASKED, (softmax.log_softmax, "x"): _MASKED,
    (softmax.masked_softmax, "x"): _MASKED, (softmax.softmax_jacobian, "z"): _MASKED,
    (chunked.online_softmax, "x"): _MASKED, (core.softmax_rows_inplace, "x"): _MASKED,
    (scaling.softmax_jacobian_norm, "scores"): _MASKED, (scaling.softmax_gradient_norm, "scores"): _MASKED,
    (softmax.logsumexp, "x"): {-math.inf, math.inf}, (chunked.online_logsumexp, "x"): {-math.inf, math.inf},
    **{(fn, "bias"): _MASKED for fn in VALID if "bias" in inspect.signature(fn).parameters},
}
# Views of any array (boolean keep masks too): only non-arrays are bad there.
ANY_DTYPE = {(core.grouped, "x")}


FREE_TEXT = {"name", "forward", "backward", "helpers"}  # any string will do: only a non-string is bad


def _arguments(fn):
    """``{argument: value}`` of the valid call of ``fn``; ``*args`` are left to the hand-written cases."""
    args, kwargs = VALID[fn]
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params.values()):
        return dict(kwargs)
    return dict(zip(params, args), **kwargs)


def _takes_an_integer_too(fn, name: str) -> bool:
    """A string argument annotated ``str | int``: a causal alignment or its integer offset
    (attnmath.masking.causal_offset), where an integer is valid."""
    annotation = inspect.signature(fn).parameters[name].annotation
    return isinstance(annotation, str) and "int" in (a.strip() for a in annotation.split("|"))


def _generic_cases():
    for fn in VALID:
        for name, value in _arguments(fn).items():
            bads = [3] if name in FREE_TEXT else _bad_values(value)
            if isinstance(value, str) and _takes_an_integer_too(fn, name):
                bads = ["bogus", 2.5, True]
            for bad in bads:
                if (fn, name) in NONFINITE_DOCUMENTED and _has_nonfinite(bad):
                    continue
                if isinstance(bad, np.ndarray) and bad.flat[0] in INFINITY_DOCUMENTED.get((fn, name), ()):
                    continue
                if (fn, name) in ANY_DTYPE and isinstance(bad, np.ndarray):
                    continue
                yield _with(fn, name, bad)


def _has_nonfinite(value):
    if isinstance(value, torch.Tensor):
        return bool(value.is_floating_point() and not torch.isfinite(value).all())
    if isinstance(value, float):
        return not math.isfinite(value)
    return isinstance(value, np.ndarray) and value.dtype.kind == "f" and not np.isfinite(value).all()


def _label(case):
    fn, args, kwargs, name = case
    return f"{_name(fn)}[{name}]"


CASES = list(_generic_cases()) + EXTRA + EXTRA_PROGRAMMABLE + EXTRA_RECURRENCE


# ------------------------------------------------------------------------------------ the surface


def _is_record(cls):
    """NamedTuples and dataclasses without checks of their own: checked where they are used."""
    if issubclass(cls, tuple):
        return True
    return dataclasses.is_dataclass(cls) and not hasattr(cls, "__post_init__")


def _takes_arguments(fn):
    params = list(inspect.signature(fn).parameters.values())
    return any(p.name not in ("self", "cls") and not p.name.startswith("_") for p in params)


def _is_autograd_function(cls):
    """A ``torch.autograd.Function``: its ``forward``/``backward`` are reached through ``apply``
    (a public function of the module), never called directly."""
    return any(b.__name__ == "Function" and b.__module__.startswith("torch.autograd") for b in cls.__mro__)


def _class_surface(cls):
    if _is_autograd_function(cls):
        return []
    names = []
    if not _is_record(cls) and ("__init__" in vars(cls) or "__post_init__" in vars(cls)):
        names.append("__init__")
    for attr, member in vars(cls).items():
        if attr.startswith("_"):
            continue
        fn = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
        if inspect.isfunction(fn) and _takes_arguments(fn):
            names.append(attr)
    return [f"{cls.__module__.split('.')[-1]}.{cls.__qualname__}.{n}" for n in names]


def public_surface(skip=CHILD_PROCESS_MODULES):
    """Every public callable of attnmath that takes an argument, as ``module.qualname``."""
    surface = set()
    for info in pkgutil.iter_modules(attnmath.__path__):
        if info.name.startswith("_") or info.name in skip:
            continue
        surface |= module_surface(importlib.import_module(f"attnmath.{info.name}"))
    return surface


def module_surface(module):
    """The public callables of one module (its ``__all__``) that take an argument."""
    assert hasattr(module, "__all__"), f"{module.__name__} has no __all__"
    surface = set()
    for obj in (getattr(module, n) for n in module.__all__):
        if inspect.isclass(obj) and obj.__module__.startswith("attnmath."):
            surface.update(_class_surface(obj))
        elif inspect.isfunction(obj) and _takes_arguments(obj):
            surface.add(_name(obj))
    return surface


# ------------------------------------------------------------------------------------ outcomes


def _names(message, name):
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message) is not None


def _raised_inside_attnmath(exc: BaseException) -> bool:
    frames = traceback.extract_tb(exc.__traceback__)
    return pathlib.Path(frames[-1].filename).resolve().is_relative_to(PACKAGE_DIR)


def _holds_nan(result, depth=0):
    if isinstance(result, torch.Tensor):
        return bool(result.is_floating_point() and torch.isnan(result.detach()).any())
    if isinstance(result, np.ndarray):
        return result.dtype.kind in "fc" and bool(np.isnan(result).any())
    if isinstance(result, float):
        return math.isnan(result)
    if isinstance(result, (tuple, list)) and depth < 3:
        return any(_holds_nan(r, depth + 1) for r in result)
    return False


def outcome(case):
    """How a bad call ends: ``("clear" | "obscure" | "silent" | "unannounced NaN", message)``.

    *clear*: a ``TypeError``/``ValueError`` raised inside attnmath whose message names the
    argument; *obscure*: any other exception, or one raised deep inside NumPy or torch, or one not
    naming the argument; *silent*: a result; *unannounced NaN*: a result holding NaN.
    """
    fn, args, kwargs, name = case
    try:
        with np.errstate(all="ignore"):
            result = fn(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        clear = _names(str(exc), name) and _raised_inside_attnmath(exc)
        return ("clear" if clear else "obscure"), f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 - every other kind is obscure
        return "obscure", f"{type(exc).__name__}: {exc}"
    return ("unannounced NaN" if _holds_nan(result) else "silent"), repr(result)[:120]


# ------------------------------------------------------------------------------------ tests


def test_every_public_callable_has_a_valid_call_and_a_bad_input_case():
    surface = public_surface()
    listed = {_name(fn) for fn in VALID}
    assert surface - listed == set(), "public callables without a valid call in VALID"
    assert listed - surface == set(), "VALID lists callables that are not public"
    probed = {_name(case[0]) for case in CASES}
    assert surface - probed == set(), "public callables without a bad-input case"


# Command-line entry points (``python -m attnmath.<module>``): argparse answers a bad command
# line with its usage and exit status 2.
ENTRY_POINTS = {"main"}


def test_every_public_definition_of_a_module_is_in_its_all():
    for info in pkgutil.iter_modules(attnmath.__path__):
        if info.name.startswith("_") or info.name in CHILD_PROCESS_MODULES:
            continue
        module = importlib.import_module(f"attnmath.{info.name}")
        defined = {n for n, obj in vars(module).items() if not n.startswith("_")
                   and (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == module.__name__}
        assert defined - set(module.__all__) - ENTRY_POINTS == set(), f"attnmath.{info.name}: not in __all__"


@pytest.mark.parametrize("fn", list(VALID), ids=_name)
def test_the_valid_calls_run(fn):
    args, kwargs = VALID[fn]
    fn(*args, **kwargs)


def _cases_by_label():
    """``{"module.callable[argument]": [its bad calls]}``: the cases of ``CASES``, by argument."""
    by_label: dict[str, list] = {}
    for case in CASES:
        by_label.setdefault(_label(case), []).append(case)
    return by_label


CASES_BY_LABEL = _cases_by_label()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("label", list(CASES_BY_LABEL))
def test_bad_input_raises_a_clear_error_naming_the_argument(label):
    # One test per argument of each callable: every bad call of it is made, and each one not
    # refused clearly is listed (by its place among the argument's bad calls).
    cases = CASES_BY_LABEL[label]
    unclear = [f"bad call {i + 1} of {len(cases)}: {kind}: {message}"
               for i, (kind, message) in enumerate(map(outcome, cases)) if kind != "clear"]
    assert not unclear, f"{label}: " + "\n".join(unclear)


@pytest.mark.parametrize("key", list(NONFINITE_DOCUMENTED), ids=lambda k: f"{_name(k[0])}[{k[1]}]")
def test_documented_non_finite_results(key):
    fn, name = key
    value = _arguments(fn)[name]
    case = _with(fn, name, _nonfinite(value))
    expected = NONFINITE_DOCUMENTED[key]
    if expected is None:
        kind, _ = outcome(case)
        assert kind == "unannounced NaN", f"{_label(case)} should pass the NaN through, got {kind}"
    else:
        with pytest.raises(expected):
            case[0](*case[1], **case[2])


def _float_arguments():
    """``(callable, argument)`` for every non-empty floating array argument of a valid call."""
    pairs = []
    for fn in VALID:
        for name, value in _arguments(fn).items():
            is_float = isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.size
            if is_float and (fn, name) not in NONFINITE_DOCUMENTED:
                pairs.append((fn, name))
    return pairs


FLOAT_ARGUMENTS = _float_arguments()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_nan_or_infinity_anywhere_in_a_float_argument_is_refused_naming_it(data):
    fn, name = data.draw(st.sampled_from(FLOAT_ARGUMENTS), label="argument")
    value = np.array(_arguments(fn)[name], copy=True)
    index = data.draw(st.integers(0, value.size - 1), label="flat index")
    bad = data.draw(st.sampled_from([math.nan, math.inf, -math.inf]), label="value")
    value.flat[index] = bad
    case = _with(fn, name, value)
    kind, message = outcome(case)
    if bad in INFINITY_DOCUMENTED.get((fn, name), ()):  # a documented result, not NaN
        assert kind == "silent", f"{_label(case)}: {bad} at flat index {index} is documented: {kind}: {message}"
    else:
        assert kind == "clear", f"{_label(case)} at flat index {index}: {kind}: {message}"


# ------------------------------------------------------------------ attnmath.flash_triton, in a child


def _triton_helpers():
    """Source served by the child: this file's surface functions, applied to ``ft`` (flash_triton)."""
    parts = ["import dataclasses\nimport inspect"]
    parts += [inspect.getsource(f) for f in (_name, _is_record, _takes_arguments, _is_autograd_function,
                                              _class_surface, module_surface)]
    parts.append("def surface():\n    return sorted(module_surface(ft))\n")
    return "\n\n".join(parts)


def start_triton_child():
    """A :class:`~attnmath.testing.TritonProcess` serving flash_triton and ``surface()``."""
    return testing.TritonProcess(interpret=not torch.cuda.is_available(), helpers=_triton_helpers())


def _triton_valid(proc):
    """``{qualname: kwargs}``: one valid call, every argument by name, of each public function."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    g = torch.Generator().manual_seed(0)
    q, k, v, dout = (torch.randn(1, 2, 16, 16, generator=g).to(device) for _ in range(4))
    qkv = {"q": q, "k": k[:, :1], "v": v[:, :1], "causal": True, "scale": 0.5, "block_q": 16, "block_k": 16}
    _, cache = proc.flash_attention_triton(**qkv)
    return {
        "flash_triton.kernel_config": {"D": 64, "dtype": torch.float32, "block_q": 16, "block_k": 16},
        "flash_triton.flash_attention_triton": qkv,
        "flash_triton.flash_attention_triton_backward": {"dout": dout, "cache": cache, "block_q": 16,
                                                         "block_k": 16},
        "flash_triton.flash_attention": qkv,
    }


def _reporting(proc, fn):
    """``fn`` followed by a wait for the GPU's finite checks, which report there and not in the call."""
    def call(*args, **kwargs):
        out = fn(*args, **kwargs)
        proc.wait_for_input_checks()
        return out
    return call


def triton_outcomes(proc):
    """``(surface, valid calls, [(label, outcome, message)])`` of flash_triton's bad calls."""
    valid = _triton_valid(proc)
    rows = []
    for qualname, kwargs in valid.items():
        fn = _reporting(proc, getattr(proc, qualname.split(".")[-1]))
        fn(**kwargs)  # the valid call runs
        for name, value in kwargs.items():
            for bad in _bad_values(value):
                rows.append((f"{qualname}[{name}]", *outcome((fn, (), {**kwargs, name: bad}, name))))
    return set(proc.surface()), valid, rows


@pytest.fixture(scope="module")
def triton_child():
    pytest.importorskip("triton")
    proc = start_triton_child()
    try:
        yield proc
    finally:
        proc.close()


def test_flash_triton_refuses_bad_input_naming_the_argument_in_a_child_process(triton_child):
    surface, valid, rows = triton_outcomes(triton_child)
    assert surface == set(valid), "flash_triton's public callables and its valid calls differ"
    assert surface <= {label.split("[")[0] for label, _, _ in rows}
    bad = [f"{label}: {kind}: {message}" for label, kind, message in rows if kind != "clear"]
    assert not bad, "\n".join(bad)


# ------------------------------------------------------------------ arrays of any other shape


def _array_arguments():
    """``(callable, argument)`` for every NumPy array argument of a valid call."""
    return [(fn, name) for fn in VALID for name, value in _arguments(fn).items()
            if isinstance(value, np.ndarray) and value.dtype.kind in "biuf"]


ARRAY_ARGUMENTS = _array_arguments()
# A failed check is what these report, by design (AssertionError naming the value).
CHECKS = (testing.assert_close, testing.check_gradient)


def shape_outcome(fn, name, value):
    """``"ok"`` when ``fn`` answers ``value`` (any shape) with a result holding no NaN, or with a
    ``TypeError``/``ValueError`` raised inside attnmath that names one of its arguments; else
    what went wrong."""
    args, kwargs = _with(fn, name, value)[1:3]
    try:
        with np.errstate(all="ignore"):
            result = fn(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        named = any(_names(str(exc), p) for p in inspect.signature(fn).parameters)
        return "ok" if named and _raised_inside_attnmath(exc) else f"obscure: {type(exc).__name__}: {exc}"
    except AssertionError as exc:
        return "ok" if fn in CHECKS else f"AssertionError: {exc}"
    except Exception as exc:  # noqa: BLE001 - every other kind is obscure
        return f"obscure: {type(exc).__name__}: {exc}"
    return "unannounced NaN" if _holds_nan(result) else "ok"


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_an_array_of_any_shape_gets_a_result_or_an_error_naming_an_argument(data):
    fn, name = data.draw(st.sampled_from(ARRAY_ARGUMENTS), label="argument")
    valid = _arguments(fn)[name]
    ndim = data.draw(st.integers(max(0, valid.ndim - 1), valid.ndim + 1), label="ndim")
    shape = tuple(data.draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim), label="shape"))
    if valid.dtype.kind == "f":
        value = np.random.default_rng(0).standard_normal(shape).astype(valid.dtype)
    else:
        value = np.zeros(shape, dtype=valid.dtype)
    result = shape_outcome(fn, name, value)
    assert result == "ok", f"{_name(fn)}[{name}] of shape {shape}: {result}"


# ------------------------------------------------------------------ documented results named by the issue


def test_assert_close_compares_bfloat16_tensors_through_float32():
    a = torch.tensor([1.0, 2.0, 3.0], dtype=torch.bfloat16)
    testing.assert_close(a, a.float().numpy(), rtol=0, atol=0)  # bfloat16 values are exact in float32
    with pytest.raises(AssertionError, match=r"worst at index \(2,\)"):
        testing.assert_close(a, np.array([1.0, 2.0, 3.5]), rtol=0, atol=0)


def test_the_fused_bias_of_params_to_in_proj_has_the_length_of_the_fused_weight():
    in_w, in_b, _, _ = multihead.params_to_in_proj(MHA)
    assert in_b.shape == (in_w.shape[0],) == (24,)
    with pytest.raises(ValueError, match=r"params\.b_q must have shape \(8,\)"):
        multihead.params_to_in_proj(MHA._replace(b_q=np.zeros(5)))
