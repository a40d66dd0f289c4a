"""Tests of attnmath.recurrence: the three forms of SSD, gates, the delta rule, their costs, the
recall experiment, and flash-linear-attention's naive references as peers."""

from __future__ import annotations

import importlib.util
import math
import tracemalloc
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from torch.utils.flop_counter import FlopCounterMode

from attnmath.linear import causal_linear_attention, elu_feature_map
from attnmath.recurrence import (
    RECALL_MEMORIES,
    delta_rule_chunked,
    delta_rule_recurrent,
    delta_rule_step,
    gla_chunked,
    gla_quadratic,
    gla_recurrent,
    recall_experiment,
    recall_pairs,
    retention_decay,
    segment_sum,
    semiseparable_mask,
    ssd_chunked,
    ssd_chunked_cost,
    ssd_quadratic,
    ssd_quadratic_cost,
    ssd_recurrent,
    ssd_recurrent_cost,
    wy_representation,
)
from attnmath.testing import assert_close, random_qkv

SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TOL = dict(rtol=1e-10, atol=1e-10)
SSD_FORMS = {"quadratic": ssd_quadratic, "recurrent": ssd_recurrent}
GLA_FORMS = {"quadratic": gla_quadratic, "recurrent": gla_recurrent}


class Case(NamedTuple):
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    log_alpha: np.ndarray
    beta: np.ndarray
    state: np.ndarray | None
    chunk: int


def _floats(lo, hi):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


@st.composite
def cases(draw, *, max_L=9, vector=False, grouped=True, unit_keys=False, min_L=0):
    """A causal layer drawn as arrays: empty and one-token lengths, chunks that do not divide
    the length, grouped key/value heads, an initial state or none."""
    B, H_kv = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    H = H_kv * (draw(st.integers(1, 2)) if grouped else 1)
    L, D, D_v = draw(st.integers(min_L, max_L)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    q = draw(hnp.arrays(np.float64, (B, H, L, D), elements=_floats(-2, 2)))
    k = draw(hnp.arrays(np.float64, (B, H_kv, L, D), elements=_floats(-2, 2)))
    if unit_keys:  # DeltaNet's L2-normalised keys
        k = k + 0.1 * np.sign(k) + 0.1 * (k == 0)
        k = k / np.linalg.norm(k, axis=-1, keepdims=True)
    v = draw(hnp.arrays(np.float64, (B, H_kv, L, D_v), elements=_floats(-2, 2)))
    gate_shape = (B, H, L, D) if vector else (B, H, L)
    log_alpha = draw(hnp.arrays(np.float64, gate_shape, elements=_floats(-3, 0)))
    beta = draw(hnp.arrays(np.float64, (B, H, L), elements=_floats(0, 2)))
    state = draw(st.one_of(st.none(), hnp.arrays(np.float64, (B, H, D, D_v), elements=_floats(-2, 2))))
    return Case(q, k, v, log_alpha, beta, state, draw(st.integers(1, 5)))


def _per_head(x, H):
    """Key/value heads repeated for their query heads (torch's repeat_interleave)."""
    return np.repeat(x, H // x.shape[1], axis=1)


# --------------------------------------------------------------------------- the mask


@SETTINGS
@given(log_alpha=hnp.arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(0, 9)),
                            elements=_floats(-4, 0)))
def test_segment_sum_is_the_sum_of_the_log_decays_strictly_after_j_up_to_i(log_alpha):
    seg = segment_sum(log_alpha)
    n, L = log_alpha.shape
    assert seg.shape == (n, L, L)
    for b in range(n):
        for i in range(L):
            for j in range(L):
                expected = math.fsum(log_alpha[b, j + 1:i + 1]) if j <= i else -math.inf
                assert seg[b, i, j] == pytest.approx(expected, abs=1e-12)


@pytest.mark.claim(
    "book: the mask of `attnmath.recurrence.semiseparable_mask`",
    "Every block of the mask on or below its diagonal is the outer product of two vectors: the "
    "mask is 1-semiseparable, and with every decay 1 it is the causal mask",
    "verified on", chapter="15_recurrence", quote="every block of $G$ on or below the diagonal",
    domain=r"$1 \le L \le 8$, decays $e^{-4} \le \alpha_t \le 1$, every block with its top-right "
           "corner on or below the diagonal, hypothesis")
@SETTINGS
@given(log_alpha=hnp.arrays(np.float64, st.integers(1, 8), elements=_floats(-4, 0)))
def test_the_mask_is_one_semiseparable_and_the_causal_mask_without_decay(log_alpha):
    M = semiseparable_mask(log_alpha)
    L = log_alpha.size
    c = np.exp(np.cumsum(log_alpha))  # alpha_1 ... alpha_i
    for i0 in range(L):
        for j0 in range(i0 + 1):
            block = M[i0:, :j0 + 1]  # every block on or below the diagonal
            assert_close(block, np.outer(c[i0:], 1 / c[:j0 + 1]), rtol=1e-10, atol=1e-300,
                         name=f"block [{i0}:, :{j0 + 1}]")
            assert np.linalg.matrix_rank(block, tol=1e-9 * np.abs(block).max()) == 1
    assert (np.triu(M, 1) == 0).all()
    assert (semiseparable_mask(np.zeros(L)) == np.tril(np.ones((L, L)))).all()


def test_segment_sum_of_a_long_sequence_does_not_cancel():
    # A running sum differenced at its end loses the small terms; the sums of the terms do not.
    la = np.full(300, -1e-3)
    la[0] = -1e8
    seg = segment_sum(la)
    assert seg[-1, 1] == pytest.approx(-1e-3 * 298, rel=1e-12)
    cs = np.cumsum(la)
    assert abs((cs[-1] - cs[1]) - (-1e-3 * 298)) > 1e-9  # what a difference of running sums gives


# --------------------------------------------------------------------------- SSD: three forms


