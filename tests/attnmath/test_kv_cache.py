"""Tests of attnmath.kv_cache: cached decoding equals full causal attention."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnmath.attention import scaled_dot_product_attention
from attnmath.kv_cache import (
    KVCache,
    decode_step,
    kv_cache_append,
    kv_cache_bytes,
    kv_cache_init,
    prefill,
)
from attnmath.linear import attention_flops
from attnmath.masking import causal_mask
from attnmath.testing import assert_close, random_qkv, sdpa_oracle

SETTINGS = settings(max_examples=30, deadline=None)

heads = st.sampled_from([(1, 1), (2, 2), (4, 2), (4, 1), (3, 1)])


def _decode_all(q, k, v, S_max, *, scale=None):
    """Decode one token at a time: append its key and value, then attend its query."""
    B, H, L, D = q.shape
    cache = kv_cache_init(B, k.shape[1], S_max, D, v.shape[-1])
    outs = []
    for t in range(L):
        cache = kv_cache_append(cache, k[:, :, t:t + 1], v[:, :, t:t + 1])
        outs.append(decode_step(q[:, :, t:t + 1], cache, scale=scale))
    return np.concatenate(outs, axis=2), cache  # (B, H, L, D_v)


def _torch_causal(q, k, v, *, scale=None):
    return sdpa_oracle(q, k, v, causal=True, scale=scale)


@pytest.mark.claim(
    "003 §5.4",
    r"KV cache: $K_{\mathrm{new}} = [K_{\mathrm{cached}}; k_{t+1}]$, "
    r"$V_{\mathrm{new}} = [V_{\mathrm{cached}}; v_{t+1}]$ instead of recomputing the sequence",
    "verified",
    domain=r"$1 \le B \le 2$, $(H, H_{kv}) = (1, 1)$, $(2, 2)$, $(4, 2)$, $(4, 1)$, $(3, 1)$, "
           r"$1 \le L \le 10$, $1 \le D \le 5$, $1 \le D_v \le 4$, 0 to 3 spare cache slots, "
           "hypothesis",
    chapter="07_efficiency")
@SETTINGS
@given(st.integers(1, 2), heads, st.integers(1, 10), st.integers(1, 5), st.integers(1, 4),
       st.integers(0, 3), st.integers(0, 10_000))
def test_step_by_step_decoding_equals_full_causal_attention(B, hh, L, D, D_v, spare, seed):
    H, H_kv = hh
    q, k, v = random_qkv(B=B, H=H, L=L, D=D, D_v=D_v, H_kv=H_kv, seed=seed)
    out, cache = _decode_all(q, k, v, S_max=L + spare)
    expected, _ = scaled_dot_product_attention(q, k, v, mask=causal_mask(L))
    assert_close(out, expected, name="decoded outputs")
    assert cache.length == L


def test_step_by_step_decoding_matches_torch_is_causal_with_grouped_heads():
    q, k, v = random_qkv(B=2, H=8, L=9, D=6, D_v=5, H_kv=2, seed=1)
    out, _ = _decode_all(q, k, v, S_max=16, scale=0.2)
    assert_close(out, _torch_causal(q, k, v, scale=0.2), name="decoded outputs")


@SETTINGS
@given(st.integers(1, 2), heads, st.integers(1, 10), st.data(), st.integers(0, 10_000))
def test_prefill_then_steps_equals_full_causal_attention(B, hh, L, data, seed):
    H, H_kv = hh
    split = data.draw(st.integers(1, L), label="prompt length")
    q, k, v = random_qkv(B=B, H=H, L=L, D=4, D_v=3, H_kv=H_kv, seed=seed)
    cache = kv_cache_init(B, H_kv, L, 4, 3)
    first, cache = prefill(q[:, :, :split], k[:, :, :split], v[:, :, :split], cache)
    outs = [first]
    for t in range(split, L):
        cache = kv_cache_append(cache, k[:, :, t:t + 1], v[:, :, t:t + 1])
        outs.append(decode_step(q[:, :, t:t + 1], cache))
    assert_close(np.concatenate(outs, axis=2), _torch_causal(q, k, v), name="prefill + decode")


@SETTINGS
@given(st.integers(1, 9), st.integers(1, 9), st.integers(0, 10_000))
def test_two_prefill_chunks_equal_full_causal_attention(first, second, seed):
    L = first + second
    q, k, v = random_qkv(B=1, H=2, L=L, D=3, seed=seed)
    cache = kv_cache_init(1, 2, L, 3)
    a, cache = prefill(q[:, :, :first], k[:, :, :first], v[:, :, :first], cache)
    b, cache = prefill(q[:, :, first:], k[:, :, first:], v[:, :, first:], cache)
    assert_close(np.concatenate([a, b], axis=2), _torch_causal(q, k, v), name="chunked prefill")


def test_second_chunk_needs_the_bottom_right_alignment():
    q, k, v = random_qkv(B=1, H=1, L=7, D=4, seed=2)
    cache = kv_cache_init(1, 1, 7, 4)
    _, cache = prefill(q[:, :, :4], k[:, :, :4], v[:, :, :4], cache)
    out, cache = prefill(q[:, :, 4:], k[:, :, 4:], v[:, :, 4:], cache)
    top_left, _ = scaled_dot_product_attention(q[:, :, 4:], cache.k, cache.v, mask=causal_mask(3, 7))
    # Top-left would let new query i see only keys 0..i and hide the rest of the prompt.
    assert np.max(np.abs(out - top_left)) > 1e-3
    assert_close(out, _torch_causal(q, k, v)[:, :, 4:])


def test_append_leaves_the_old_cache_unchanged():
    cache = kv_cache_init(1, 2, 5, 3)
    before_k, before_v = cache.k.copy(), cache.v.copy()
    k_new = np.ones((1, 2, 2, 3))
    new = kv_cache_append(cache, k_new, 2 * k_new)
    assert cache.length == 0 and (cache.k == before_k).all() and (cache.v == before_v).all()
    assert new.length == 2
    assert (new.k[:, :, :2] == 1).all() and (new.v[:, :, :2] == 2).all()
    assert (new.k[:, :, 2:] == 0).all()


def test_append_writes_tokens_in_order():
    _, k, v = random_qkv(B=2, H=2, L=6, D=3, seed=3)
    cache = kv_cache_init(2, 2, 6, 3)
    for t in range(0, 6, 2):
        cache = kv_cache_append(cache, k[:, :, t:t + 2], v[:, :, t:t + 2])
    assert_close(cache.k, k)
    assert_close(cache.v, v)


def test_append_to_a_full_cache_raises_naming_S_max():
    cache = kv_cache_init(1, 1, 3, 2)
    cache = kv_cache_append(cache, np.zeros((1, 1, 3, 2)), np.zeros((1, 1, 3, 2)))
    with pytest.raises(ValueError, match="full.*S_max=3"):
        kv_cache_append(cache, np.zeros((1, 1, 1, 2)), np.zeros((1, 1, 1, 2)))


def test_append_rejects_mismatched_shapes():
    cache = kv_cache_init(2, 2, 4, 3)
    with pytest.raises(ValueError, match=r"k_new must have shape \(B=2, H_kv=2, T, D=3\)"):
        kv_cache_append(cache, np.zeros((2, 1, 1, 3)), np.zeros((2, 1, 1, 3)))
    with pytest.raises(ValueError, match="v_new must have shape"):
        kv_cache_append(cache, np.zeros((2, 2, 1, 3)), np.zeros((2, 2, 2, 3)))


@pytest.mark.parametrize("length", [-1, -5, 7])
def test_append_rejects_a_length_outside_zero_to_s_max(length):
    cache = kv_cache_init(1, 1, 6, 2)
    bad = cache._replace(length=length)
    k_new = np.ones((1, 1, 1, 2))
    with pytest.raises(ValueError, match="cache.length"):
        kv_cache_append(bad, k_new, k_new)
    with pytest.raises(ValueError, match="cache.length"):
        decode_step(np.ones((1, 1, 1, 2)), bad)


def test_append_rejects_something_that_is_not_a_cache():
    with pytest.raises(TypeError, match="cache must be a KVCache"):
        kv_cache_append((np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 2, 2)), 0), np.zeros((1, 1, 1, 2)),
                        np.zeros((1, 1, 1, 2)))


def test_decode_step_rejects_an_empty_cache_and_several_queries():
    cache = kv_cache_init(1, 1, 4, 2)
    with pytest.raises(ValueError, match="empty"):
        decode_step(np.zeros((1, 1, 1, 2)), cache)
    cache = kv_cache_append(cache, np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 2, 2)))
    with pytest.raises(ValueError, match="one query"):
        decode_step(np.zeros((1, 1, 2, 2)), cache)


def test_decode_step_rejects_heads_that_do_not_group():
    cache = kv_cache_append(kv_cache_init(1, 2, 4, 2), np.zeros((1, 2, 1, 2)), np.zeros((1, 2, 1, 2)))
    with pytest.raises(ValueError, match="H=3 must be a multiple of the cache's H_kv=2"):
        decode_step(np.zeros((1, 3, 1, 2)), cache)


def test_prefill_rejects_keys_of_another_length():
    cache = kv_cache_init(1, 1, 8, 2)
    with pytest.raises(ValueError, match="one key per query"):
        prefill(np.zeros((1, 1, 3, 2)), np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 2, 2)), cache)


def test_kv_cache_init_rejects_zero_capacity():
    with pytest.raises(ValueError, match="S_max must be >= 1"):
        kv_cache_init(1, 1, 0, 4)


def test_kv_cache_is_a_named_tuple():
    cache = kv_cache_init(1, 2, 3, 4, 5)
    assert isinstance(cache, KVCache) and cache._fields == ("k", "v", "length")
    assert cache.k.shape == (1, 2, 3, 4) and cache.v.shape == (1, 2, 3, 5)


# ----------------------------------------------------------------------------- memory and cost


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_kv_cache_bytes_equals_the_buffers_nbytes(dtype):
    cache = kv_cache_init(2, 3, 17, 8, 5, dtype=dtype)
    itemsize = np.dtype(dtype).itemsize
    assert kv_cache_bytes(2, 3, 17, 8, 5, itemsize=itemsize) == cache.k.nbytes + cache.v.nbytes


@pytest.mark.claim(
    "003 §5.4",
    r"KV cache memory: $O(t \cdot d \cdot \mathrm{layers})$",
    "verified",
    domain=r"$1 \le t \le 4096$, 1 to 8 layers, $(H, H_{kv}) = (8, 8)$, $(8, 2)$, $(8, 1)$, "
           r"$1 \le D \le 64$, hypothesis",
    chapter="07_efficiency")
@pytest.mark.claim(
    "002 §9",
    "Benefit of grouped-query and multi-query attention: a smaller KV cache during inference",
    "verified",
    domain=r"$1 \le t \le 4096$, 1 to 8 layers, $(H, H_{kv}) = (8, 8)$, $(8, 2)$, $(8, 1)$, "
           r"$1 \le D \le 64$, hypothesis",
    chapter="05_multihead")
@SETTINGS
@given(st.integers(1, 4096), st.integers(1, 8), st.sampled_from([(8, 8), (8, 2), (8, 1)]), st.integers(1, 64))
def test_kv_cache_bytes_is_linear_in_tokens_width_and_layers(t, layers, hh, D):
    H, H_kv = hh
    C = H * D  # model width
    mha = kv_cache_bytes(1, H, t, D, n_layers=layers, itemsize=2)
    assert mha == 2 * t * C * layers * 2  # O(t . d . layers), with the factor 2 for keys and values
    assert kv_cache_bytes(1, H, 2 * t, D, n_layers=layers, itemsize=2) == 2 * mha
    assert kv_cache_bytes(1, H, t, D, n_layers=2 * layers, itemsize=2) == 2 * mha
    # Grouped-query attention shrinks the cache by H / H_kv.
    assert kv_cache_bytes(1, H_kv, t, D, n_layers=layers, itemsize=2) * (H // H_kv) == mha


@pytest.mark.claim(
    "003 §5.4",
    "KV cache: $O(td)$ per decoding step ($t$ the current length)",
    "verified",
    domain=r"$1 \le t \le 10^5$ cached tokens, $1 \le D, D_v \le 256$, hypothesis: the FLOPs of "
           "one query against $t$ cached keys are exactly $2 t (D + D_v)$ and double with $t$",
    chapter="07_efficiency")
@SETTINGS
@given(t=st.integers(1, 100_000), D=st.integers(1, 256), D_v=st.integers(1, 256))
def test_a_decoding_step_costs_linear_time_in_the_cached_length(t, D, D_v):
    cost = attention_flops(1, t, D, D_v)
    assert cost == 2 * t * (D + D_v)  # O(t d) per head and step
    assert attention_flops(1, 2 * t, D, D_v) == 2 * cost


def test_kv_cache_bytes_rejects_zero_layers():
    with pytest.raises(ValueError, match="n_layers must be >= 1"):
        kv_cache_bytes(1, 1, 1, 1, n_layers=0)
