"""Tests of attnmath.serving: paged cache, flash-decoding, latent attention, quantisation, counts."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attnmath import serving as sv
from attnmath.flash import AttentionState, attention_state, merge_attention_states
from attnmath.kv_cache import kv_cache_append, kv_cache_init
from attnmath.testing import assert_close, random_qkv, sdpa_oracle

SETTINGS = settings(max_examples=30, deadline=None)
heads = st.sampled_from([(1, 1), (2, 2), (4, 2), (4, 1), (3, 1)])


# ---------------------------------------------------------------------------------------------
# Paged KV cache
# ---------------------------------------------------------------------------------------------

appends = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4)), min_size=1, max_size=8)


@SETTINGS
@given(heads, st.integers(1, 4), st.integers(1, 3), st.integers(1, 4), appends,
       st.integers(0, 10_000))
def test_paged_attention_equals_attention_over_the_contiguous_cache(hh, block_size, D, D_v,
                                                                     ops, seed):
    H, H_kv = hh
    rng = np.random.default_rng(seed)
    cache = sv.paged_cache_init(40, H_kv, block_size, D, D_v)
    contiguous = {}  # seq -> the attnmath.kv_cache.KVCache holding the same tokens
    for seq, T in ops:
        k, v = rng.standard_normal((H_kv, T, D)), rng.standard_normal((H_kv, T, D_v))
        cache = sv.paged_append(cache, seq, k, v)
        old = contiguous.get(seq, kv_cache_init(1, H_kv, 40, D, D_v))
        contiguous[seq] = kv_cache_append(old, k[None], v[None])
    for seq, ref in contiguous.items():
        S = ref.length
        k, v = sv.paged_gather(cache, seq)
        assert np.array_equal(k, ref.k[0, :, :S]) and np.array_equal(v, ref.v[0, :, :S])
        assert cache.lengths[seq] == S
        assert len(cache.tables[seq]) == math.ceil(S / block_size)
        assert 0 <= sv.paged_unused_slots(cache)[seq] <= block_size - 1
        for L in range(1, min(S, 3) + 1):
            q = rng.standard_normal((H, L, D))
            expected = sdpa_oracle(q[None], k[None], v[None], causal=True,
                                   causal_alignment="bottom_right")[0]
            assert_close(sv.paged_attention(q, cache, seq), expected, name="paged attention")
    used = [b for table in cache.tables.values() for b in table]
    assert sorted(used + list(cache.free)) == list(range(40)), "every block owned once"


def test_freeing_a_sequence_returns_its_blocks_and_keeps_the_others():
    rng = np.random.default_rng(0)
    cache = sv.paged_cache_init(6, 1, 2, 3)
    cache = sv.paged_append(cache, 0, rng.standard_normal((1, 3, 3)), rng.standard_normal((1, 3, 3)))
    cache = sv.paged_append(cache, 1, rng.standard_normal((1, 4, 3)), rng.standard_normal((1, 4, 3)))
    k1, v1 = sv.paged_gather(cache, 1)
    freed = sv.paged_free(cache, 0)
    assert 0 not in freed.tables and set(cache.tables[0]) <= set(freed.free)
    assert len(freed.free) == 6 - len(cache.tables[1])
    # A new sequence reuses the freed blocks and sequence 1 is untouched.
    again = sv.paged_append(freed, 2, rng.standard_normal((1, 5, 3)), rng.standard_normal((1, 5, 3)))
    assert set(again.tables[2]) & set(cache.tables[0])
    assert all(np.array_equal(a, b) for a, b in zip(sv.paged_gather(again, 1), (k1, v1)))
    assert len(cache.tables) == 2, "the input cache is left unchanged"


def test_an_exhausted_pool_raises_a_clear_error():
    cache = sv.paged_cache_init(2, 1, 2, 1)
    cache = sv.paged_append(cache, 0, np.ones((1, 3, 1)), np.ones((1, 3, 1)))
    cache = sv.paged_append(cache, 0, np.ones((1, 1, 1)), np.ones((1, 1, 1)))  # fills block 2
    with pytest.raises(ValueError, match="pool is exhausted: sequence 1 needs 1 more blocks, 0"):
        sv.paged_append(cache, 1, np.ones((1, 1, 1)), np.ones((1, 1, 1)))


@pytest.mark.parametrize("tables, lengths, free, message", [
    ({0: (0, 7)}, {0: 3}, (1,), "names block 7, outside the pool"),
    ({0: (0, 0)}, {0: 3}, (1,), "block 0 is in the block table of sequence 0 and in the"),
    ({0: (0,)}, {0: 3}, (1,), "has 1 blocks for 3 tokens"),
    ({0: (0, 1)}, {0: 3}, (1,), "block 1 is both free and in the block table"),
    ({0: (0, 1)}, {1: 3}, (), "must name the same sequences"),
])
def test_bad_block_tables_raise_clear_errors(tables, lengths, free, message):
    good = sv.paged_cache_init(4, 1, 2, 1)
    bad = sv.PagedKVCache(good.k_pool, good.v_pool, tables, lengths, free)
    with pytest.raises(ValueError, match=message):
        sv.paged_attention(np.ones((1, 1, 1)), bad, 0)


def test_gather_blocks_refuses_a_table_too_short_for_the_length():
    with pytest.raises(ValueError, match="too few for length=5"):
        sv.gather_blocks(np.zeros((4, 1, 2, 1)), [0, 1], 5)


def test_a_paged_pool_wastes_less_than_a_reserved_contiguous_cache():
    # Three sequences of 5, 17 and 33 tokens in blocks of 16 against S_max = 2048 each.
    cache = sv.paged_cache_init(8, 1, 16, 1)
    for seq, n in enumerate((5, 17, 33)):
        cache = sv.paged_append(cache, seq, np.ones((1, n, 1)), np.ones((1, n, 1)))
    assert sv.paged_unused_slots(cache) == {0: 11, 1: 15, 2: 15}
    assert sum(sv.paged_unused_slots(cache).values()) < 3 * 2048 - (5 + 17 + 33)


# ---------------------------------------------------------------------------------------------
# Flash-decoding and the merge
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(st.integers(1, 2), heads, st.integers(1, 3), st.integers(0, 9), st.integers(1, 12),
       st.integers(1, 3), st.integers(1, 3), st.sampled_from([0.0, 0.3, 1.0]),
       st.integers(0, 10_000))
def test_flash_decoding_equals_plain_attention_for_any_number_of_splits(
        B, hh, L, S, splits, D, D_v, p_masked, seed):
    H, H_kv = hh
    q, k, v = random_qkv(B=B, H=H, L=L, S=S, D=D, D_v=D_v, H_kv=H_kv, seed=seed)
    mask = np.random.default_rng(seed).random((B, H, L, S)) >= p_masked  # fully masked chunks too
    state = sv.flash_decoding(q, k, v, num_splits=splits, mask=mask)
    assert_close(state.out, sdpa_oracle(q, k, v, mask=mask), name="out")
    tq, tk = (torch.from_numpy(x) for x in (q, np.repeat(k, H // H_kv, axis=1)))
    scores = (tq @ tk.transpose(-1, -2) / math.sqrt(D)).masked_fill(~torch.from_numpy(mask),
                                                                  -math.inf)
    expected_lse = torch.logsumexp(scores, dim=-1).numpy() if S else np.full((B, H, L), -np.inf)
    assert np.array_equal(np.isneginf(state.lse), np.isneginf(expected_lse))
    finite = np.isfinite(expected_lse)
    assert_close(state.lse[finite], expected_lse[finite], name="lse")


@st.composite
def merge_trees(draw, n):
    """A random binary tree over the leaves 0..n-1, in a random order, as nested tuples."""
    leaves = draw(st.permutations(range(n)))

    def build(items):
        if len(items) == 1:
            return items[0]
        cut = draw(st.integers(1, len(items) - 1))
        return (build(items[:cut]), build(items[cut:]))

    return build(list(leaves))


@SETTINGS
@given(st.integers(1, 6), st.data(), st.integers(0, 10_000))
def test_the_merge_is_exact_for_any_partition_tree_and_order(n_sets, data, seed):
    q, k, v = random_qkv(B=1, H=2, L=2, S=8, D=3, seed=seed)
    # Any partition of the 8 keys into n_sets disjoint sets, empty sets allowed.
    owner = np.array(data.draw(st.lists(st.integers(0, n_sets - 1), min_size=8, max_size=8)))
    states = [attention_state(q, k[..., owner == t, :], v[..., owner == t, :])
              for t in range(n_sets)]
    tree = data.draw(merge_trees(n_sets))

    def merge(node):
        if isinstance(node, int):
            return states[node]
        return merge_attention_states([merge(node[0]), merge(node[1])])

    whole = attention_state(q, k, v)
    for merged in (merge(tree), merge_attention_states(states[::-1])):
        assert_close(merged.out, whole.out, name="out")
        assert_close(merged.lse, whole.lse, name="lse")


def test_merging_with_a_state_that_saw_no_key_changes_nothing():
    q, k, v = random_qkv(B=1, H=1, L=3, S=4, D=2, seed=3)
    state = attention_state(q, k, v)
    empty = AttentionState(np.full_like(state.out, 7.0), np.full_like(state.lse, -np.inf))
    merged = merge_attention_states([empty, state])
    assert np.array_equal(merged.out, state.out) and np.array_equal(merged.lse, state.lse)


# ---------------------------------------------------------------------------------------------
# Multi-head latent attention
# ---------------------------------------------------------------------------------------------


def _torch_mla(x_q, x, params, q_pos, k_pos):
    """MLA from the paper's equations in torch (float64), RoPE as complex multiplication."""
    p = [torch.from_numpy(w) for w in params]
    w_dkv, w_uk, w_uv, w_q, w_qr, w_kr, w_o = p
    tx_q, tx = torch.from_numpy(x_q), torch.from_numpy(x)

    def rope(t, pos):  # t (..., n, d_rope), interleaved pairs (2i, 2i+1)
        d = t.shape[-1]
        if d == 0:
            return t
        theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        z = torch.view_as_complex(t.reshape(*t.shape[:-1], d // 2, 2).contiguous())
        rot = torch.polar(torch.ones_like(theta), torch.from_numpy(pos)[:, None] * theta)
        return torch.view_as_real(z * rot).reshape(t.shape)

    c = tx @ w_dkv  # (S, d_c)
    k = torch.cat([torch.einsum("sc,hcd->hsd", c, w_uk),
                   rope(tx @ w_kr, k_pos).expand(w_uk.shape[0], -1, -1)], dim=-1)
    v = torch.einsum("sc,hcd->hsd", c, w_uv)
    q = torch.cat([torch.einsum("lc,hcd->hld", tx_q, w_q),
                   rope(torch.einsum("lc,hcr->hlr", tx_q, w_qr), q_pos)], dim=-1)
    L, S = x_q.shape[0], x.shape[0]
    allowed = torch.arange(S)[None, :] <= torch.arange(L)[:, None] + S - L
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    heads = torch.softmax(scores.masked_fill(~allowed, -math.inf), dim=-1) @ v
    return torch.einsum("hld,hdc->lc", heads, w_o).numpy()


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 6), st.sampled_from([0, 2, 4]),
       st.integers(1, 6), st.integers(0, 10_000), st.data())