def _torch_ssd(c: Case, scale):
    """Oracle: the masked quadratic form in torch float64, with the mask from running sums and
    the final state from its definition."""
    H = c.q.shape[1]
    q, k, v = (torch.from_numpy(x) for x in (c.q, _per_head(c.k, H), _per_head(c.v, H)))
    la = torch.from_numpy(c.log_alpha)
    cs = torch.cumsum(la, dim=-1)  # (B, H, L)
    M = torch.exp(cs[..., :, None] - cs[..., None, :]).tril()  # (B, H, L, L)
    S0 = torch.zeros(*q.shape[:2], q.shape[-1], v.shape[-1], dtype=torch.float64) if c.state is None \
        else torch.from_numpy(c.state)
    out = ((scale * q @ k.transpose(-1, -2)) * M) @ v + torch.exp(cs)[..., None] * (scale * q @ S0)
    last = cs[..., -1:] if cs.shape[-1] else torch.zeros(cs.shape[:-1] + (1,), dtype=torch.float64)
    state = torch.exp(last)[..., None] * S0 + k.transpose(-1, -2) @ (torch.exp(last - cs)[..., None] * v)
    return out.numpy(), state.numpy()


@pytest.mark.claim(
    "book: the three forms of SSD in `attnmath.recurrence`",
    "The quadratic, recurrent and chunked forms give the same output and the same final state, "
    "and the chunked form with $C = 1$ and $C \\ge L$ is the recurrence and the quadratic form",
    "verified on", chapter="15_recurrence", quote="three functions agree in float64",
    domain=r"$0 \le L \le 9$, chunks $1 \le C \le 5$ (not dividing $L$ too), $1 \le D, D_v \le 4$, "
           r"grouped key/value heads, a random initial state or none, $e^{-3} \le \alpha_t \le 1$, "
           "against torch in float64, hypothesis")
@pytest.mark.claim(
    "paper: dao2024transformers §5",
    "A state-space model whose state matrix is a scalar times the identity computes the same "
    "sequence map as masked attention whose mask is 1-semiseparable (structured state-space "
    "duality): its linear (recurrent) and quadratic (attention) forms agree",
    "verified", chapter="15_recurrence",
    domain=r"the test's domain: $0 \le L \le 9$, $1 \le D, D_v \le 4$, grouped heads, initial "
           "states, against torch in float64, hypothesis; the equality is the chapter's theorem")
@SETTINGS
@given(c=cases())
def test_the_three_forms_of_ssd_agree_in_float64(c):
    scale = 1 / math.sqrt(c.q.shape[-1])
    out, state = _torch_ssd(c, scale)
    args = (c.q, c.k, c.v, c.log_alpha)
    results = {name: f(*args, initial_state=c.state) for name, f in SSD_FORMS.items()}
    results["chunked"] = ssd_chunked(*args, chunk_size=c.chunk, initial_state=c.state)
    results["chunk of one"] = ssd_chunked(*args, chunk_size=1, initial_state=c.state)
    results["one chunk"] = ssd_chunked(*args, chunk_size=max(1, c.q.shape[2]), initial_state=c.state)
    for name, r in results.items():
        assert r.out.shape == out.shape and r.state.shape == state.shape, name
        assert_close(r.out, out, **TOL, name=f"{name} out")
        assert_close(r.state, state, **TOL, name=f"{name} state")


@SETTINGS
@given(c=cases(min_L=1), data=st.data())
def test_a_sequence_split_anywhere_continues_from_the_state(c, data):
    # The recurrence property that decoding relies on: the state is everything the past leaves.
    m = data.draw(st.integers(0, c.q.shape[2]))
    whole = ssd_chunked(c.q, c.k, c.v, c.log_alpha, chunk_size=c.chunk, initial_state=c.state)
    first = ssd_recurrent(c.q[:, :, :m], c.k[:, :, :m], c.v[:, :, :m], c.log_alpha[..., :m],
                          initial_state=c.state)
    second = ssd_quadratic(c.q[:, :, m:], c.k[:, :, m:], c.v[:, :, m:], c.log_alpha[..., m:],
                           initial_state=first.state)
    assert_close(np.concatenate([first.out, second.out], axis=2), whole.out, **TOL, name="out")
    assert_close(second.state, whole.state, **TOL, name="state")


@pytest.mark.claim(
    "paper: katharopoulos2020transformers §3.4",
    r"Causal linear attention is an RNN: a matrix state $S_i = S_{i-1} + \phi(k_i) v_i^\top$ and a "
    r"normaliser $z_i = z_{i-1} + \phi(k_i)$ give its outputs one token after another",
    "verified", chapter="15_recurrence",
    domain=r"`attnmath.linear.causal_linear_attention` against two SSD recurrences without decay, "
           r"$0 \le L \le 7$, $1 \le D, D_v \le 4$, grouped heads, hypothesis")
@SETTINGS
@given(c=cases(max_L=7))
def test_causal_linear_attention_is_ssd_without_decay_on_features_over_a_normaliser(c):
    # Katharopoulos et al. (2020): numerator and normaliser are two SSD layers with alpha = 1.
    phi_q, phi_k = elu_feature_map(c.q), elu_feature_map(c.k)
    zero = np.zeros(c.log_alpha.shape)
    num = ssd_recurrent(phi_q, phi_k, c.v, zero, scale=1.0).out
    den = ssd_recurrent(phi_q, phi_k, np.ones(c.v.shape[:-1] + (1,)), zero, scale=1.0).out
    assert_close(num / den, causal_linear_attention(c.q, c.k, c.v), **TOL, name="linear attention")


