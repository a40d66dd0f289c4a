"""Tests for attnmath.chunked: query-chunked attention and the online softmax."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnmath.attention import scaled_dot_product_attention
from attnmath.chunked import chunked_attention, online_logsumexp, online_softmax
from attnmath.masking import causal_mask
from attnmath.softmax import logsumexp, softmax
from attnmath.testing import assert_close, random_qkv, sdpa_oracle

SETTINGS = settings(max_examples=40, deadline=None)


# --------------------------------------------------------------------------- chunked_attention


@pytest.mark.parametrize("chunk_size", [1, 3, 4, 7, 100])
def test_chunked_attention_matches_torch_sdpa_with_mask_and_grouped_heads(chunk_size):
    q, k, v = random_qkv(B=2, H=4, L=7, S=6, D=5, D_v=3, H_kv=2, seed=1)
    mask = np.random.default_rng(2).random((2, 1, 7, 6)) > 0.4
    out = chunked_attention(q, k, v, chunk_size=chunk_size, mask=mask)
    assert_close(out, sdpa_oracle(q, k, v, mask=mask), name="chunked output")


def test_chunked_attention_matches_torch_is_causal_with_custom_scale():
    q, k, v = random_qkv(B=1, H=2, L=9, S=9, D=4, seed=3)
    out = chunked_attention(q, k, v, chunk_size=4, mask=causal_mask(9), scale=0.3)
    assert_close(out, sdpa_oracle(q, k, v, causal=True, scale=0.3), name="causal chunked output")
    out = chunked_attention(q, k, v, chunk_size=4, causal=True, scale=0.3)
    assert_close(out, sdpa_oracle(q, k, v, causal=True, scale=0.3), name="causal=True")


def test_chunked_attention_with_bias_matches_plain_attention_and_torch():
    q, k, v = random_qkv(B=2, H=3, L=5, S=8, D=4, seed=4)
    bias = np.random.default_rng(5).standard_normal((3, 5, 8))  # (H, L, S): broadcasts over B
    mask = np.random.default_rng(6).random((5, 8)) > 0.3
    out = chunked_attention(q, k, v, chunk_size=2, mask=mask, bias=bias)
    plain, _ = scaled_dot_product_attention(q, k, v, mask=mask, bias=bias)
    assert_close(out, plain, name="chunked vs plain")
    assert_close(out, sdpa_oracle(q, k, v, mask=mask, bias=bias), name="chunked vs torch")


@SETTINGS
@given(
    B=st.integers(1, 2), H_kv=st.integers(1, 2), group=st.integers(1, 3),
    L=st.integers(1, 9), S=st.integers(1, 9), D=st.integers(1, 4), chunk=st.integers(1, 12),
    use_mask=st.booleans(), seed=st.integers(0, 2**31 - 1),
)
def test_chunked_attention_equals_plain_attention_for_any_chunk_size(B, H_kv, group, L, S, D, chunk,
                                                                     use_mask, seed):
    H = H_kv * group
    q, k, v = random_qkv(B=B, H=H, L=L, S=S, D=D, H_kv=H_kv, seed=seed)
    mask = np.random.default_rng(seed).random((B, H, L, S)) > 0.3 if use_mask else None
    out = chunked_attention(q, k, v, chunk_size=chunk, mask=mask)
    plain, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    assert_close(out, plain, name="chunked output")


def test_chunked_attention_accepts_plain_matrices():
    rng = np.random.default_rng(7)
    q, k, v = rng.standard_normal((6, 3)), rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    out = chunked_attention(q, k, v, chunk_size=4)
    assert out.shape == (6, 2)
    assert_close(out, sdpa_oracle(q, k, v), name="2-D output")


def test_fully_masked_row_is_zero():
    q, k, v = random_qkv(B=1, H=1, L=4, S=5, D=3, seed=8)
    mask = np.ones((4, 5), dtype=bool)
    mask[2] = False
    out = chunked_attention(q, k, v, chunk_size=3, mask=mask)
    assert_close(out[0, 0, 2], np.zeros(3), name="fully masked row")
    assert np.isfinite(out).all()


def test_float32_input_stays_float32_with_the_default_scale():
    q, k, v = random_qkv(B=1, H=2, L=6, D=4, seed=11, dtype=np.float32)
    out = chunked_attention(q, k, v, chunk_size=4)
    assert out.dtype == np.float32
    expected, _ = scaled_dot_product_attention(*(x.astype(np.float64) for x in (q, k, v)))
    assert_close(out, expected.astype(np.float32), rtol=1e-5, atol=1e-6, name="float32 output")


@pytest.mark.claim(
    "004 Efficient Attention Computation",
    "Processing the queries in chunks: still $O(n^2)$ ops but reduced peak memory",
    "verified on",
    domain="$B = 2$, $H = 4$, $L = 1024$, $D = 8$ with a causal mask, chunks of 8 queries; the "
           "peak traced memory against one $(B, H, L, S)$ array")
@pytest.mark.claim(
    "000 Memory Optimization",
    "Chunked attention: process in blocks for long sequences",
    "verified on",
    domain="$B = 2$, $H = 4$, $L = 1024$, $D = 8$ with a causal mask, chunks of 8 queries; the "
           "peak traced memory against one $(B, H, L, S)$ array")
def test_chunked_attention_never_allocates_a_full_score_or_mask_array():
    B, H, L, D = 2, 4, 1024, 8
    q, k, v = random_qkv(B=B, H=H, L=L, D=D, seed=9)
    mask = causal_mask(L)  # (L, S): broadcasting it to (B, H, L, S) would cost B*H*L*S bytes
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        chunked_attention(q, k, v, chunk_size=8, mask=mask)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    full_bool_bytes = B * H * L * L  # one byte per entry; the float64 scores would be 8x that
    assert peak - before < full_bool_bytes, f"peak {peak - before} B >= {full_bool_bytes} B"


def test_chunked_attention_rejects_bad_input():
    q, k, v = random_qkv(B=1, H=4, L=3, D=4, H_kv=2)
    with pytest.raises(ValueError, match="chunk_size"):
        chunked_attention(q, k, v, chunk_size=0)
    with pytest.raises(TypeError, match="chunk_size"):
        chunked_attention(q, k, v, chunk_size=2.5)
    with pytest.raises(ValueError, match="head dim"):
        chunked_attention(q, k[..., :3], v, chunk_size=2)
    q3, k3, v3 = random_qkv(B=1, H=3, L=3, D=4, H_kv=2)
    with pytest.raises(ValueError, match="multiple"):
        chunked_attention(q3, k3, v3, chunk_size=2)
    with pytest.raises(ValueError, match="does not broadcast"):
        chunked_attention(q, k, v, chunk_size=2, mask=np.ones((2, 3), dtype=bool))
    with pytest.raises(TypeError, match="boolean"):
        chunked_attention(q, k, v, chunk_size=2, mask=np.ones((3, 3)))
    with pytest.raises(ValueError, match="bias"):
        chunked_attention(q, k, v, chunk_size=2, bias=np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="bias of shape"):
        chunked_attention(q, k, v, chunk_size=2, bias=np.zeros((2, 3)))


# --------------------------------------------------------------------------- online softmax

finite_or_masked = st.one_of(
    st.floats(-60.0, 60.0, allow_nan=False), st.just(-np.inf)
)


@st.composite
def rows_with_a_finite_entry(draw):
    n_rows = draw(st.integers(1, 4))
    n = draw(st.integers(1, 12))
    x = np.array(draw(st.lists(finite_or_masked, min_size=n_rows * n, max_size=n_rows * n)))
    x = x.reshape(n_rows, n)
    for r in range(n_rows):  # softmax needs one finite entry per row
        if np.isneginf(x[r]).all():
            x[r, draw(st.integers(0, n - 1))] = draw(st.floats(-60.0, 60.0))
    return x


@pytest.mark.claim(
    "003 §5.2",
    r"Compute softmax in an online manner (no need to store the entire $QK^\top$)",
    "verified",
    domain=r"1 to 4 rows of 1 to 12 entries, $-\infty$ entries included, every block size from 1 "
           "to beyond the row length, hypothesis")
@pytest.mark.claim(
    "002 §6.1",
    "Accumulate the results of the blocks using online softmax",
    "verified",
    domain=r"1 to 4 rows of 1 to 12 entries, $-\infty$ entries included, every block size from 1 "
           "to beyond the row length, hypothesis")
@SETTINGS
@given(x=rows_with_a_finite_entry())
def test_online_softmax_equals_softmax_for_every_block_size(x):
    expected = softmax(x, axis=-1)
    for block_size in range(1, x.shape[-1] + 2):
        assert_close(online_softmax(x, block_size=block_size), expected, rtol=1e-12, atol=1e-15,
                     name=f"online softmax, block {block_size}")


@SETTINGS
@given(
    n_rows=st.integers(1, 4),
    values=st.lists(finite_or_masked, min_size=1, max_size=48),
    n=st.integers(1, 12),
)
def test_online_logsumexp_equals_logsumexp_for_every_block_size(n_rows, values, n):
    x = np.resize(np.array(values), n_rows * n).reshape(n_rows, n)
    if n_rows > 1:
        x[0] = -np.inf  # always include a fully masked row: its log-sum-exp is -inf
    expected = logsumexp(x, axis=-1)
    for block_size in range(1, n + 2):
        actual = online_logsumexp(x, block_size=block_size)
        assert_close(actual, expected, rtol=1e-12, atol=1e-12, name=f"online lse, block {block_size}")
    if n_rows > 1:
        assert np.isneginf(online_logsumexp(x, block_size=2)[0])


def test_online_softmax_matches_torch_on_huge_logits_along_any_axis():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 17, 2)) * 1e4  # e^{1e4} overflows without the running max
    out = online_softmax(x, block_size=5, axis=1)
    assert_close(out, torch.softmax(torch.from_numpy(x), dim=1), name="online softmax")
    lse = online_logsumexp(x, block_size=4, axis=1, keepdims=True)
    assert_close(lse, torch.logsumexp(torch.from_numpy(x), dim=1, keepdim=True), name="online lse")


def test_online_softmax_result_does_not_depend_on_the_order_blocks_increase_the_max():
    # Increasing rows force a rescale at every block; decreasing rows never rescale.
    x = np.stack([np.linspace(-5, 40, 23), np.linspace(40, -5, 23)])
    for block_size in (1, 2, 7):
        assert_close(online_softmax(x, block_size=block_size), softmax(x), rtol=1e-12, atol=1e-15)


def test_online_softmax_of_a_fully_masked_row_raises_like_softmax():
    x = np.array([[0.0, 1.0], [-np.inf, -np.inf]])
    with pytest.raises(ValueError, match="entirely -inf"):
        softmax(x)
    with pytest.raises(ValueError, match="entirely -inf"):
        online_softmax(x, block_size=1)


def test_online_logsumexp_of_plus_infinity_is_plus_infinity():
    x = np.array([[1.0, np.inf, 2.0]])
    assert np.isposinf(online_logsumexp(x, block_size=1)[0])
    assert np.isposinf(logsumexp(x)[0])


def test_online_softmax_rejects_bad_input():
    with pytest.raises(ValueError, match="block_size"):
        online_softmax(np.zeros(3), block_size=0)
    with pytest.raises(TypeError, match="block_size"):
        online_logsumexp(np.zeros(3), block_size=None)
    with pytest.raises(ValueError, match="NaN"):
        online_softmax(np.array([0.0, np.nan]), block_size=1)
    with pytest.raises(ValueError, match=r"\+inf"):
        online_softmax(np.array([0.0, np.inf]), block_size=1)
    with pytest.raises(ValueError, match="axis"):
        online_logsumexp(np.zeros((2, 3)), block_size=1, axis=2)
    with pytest.raises(TypeError, match="x must"):
        online_softmax("abc", block_size=1)