def test_mla_naive_and_absorbed_equal_the_papers_equations_in_torch(H, D, d_c, d_rope, S, seed,
                                                                      data):
    C, L = 8, data.draw(st.integers(1, S))
    params = sv.init_mla_params(C, H, D, d_c, d_rope, D_v=D + 1, seed=seed)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((S, C))
    pos = np.arange(S) + int(rng.integers(0, 50))  # positions need not start at 0
    c_kv, k_rope = sv.mla_latent(x, params, pos)
    assert c_kv.shape == (S, d_c) and k_rope.shape == (S, d_rope)
    expected = _torch_mla(x[-L:], x, params, pos[-L:], pos)
    naive = sv.mla_attention(x[-L:], c_kv, k_rope, params, q_positions=pos[-L:])
    absorbed = sv.mla_attention_absorbed(x[-L:], c_kv, k_rope, params, q_positions=pos[-L:])
    assert_close(naive, expected, name="naive MLA")
    assert_close(absorbed, expected, rtol=1e-9, atol=1e-11, name="absorbed MLA")


def test_rope_on_the_latent_key_cannot_be_absorbed():
    # Rotating the up-projected key by its position makes q.k depend on the key position in a way
    # no fixed d_c-vector can reproduce: the folded query would have to change with the key.
    from attnmath.positional import apply_rope

    rng = np.random.default_rng(0)
    w_uk, q = rng.standard_normal((4, 4)), rng.standard_normal(4)
    c = rng.standard_normal(4)
    scores = [float(q @ apply_rope((c @ w_uk)[None], np.array([t]))[0]) for t in (0, 3)]
    folded = q @ w_uk.T  # the absorbed query, one vector for every key position
    assert math.isclose(scores[0], float(folded @ c), rel_tol=1e-12)
    assert not math.isclose(scores[1], float(folded @ c), rel_tol=1e-3)