def test_scalar_inputs_the_plain_layout_and_lower_precision():
    q, k, v = random_qkv(B=1, H=1, L=6, D=3, D_v=2, seed=3)
    la = -np.random.default_rng(3).random(6)
    full = ssd_quadratic(q, k, v, la)
    plain = ssd_chunked(q[0, 0], k[0, 0], v[0, 0], la, chunk_size=4)  # (L, D) matrices
    assert plain.out.shape == (6, 2) and plain.state.shape == (3, 2)
    assert_close(plain.out, full.out[0, 0], **TOL, name="(L, D) layout")
    for dtype, tol in ((np.float32, 1e-5), (np.float16, 1e-2)):
        for form in (ssd_recurrent, gla_recurrent):
            gate = la if form is ssd_recurrent else la[:, None]
            r = form(*(x.astype(dtype) for x in (q, k, v)), gate)
            assert r.out.dtype == dtype and r.state.dtype == dtype
            assert_close(r.out, full.out, rtol=tol, atol=tol, name=f"{form.__name__} {dtype.__name__}")


# --------------------------------------------------------------------------- costs


def _torch_forms(q, k, v, la, C):
    """One head of each form in torch, written with matrix products only, from a zero state:
    the outputs, and the sequential steps and largest score matrix of each."""
    L, D = q.shape
    cs = torch.cumsum(la, 0)
    M = torch.exp(cs[:, None] - cs[None, :]).tril()  # (L, L)
    yield "quadratic", ((q @ k.T) * M) @ v, 1, L * L
    S, out, steps = torch.zeros(D, v.shape[1], dtype=q.dtype), torch.empty_like(v), 0
    for t in range(L):
        S = torch.exp(la[t]) * S + k[t:t + 1].T @ v[t:t + 1]  # (D, D_v)
        out[t] = (q[t:t + 1] @ S)[0]
        steps += 1
    yield "recurrent", out, steps, 0
    S, out, steps, biggest = torch.zeros(D, v.shape[1], dtype=q.dtype), torch.empty_like(v), 0, 0
    for a in range(0, L, C):
        b = min(a + C, L)
        Mc = M[a:b, a:b]
        scores = (q[a:b] @ k[a:b].T) * Mc  # (c, c)
        into = torch.exp(cs[a:b] - (cs[a - 1] if a else 0.0))[:, None]  # (c, 1)
        out[a:b] = scores @ v[a:b] + into * (q[a:b] @ S)
        to_end = torch.exp(cs[b - 1] - cs[a:b])[:, None]  # (c, 1)
        S = into[-1] * S + (k[a:b] * to_end).T @ v[a:b]
        steps, biggest = steps + 1, max(biggest, scores.numel())
    yield "chunked", out, steps, biggest


@pytest.mark.parametrize("L, D, D_v, C", [(1, 1, 1, 1), (7, 3, 2, 3), (16, 4, 5, 4), (10, 2, 3, 16),
                                          (13, 5, 4, 1)])
def test_the_cost_functions_count_what_the_forms_compute(L, D, D_v, C):
    q, k, v = (x[0, 0] for x in random_qkv(B=1, H=1, L=L, D=D, D_v=D_v, seed=L))
    la = -np.random.default_rng(L).random(L)
    cost = {"quadratic": ssd_quadratic_cost(L, D, D_v), "recurrent": ssd_recurrent_cost(L, D, D_v),
            "chunked": ssd_chunked_cost(L, D, D_v, C)}
    expected = ssd_recurrent(q, k, v, la, scale=1.0).out
    forms = _torch_forms(*(torch.from_numpy(x) for x in (q, k, v, la)), C)
    while True:
        counter = FlopCounterMode(display=False)
        with counter:
            try:
                name, out, steps, biggest = next(forms)
            except StopIteration:
                break
        assert_close(out.numpy(), expected, **TOL, name=f"{name} form in torch")
        assert counter.get_total_flops() == cost[name].flops, name
        assert steps == cost[name].steps, name
        state = D * D_v if name != "quadratic" else 0
        assert cost[name].memory == biggest + state, name


@pytest.mark.claim(
    "001 Attention vs Traditional Mechanisms",
    "RNN/LSTM: sequential (hard to parallelize); attention: not sequential (fully parallel)",
    "clarified",
    correction="Being a recurrence does not make a layer sequential. A linear recurrence "
               "(linear attention, RetNet, Mamba-2, DeltaNet) is an RNN whose outputs can also be "
               "computed as masked attention in one parallel step, or chunk by chunk in "
               r"$\lceil L/C \rceil$ sequential steps of matrix products; the LSTM's gates are "
               "non-linear in its state, and no exact form of it without iteration is known "
               "(iterative Newton methods and minGRU-style gates give parallel ones). And softmax "
               "attention is sequential at decoding too: one token after another.",
    domain=r"$1 \le L \le 40$, $1 \le C \le 48$: the chunked form's outputs against the "
           "recurrence's and its sequential steps counted in the torch form, hypothesis; with "
           r"the three forms' agreement on every $0 \le L \le 9$ (the test above)",
    box="corr-rnn-parallel")
