"""Tests of attnmath.counting: parameter and FLOP counts against torch modules and torch's counter."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from attnmath.counting import attention_core_flops, multihead_flops, multihead_param_count
from attnmath.kv_cache import kv_cache_bytes
from attnmath.multihead import init_multihead_params, self_attention

SETTINGS = settings(max_examples=30, deadline=None)


class _TorchGQA(torch.nn.Module):
    """A grouped-query attention module built from nn.Linear layers (the parameter-count oracle)."""

    def __init__(self, C, H, H_kv, bias):
        super().__init__()
        D = C // H
        self.H, self.H_kv, self.D = H, H_kv, D
        self.q = torch.nn.Linear(C, H * D, bias=bias, dtype=torch.float64)
        self.k = torch.nn.Linear(C, H_kv * D, bias=bias, dtype=torch.float64)
        self.v = torch.nn.Linear(C, H_kv * D, bias=bias, dtype=torch.float64)
        self.o = torch.nn.Linear(H * D, C, bias=bias, dtype=torch.float64)

    def forward(self, x):
        B, L, C = x.shape
        q = self.q(x).view(B, L, self.H, self.D).transpose(1, 2)  # (B, H, L, D)
        k = self.k(x).view(B, L, self.H_kv, self.D).transpose(1, 2)  # (B, H_kv, L, D)
        v = self.v(x).view(B, L, self.H_kv, self.D).transpose(1, 2)  # (B, H_kv, L, D)
        g = self.H // self.H_kv
        kr, vr = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)  # (B, H, L, D)
        probs = torch.softmax(q @ kr.transpose(-1, -2) / self.D ** 0.5, dim=-1)  # (B, H, L, L)
        out = self.o((probs @ vr).transpose(1, 2).reshape(B, L, C))  # (B, L, C)
        return out, k, v


def _numel(module):
    return sum(t.numel() for t in module.parameters())


@pytest.mark.parametrize("C, H", [(16, 1), (16, 4), (24, 3), (64, 8)])
@pytest.mark.parametrize("bias", [True, False])
def test_param_count_matches_torch_multihead_attention(C, H, bias):
    mha = torch.nn.MultiheadAttention(C, H, bias=bias)
    assert multihead_param_count(C, H, bias=bias) == _numel(mha)


@pytest.mark.parametrize("C, H, H_kv", [(16, 4, 2), (16, 4, 1), (24, 6, 3), (32, 8, 8)])
@pytest.mark.parametrize("bias", [True, False])
def test_param_count_matches_a_torch_grouped_query_module(C, H, H_kv, bias):
    assert multihead_param_count(C, H, H_kv=H_kv, bias=bias) == _numel(_TorchGQA(C, H, H_kv, bias))


@pytest.mark.claim(
    "003 §3.3",
    r"With $d_k = d_v = d_{\mathrm{model}}/h$, $W_i^Q$, $W_i^K$, $W_i^V$ of all heads hold "
    r"$3h \cdot d_{\mathrm{model}} \cdot d_{\mathrm{model}}/h = 3 d_{\mathrm{model}}^2$ and $W^O$ "
    r"$d_{\mathrm{model}}^2$: $4 d_{\mathrm{model}}^2$ in total",
    "verified",
    domain=r"$1 \le D \le 16$, $H \in \{1, 2, 4, 8\}$, $C = H D$, hypothesis")
@SETTINGS
@given(D=st.integers(1, 16), H=st.sampled_from([1, 2, 4, 8]))
def test_multi_head_has_4c_squared_weights_whatever_the_number_of_heads(D, H):
    C = H * D
    assert multihead_param_count(C, H, bias=False) == 4 * C * C
    assert multihead_param_count(C, H, bias=False) == multihead_param_count(C, 1, bias=False)


@pytest.mark.claim(
    "002 §4.3",
    r"Multi-head ($h$ heads): $h \cdot 3(d/h)^2 + d^2 = 3d^2/h + d^2 \approx 4d^2$, the same "
    "parameter count as one head",
    "corrected",
    correction=r"Each head's $W_i^Q$, $W_i^K$, $W_i^V$ is $d \times (d/h)$, not "
               r"$(d/h) \times (d/h)$: the $h$ heads hold $3 d^2$ and the layer exactly $4 d^2$ "
               "weights (plus $4 d$ biases) for every $h$. $3 d^2/h + d^2$ is not approximately "
               r"$4 d^2$ (it is $1.375\, d^2$ for $h = 8$).",
    domain="the source's counterexample $C = 512$, $H = 8$, against "
           "`torch.nn.MultiheadAttention`'s parameter count",
    box="corr-head-projection-shape")
def test_per_head_query_key_value_maps_are_c_by_d_not_d_by_d():
    # A claimed count h * 3 (d/h)^2 + d^2 = 3 d^2 / h + d^2 is not what torch holds: each head's
    # W_i^Q is d x d/h, so the H heads hold 3 d^2 in total and the block 4 d^2.
    C, H = 512, 8
    torch_count = _numel(torch.nn.MultiheadAttention(C, H, bias=False))
    assert torch_count == 4 * C * C
    assert torch_count != 3 * C * C // H + C * C
    assert multihead_param_count(C, H, bias=False) == torch_count


@pytest.mark.claim(
    "003 §3.3",
    r"Single-head attention has $3 d_{\mathrm{model}}^2$ parameters, multi-head "
    r"$4 d_{\mathrm{model}}^2$: a similar parameter count",
    "corrected",
    correction="The comparison counts $W^O$ for the multi-head layer only. With the same output "
               r"projection both have exactly $4 d_{\mathrm{model}}^2$ weights, without it both "
               r"have $3 d_{\mathrm{model}}^2$: the count does not depend on $h$.",
    domain=r"every $H \in \{1, 2, 4, 8\}$ with $C = H D$, $1 \le D \le 16$, against "
           "`torch.nn.MultiheadAttention`'s parameter count, hypothesis",
    box="corr-parameter-count")
@settings(max_examples=20, deadline=None)
@given(H=st.sampled_from([1, 2, 4, 8]), D=st.integers(1, 16))
def test_single_head_with_output_projection_also_has_4c_squared_weights(H, D):
    # Single-head attention "3 d^2" omits W_O; with the same output projection it is 4 d^2.
    C = H * D
    single = _numel(torch.nn.MultiheadAttention(C, 1, bias=False))
    multi = _numel(torch.nn.MultiheadAttention(C, H, bias=False))
    assert single == multi == 4 * C * C
    assert single - _numel(torch.nn.Linear(C, C, bias=False)) == 3 * C * C


def _counted(fn):
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


@pytest.mark.parametrize("L, S", [(5, 5), (3, 7)])
@pytest.mark.parametrize("H", [1, 2, 4])
def test_flops_match_the_flop_counter_on_torch_multihead_attention(L, S, H):
    B, C = 2, 8
    mha = torch.nn.MultiheadAttention(C, H, batch_first=True, dtype=torch.float64)
    x_q, x_kv = torch.randn(B, L, C, dtype=torch.float64), torch.randn(B, S, C, dtype=torch.float64)
    # need_weights=True makes torch compute the attention as two batched matmuls, which the
    # counter sees (the fused CPU attention kernel is not counted).
    counted = _counted(lambda: mha(x_q, x_kv, x_kv, need_weights=True))
    assert multihead_flops(B, L, S, C, H).total == counted


@pytest.mark.parametrize("H, H_kv", [(4, 2), (4, 1), (8, 2)])
def test_flops_match_the_flop_counter_on_a_torch_grouped_query_module(H, H_kv):
    B, L, C = 2, 6, 16
    module = _TorchGQA(C, H, H_kv, bias=True)
    x = torch.randn(B, L, C, dtype=torch.float64)
    assert multihead_flops(B, L, L, C, H, H_kv=H_kv).total == _counted(lambda: module(x))


@pytest.mark.parametrize("H", [2, 4, 8])
def test_heads_of_width_c_over_h_cost_the_same_matmul_flops_as_one_full_head(H):
    B, L, S, C = 2, 6, 9, 16
    one, many = multihead_flops(B, L, S, C, 1), multihead_flops(B, L, S, C, H)
    assert one.projections == many.projections
    assert (one.scores, one.weighted_sum) == (many.scores, many.weighted_sum)
    x_q, x_kv = torch.randn(B, L, C, dtype=torch.float64), torch.randn(B, S, C, dtype=torch.float64)
    counts = [
        _counted(lambda h=h: torch.nn.MultiheadAttention(C, h, batch_first=True, dtype=torch.float64)(
            x_q, x_kv, x_kv, need_weights=True))
        for h in (1, H)
    ]
    assert counts[0] == counts[1]


@pytest.mark.claim(
    "000 Head Dimension",
    r"$d_k = d_v = d_{\mathrm{model}} / h$ ensures the total computational cost is similar to "
    "single-head attention with full dimensionality",
    "corrected",
    correction="The matrix-multiplication FLOPs (and the parameters) are exactly equal for every "
               "$h$. What grows linearly with $h$ is the number of attention weights, $B h L S$: "
               "their memory, and the memory traffic of writing and reading them. The softmax's "
               "own work, a few operations per weight, is small next to the $4 B L S C$ FLOPs of "
               r"$QK^\top$ and $PV$ (a ratio of about $5h / 4C$).",
    domain=r"self- and cross-attention: $1 \le B \le 2$, $1 \le L, S \le 6$ ($L \ne S$ included), "
           r"$2 \le H \le 4$ against 1, $C = H D$ with $1 \le D \le 3$ (hypothesis)",
    box="corr-equal-flops")
@pytest.mark.claim(
    "000 Advantages",
    "Computational efficiency: multi-head attention has a similar cost to single full-dimensional "
    "attention",
    "corrected",
    correction="The matrix-multiplication FLOPs (and the parameters) are exactly equal for every "
               "$h$. What grows linearly with $h$ is the number of attention weights, $B h L S$: "
               "their memory, and the memory traffic of writing and reading them. The softmax's "
               "own work, a few operations per weight, is small next to the $4 B L S C$ FLOPs of "
               r"$QK^\top$ and $PV$ (a ratio of about $5h / 4C$).",
    domain=r"self- and cross-attention: $1 \le B \le 2$, $1 \le L, S \le 6$ ($L \ne S$ included), "
           r"$2 \le H \le 4$ against 1, $C = H D$ with $1 \le D \le 3$ (hypothesis)",
    box="corr-equal-flops")
@SETTINGS
@given(B=st.integers(1, 2), L=st.integers(1, 6), S=st.integers(1, 6), H=st.integers(2, 4), D=st.integers(1, 3))
def test_attention_weights_memory_grows_with_the_number_of_heads(B, L, S, H, D):
    # Equal matmul FLOPs do not mean equal cost: the softmax runs over H times more entries.
    from attnmath.multihead import multihead_attention

    C = H * D
    rng = np.random.default_rng(L + S)
    x_q, x_kv = rng.standard_normal((B, L, C)), rng.standard_normal((B, S, C))
    assert multihead_flops(B, L, S, C, 1).total == multihead_flops(B, L, S, C, H).total
    sizes = [multihead_attention(x_q, x_kv, init_multihead_params(C, h), h)[1].attention.probs.size for h in (1, H)]
    assert sizes == [B * L * S, H * B * L * S]
    # the softmax's own work, about 5 operations per weight, against the 4 B L S C FLOPs of the products
    flops = multihead_flops(B, L, S, C, H)
    assert flops.scores + flops.weighted_sum == 4 * B * L * S * C
    assert 5 * H * B * L * S / (flops.scores + flops.weighted_sum) == pytest.approx(5 / (4 * D))


def test_grouped_query_saves_only_key_value_projection_flops():
    full, grouped = multihead_flops(2, 8, 8, 64, 8), multihead_flops(2, 8, 8, 64, 8, H_kv=2)
    assert grouped.k_proj * 4 == full.k_proj and grouped.v_proj * 4 == full.v_proj
    assert (grouped.q_proj, grouped.scores, grouped.weighted_sum, grouped.out_proj) == (
        full.q_proj, full.scores, full.weighted_sum, full.out_proj)


def test_kv_cache_bytes_matches_the_key_value_tensors_of_a_torch_module():
    layers, B, L, C, H, H_kv = 3, 2, 5, 16, 4, 2
    modules = [_TorchGQA(C, H, H_kv, bias=False).to(torch.float16) for _ in range(layers)]
    x = torch.randn(B, L, C, dtype=torch.float16)
    total = 0
    for m in modules:
        _, k, v = m(x)
        total += k.nbytes + v.nbytes
    assert kv_cache_bytes(B, H_kv, L, C // H, n_layers=layers, itemsize=2) == total


@pytest.mark.claim(
    "002 §9",
    "LLaMA 2 70B uses GQA with 8 KV heads",
    "verified",
    domain="LLaMA 2 70B's published configuration: 80 layers, 64 query heads of dim 128, 8 "
           "key/value heads")
@pytest.mark.claim(
    "002 §9",
    "Benefit of grouped-query and multi-query attention: a smaller KV cache during inference",
    "verified",
    domain="LLaMA 2 70B's published configuration: 80 layers, 64 query heads of dim 128, 8 "
           "key/value heads")
def test_llama2_70b_grouped_query_cache_is_eight_times_smaller():
    # LLaMA 2 70B: 80 layers, 64 query heads of dim 128, 8 key/value heads.
    layers, H, H_kv, D, S = 80, 64, 8, 128, 4096
    gqa = kv_cache_bytes(1, H_kv, S, D, n_layers=layers, itemsize=2)
    mha = kv_cache_bytes(1, H, S, D, n_layers=layers, itemsize=2)
    assert mha / gqa == H / H_kv == 8
    assert gqa == 2 * 80 * 4096 * 8 * 128 * 2  # 1.25 GiB per 4096-token sequence in float16
    assert kv_cache_bytes(1, 1, S, D, n_layers=layers, itemsize=2) * H == mha  # multi-query: 64 times smaller


def test_counting_functions_reject_bad_input():
    with pytest.raises(ValueError, match=r"C=10.*H=4"):
        multihead_param_count(10, 4)
    with pytest.raises(ValueError, match=r"H=8.*H_kv=3"):
        multihead_flops(1, 2, 2, 16, 8, H_kv=3)


# --------------------------------------------------------------------------- attention_core_flops


@given(B=st.integers(1, 8), H=st.integers(1, 64), N=st.integers(1, 4096), D=st.integers(1, 256))
def test_attention_core_flops_counts_the_two_products_halves_causal_and_charges_the_backward(B, H, N, D):
    forward = attention_core_flops(B, H, N, D)
    assert forward == 2 * (2 * B * H * N * N * D)  # Q K^T and P V, a multiply-add as 2 FLOPs
    assert attention_core_flops(B, H, N, D, causal=True) == forward / 2
    # the backward's five products: 2.5 forwards, so 3.5 with the forward
    assert attention_core_flops(B, H, N, D, backward=True) == 3.5 * forward
    assert attention_core_flops(B, H, N, D, causal=True, backward=True) == 1.75 * forward


def test_attention_core_flops_matches_torchs_counter_on_the_forward_products():
    B, H, N, D = 2, 3, 40, 16
    q, k, v = (torch.randn(B, H, N, D) for _ in range(3))
    with FlopCounterMode(display=False) as counter:
        torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v
    assert counter.get_total_flops() == attention_core_flops(B, H, N, D)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"B": 0}, ValueError, "B must be >= 1"),
    ({"N": -3}, ValueError, "N must be >= 1"),
    ({"D": 2.5}, TypeError, "D must be an integer"),
    ({"causal": 1}, TypeError, "causal must be True or False"),
    ({"backward": "yes"}, TypeError, "backward must be True or False"),
])
def test_attention_core_flops_bad_input_names_the_argument(kwargs, error, message):
    args = dict({"B": 1, "H": 2, "N": 8, "D": 4}, **kwargs)
    flags = {name: args.pop(name) for name in ("causal", "backward") if name in args}
    with pytest.raises(error, match=message):
        attention_core_flops(args["B"], args["H"], args["N"], args["D"], **flags)