# ---------------------------------------------------------------------------------------------
# Cache bytes of published models
# ---------------------------------------------------------------------------------------------


def _cache_arrays_nbytes(shape, S):
    """Build one sequence's cache as the model would store it (float16) and add up nbytes."""
    if shape.attention == "MLA":
        layer = [np.zeros((S, shape.d_c), np.float16), np.zeros((S, shape.d_rope), np.float16)]
    else:
        cache = kv_cache_init(1, shape.H_kv, S, shape.D, dtype=np.float16)
        layer = [cache.k, cache.v]
    return shape.n_layers * sum(a.nbytes for a in layer)


@pytest.mark.claim(
    "002 §9",
    "Benefit of grouped-query and multi-query attention: a smaller KV cache during inference",
    "verified",
    domain="the published shapes of Llama-2-7B (MHA), Llama-2-70B, Llama-3-8B, Mistral-7B (GQA), "
           "Falcon-7B (MQA), DeepSeek-V2 and V3 (MLA): bytes per token against the MHA cache of "
           "the same layers and query heads",
    chapter="05_multihead")
@pytest.mark.parametrize("name", list(sv.PUBLISHED_MODELS))
def test_cache_bytes_per_token_of_published_models_equal_the_arrays_nbytes(name):
    shape = sv.PUBLISHED_MODELS[name]
    per_token = sv.kv_bytes_per_token(shape, itemsize=2)
    assert per_token * 3 == _cache_arrays_nbytes(shape, 3)
    mha = 2 * shape.n_layers * shape.H * shape.D * 2  # every query head with its own K and V
    if shape.attention == "MHA":
        assert per_token == mha
    else:
        assert per_token < mha


