"""Tests for attnmath.long_context: RoPE scaling, sinks with a window, ring attention, and the
extrapolation experiment of the long-context chapter."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnmath.counting import multihead_flops
from attnmath.long_context import (
    ExtrapolationConfig,
    extrapolation_experiment,
    interpolated_frequencies,
    marker_batch,
    ntk_frequencies,
    ring_attention,
    ring_min_block,
    ring_step_cost,
    rope_rotations,
    sink_cache_kept,
    sink_window_mask,
    streaming_attention,
    yarn_attention_factor,
    yarn_frequencies,
    yarn_ramp,
)
from attnmath.positional import apply_rope
from attnmath.softmax import softmax
from attnmath.testing import assert_close, random_qkv, sdpa_oracle

SETTINGS = settings(max_examples=40, deadline=None)
DATA = Path(__file__).resolve().parents[2] / "book" / "data" / "extrapolation.json"

head_dims = st.integers(1, 64).map(lambda n: 2 * n)  # D in 2..128, even
bases = st.floats(10.0, 1e6)
scales = st.floats(1.0, 64.0)
contexts = st.integers(16, 65536)


def _theta(D, base):
    """RoPE's frequencies written out, independently of the library: b^(-2i/D)."""
    return [math.pow(base, -2.0 * i / D) for i in range(D // 2)]


# --------------------------------------------------------------------------- RoPE scaling


@SETTINGS
@given(D=head_dims, base=bases, s=scales, m=st.integers(0, 10**6))
def test_position_interpolation_rotates_position_m_as_plain_rope_rotates_m_over_s(D, base, s, m):
    # Chen et al. (2023): f'(x, m) = f(x, m L / L') = f(x, m / s).
    theta_pi = interpolated_frequencies(D, s, base=base)
    expected = [(m / s) * t for t in _theta(D, base)]
    assert_close(m * theta_pi, np.array(expected), rtol=1e-12, atol=1e-12, name="angles")


@SETTINGS
@given(D=head_dims.filter(lambda d: d >= 4), base=bases, s=scales)
def test_ntk_scaling_is_plain_rope_with_the_base_raised_by_s_to_the_d_over_d_minus_2(D, base, s):
    new_base = base * math.pow(s, D / (D - 2))
    theta = ntk_frequencies(D, s, base=base)
    assert_close(theta, np.array(_theta(D, new_base)), rtol=1e-11, atol=0.0, name="NTK")
    plain = _theta(D, base)
    assert theta[0] == pytest.approx(1.0)  # the fastest pair keeps its frequency
    assert theta[-1] == pytest.approx(plain[-1] / s, rel=1e-11)  # the slowest is interpolated


def test_ntk_scaling_refuses_a_head_dim_of_two():
    with pytest.raises(ValueError, match="D"):
        ntk_frequencies(2, 4.0)


def _yarn_paper(D, base, s, L, alpha, beta):
    """Peng et al. (2023), eqs. for r(d), gamma(r) and h(theta_d), written out per pair."""
    out = []
    for t in _theta(D, base):
        wavelength = 2 * math.pi / t
        r = L / wavelength
        gamma = 0.0 if r < alpha else 1.0 if r > beta else (r - alpha) / (beta - alpha)
        out.append((1 - gamma) * t / s + gamma * t)
    return np.array(out)


@SETTINGS
@given(D=head_dims, base=bases, s=scales, L=contexts,
       ab=st.tuples(st.floats(0.25, 4.0), st.floats(1.5, 64.0)).filter(lambda p: p[1] > p[0]))
def test_yarn_frequencies_follow_the_papers_piecewise_ramp(D, base, s, L, ab):
    alpha, beta = ab
    theta = yarn_frequencies(D, s, L, base=base, beta_fast=beta, beta_slow=alpha)
    assert_close(theta, _yarn_paper(D, base, s, L, alpha, beta), rtol=1e-11, atol=0.0, name="YaRN")


@SETTINGS
@given(D=head_dims, base=bases, s=scales, L=contexts)
def test_yarn_keeps_pairs_with_many_turns_and_interpolates_pairs_with_few(D, base, s, L):
    plain = np.array(_theta(D, base))
    r = L * plain / (2 * math.pi)
    theta = yarn_frequencies(D, s, L, base=base)  # beta_fast=32, beta_slow=1
    assert_close(theta[r > 32], plain[r > 32], rtol=1e-13, atol=0.0, name="fast pairs")
    assert_close(theta[r < 1], plain[r < 1] / s, rtol=1e-13, atol=0.0, name="slow pairs")
    assert np.all(theta <= plain * (1 + 1e-13)) and np.all(theta >= plain / s * (1 - 1e-13))


@SETTINGS
@given(r=st.lists(st.floats(0.0, 100.0), min_size=1, max_size=20))
def test_yarn_ramp_is_zero_below_alpha_one_above_beta_and_linear_between(r):
    g = yarn_ramp(np.array(r), beta_fast=32.0, beta_slow=1.0)
    for ri, gi in zip(r, g):
        assert gi == pytest.approx(min(1.0, max(0.0, (ri - 1.0) / 31.0)), abs=1e-15)


@SETTINGS
@given(s=scales)
def test_yarn_attention_factor_is_one_tenth_log_s_plus_one(s):
    assert yarn_attention_factor(s) == pytest.approx(0.1 * math.log(s) + 1.0, rel=1e-15)
    assert yarn_attention_factor(1.0) == 1.0


def test_scale_factors_below_one_are_refused():
    for fn in (lambda: interpolated_frequencies(8, 0.5), lambda: ntk_frequencies(8, 0.9),
               lambda: yarn_frequencies(8, 0.5, 100), lambda: yarn_attention_factor(0.99)):
        with pytest.raises(ValueError, match="scale"):
            fn()


@SETTINGS
@given(D=head_dims, base=bases, L=contexts)
def test_rope_rotations_count_turns_over_the_context(D, base, L):
    r = rope_rotations(np.array(_theta(D, base)), L)
    assert_close(r, np.array([L / (2 * math.pi * math.pow(base, 2 * i / D)) for i in range(D // 2)]),
                 rtol=1e-12, atol=0.0, name="turns")


def _seen(theta_train, theta_new, L, L_new):
    """Per pair: is every angle (mod 2 pi) of the long context one that training produced?"""
    full_turn = L * theta_train >= 2 * np.pi  # training went round the whole circle
    inside = L_new * theta_new <= L * theta_train * (1 + 1e-12)  # stays on the trained arc
    return full_turn | inside


@SETTINGS
@given(D=head_dims, base=bases, s=st.floats(1.5, 64.0), L=contexts)
def test_interpolation_and_yarn_only_produce_angles_seen_in_training(D, base, s, L):
    plain = interpolated_frequencies(D, 1.0, base=base)
    L_new = s * L
    assert _seen(plain, interpolated_frequencies(D, s, base=base), L, L_new).all()
    assert _seen(plain, yarn_frequencies(D, s, L, base=base), L, L_new).all()
    # Plain RoPE leaves the trained arc on every pair that did not turn once in training.
    unseen = ~_seen(plain, plain, L, L_new)
    assert (unseen == (L * plain < 2 * np.pi)).all()


# --------------------------------------------------------------------------- sinks and windows


@SETTINGS
@given(S=st.integers(0, 200), n_sink=st.integers(0, 8), window=st.integers(1, 40))
def test_the_sink_cache_keeps_the_sinks_and_the_last_window_tokens(S, n_sink, window):
    kept = sink_cache_kept(S, n_sink=n_sink, window=window)
    expected = sorted({j for j in range(S) if j < n_sink or j >= S - window})
    assert kept.tolist() == expected
    assert kept.size <= n_sink + window


@SETTINGS
@given(n_sink=st.integers(0, 6), window=st.integers(1, 12))
def test_the_sink_cache_evicts_the_oldest_non_sink_token_one_at_a_time(n_sink, window):
    evicted = []
    for S in range(1, 80):
        before = set(sink_cache_kept(S - 1, n_sink=n_sink, window=window).tolist())
        after = set(sink_cache_kept(S, n_sink=n_sink, window=window).tolist())
        assert after - before == {S - 1}  # the new token enters
        gone = sorted(before - after)
        assert len(gone) <= 1
        evicted += gone
    assert evicted == list(range(n_sink, n_sink + len(evicted)))  # n_sink, n_sink + 1, ...
    assert len(evicted) == 79 - min(79, n_sink + window)


@pytest.mark.parametrize("alignment", ["top_left", "bottom_right"])
@pytest.mark.parametrize("L, S", [(9, 9), (4, 11), (11, 4)])
def test_sink_window_mask_rows_are_the_kept_tokens(alignment, L, S):
    for n_sink, window in [(0, 3), (2, 3), (4, 1), (1, 20)]:
        mask = sink_window_mask(L, S, n_sink=n_sink, window=window, alignment=alignment)
        offset = S - L if alignment == "bottom_right" else 0
        for i in range(L):
            seen = i + offset + 1  # the tokens up to query i
            row = np.zeros(S, dtype=bool)
            if seen > 0:
                row[sink_cache_kept(min(seen, S), n_sink=n_sink, window=window)] = True
                if seen > S:  # keys beyond S do not exist: a window past the end
                    row[:] = False
                    row[[j for j in range(S) if j < n_sink or j >= seen - window]] = True
            assert (mask[i] == row).all(), (i, mask[i], row)


@pytest.mark.claim(
    "book: the streaming cache of `attnmath.long_context`",
    "Decoding a stream through the sink-and-window cache gives exactly the output of attention with "
    "the sink and window mask over the sequence, a cache of at most $n_{\\text{sink}} + w$ tokens",
    "verified on", chapter="14_long_context",
    quote="and the cache never holds more than",
    domain="$1 \\le L \\le 24$, $0 \\le n_{\\text{sink}} \\le 4$, $1 \\le w \\le 8$, grouped heads, no RoPE, "
           "hypothesis")
@SETTINGS
@given(L=st.integers(1, 24), n_sink=st.integers(0, 4), window=st.integers(1, 8),
       heads=st.sampled_from([(1, 1), (2, 2), (4, 2), (3, 1)]), seed=st.integers(0, 2**16))
def test_streaming_attention_equals_full_attention_restricted_to_the_cache(L, n_sink, window,
                                                                            heads, seed):
    H, H_kv = heads
    q, k, v = random_qkv(B=2, H=H, L=L, D=4, D_v=3, H_kv=H_kv, seed=seed)
    out = streaming_attention(q, k, v, n_sink=n_sink, window=window)
    expected = sdpa_oracle(q, k, v, mask=sink_window_mask(L, n_sink=n_sink, window=window))
    assert_close(out, expected, rtol=1e-10, atol=1e-12, name="streaming")


def test_streaming_attention_with_rope_numbers_positions_inside_the_cache():
    L, n_sink, window, base = 30, 2, 5, 100.0
    q, k, v = random_qkv(B=1, H=2, L=L, D=8, seed=4)
    out = streaming_attention(q, k, v, n_sink=n_sink, window=window, rope_base=base)
    for t in range(L):
        kept = sink_cache_kept(t + 1, n_sink=n_sink, window=window)
        slots = np.arange(kept.size)
        assert slots.max() <= n_sink + window - 1  # positions stay bounded
        q_t = apply_rope(q[:, :, t:t + 1], slots[-1:], base=base)
        k_c = apply_rope(k[:, :, kept], slots, base=base)
        expected = sdpa_oracle(q_t, k_c, v[:, :, kept])
        assert_close(out[:, :, t:t + 1], expected, name=f"step {t}")
        if t >= n_sink + window:
            # Inside the window the offsets are the true ones: same scores as at true positions.
            true_q = apply_rope(q[:, :, t:t + 1], [t], base=base)
            true_k = apply_rope(k[:, :, kept[n_sink:]], kept[n_sink:], base=base)
            assert_close(q_t @ np.swapaxes(k_c[:, :, n_sink:], -1, -2),
                         true_q @ np.swapaxes(true_k, -1, -2), rtol=1e-9, atol=1e-12,
                         name="window scores")


@SETTINGS
@given(S=st.integers(2, 40), seed=st.integers(0, 2**16), spread=st.floats(0.1, 8.0))
def test_attention_over_a_subset_of_keys_errs_by_at_most_twice_the_dropped_weight(S, seed, spread):
    rng = np.random.default_rng(seed)
    z = spread * rng.standard_normal(S)
    v = rng.standard_normal((S, 3))
    keep = rng.random(S) < 0.5
    keep[rng.integers(S)] = True
    p = softmax(z)
    dropped = p[~keep].sum()
    full = p @ v
    restricted = softmax(z[keep]) @ v[keep]
    bound = 2 * dropped * np.linalg.norm(v, axis=1).max()
    assert np.linalg.norm(full - restricted) <= bound + 1e-12


def test_evicting_the_sink_of_a_sink_head_changes_its_output_and_keeping_it_does_not():
    # A head that parks most of its weight on token 0 (score +6 there), with a recency
    # penalty on the other keys, and a sink value near zero, as in trained models.
    rng = np.random.default_rng(0)
    L, window, D = 256, 16, 8
    q, k, v = rng.standard_normal((3, L, D)) * 0.3
    v[0] = 0.0
    i, j = np.arange(L)[:, None], np.arange(L)[None, :]
    bias = np.where(j == 0, 6.0, -0.3 * (i - j))
    full = sdpa_oracle(q, k, v, bias=bias, causal=True)
    with_sink = sdpa_oracle(q, k, v, bias=bias, mask=sink_window_mask(L, n_sink=1, window=window))
    no_sink = sdpa_oracle(q, k, v, bias=bias, mask=sink_window_mask(L, n_sink=0, window=window))
    late = slice(4 * window, L)  # long after the sink left the plain window
    err_sink = np.abs(with_sink - full)[late].max()
    err_window = np.abs(no_sink - full)[late].max()
    assert err_sink < 1e-3 and err_window > 100 * err_sink


# --------------------------------------------------------------------------- ring attention


def _lse_oracle(q, k, scale, allowed):
    """log-sum-exp of the allowed scaled scores, by torch, with grouped heads repeated."""
    tq, tk = torch.from_numpy(q), torch.from_numpy(k)
    tk = tk.repeat_interleave(tq.shape[-3] // tk.shape[-3], dim=-3)
    scores = scale * tq @ tk.transpose(-1, -2)
    scores = scores.masked_fill(~torch.from_numpy(allowed), -torch.inf)
    return torch.logsumexp(scores, dim=-1).numpy()


@pytest.mark.claim(
    "000 Parallelization",
    "Sequence parallelism: for very long sequences",
    "verified",
    domain=r"ring attention over $1 \le P \le 7$ simulated workers, $1 \le L, S \le 13$ (uneven "
           "blocks, empty blocks when $P$ exceeds a length), grouped heads, causal in both "
           "alignments or not, against torch's attention in float64, hypothesis")
@SETTINGS
@given(P=st.integers(1, 7), L=st.integers(1, 13), S=st.integers(1, 13),
       heads=st.sampled_from([(1, 1), (2, 2), (4, 2), (4, 1), (6, 3)]),
       causal=st.booleans(), alignment=st.sampled_from(["top_left", "bottom_right"]),
       D=st.integers(1, 6), D_v=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_ring_attention_equals_plain_attention(P, L, S, heads, causal, alignment, D, D_v, seed):
    H, H_kv = heads
    q, k, v = random_qkv(B=2, H=H, L=L, S=S, D=D, D_v=D_v, H_kv=H_kv, seed=seed)
    ring = ring_attention(q, k, v, P=P, causal=causal, causal_alignment=alignment)
    expected = sdpa_oracle(q, k, v, causal=causal, causal_alignment=alignment)
    assert_close(ring.out, expected, rtol=1e-10, atol=1e-12, name="ring out")
    offset = S - L if alignment == "bottom_right" else 0
    allowed = np.ones((L, S), bool)
    if causal:
        allowed = np.arange(S)[None, :] <= np.arange(L)[:, None] + offset
    assert_close(ring.lse, _lse_oracle(q, k, 1 / math.sqrt(D), allowed), rtol=1e-10, atol=1e-12,
                 name="ring lse")


def test_ring_attention_in_float32_and_float16_stays_in_the_input_dtype():
    for dtype, tol in ((np.float32, 1e-5), (np.float16, 2e-3)):
        q, k, v = random_qkv(B=1, H=2, L=12, D=8, seed=1, dtype=dtype)
        ring = ring_attention(q, k, v, P=3, causal=True)
        assert ring.out.dtype == dtype
        assert_close(ring.out, sdpa_oracle(q, k, v, causal=True), rtol=tol, atol=tol, name=str(dtype))


@SETTINGS
@given(P=st.integers(1, 6), L=st.integers(1, 20), heads=st.sampled_from([(2, 2), (4, 1), (4, 2)]),
       D=st.integers(1, 5), D_v=st.integers(1, 5))
def test_each_worker_sends_its_current_block_to_its_neighbour_in_every_step_but_the_last(P, L, heads, D, D_v):
    H, H_kv = heads
    q, k, v = random_qkv(B=1, H=H, L=L, D=D, D_v=D_v, H_kv=H_kv)
    ring = ring_attention(q, k, v, P=P)
    sizes = [len(b) for b in np.array_split(np.arange(L), P)]
    for t in range(P):
        for w in range(P):
            block = sizes[(w - t) % P]
            expected = 0 if t == P - 1 else block * H_kv * (D + D_v) * 8  # float64
            assert ring.sent_bytes[t, w] == expected
    # Over the whole ring every worker forwards every block but its last one: (P-1)/P of K, V.
    assert ring.sent_bytes.sum() == (P - 1) * (k.nbytes + v.nbytes)


@pytest.mark.parametrize("P", [1, 2, 4, 7])
def test_causal_ring_attention_skips_exactly_the_blocks_above_the_diagonal(P):
    L = 4 * P
    q, k, v = random_qkv(B=1, H=1, L=L, D=4, seed=P)
    causal = ring_attention(q, k, v, P=P, causal=True)
    full = ring_attention(q, k, v, P=P)
    t, w = np.meshgrid(np.arange(P), np.arange(P), indexing="ij")
    assert (causal.computed == ((w - t) % P <= w)).all()  # block b = (w - t) mod P, b <= w
    assert causal.computed.sum() == P * (P + 1) // 2 and full.computed.all()
    assert (causal.computed.sum(axis=0) == np.arange(1, P + 1)).all()  # worker w: w + 1 blocks


@SETTINGS
@given(c=st.integers(1, 1 << 16), D=st.integers(1, 256), D_v=st.integers(1, 256),
       heads=st.sampled_from([(1, 1), (8, 8), (32, 8), (64, 1)]), b=st.sampled_from([1, 2, 4]),
       F=st.floats(1e9, 1e16), B=st.floats(1e8, 1e13))
def test_a_ring_step_hides_its_transfer_exactly_when_the_block_reaches_the_minimum(c, D, D_v, heads,
                                                                                    b, F, B):
    H, H_kv = heads
    flops, sent = ring_step_cost(c, D, D_v, H=H, H_kv=H_kv, bytes_per_elem=b)
    assert flops == 2 * c * c * H * (D + D_v) and sent == c * H_kv * (D + D_v) * b
    c_min = ring_min_block(F, B, bytes_per_elem=b, H=H, H_kv=H_kv)
    compute_time, transfer_time = flops / F, sent / B
    if c >= c_min * (1 + 1e-12):
        assert compute_time >= transfer_time
    elif c <= c_min * (1 - 1e-12):
        assert compute_time < transfer_time


def test_ring_min_block_is_flops_over_bandwidth_for_bfloat16_and_full_heads():
    # Liu et al. (2023): block size c >= F / B with bfloat16 keys and values.
    assert ring_min_block(312e12, 300e9) == pytest.approx(312e12 / 300e9)
    assert ring_min_block(312e12, 300e9, H=32, H_kv=8) == pytest.approx(312e12 / 300e9 / 4)


def test_ring_step_flops_are_the_attention_flops_of_one_block_pair():
    c, H, D = 64, 4, 16
    flops, _ = ring_step_cost(c, D, H=H)
    assert flops == multihead_flops(1, c, c, H * D, H).attention


# --------------------------------------------------------------------------- extrapolation


def test_marker_batch_targets_are_the_value_of_the_most_recent_marker():
    tokens, targets = marker_batch(16, 50, V=5, p_marker=0.3, seed=2)
    assert tokens.shape == targets.shape == (16, 50)
    for b in range(16):
        current = None
        for t in range(50):
            if tokens[b, t] < 5:
                current = tokens[b, t]
            assert targets[b, t] == current
    assert (tokens[:, 0] < 5).all()


@pytest.mark.claim(
    "003 §4.5",
    "ALiBi: excellent extrapolation (sequences longer than training length)",
    "clarified",
    correction="On a task whose answer lies among the recent tokens, a model trained with "
               "ALiBi keeps its accuracy on sequences four times longer than in training, while "
               "the same model with rotary or sinusoidal positions loses it. ALiBi extrapolates "
               "in this sense: its bias keeps far keys negligible, so longer inputs do not "
               "disturb it; it does not let a model use information farther back than it was "
               "trained to.",
    domain="one-layer attention models retrained here with rotary and ALiBi positions (200 Adam "
           "steps at length 32, seed 0) on the most-recent-marker task, evaluated at length 128; "
           "the chapter's committed runs (three seeds, also sinusoidal) up to length 512",
    box="corr-alibi-extrapolation")
def test_a_reduced_retrain_shows_alibi_extrapolating_and_rope_not():
    config = ExtrapolationConfig(positions=("rope", "alibi"), lengths=(128,), seeds=(0,), steps=200)
    data = extrapolation_experiment(config)
    acc = {run["position"]: run["eval"][run["position"]]["128"] for run in data["runs"]}
    assert acc["alibi"]["acc_inside"] > 0.9 and acc["rope"]["acc_inside"] > 0.9
    assert acc["alibi"]["acc_beyond"] > acc["alibi"]["acc_inside"] - 0.05
    assert acc["rope"]["acc_beyond"] < acc["rope"]["acc_inside"] - 0.25
    # Interpolating the frequencies, without any training, recovers most of it on this task.
    assert data["runs"][0]["eval"]["rope+PI"]["128"]["acc_beyond"] > acc["rope"]["acc_beyond"] + 0.2


@pytest.mark.claim(
    "003 §4.4",
    "RoPE gives better length extrapolation than absolute positions",
    "clarified",
    correction="Better than sinusoidal positions, but not good: trained at one length, a model "
               "with rotary positions keeps more of its accuracy beyond it than the same model "
               "with sinusoidal positions, and still loses most of what it had, where ALiBi keeps "
               "it (as Press et al., 2022, found for language models). Long-context RoPE models "
               "rely on interpolating or rescaling the frequencies.",
    domain="the chapter's committed runs (`book/data/extrapolation.json`: sinusoidal, rotary and "
           "ALiBi positions, three seeds, trained at length 32, evaluated at 64 to 512 on the "
           "most-recent-marker task), every seed and length",
    chapter="06_positional",
    box="corr-rope-extrapolation")
def test_rope_extrapolates_better_than_sinusoidal_and_still_far_worse_than_alibi():
    data = json.loads(DATA.read_text())
    acc = {(r["position"], r["seed"]): r["eval"][r["position"]] for r in data["runs"]}
    config = data["config"]
    longer = [str(n) for n in config["lengths"] if n > config["L_train"]]
    assert set(config["positions"]) == {"sinusoidal", "rope", "alibi"} and longer
    for seed in config["seeds"]:
        for n in longer:
            sin, rope, alibi = (acc[p, seed][n] for p in ("sinusoidal", "rope", "alibi"))
            assert rope["acc_beyond"] > sin["acc_beyond"]
            assert rope["acc_beyond"] < rope["acc_inside"] - 0.25
            assert alibi["acc_beyond"] > alibi["acc_inside"] - 0.05


def test_the_committed_experiment_data_comes_from_the_default_configuration():
    data = json.loads(DATA.read_text())
    config = ExtrapolationConfig()
    assert data["config"] == json.loads(json.dumps(vars(config)))
    runs = {(r["position"], r["seed"]) for r in data["runs"]}
    assert runs == {(p, s) for p in config.positions for s in config.seeds}


def test_experiment_config_refuses_bad_settings():
    with pytest.raises(ValueError, match="positions"):
        ExtrapolationConfig(positions=("learned",))
    with pytest.raises(ValueError, match="C"):
        ExtrapolationConfig(C=30, H=4)
    with pytest.raises(TypeError, match="config"):
        extrapolation_experiment({"steps": 3})  # type: ignore[arg-type]
