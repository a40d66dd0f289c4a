"""Tests of attnmath.sparse: sparse patterns, their entry counts, and sliding-window attention."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnmath.attention import scaled_dot_product_attention
from attnmath.masking import causal_mask, sliding_window_mask
from attnmath.sparse import (
    bigbird_mask,
    global_local_mask,
    local_mask,
    mask_density,
    random_mask,
    sliding_window_attention,
    strided_column_mask,
    strided_local_mask,
    strided_mask,
)
from attnmath.testing import assert_close, random_qkv, sdpa_oracle

SETTINGS = settings(max_examples=40, deadline=None)


def _reaches_in_two_steps(first, second):
    """Boolean matrix product: i reaches j through some m with first[i, m] and second[m, j]."""
    return (first.astype(np.int64) @ second.astype(np.int64)) > 0


# ----------------------------------------------------------------------------- local band


@SETTINGS
@given(st.integers(1, 30), st.integers(1, 30), st.integers(0, 35))
def test_local_mask_matches_a_direct_loop_and_its_count(L, S, r):
    mask = local_mask(L, S, radius=r)
    expected = np.array([[abs(i - j) <= r for j in range(S)] for i in range(L)])
    assert (mask == expected).all()
    count = sum(min(i + r, S - 1) - max(i - r, 0) + 1 for i in range(L) if i - r <= S - 1)
    assert mask.sum() == count


@pytest.mark.claim(
    "002 §6.3",
    "Local attention: each position attends to a window of $w$ neighbours, complexity $O(nwd)$",
    "verified",
    domain=r"$1 \le n \le 60$, $0 \le \mathrm{radius} \le 70$, hypothesis")
@SETTINGS
@given(st.integers(1, 60), st.integers(0, 70))
def test_local_mask_count_is_n_times_width_minus_the_corners(n, r):
    # n(2r + 1) - r(r + 1) pairs when r < n: O(n w), hence O(n w d) time.
    count = local_mask(n, radius=r).sum()
    if r < n:
        assert count == n * (2 * r + 1) - r * (r + 1)
    else:
        assert count == n * n
    assert count <= n * (2 * r + 1)


def test_local_mask_rejects_a_negative_radius():
    with pytest.raises(ValueError, match="radius must be >= 0"):
        local_mask(4, radius=-1)


# ----------------------------------------------------------------------------- strided heads


@SETTINGS
@given(st.integers(1, 40), st.integers(1, 12))
def test_strided_masks_match_direct_loops(n, stride):
    local = np.array([[0 <= i - j < stride for j in range(n)] for i in range(n)])
    column = np.array([[j <= i and (i - j) % stride == 0 for j in range(n)] for i in range(n)])
    assert (strided_local_mask(n, stride=stride) == local).all()
    assert (strided_column_mask(n, stride=stride) == column).all()
    assert (strided_mask(n, stride=stride) == (local | column)).all()


@SETTINGS
@given(st.integers(1, 40), st.integers(1, 12))
def test_two_strided_heads_connect_every_earlier_position(n, stride):
    local = strided_local_mask(n, stride=stride)
    column = strided_column_mask(n, stride=stride)
    causal = causal_mask(n)
    assert (_reaches_in_two_steps(column, local) == causal).all()
    assert (_reaches_in_two_steps(local, column) == causal).all()


def test_a_window_one_shorter_than_the_stride_breaks_two_step_connectivity():
    n, stride = 20, 4
    short_local = sliding_window_mask(n, stride - 1)
    column = strided_column_mask(n, stride=stride)
    assert not (_reaches_in_two_steps(column, short_local) == causal_mask(n)).all()


@pytest.mark.claim(
    "002 §6.3",
    "Strided attention: attend to every $k$-th position, complexity $O(n^2 d / k)$",
    "verified",
    domain=r"$1 \le n \le 80$, $1 \le \mathrm{stride} \le 12$, hypothesis")
@SETTINGS
@given(st.integers(1, 80), st.integers(1, 12))
def test_strided_column_count_is_quadratic_over_the_stride(n, stride):
    count = strided_column_mask(n, stride=stride).sum()
    assert count == sum(i // stride + 1 for i in range(n))
    # n^2 / (2 l) up to a linear term: O(n^2 d / l) for the column head alone.
    assert abs(count - n * n / (2 * stride)) <= n


def test_strided_pattern_with_stride_sqrt_n_has_n_sqrt_n_entries():
    for n in (64, 256, 1024):
        stride = int(np.sqrt(n))
        count = strided_mask(n, stride=stride).sum()
        assert n * stride / 2 <= count <= 2 * n * stride
        assert mask_density(strided_mask(n, stride=stride)) <= 2 / stride


def test_strided_masks_reject_a_zero_stride():
    with pytest.raises(ValueError, match="stride must be >= 1"):
        strided_column_mask(5, stride=0)


# ----------------------------------------------------------------------------- global, random, BigBird


@SETTINGS
@given(st.integers(1, 25), st.integers(0, 4), st.lists(st.integers(0, 24), max_size=3))
def test_global_local_mask_matches_its_definition(n, r, tokens):
    tokens = [t for t in tokens if t < n]
    mask = global_local_mask(n, radius=r, global_tokens=tokens)
    expected = np.array([[abs(i - j) <= r or i in tokens or j in tokens for j in range(n)] for i in range(n)])
    assert (mask == expected).all()
    assert (mask == mask.T).all()


def test_global_tokens_see_and_are_seen_by_everything():
    mask = global_local_mask(12, radius=1, global_tokens=[0, 7])
    assert mask[[0, 7], :].all() and mask[:, [0, 7]].all()
    assert mask[3].sum() == 3 + 2  # its band plus the two global columns


def test_global_local_mask_rejects_out_of_range_tokens():
    with pytest.raises(ValueError, match=r"global_tokens must lie in \[0, L=5\)"):
        global_local_mask(5, radius=1, global_tokens=[5])


@SETTINGS
@given(st.integers(1, 30), st.integers(1, 30), st.integers(0, 35), st.integers(0, 1000))
def test_random_mask_gives_each_query_exactly_r_keys(L, S, r, seed):
    mask = random_mask(L, S, n_random=r, seed=seed)
    assert mask.shape == (L, S)
    assert (mask.sum(axis=1) == min(r, S)).all()
    assert (random_mask(L, S, n_random=r, seed=seed) == mask).all()


def test_random_mask_keys_are_spread_uniformly():
    L, S, r = 4000, 10, 3
    counts = random_mask(L, S, n_random=r, seed=1).sum(axis=0)
    expected = L * r / S  # each key is chosen with probability r / S
    std = np.sqrt(L * (r / S) * (1 - r / S))
    assert (np.abs(counts - expected) < 5 * std).all()


def test_random_masks_from_different_seeds_differ():
    assert (random_mask(20, n_random=3, seed=0) != random_mask(20, n_random=3, seed=1)).any()


def test_random_mask_rejects_a_non_integer_seed():
    with pytest.raises(TypeError, match="seed must be an integer"):
        random_mask(5, n_random=2, seed=0.5)


def test_bigbird_mask_is_the_union_of_its_parts():
    parts = global_local_mask(30, radius=2, global_tokens=[0]) | random_mask(30, n_random=3, seed=4)
    assert (bigbird_mask(30, radius=2, global_tokens=[0], n_random=3, seed=4) == parts).all()


@pytest.mark.claim(
    "002 §6.3",
    "Longformer, BigBird: local window + global tokens + random connections",
    "corrected",
    correction="Only BigBird has all three. Longformer is local window + global tokens, with no "
               "random connections (its mask is the same for every seed); BigBird adds $r$ random "
               "keys per query, so both cost $O(n(w + g + r))$, linear in $n$.",
    domain=r"$1 \le n \le 64$, $0 \le \mathrm{radius} \le 5$, 0 to 3 global tokens, "
           r"$0 \le r \le 4$ random keys, every seed (hypothesis)",
    chapter="07_efficiency",
    box="corr-longformer-bigbird")
@SETTINGS
@given(n=st.integers(1, 64), radius=st.integers(0, 5), n_global=st.integers(0, 3), n_random=st.integers(0, 4),
       seed=st.integers(0, 2**20))
def test_longformer_is_local_plus_global_and_only_bigbird_adds_random_keys(n, radius, n_global, n_random, seed):
    g = list(range(min(n_global, n)))
    i, j = np.indices((n, n))
    band = np.abs(i - j) <= radius
    glob = np.isin(i, g) | np.isin(j, g)
    longformer = global_local_mask(n, radius=radius, global_tokens=g)
    assert (longformer == (band | glob)).all()  # local + global and nothing else: no random keys
    bigbird = bigbird_mask(n, radius=radius, global_tokens=g, n_random=n_random, seed=seed)
    assert (bigbird == (longformer | random_mask(n, n_random=n_random, seed=seed))).all()
    extra = bigbird & ~longformer
    assert (extra.sum(axis=1) <= n_random).all()  # at most r random keys per query on top


def test_bigbird_count_grows_linearly_with_length():
    counts = [bigbird_mask(n, radius=3, global_tokens=[0, 1], n_random=3, seed=0).sum() for n in (100, 200, 400)]
    per_token = [c / n for c, n in zip(counts, (100, 200, 400))]
    assert max(per_token) <= 7 + 2 * 2 + 3 + 1e-9 and max(per_token) - min(per_token) < 1
    draws = [bigbird_mask(100, radius=3, global_tokens=[0, 1], n_random=3, seed=s) for s in range(3)]
    assert not (draws[0] == draws[1]).all() or not (draws[0] == draws[2]).all()  # random keys differ by seed


# ----------------------------------------------------------------------------- density


def test_mask_density_of_the_causal_mask():
    for n in (1, 2, 7, 50):
        assert mask_density(causal_mask(n)) == pytest.approx((n + 1) / (2 * n), abs=1e-15)


def test_mask_density_rejects_a_float_mask():
    with pytest.raises(TypeError, match="mask must be boolean"):
        mask_density(np.ones((3, 3)))


# ----------------------------------------------------------------------------- the two windows


@pytest.mark.claim(
    "002 §10",
    "Sliding window: each position only attends to $w$ previous positions; $A_{ij} = 0$ if "
    r"$\lvert i - j \rvert > w/2$",
    "corrected",
    correction=r"The two statements disagree. $\lvert i - j \rvert \le w/2$ is a symmetric band "
               "that sees $w/2$ future positions ($w + 1$ keys); the sliding window of decoders "
               r"(Mistral) is causal: query $i$ sees keys $i - w + 1, \dots, i$, i.e. $A_{ij} = 0$ "
               r"unless $0 \le i - j < w$.",
    domain="a counterexample: $n = 16$, $w = 4$",
    box="corr-window-efficiency")
def test_causal_window_and_symmetric_band_are_different_patterns():
    # "Attends to w previous positions" (causal, Mistral) is not "|i - j| <= w/2" (symmetric).
    n, w = 16, 4
    causal_window = sliding_window_mask(n, w)
    band = local_mask(n, radius=w // 2)
    assert not np.triu(causal_window, 1).any()  # never a future key
    assert np.triu(band, 1).any()  # the band looks ahead
    assert (causal_window.sum(axis=1)[w:] == w).all()
    assert (band.sum(axis=1)[w:-w] == w + 1).all()  # 2 * (w/2) + 1 keys, not w


# ----------------------------------------------------------------------------- sliding-window attention


@SETTINGS
@given(
    st.integers(1, 2),
    st.sampled_from([(1, 1), (2, 2), (4, 2), (3, 1)]),
    st.integers(1, 12),
    st.integers(1, 15),
    st.integers(1, 5),
    st.integers(1, 4),
    st.integers(0, 10_000),
)
def test_sliding_window_attention_equals_masked_full_attention(B, heads, L, window, D, D_v, seed):
    H, H_kv = heads
    q, k, v = random_qkv(B=B, H=H, L=L, D=D, D_v=D_v, H_kv=H_kv, seed=seed)
    expected, _ = scaled_dot_product_attention(q, k, v, mask=sliding_window_mask(L, window))
    assert_close(sliding_window_attention(q, k, v, window=window), expected, name="windowed out")


@pytest.mark.parametrize("window", [1, 3, 8, 20])
def test_sliding_window_attention_matches_torch_sdpa(window):
    q, k, v = random_qkv(B=2, H=4, L=11, D=6, D_v=5, H_kv=2, seed=window)
    expected = sdpa_oracle(q, k, v, mask=sliding_window_mask(11, window), scale=0.3)
    assert_close(sliding_window_attention(q, k, v, window=window, scale=0.3), expected)
    # the same window as an argument of the oracle (and of plain attention)
    assert_close(sdpa_oracle(q, k, v, causal=True, window=window, scale=0.3), expected)
    plain, _ = scaled_dot_product_attention(q, k, v, causal=True, window=window, scale=0.3)
    assert_close(plain, expected)


def test_window_of_full_length_is_causal_attention():
    q, k, v = random_qkv(B=1, H=2, L=9, D=4, seed=3)
    expected = sdpa_oracle(q, k, v, causal=True)
    assert_close(sliding_window_attention(q, k, v, window=9), expected)
    assert_close(sliding_window_attention(q, k, v, window=100), expected)


def test_window_of_one_returns_the_values():
    q, k, v = random_qkv(B=1, H=1, L=6, D=3, seed=4)
    assert_close(sliding_window_attention(q, k, v, window=1), v)


def test_sliding_window_attention_stays_finite_for_large_scores():
    q, k, v = random_qkv(B=1, H=1, L=8, D=4, seed=5)
    out = sliding_window_attention(1e3 * q, 1e3 * k, v, window=3)
    expected, _ = scaled_dot_product_attention(1e3 * q, 1e3 * k, v, mask=sliding_window_mask(8, 3))
    assert np.isfinite(out).all()
    assert_close(out, expected, rtol=1e-9, atol=1e-10)


def test_sliding_window_attention_rejects_a_zero_window():
    q, k, v = random_qkv(L=4, D=2)
    with pytest.raises(ValueError, match="window must be >= 1"):
        sliding_window_attention(q, k, v, window=0)


def test_sliding_window_attention_rejects_cross_attention():
    q, k, v = random_qkv(L=4, S=6, D=2)
    with pytest.raises(ValueError, match="L == S"):
        sliding_window_attention(q, k, v, window=2)


@pytest.mark.claim(
    "002 §10",
    "Sliding window attention: $O(nw)$ complexity",
    "verified",
    domain=r"$1 \le n \le 300$, $1 \le w \le n$, hypothesis: the exact count of allowed pairs")
@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 300), data=st.data())
def test_sliding_window_mask_has_n_w_entries_up_to_the_start(n, data):
    w = data.draw(st.integers(1, n), label="w")
    mask = sliding_window_mask(n, w)
    assert mask.sum() == n * w - w * (w - 1) // 2  # the first w - 1 queries see fewer keys
    assert (mask.sum(axis=1) <= w).all()