def test_deepseek_v2_cache_is_that_of_gqa_with_two_and_a_quarter_groups():
    # DeepSeek-V2 paper, Table 1: MLA caches (d_c + d_h^R) l = (9/2) d_h l elements, the cache of
    # GQA with 2.25 groups, with d_c = 4 d_h and d_h^R = d_h / 2.
    shape = sv.PUBLISHED_MODELS["DeepSeek-V2"]
    assert shape.d_c == 4 * shape.D and shape.d_rope == shape.D // 2
    assert sv.kv_bytes_per_token(shape, itemsize=1) == 2 * 2.25 * shape.D * shape.n_layers


@pytest.mark.parametrize("name, published", [
    ("Llama-2-7B", 6_738_415_616), ("Llama-2-70B", 68_976_648_192),
    ("Llama-3-8B", 8_030_261_248), ("Mistral-7B", 7_241_732_096),
])
def test_the_shapes_give_the_published_parameter_counts(name, published):
    # The numbers of parameters the Hugging Face releases report: a check of the shapes.
    assert sv.decoder_param_count(sv.PUBLISHED_MODELS[name]).total == published


def test_models_that_are_not_dense_llama_decoders_are_refused():
    for name in ("Falcon-7B", "DeepSeek-V2"):
        with pytest.raises(ValueError, match="not a dense Llama-style decoder"):
            sv.decoder_param_count(sv.PUBLISHED_MODELS[name])


# ---------------------------------------------------------------------------------------------
# Arithmetic intensity and the roofline
# ---------------------------------------------------------------------------------------------

TOY = sv.ModelShape("toy", "GQA", n_layers=2, C=12, H=4, H_kv=2, D=3, F=10, vocab=7)