@settings(max_examples=15, deadline=None)
@given(L=st.integers(1, 40), C=st.integers(1, 48), seed=st.integers(0, 2**16))
def test_the_chunked_form_needs_length_over_chunk_sequential_steps(L, C, seed):
    q, k, v = (x[0, 0] for x in random_qkv(B=1, H=1, L=L, D=3, D_v=2, seed=seed))
    la = -np.random.default_rng(seed).random(L)
    forms = {name: (out, steps) for name, out, steps, _ in
             _torch_forms(*(torch.from_numpy(x) for x in (q, k, v, la)), C)}
    assert {name: steps for name, (_, steps) in forms.items()} == \
        {"quadratic": 1, "recurrent": L, "chunked": -(-L // C)}
    assert ssd_chunked_cost(L, 3, 2, C).steps == -(-L // C) and ssd_recurrent_cost(L, 3, 2).steps == L
    chunked = ssd_chunked(q, k, v, la, chunk_size=C, scale=1.0).out
    assert_close(chunked, ssd_recurrent(q, k, v, la, scale=1.0).out, **TOL, name="chunks")
    assert_close(forms["chunked"][0].numpy(), chunked, **TOL, name="torch chunks")


def _decode_flops(t, D, D_v):
    """FLOPs of one decoding step of softmax attention over a cache of t tokens, counted."""
    q, K, V = torch.randn(1, D, dtype=torch.float64), torch.randn(t, D, dtype=torch.float64), \
        torch.randn(t, D_v, dtype=torch.float64)
    counter = FlopCounterMode(display=False)
    with counter:
        torch.softmax(q @ K.T, dim=-1) @ V
    return counter.get_total_flops()


@pytest.mark.claim(
    "001 Attention vs Traditional Mechanisms",
    "Complexity: RNN/LSTM $O(n)$ per step; attention $O(n^2)$ total",
    "clarified",
    correction=r"Per generated token, softmax attention costs $O(t\,(D + D_v))$ at position $t$, "
               "growing with the context, while a linear recurrence costs $O(D D_v)$ whatever the "
               "position; over a sequence the recurrence costs $O(L D D_v)$ and its chunked form "
               r"$O(L C (D + D_v) + L D D_v)$, linear in $L$, against attention's $O(L^2 (D + D_v))$.",
    domain=r"decoding steps at positions $t$ from 1 to 4096 with $D = D_v = 64$, counted by "
           r"`FlopCounterMode`; the forms' totals on the shapes of the cost test",
    box="corr-rnn-cost")
def test_a_decoding_step_of_attention_grows_with_the_position_and_of_the_recurrence_does_not():
    D = D_v = 64
    recurrent = ssd_recurrent_cost(1, D, D_v).flops
    for t in (1, 64, 4096):
        assert _decode_flops(t, D, D_v) == 2 * t * (D + D_v)
    assert recurrent == 4 * D * D_v
    assert _decode_flops(64, D, D_v) == recurrent  # the break-even: t = 2 D D_v / (D + D_v)
    assert _decode_flops(65, D, D_v) > recurrent   # the recurrence is cheaper from the next token on
    assert ssd_chunked_cost(4096, D, D_v, 64).flops < ssd_quadratic_cost(4096, D, D_v).flops / 10


@pytest.mark.claim(
    "paper: dao2024transformers §6",
    "With a state of $N$ numbers per head dimension and head dimension $N$, the SSD algorithm "
    "costs $O(TN^2)$ FLOPs for a sequence of $T$ tokens, and $O(N^2)$ FLOPs and memory per token "
    "of inference",
    "verified", chapter="15_recurrence",
    domain=r"`ssd_chunked_cost` with $C = D = D_v = N$, $1 \le N \le 64$, $T$ a multiple of $N$ up "
           r"to $64N$, counted as in the cost test (`FlopCounterMode`)")
def test_the_ssd_algorithm_costs_t_n_squared_and_n_squared_per_token():
    for N in (1, 2, 8, 16, 64):
        for chunks in (1, 3, 64):
            T = chunks * N
            assert ssd_chunked_cost(T, N, N, N).flops == 8 * T * N * N  # 2 T N (2N) + 4 T N^2
        step = ssd_recurrent_cost(1, N, N)
        assert step.flops == 4 * N * N and step.memory == N * N


def test_the_chunked_form_holds_chunk_sized_scores_and_the_quadratic_form_the_whole_matrix():
    L, C, D = 512, 16, 4
    q, k, v = random_qkv(B=1, H=1, L=L, D=D, seed=0)
    la = np.zeros((1, 1, L))
    peaks = {}
    for name, run in (("quadratic", lambda: ssd_quadratic(q, k, v, la)),
                      ("chunked", lambda: ssd_chunked(q, k, v, la, chunk_size=C))):
        tracemalloc.start()
        run()
        peaks[name] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    matrix = L * L * 8  # one L x L float64 matrix
    assert peaks["quadratic"] >= matrix
    assert peaks["chunked"] < matrix / 10


# --------------------------------------------------------------------------- gates


@pytest.mark.claim(
    "paper: sun2023retentive §2.1",
    "Retention has a parallel, a recurrent and a chunkwise recurrent representation, which "
    "compute the same output",
    "verified", chapter="15_recurrence",
    domain=r"RetNet's decays for $1 \le H \le 3$ heads, $0 \le L \le 9$, chunks $1 \le C \le 5$, "
           "hypothesis; flash-linear-attention's parallel reference below")
@SETTINGS
@given(c=cases(grouped=False))
def test_the_three_forms_of_retention_agree(c):
    H, L = c.q.shape[1], c.q.shape[2]
    log_gamma = np.log(retention_decay(H))[:, None] * np.ones(L)  # (H, L): a fixed decay per head
    parallel = ssd_quadratic(c.q, c.k, c.v, log_gamma)
    for r in (ssd_recurrent(c.q, c.k, c.v, log_gamma), ssd_chunked(c.q, c.k, c.v, log_gamma, chunk_size=c.chunk)):
        assert_close(r.out, parallel.out, **TOL, name="retention")
        assert_close(r.state, parallel.state, **TOL, name="retention state")


def test_retention_decays_are_one_minus_two_to_the_minus_five_minus_h():
    assert retention_decay(4).tolist() == [1 - 2.0 ** (-5 - h) for h in range(4)]
    gamma = retention_decay(3)
    L = 6
    M = semiseparable_mask(np.log(gamma)[:, None] * np.ones(L))  # (H, L, L)
    i, j = np.arange(L)[:, None], np.arange(L)[None, :]
    assert_close(M, np.where(j <= i, gamma[:, None, None] ** (i - j), 0.0), **TOL, name="gamma^(i-j)")


@pytest.mark.claim(
    "paper: yang2024gated §4",
    "Gated linear attention, with a data-dependent gate per key dimension, has a recurrent form "
    "and a chunkwise parallel form that compute the same outputs",
    "verified", chapter="15_recurrence",
    domain=r"$0 \le L \le 9$, chunks $1 \le C \le 5$, gates $e^{-3} \le \alpha_{t,d} \le 1$, "
           "grouped heads, initial states, hypothesis; flash-linear-attention's reference below")
@SETTINGS
@given(c=cases(vector=True))
def test_the_three_forms_of_gated_linear_attention_agree(c):
    args = (c.q, c.k, c.v, c.log_alpha)
    reference = gla_recurrent(*args, initial_state=c.state)
    for name, r in (("quadratic", gla_quadratic(*args, initial_state=c.state)),
                    ("chunked", gla_chunked(*args, chunk_size=c.chunk, initial_state=c.state))):
        assert_close(r.out, reference.out, **TOL, name=f"{name} out")
        assert_close(r.state, reference.state, **TOL, name=f"{name} state")


@SETTINGS
@given(c=cases())
def test_a_gate_shared_by_every_key_dimension_is_ssd(c):
    for gla, ssd in ((gla_recurrent, ssd_recurrent), (gla_quadratic, ssd_quadratic)):
        a, b = gla(c.q, c.k, c.v, c.log_alpha[..., None]), ssd(c.q, c.k, c.v, c.log_alpha)
        assert_close(a.out, b.out, **TOL, name=gla.__name__)


# --------------------------------------------------------------------------- the delta rule


@pytest.mark.claim(
    "book: `attnmath.recurrence.delta_rule_step`",
    "Each step of the delta rule, gated or not, is one step of gradient descent with step size "
    r"$\beta_t$ on $\tfrac12\lVert S^\top k_t - v_t\rVert^2$, taken from the decayed state",
    "verified on", chapter="15_recurrence", quote="step of gradient descent with step size $\\beta_t$ is DeltaNet's update",
    domain=r"$1 \le D, D_v \le 5$, up to two leading axes, $0 \le \beta_t \le 2$, "
           r"$e^{-3} \le \alpha_t \le 1$, gradients by `torch.autograd`, hypothesis")
@SETTINGS
@given(data=st.data())
def test_a_delta_rule_step_is_a_gradient_step_on_the_recall_error(data):
    lead = data.draw(st.lists(st.integers(1, 2), max_size=2)).copy()
    D, D_v = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5))
    S = data.draw(hnp.arrays(np.float64, (*lead, D, D_v), elements=_floats(-2, 2)))
    k = data.draw(hnp.arrays(np.float64, (*lead, D), elements=_floats(-2, 2)))
    v = data.draw(hnp.arrays(np.float64, (*lead, D_v), elements=_floats(-2, 2)))
    beta = data.draw(hnp.arrays(np.float64, tuple(lead), elements=_floats(0, 2)))
    log_alpha = data.draw(hnp.arrays(np.float64, tuple(lead), elements=_floats(-3, 0)))
    decayed = (torch.tensor(np.exp(log_alpha))[..., None, None] * torch.from_numpy(S)).requires_grad_()
    tk, tv = torch.from_numpy(k), torch.from_numpy(v)
    recall = torch.einsum("...d,...de->...e", tk, decayed)  # S^T k
    (0.5 * ((recall - tv) ** 2).sum()).backward()
    expected = decayed.detach() - torch.tensor(beta)[..., None, None] * decayed.grad
    assert_close(delta_rule_step(S, k, v, beta, log_alpha), expected.numpy(), **TOL, name="S_t")


def test_linear_attention_writes_are_gradient_steps_on_a_loss_that_never_stops_rewarding():
    rng = np.random.default_rng(0)
    S, k, v = rng.standard_normal((3, 2)), rng.standard_normal(3), rng.standard_normal(2)
    tS = torch.from_numpy(S).requires_grad_()
    (-(torch.from_numpy(k) @ tS) @ torch.from_numpy(v)).backward()  # -<S^T k, v>
    assert_close(S - tS.grad.numpy(), S + np.outer(k, v), **TOL, name="linear write")
    k = k / np.linalg.norm(k)
    stored = delta_rule_step(S, k, v, np.array(1.0))
    assert_close(stored.T @ k, v, **TOL, name="the delta rule recalls v_t exactly")
    assert_close(delta_rule_step(stored, k, v, np.array(1.0)), stored, **TOL, name="and stops")


@SETTINGS
@given(D=st.integers(1, 5), beta=_floats(0, 2), seed=st.integers(0, 2**16))
def test_a_step_on_a_unit_key_with_beta_in_zero_two_does_not_grow_the_state(D, beta, seed):
    rng = np.random.default_rng(seed)
    k = rng.standard_normal(D)
    k /= np.linalg.norm(k)
    factor = np.eye(D) - beta * np.outer(k, k)  # I - beta k k^T: eigenvalues 1 and 1 - beta
    assert np.linalg.norm(factor, 2) <= 1 + 1e-12
    S = rng.standard_normal((D, 3))
    zero = np.zeros(3)
    assert np.linalg.norm(delta_rule_step(S, k, zero, np.array(beta)), 2) <= np.linalg.norm(S, 2) + 1e-12


@pytest.mark.claim(
    "book: the two forms of the delta rule in `attnmath.recurrence`",
    "The chunkwise delta rule with the WY representation gives the recurrence's output and "
    "state, with and without gates",
    "verified on", chapter="15_recurrence", quote="agrees with the recurrence in float64",
    domain=r"$0 \le L \le 9$, chunks $1 \le C \le 5$, unit keys, $0 \le \beta_t \le 2$, "
           r"$e^{-3} \le \alpha_t \le 1$ or no gate, grouped heads, an initial state or none, "
           "hypothesis")
@pytest.mark.claim(
    "paper: yang2024parallelizing §3",
    "DeltaNet can be computed chunkwise in parallel over the sequence: the product of its "
    r"transitions $I - \beta_t k_t k_t^\top$ has a WY representation, and the chunkwise "
    "algorithm built on it gives the recurrence's outputs",
    "verified", chapter="15_recurrence",
    domain=r"$0 \le L \le 9$, chunks $1 \le C \le 5$, unit keys, $0 \le \beta_t \le 2$, "
           "hypothesis; the WY identity on the test below")
@pytest.mark.claim(
    "paper: yang2025gated §3",
    r"The gated delta rule $S_t = \alpha_t (I - \beta_t k_t k_t^\top) S_{t-1} + \beta_t k_t v_t^\top$ "
    "keeps DeltaNet's chunkwise algorithm, with the gates' products inside each chunk",
    "verified", chapter="15_recurrence",
    domain=r"$0 \le L \le 9$, chunks $1 \le C \le 5$, unit keys, $e^{-3} \le \alpha_t \le 1$, "
           "hypothesis; flash-linear-attention's references below")
@SETTINGS
@given(c=cases(unit_keys=True), gated=st.booleans())
def test_the_chunked_delta_rule_agrees_with_the_recurrence(c, gated):
    log_alpha = c.log_alpha if gated else None
    rec = delta_rule_recurrent(c.q, c.k, c.v, c.beta, log_alpha=log_alpha, initial_state=c.state)
    chk = delta_rule_chunked(c.q, c.k, c.v, c.beta, log_alpha=log_alpha, chunk_size=c.chunk,
                             initial_state=c.state)
    assert_close(chk.out, rec.out, rtol=1e-9, atol=1e-9, name="out")
    assert_close(chk.state, rec.state, rtol=1e-9, atol=1e-9, name="state")


@SETTINGS
@given(C=st.integers(1, 6), D=st.integers(1, 4), D_v=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_the_wy_representation_is_the_product_of_the_householder_like_factors(C, D, D_v, seed):
    rng = np.random.default_rng(seed)
    k = rng.standard_normal((C, D))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v, beta = rng.standard_normal((C, D_v)), rng.uniform(0, 2, C)
    w, u = wy_representation(k, v, beta)
    P, Hs = np.eye(D), np.zeros((D, D_v))
    for t in range(C):
        factor = np.eye(D) - beta[t] * np.outer(k[t], k[t])
        P, Hs = factor @ P, factor @ Hs + beta[t] * np.outer(k[t], v[t])
    assert_close(np.eye(D) - k.T @ w, P, **TOL, name="I - K^T W")
    assert_close(k.T @ u, Hs, **TOL, name="K^T U")
    # With gates: U - W S_0 are the values the recurrence writes, delta_t, from any S_0.
    la, S0 = -rng.uniform(0, 2, C), rng.standard_normal((D, D_v))
    w, u = wy_representation(k, v, beta, la)
    S, written = S0, []
    for t in range(C):
        written.append(beta[t] * (v[t] - np.exp(la[t]) * S.T @ k[t]))
        S = np.exp(la[t]) * S + np.outer(k[t], written[-1])
    assert_close(u - w @ S0, np.array(written), **TOL, name="U - W S_0")


def test_the_delta_rule_with_beta_one_on_a_unit_key_holds_the_last_pair_exactly():
    q, k, v = random_qkv(B=1, H=2, L=12, D=6, D_v=3, seed=5)
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    state = delta_rule_recurrent(q, k, v, np.ones((1, 2, 12))).state  # (1, 2, D, D_v)
    assert_close(np.einsum("bhd,bhde->bhe", k[:, :, -1], state), v[:, :, -1], **TOL, name="last pair")


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("form", [ssd_quadratic, ssd_recurrent, gla_recurrent])
def test_bad_gates_lengths_and_states_raise_naming_the_argument(form):
    q, k, v = random_qkv(B=1, H=2, L=4, D=3, seed=0)
    vector = form is gla_recurrent
    la = np.zeros((1, 2, 4, 3) if vector else (1, 2, 4))
    with pytest.raises(ValueError, match="log_alpha must be <= 0"):
        form(q, k, v, la + 0.5)
    with pytest.raises(ValueError, match="log_alpha"):
        form(q, k, v, la[..., :2] if not vector else la[..., :2, :])
    with pytest.raises(ValueError, match="length"):
        form(q, k[:, :, :3], v[:, :, :3], la)
    with pytest.raises(ValueError, match="initial_state"):
        form(q, k, v, la, initial_state=np.zeros((1, 2, 3, 4)))
    bad = q.copy()
    bad[0, 1, 2, 0] = np.nan
    with pytest.raises(ValueError, match="q contains NaN"):
        form(bad, k, v, la)
    with pytest.raises(ValueError, match="log_alpha contains"):
        form(q, k, v, np.full(la.shape, -np.inf))


def test_bad_chunks_betas_and_pairs_raise_naming_the_argument():
    q, k, v = random_qkv(B=1, H=1, L=4, D=2, seed=0)
    with pytest.raises(ValueError, match="chunk_size"):
        ssd_chunked(q, k, v, np.zeros(4), chunk_size=0)
    with pytest.raises(TypeError, match="chunk_size"):
        delta_rule_chunked(q, k, v, np.ones(4), chunk_size=2.0)
    with pytest.raises(ValueError, match="beta"):
        delta_rule_recurrent(q, k, v, np.ones(3))
    with pytest.raises(ValueError, match="k .* v .* beta"):
        wy_representation(k[0, 0], v[0, 0], np.ones(3))
    with pytest.raises(ValueError, match="betas"):
        recall_experiment((4,), 4, betas=(3.0,))
    with pytest.raises(ValueError, match="D must be even"):
        recall_experiment((4,), 5)


# --------------------------------------------------------------------------- what the state holds


@pytest.mark.claim(
    "paper: schlag2021linear §4.1",
    "A fast-weight memory (linear attention's state) with $d$-dimensional keys stores at most $d$ "
    "associations without interference; beyond $d$, retrieval is approximate",
    "verified", chapter="15_recurrence",
    domain=r"every $D \times D_v$ state, $1 \le D \le 6$, $1 \le N \le D + 5$ random pairs: the "
           r"least-squares state recalls them exactly iff $N \le D$, hypothesis; the chapter's "
           "proposition proves it")
@SETTINGS
@given(D=st.integers(1, 6), extra=st.integers(-5, 5), seed=st.integers(0, 2**16))
def test_a_d_by_d_v_state_holds_d_generic_pairs_exactly_and_no_more(D, extra, seed):
    # The chapter's capacity proposition: K S = V has a solution for N <= D independent keys and,
    # for N > D, not for generic values (the map S -> K S has rank at most D D_v < N D_v).
    N = max(1, D + extra)
    keys, values = recall_pairs(1, N, D, 3, seed=seed)
    K, V = keys[0], values[0]
    S = np.linalg.lstsq(K, V, rcond=None)[0]
    residual = np.linalg.norm(K @ S - V)
    if N <= D:
        assert residual < 1e-9 * max(1.0, np.linalg.norm(V))
    else:
        assert residual > 1e-6


@pytest.fixture(scope="module")
def recall():
    return recall_experiment()


def _mean(recall, task, memory):
    return np.mean(np.array(recall["accuracy"][task][memory]), axis=1)  # per N


@pytest.mark.claim(
    "book: figure fig-recall (`attnmath.recurrence.recall_experiment`)",
    "Softmax attention over every pair recalls all of them; at the state's size, its window "
    "recalls the pairs it holds and little else; least squares recalls every pair up to "
    "$N = D$ and fewer than all of them beyond",
    "verified on", chapter="15_recurrence", quote="recalls every pair at every",
    domain=r"the chapter's run: $D = 16$, $N$ from 4 to 128, five seeds of 32 sets each")
def test_recall_softmax_holds_everything_the_window_what_it_keeps_least_squares_d_pairs(recall):
    Ns, D, w = np.array(recall["config"]["n_pairs"]), recall["config"]["D"], recall["window"]
    assert (_mean(recall, "distinct", "softmax") == 1).all()
    window = _mean(recall, "distinct", "softmax, window")
    assert (window >= np.minimum(1, w / Ns) - 1e-12).all() and (window <= np.minimum(1, w / Ns) + 0.05).all()
    best = _mean(recall, "distinct", "least squares")
    assert (best[Ns <= D] == 1).all() and (best[Ns > D] < 1).all()


@pytest.mark.claim(
    "book: figure fig-recall (`attnmath.recurrence.recall_experiment`)",
    "Linear attention and the delta rule recall no more distinct pairs than the least-squares "
    "state up to $N = 4D$; at $N = 8D$ every memory of the state's size recalls about a tenth, "
    "and the delta rule with the smaller step recalls slightly more than least squares",
    "verified on", chapter="15_recurrence", quote="stay at or below the least-squares state up to",
    domain=r"the chapter's run: $D = 16$, $N$ from 4 to 128, five seeds of 32 sets each")
def test_recall_the_recurrent_memories_stay_under_least_squares_until_8d(recall):
    Ns, D = np.array(recall["config"]["n_pairs"]), recall["config"]["D"]
    best = _mean(recall, "distinct", "least squares")
    recurrent = np.max([_mean(recall, "distinct", m) for m in recall["accuracy"]["distinct"]
                        if m == "linear" or m.startswith("delta")], axis=0)
    assert (recurrent[Ns <= 4 * D] <= best[Ns <= 4 * D]).all()
    assert recurrent[Ns == 8 * D][0] > best[Ns == 8 * D][0] and 0.05 < best[Ns == 8 * D][0] < 0.15


@pytest.mark.claim(
    "book: figure fig-recall (`attnmath.recurrence.recall_experiment`)",
    "With distinct keys the delta rule with $\\beta = 1$ recalls fewer pairs than linear "
    "attention at every $N$; when every key is written again with a new value, the delta rule "
    "recalls more of the new values than linear attention at every $N$, with either step size",
    "verified on", chapter="15_recurrence", quote="recalls fewer distinct pairs than linear attention",
    domain=r"the chapter's run: $D = 16$, $N$ from 4 to 128, five seeds of 32 sets each, "
           r"$\beta \in \{1, 1/4\}$")
def test_recall_the_delta_rule_loses_on_distinct_keys_and_wins_on_overwrites(recall):
    linear = _mean(recall, "distinct", "linear")
    assert (_mean(recall, "distinct", "delta rule, beta=1") < linear).all()
    for beta in ("1", "0.25"):
        assert (_mean(recall, "overwrite", f"delta rule, beta={beta}")
                > _mean(recall, "overwrite", "linear")).all()
    assert (_mean(recall, "overwrite", "linear") <= 0.55).all()


def test_the_recall_experiment_reports_every_memory_seed_and_size(recall):
    config = recall["config"]
    assert set(recall["accuracy"]["distinct"]) == (set(RECALL_MEMORIES) - {"delta rule"}) | \
        {f"delta rule, beta={b:g}" for b in config["betas"]}
    for table in recall["accuracy"].values():
        for rows in table.values():
            assert len(rows) == len(config["n_pairs"]) and all(len(r) == len(config["seeds"]) for r in rows)
    assert recall["state_numbers"] == recall["window"] * 2 * config["D"]  # the window's KV cache


# --------------------------------------------------------------------------- peers: flash-linear-attention


def _fla_naive(name: str):
    """``fla/ops/<name>/naive.py`` of flash-linear-attention (``pip install fla-core einops``),
    loaded from its file: the package's ``__init__`` imports its Triton kernels (seconds of CPU),
    the naive references only torch and einops."""
    spec = importlib.util.find_spec("fla")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("flash-linear-attention is not installed (pip install fla-core einops)")
    if importlib.util.find_spec("einops") is None:
        pytest.skip("einops is not installed (pip install einops): fla's naive references need it")
    path = Path(list(spec.submodule_search_locations)[0]) / "ops" / name / "naive.py"
    module_spec = importlib.util.spec_from_file_location(f"_fla_naive_{name}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _t(x):
    return torch.from_numpy(np.ascontiguousarray(x))


def _bthd(x):
    """(B, H, L, ...) -> fla's (B, T, H, ...) layout."""
    return _t(np.swapaxes(x, 1, 2))


def _back(o):
    return np.swapaxes(o.numpy(), 1, 2)


def _peer_cases(c):
    """Every fla reference with the library's answer: (name, peer out, peer state, ours)."""
    kn = c.k
    gla, sgla = _fla_naive("gla"), _fla_naive("simple_gla")
    delta, gdelta = _fla_naive("delta_rule"), _fla_naive("gated_delta_rule")
    la, lav = c.log_alpha, np.repeat(c.log_alpha[..., None], c.q.shape[-1], -1) * np.linspace(1, 0.5, c.q.shape[-1])
    o, h = gla.naive_recurrent_gla(_bthd(c.q), _bthd(c.k), _bthd(c.v), _bthd(lav), output_final_state=True)
    yield "gla recurrent", _back(o), h, gla_chunked(c.q, c.k, c.v, lav, chunk_size=c.chunk)
    ssd = ssd_chunked(c.q, c.k, c.v, la, chunk_size=c.chunk)
    o, h = sgla.naive_recurrent_simple_gla(_bthd(c.q), _bthd(c.k), _bthd(c.v), _bthd(la))
    yield "simple gla recurrent (SSD)", _back(o), h, ssd
    o, h = sgla.naive_chunk_simple_gla(_bthd(c.q), _bthd(c.k), _bthd(c.v), _bthd(la),
                                       output_final_state=True, chunk_size=c.chunk)
    yield "simple gla chunk (SSD)", _back(o), h, ssd
    o, h = delta.delta_rule_recurrence(_t(c.q), _t(kn), _t(c.v), _t(c.beta))
    yield "delta rule recurrence", o.numpy(), h, delta_rule_chunked(c.q, kn, c.v, c.beta, chunk_size=c.chunk)
    gated = delta_rule_chunked(c.q, kn, c.v, c.beta, log_alpha=la, chunk_size=c.chunk)
    o, h = gdelta.naive_recurrent_gated_delta_rule(_bthd(c.q), _bthd(kn), _bthd(c.v), _bthd(c.beta),
                                                   _bthd(la), output_final_state=True)
    yield "gated delta rule recurrent", _back(o), h, gated
    o, h = gdelta.naive_chunk_gated_delta_rule(_bthd(c.q), _bthd(kn), _bthd(c.v), _bthd(la), _bthd(c.beta),
                                               chunk_size=c.chunk, output_final_state=True)
    yield "gated delta rule chunk", _back(o), h, gated


@pytest.mark.claim(
    "book: flash-linear-attention's naive references (`fla-core` 0.6.0)",
    "Gated linear attention, SSD (as simple GLA), DeltaNet, gated DeltaNet and retention agree "
    "with flash-linear-attention's references to the float32 rounding they compute in",
    "verified on", chapter="15_recurrence", quote="agree with flash-linear-attention's references",
    domain=r"$1 \le L \le 10$, chunks $1 \le C \le 5$, $1 \le D, D_v \le 4$, unit keys, no initial "
           r"state, their default scale $1/\sqrt{D}$, error at most $10^{-5}$ of the output's size, "
           "hypothesis (retention: the test below)")
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(c=cases(max_L=10, min_L=1, grouped=False, unit_keys=True).map(lambda c: c._replace(state=None)))
def test_flash_linear_attentions_naive_references_agree(c):
    for name, out, state, ours in _peer_cases(c):
        top = max(1.0, float(np.abs(ours.out).max()))
        assert_close(out, ours.out, rtol=0, atol=1e-5 * top, name=f"{name} out")
        if state is not None:
            assert_close(state.numpy(), ours.state, rtol=0, atol=1e-5 * max(1.0, np.abs(ours.state).max()),
                         name=f"{name} state")


def test_retention_agrees_with_flash_linear_attentions_reference():
    retention = _fla_naive("retention")
    q, k, v = random_qkv(B=2, H=4, L=20, D=8, D_v=5, seed=2)
    log_gamma = np.log(retention_decay(4))[None, :, None] * np.ones((2, 4, 20))
    ours = ssd_chunked(q, k, v, log_gamma, chunk_size=6).out
    peer = retention.naive_retention(_t(q), _t(k), _t(v)).numpy()
    assert_close(peer, ours, rtol=0, atol=1e-5 * np.abs(ours).max(), name="retention")


def test_flash_linear_attention_computes_in_float32_except_the_chunkwise_delta_rule():
    # The documented divergence: fla's naive references cast to float32 (`.float()`) whatever
    # the input, so they differ from a float64 computation by float32 rounding; its chunkwise
    # delta rule keeps the input's float64 and agrees to float64 rounding.
    delta, gla = _fla_naive("delta_rule"), _fla_naive("gla")
    q, k, v = random_qkv(B=1, H=2, L=12, D=4, seed=1)
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    beta = np.random.default_rng(1).uniform(0, 1, (1, 2, 12))
    ours = delta_rule_recurrent(q, k, v, beta)
    recurrence, _ = delta.delta_rule_recurrence(_t(q), _t(k), _t(v), _t(beta))
    chunkwise, state = delta.delta_rule_chunkwise(_t(q), _t(k), _t(v), _t(beta), chunk_size=4)
    assert 1e-12 < np.abs(recurrence.numpy() - ours.out).max() < 1e-5
    assert np.abs(chunkwise.numpy() - ours.out).max() < 1e-12 and state.dtype == torch.float64
    lav = -np.ones((1, 2, 12, 4))
    out, _ = gla.naive_recurrent_gla(_bthd(q), _bthd(k), _bthd(v), _bthd(lav))
    assert out.dtype == torch.float64  # returned in the input's dtype, computed in float32
    assert 1e-12 < np.abs(_back(out) - gla_recurrent(q, k, v, lav).out).max() < 1e-5