def _torch_step(shape, B, L, S):
    """One decoder step in torch with its weights and caches: (FlopCounterMode FLOPs, bytes)."""
    from torch.utils.flop_counter import FlopCounterMode

    g = torch.Generator().manual_seed(0)
    C, H, H_kv, D, F = shape.C, shape.H, shape.H_kv, shape.D, shape.F

    def t(*size):
        return torch.randn(*size, generator=g, dtype=torch.float64)

    layers = [dict(wq=t(C, H * D), wk=t(C, H_kv * D), wv=t(C, H_kv * D), wo=t(H * D, C),
                   w1=t(C, F), w3=t(C, F), w2=t(F, C),
                   k=t(B, H_kv, S, D), v=t(B, H_kv, S, D)) for _ in range(shape.n_layers)]
    head = t(C, shape.vocab)
    x = t(B, L, C)
    allowed = torch.arange(S + L)[None, :] <= torch.arange(L)[:, None] + S
    with FlopCounterMode(display=False) as counter:
        for w in layers:
            q = (x @ w["wq"]).view(B, L, H, D).transpose(1, 2)
            k = torch.cat([w["k"], (x @ w["wk"]).view(B, L, H_kv, D).transpose(1, 2)], dim=2)
            v = torch.cat([w["v"], (x @ w["wv"]).view(B, L, H_kv, D).transpose(1, 2)], dim=2)
            k, v = (a.repeat_interleave(H // H_kv, dim=1) for a in (k, v))
            p = torch.softmax((q @ k.transpose(-1, -2)).masked_fill(~allowed, -math.inf), -1)
            x = x + (p @ v).transpose(1, 2).reshape(B, L, H * D) @ w["wo"]
            x = x + (torch.nn.functional.silu(x @ w["w1"]) * (x @ w["w3"])) @ w["w2"]
        x @ head
    weights = sum(w[n].numel() for w in layers for n in ("wq", "wk", "wv", "wo", "w1", "w3", "w2"))
    cache_read = sum(w["k"].numel() + w["v"].numel() for w in layers)
    cache_written = shape.n_layers * 2 * B * L * H_kv * D
    return counter.get_total_flops(), 2 * (weights + head.numel() + cache_read + cache_written)


@pytest.mark.parametrize("B, L, S", [(1, 1, 5), (3, 1, 9), (2, 4, 0), (2, 3, 6)])
def test_step_cost_equals_flop_counter_and_tensor_bytes_of_a_torch_step(B, L, S):
    flops, moved = _torch_step(TOY, B, L, S)
    cost = sv.step_cost(TOY, B=B, L=L, S=S, itemsize=2)
    # The torch step multiplies the masked-out upper triangle too: L (L - 1) / 2 keys per row.
    masked = 4 * B * TOY.n_layers * TOY.H * TOY.D * (L * (L - 1) // 2)
    assert cost.flops == flops - masked
    assert cost.bytes == moved


@pytest.mark.parametrize("name", ["Llama-2-7B", "Llama-3-8B", "Llama-2-70B"])
def test_decoding_is_memory_bound_and_a_long_prefill_compute_bound_on_an_h100(name):
    shape = sv.PUBLISHED_MODELS[name]
    ridge = sv.H100_SXM_BF16_FLOPS / sv.H100_SXM_HBM_BYTES_PER_S
    assert 290 < ridge < 300
    for B in (1, 4, 16, 64, 256, 10**6):  # at 4096 cached tokens no batch reaches the ridge
        decode = sv.step_cost(shape, B=B, L=1, S=4096)
        assert decode.intensity < ridge / 2
        assert sv.roofline(decode.intensity) < sv.H100_SXM_BF16_FLOPS / 2
    prefill = sv.step_cost(shape, B=1, L=4096, S=0)
    assert prefill.intensity > ridge and sv.roofline(prefill.intensity) == sv.H100_SXM_BF16_FLOPS


def test_each_cached_token_adds_h_over_h_kv_flops_per_byte_in_bf16():
    # One more cached token: 4 n_layers H D FLOPs (scores and values) against 4 n_layers H_kv D
    # bytes read (a key and a value in bf16), whatever the batch: the attention of a decode step
    # has intensity H / H_kv: 1 for MHA, 4 for Llama-3-8B and Mistral-7B, 8 for Llama-2-70B.
    for name in ("Llama-2-7B", "Llama-3-8B", "Llama-2-70B", "Mistral-7B"):
        shape = sv.PUBLISHED_MODELS[name]
        for B in (1, 64):
            short, long = (sv.step_cost(shape, B=B, L=1, S=S) for S in (1000, 5000))
            ratio = (long.flops - short.flops) / (long.bytes - short.bytes)
            assert ratio == shape.H / shape.H_kv


@pytest.mark.claim(
    "002 §5.2",
    "The $O(n^2)$ attention matrix is the main memory bottleneck",
    "clarified",
    correction="True of a training or prefill pass that stores the weights: one layer's "
               r"$H \times S \times S$ weights outgrow that layer's share of the KV cache as soon "
               r"as $S > 2 H_{kv} D / H$. In autoregressive decoding a step forms one score row of "
               r"$H \times S$ numbers per sequence and layer, and the KV cache, "
               r"$2\, n_{\mathrm{layers}} H_{kv} D$ numbers per cached token of every sequence "
               r"($n_{\mathrm{layers}} (d_c + d_R)$ for MLA), is larger by "
               r"$2\, n_{\mathrm{layers}} H_{kv} D / H$ whatever $S$ and the batch size: more than "
               "50 times for every published model here, the least for Falcon-7B's single "
               "key/value head.",
    domain="every published shape in `attnmath.serving` (MHA, GQA, MQA, MLA), $1 \\le S \\le 2^{20}$ "
           "cached tokens, batch $1 \\le B \\le 512$, 1-, 2- and 4-byte elements: the decode step's "
           "score row against the cache, and one layer's stored weights against its cache share on "
           "both sides of the threshold, hypothesis",
    box="corr-serving-bottleneck")
@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(list(sv.PUBLISHED_MODELS)), S=st.integers(1, 2**20),
       B=st.integers(1, 512), itemsize=st.sampled_from([1, 2, 4]))
def test_in_decoding_the_kv_cache_not_the_score_row_fills_the_memory(name, S, B, itemsize):
    shape = sv.PUBLISHED_MODELS[name]
    per_token = sv.kv_bytes_per_token(shape, itemsize=itemsize)
    cache = B * S * per_token  # every layer, every cached token of every sequence
    score_row = B * shape.H * 1 * S * itemsize  # one layer's (B, H, 1, S) scores of a decode step
    per_layer_token = (shape.d_c + shape.d_rope if shape.attention == "MLA"
                       else 2 * shape.H_kv * shape.D)  # numbers one layer caches per token
    factor = Fraction(cache, score_row)
    assert factor == Fraction(shape.n_layers * per_layer_token, shape.H)  # independent of S and B
    assert factor > 50
    # a stored (B, H, S, S) weight array of one layer against that layer's share of the cache
    weights = B * shape.H * S * S * itemsize
    layer_cache = B * S * per_layer_token * itemsize
    assert (weights > layer_cache) == (S * shape.H > per_layer_token)


# ---------------------------------------------------------------------------------------------
# Quantisation
# ---------------------------------------------------------------------------------------------

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, allow_subnormal=False)


@SETTINGS
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=3, min_side=0, max_side=6),
                  elements=finite),
       st.integers(2, 8), st.sampled_from(["token", "channel"]))
def test_dequantisation_error_is_at_most_half_a_step(x, bits, per):
    qt = sv.quantize_symmetric(x, bits=bits, per=per)
    qmax = 2 ** (bits - 1) - 1
    assert qt.codes.dtype == np.int8 and qt.codes.shape == x.shape
    assert np.abs(qt.codes).max(initial=0) <= qmax
    expected_scale_shape = x.shape[:-1] + (1,) if per == "token" else x.shape[:-2] + (1, x.shape[-1])
    assert qt.scale.shape == expected_scale_shape
    err = np.abs(x - sv.dequantize(qt))
    # Half a step, up to the float64 rounding of x / scale and of codes * scale.
    assert (err <= qt.scale / 2 + 4 * np.finfo(float).eps * np.abs(x)).all()


def test_int8_per_channel_matches_torch_rounding():
    x = np.random.default_rng(1).standard_normal((9, 5)) * np.array([1, 10, 0.1, 3, 50])
    qt = sv.quantize_symmetric(x, bits=8, per="channel")
    tx = torch.from_numpy(x)
    scale = tx.abs().amax(dim=0, keepdim=True) / 127
    assert np.array_equal(qt.codes, torch.round(tx / scale).to(torch.int8).numpy())
    assert_close(qt.scale, scale, name="scale")


def test_keys_with_outlier_channels_quantise_better_per_channel():
    # KIVI: a few key channels are large in every token; a per-token scale is set by them and
    # rounds every other channel coarsely, a per-channel scale is not.
    rng = np.random.default_rng(0)
    k = rng.standard_normal((64, 16))
    k[:, 3] *= 30.0
    for bits in (4, 8):
        errors = {per: np.abs(k - sv.dequantize(sv.quantize_symmetric(k, bits=bits, per=per)))
                  for per in ("token", "channel")}
        normal = np.arange(16) != 3
        assert errors["channel"][:, normal].mean() < errors["token"][:, normal].mean() / 5


@SETTINGS
@given(st.integers(1, 3), st.integers(1, 6), st.integers(1, 4), st.integers(1, 3),
       st.sampled_from([2, 3, 4, 8]), st.sampled_from(["token", "channel"]),
       st.sampled_from(["token", "channel"]), st.floats(0.1, 4.0), st.integers(0, 10_000))
def test_quantised_cache_attention_error_stays_below_the_bound(L, S, D, D_v, bits, k_per, v_per,
                                                                spread, seed):
    q, k, v = random_qkv(B=1, H=2, L=L, S=S, D=D, D_v=D_v, seed=seed)
    q, k = q * spread, k * spread  # peaked and flat softmax rows
    qk, qv = (sv.quantize_symmetric(x, bits=bits, per=per) for x, per in ((k, k_per), (v, v_per)))
    measured = np.abs(sdpa_oracle(q, sv.dequantize(qk), sv.dequantize(qv)) - sdpa_oracle(q, k, v))
    bound = sv.quantized_attention_error_bound(q, v, qk.scale / 2, qv.scale / 2)
    assert bound.shape == measured.shape
    assert (measured <= bound * (1 + 1e-9) + 1e-12).all()


def test_the_bound_shrinks_with_the_error_and_is_zero_without_it():
    q, k, v = random_qkv(B=1, H=1, L=2, S=5, D=4, seed=0)
    zero = sv.quantized_attention_error_bound(q, v, np.zeros_like(k), np.zeros_like(v))
    assert (zero == 0).all()
    small = sv.quantized_attention_error_bound(q, v, 1e-3, 1e-3)
    large = sv.quantized_attention_error_bound(q, v, 1e-1, 1e-1)
    assert (small < large).all()


# ---------------------------------------------------------------------------------------------
# The decode step of MLA in its absorbed form: FLOPs and bytes from a torch run
# ---------------------------------------------------------------------------------------------


def _torch_rope(t, pos):
    """RoPE on interleaved pairs (2i, 2i+1) of ``t (..., n, d)`` at positions ``pos (n,)``, as
    attnmath.positional.apply_rope; elementwise, so it runs on the meta device too."""
    d = t.shape[-1]
    if d == 0:
        return t
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64, device=t.device) / d)
    angle = pos.to(torch.float64)[:, None] * theta  # (n, d / 2)
    cos, sin = torch.cos(angle), torch.sin(angle)
    even, odd = t[..., 0::2], t[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).reshape(t.shape)


def _torch_mla_decode(shape, B, L, S, device="cpu", seed=0):
    """``L`` new tokens of ``B`` sequences through every MLA layer in the absorbed form, in torch:
    (FlopCounterMode FLOPs, numbers read or written, the last layer's output, the inputs)."""
    from torch.utils.flop_counter import FlopCounterMode

    C, H, D, d_c, d_r = shape.C, shape.H, shape.D, shape.d_c, shape.d_rope

    def weights(n):  # layer n's MLAParams as float64 tensors on `device`
        if device == "meta":
            sizes = ((C, d_c), (H, d_c, D), (H, d_c, D), (H, C, D), (H, C, d_r), (C, d_r), (H, D, C))
            return sv.MLAParams(*(torch.empty(size, device="meta", dtype=torch.float64)
                                  for size in sizes))
        return sv.MLAParams(*(torch.from_numpy(w) for w in
                              sv.init_mla_params(C, H, D, d_c, d_r, seed=seed + n)))

    params = [weights(n) for n in range(shape.n_layers)]
    g = torch.Generator().manual_seed(seed)

    def normal(*size):  # float64 N(0, 1) numbers; on the meta device the shape only, none drawn
        if device == "meta":
            return torch.empty(size, device="meta", dtype=torch.float64)
        return torch.randn(size, generator=g, dtype=torch.float64).to(device)

    cache = [(normal(B, S, d_c), normal(B, S, d_r)) for _ in params]
    x = normal(B, L, C)
    pos = torch.arange(S, S + L, device=device)
    allowed = torch.arange(S + L, device=device)[None, :] <= pos[:, None]  # (L, S + L)
    with FlopCounterMode(display=False) as counter:
        for p, (c_old, kr_old) in zip(params, cache):
            c = torch.cat([c_old, x @ p.w_dkv], dim=1)  # (B, S + L, d_c)
            kr = torch.cat([kr_old, _torch_rope(x @ p.w_kr, pos)], dim=1)  # (B, S + L, d_r)
            # Products with @ only: torch's einsum turns a contraction of size 1 into a product
            # of elements, which the counter does not see.
            q_c = x[:, None] @ p.w_q  # (B, H, L, D)
            q_lat = q_c @ p.w_uk.transpose(-1, -2)  # (B, H, L, d_c): W^UK absorbed
            q_r = _torch_rope(x[:, None] @ p.w_qr, pos)  # (B, H, L, d_r)
            scores = (q_lat @ c[:, None].transpose(-1, -2)
                      + q_r @ kr[:, None].transpose(-1, -2)) / math.sqrt(D + d_r)
            probs = torch.softmax(scores.masked_fill(~allowed, -math.inf), dim=-1)
            latent = probs @ c[:, None]  # (B, H, L, d_c): the latents are the values
            out = ((latent @ p.w_uv) @ p.w_o).sum(dim=1)  # (B, H, L, D) -> (B, L, C)
    numbers = sum(w.numel() for p in params for w in p)  # every weight read once
    numbers += sum(a.numel() for pair in cache for a in pair)  # the cache read once
    numbers += shape.n_layers * B * L * (d_c + d_r)  # and the new tokens' entries written
    return counter.get_total_flops(), numbers, out, (params, cache, x)


MLA_SHAPES = st.builds(lambda n, H, D, d_c, d_r: sv.ModelShape("toy-MLA", "MLA", n, 8, H, 0, D,
                                                                 d_c=d_c, d_rope=d_r),
                       st.integers(1, 3), st.integers(1, 4), st.integers(1, 5), st.integers(1, 6),
                       st.sampled_from([0, 2, 4]))


@settings(max_examples=25, deadline=None)
@given(MLA_SHAPES, st.integers(1, 3), st.integers(1, 3), st.integers(0, 7), st.sampled_from([1, 2]))
def test_mla_step_cost_equals_flop_counter_and_tensor_sizes_of_an_absorbed_torch_step(
        shape, B, L, S, itemsize):
    flops, numbers, _, _ = _torch_mla_decode(shape, B, L, S)
    cost = sv.attention_step_cost(shape, B=B, L=L, S=S, itemsize=itemsize)
    # The torch step scores and sums the masked-out upper triangle of the new tokens too.
    masked = B * shape.n_layers * shape.H * (4 * shape.d_c + 2 * shape.d_rope) * (L * (L - 1) // 2)
    assert cost.flops == flops - masked
    assert cost.bytes == numbers * itemsize


@settings(max_examples=10, deadline=None)
@given(MLA_SHAPES, st.integers(0, 6), st.integers(0, 1000))
def test_the_counted_torch_step_is_mla_attention(shape, S, seed):
    # The step whose FLOPs and bytes are counted above computes what mla_attention computes.
    shape = shape._replace(n_layers=1)
    _, _, out, (params, cache, x) = _torch_mla_decode(shape, 1, 1, S, seed=seed)
    p = sv.MLAParams(*(w.numpy() for w in params[0]))
    x_new = x[0].numpy()  # (1, C)
    c_new, kr_new = sv.mla_latent(x_new, p, np.array([S]))
    c_kv = np.concatenate([cache[0][0][0].numpy(), c_new])  # (S + 1, d_c)
    k_rope = np.concatenate([cache[0][1][0].numpy(), kr_new])  # (S + 1, d_rope)
    want = sv.mla_attention(x_new, c_kv, k_rope, p, q_positions=np.array([S]))
    assert_close(out[0].numpy(), want, rtol=1e-10, atol=1e-12, name="absorbed torch step")


@pytest.mark.parametrize("B, S", [(1, 1), (4, 4096)])
def test_mla_step_cost_of_deepseek_v2_equals_a_counted_torch_step(B, S):
    # DeepSeek-V2's published MLA shape (d_c = 512, d_R = 64, 128 heads of dim 128, 60 layers;
    # DeepSeek-AI 2024), counted on the meta device: shapes without numbers.
    shape = sv.PUBLISHED_MODELS["DeepSeek-V2"]
    assert (shape.d_c, shape.d_rope, shape.H, shape.D) == (512, 64, 128, 128)
    flops, numbers, _, _ = _torch_mla_decode(shape, B, 1, S, device="meta")
    cost = sv.attention_step_cost(shape, B=B, L=1, S=S, itemsize=2)
    assert (cost.flops, cost.bytes) == (flops, 2 * numbers)


def test_each_cached_token_costs_mla_far_more_flops_per_byte_than_gqa():
    # One more cached token: H (4 d_c + 2 d_R) FLOPs per layer against (d_c + d_R) numbers read,
    # shared by the heads. For DeepSeek-V2 in bf16 that is 128 * 2176 / 1152 = 241.8 FLOP per
    # byte, near the H100's ridge; MHA's is 1 and GQA's H / H_kv.
    shape = sv.PUBLISHED_MODELS["DeepSeek-V2"]
    for B in (1, 64):
        short, long = (sv.attention_step_cost(shape, B=B, L=1, S=S) for S in (1000, 5000))
        ratio = Fraction(long.flops - short.flops, long.bytes - short.bytes)
        assert ratio == Fraction(shape.H * (4 * shape.d_c + 2 * shape.d_rope),
                                 2 * (shape.d_c + shape.d_rope))


@pytest.mark.parametrize("name", ["Llama-2-7B", "Llama-3-8B", "Falcon-7B", "DeepSeek-V2"])
def test_the_attention_layers_are_the_step_less_the_mlp_and_head(name):
    # step_cost adds the MLP and LM head to attention_step_cost; with any attention kind put
    # into Llama-2-7B's other dimensions the difference is the same.
    base = sv.PUBLISHED_MODELS["Llama-2-7B"]
    other = sv.PUBLISHED_MODELS[name]
    shape = base._replace(attention=other.attention, H=other.H, H_kv=other.H_kv, D=other.D,
                          d_c=other.d_c, d_rope=other.d_rope)
    params = sv.decoder_param_count(shape)
    rest = params.mlp + params.lm_head
    for B, L, S in ((1, 1, 0), (8, 1, 4096), (2, 16, 100)):
        step = sv.step_cost(shape, B=B, L=L, S=S)
        attention = sv.attention_step_cost(shape, B=B, L=L, S=S)
        assert step.flops - attention.flops == 2 * rest * B * L
        assert step.bytes - attention.bytes == 2 * rest
