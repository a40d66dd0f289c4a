"""Tests for attnmath.flash: the flash-tiled forward and backward and their memory."""

from __future__ import annotations

import re
import tracemalloc

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnmath.attention import attention_backward, scaled_dot_product_attention
from attnmath.core import AttentionGrads
from attnmath.flash import (
    AttentionState,
    FlashCache,
    attention_state,
    merge_attention_states,
    attention_matrix_bytes,
    flash_attention_backward,
    flash_attention_forward,
)
from attnmath.masking import causal_mask, combine_masks
from attnmath.testing import assert_close, check_gradient, random_qkv, sdpa_oracle, to_torch

SETTINGS = settings(max_examples=30, deadline=None)


def _torch_forward_backward(q, k, v, dout, **kwargs):
    """The oracle :func:`attnmath.testing.sdpa_oracle`: ``out, dq, dk, dv``."""
    out, grads = sdpa_oracle(q, k, v, dout=dout, **kwargs)
    return (out, *grads)


def _peak_bytes(fn):
    """Peak traced allocation while ``fn`` runs, above what was allocated before."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before, result


# --------------------------------------------------------------------------- oracle: torch


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("L, S", [(7, 7), (5, 11), (11, 5)])
def test_flash_matches_torch_sdpa_forward_and_backward_with_grouped_heads(causal, L, S):
    q, k, v = random_qkv(B=2, H=4, L=L, S=S, D=5, D_v=3, H_kv=2, seed=L * S)
    dout = np.random.default_rng(0).standard_normal((2, 4, L, 3))
    out, cache = flash_attention_forward(q, k, v, block_q=3, block_k=4, causal=causal)
    grads = flash_attention_backward(dout, cache)
    expected, dq, dk, dv = _torch_forward_backward(q, k, v, dout, causal=causal)
    assert_close(out, expected, name="out")
    assert_close(grads.dq, dq, name="dq")
    assert_close(grads.dk, dk, name="dk")
    assert_close(grads.dv, dv, name="dv")


def test_flash_matches_torch_sdpa_with_boolean_mask_and_fully_masked_rows():
    q, k, v = random_qkv(B=2, H=2, L=6, S=9, D=4, seed=1)
    mask = np.random.default_rng(2).random((2, 1, 6, 9)) > 0.5
    mask[1, 0, 3] = False  # a fully masked query in batch 1, both heads
    dout = np.random.default_rng(3).standard_normal((2, 2, 6, 4))
    out, cache = flash_attention_forward(q, k, v, block_q=4, block_k=2, mask=mask, scale=0.7)
    grads = flash_attention_backward(dout, cache)
    expected, dq, dk, dv = _torch_forward_backward(q, k, v, dout, mask=mask, scale=0.7)
    assert_close(out, expected, name="out")
    for name, a, e in zip(AttentionGrads._fields, grads, (dq, dk, dv)):
        assert_close(a, e, name=name)
    assert_close(out[1, :, 3], np.zeros((2, 4)), name="fully masked row")
    assert np.isneginf(cache.lse[1, :, 3]).all()
    assert_close(grads.dq[1, :, 3], np.zeros((2, 4)), name="dq of fully masked row")


def test_bottom_right_causal_matches_torch_with_the_shifted_triangle():
    L, S = 4, 9
    q, k, v = random_qkv(B=1, H=2, L=L, S=S, D=3, seed=4)
    dout = np.random.default_rng(5).standard_normal((1, 2, L, 3))
    out, cache = flash_attention_forward(q, k, v, block_q=3, block_k=2, causal=True,
                                         causal_alignment="bottom_right")
    grads = flash_attention_backward(dout, cache)
    tri = torch.ones(L, S, dtype=torch.bool).tril(diagonal=S - L).numpy()  # last query sees all
    expected, dq, dk, dv = _torch_forward_backward(q, k, v, dout, mask=tri)
    assert_close(out, expected, name="out")
    for name, a, e in zip(AttentionGrads._fields, grads, (dq, dk, dv)):
        assert_close(a, e, name=name)


def test_lse_equals_torch_logsumexp_of_scaled_masked_scores():
    q, k, v = random_qkv(B=2, H=3, L=8, S=6, D=4, H_kv=1, seed=6)
    mask = np.random.default_rng(7).random((8, 6)) > 0.4
    mask[5] = False
    _, cache = flash_attention_forward(q, k, v, block_q=3, block_k=4, mask=mask, causal=True)
    qt, kt = to_torch(q, k)
    scores = (qt @ kt.transpose(-1, -2)) / np.sqrt(4)  # (B, H, L, S), kv head broadcast
    allowed = torch.from_numpy(mask) & torch.ones(8, 6, dtype=torch.bool).tril()
    expected = torch.logsumexp(scores.masked_fill(~allowed, -torch.inf), dim=-1)  # (B, H, L)
    assert_close(cache.lse, expected, name="lse")
    assert np.isneginf(cache.lse[:, :, 5]).all()


# --------------------------------------------------------------------------- oracle: attnmath


@st.composite
def flash_problems(draw):
    H_kv = draw(st.integers(1, 2))
    dims = dict(
        B=draw(st.integers(1, 2)), H=H_kv * draw(st.integers(1, 2)), H_kv=H_kv,
        L=draw(st.integers(1, 9)), S=draw(st.integers(1, 9)), D=draw(st.integers(1, 4)),
        D_v=draw(st.integers(1, 3)),
    )
    block_q = draw(st.integers(1, dims["L"] + 3))  # includes 1, non-divisors and > L
    block_k = draw(st.integers(1, dims["S"] + 3))
    causal = draw(st.booleans())
    alignment = draw(st.sampled_from(["top_left", "bottom_right"]))
    mask_kind = draw(st.sampled_from(["none", "full", "row"]))
    seed = draw(st.integers(0, 2**31 - 1))
    return dims, block_q, block_k, causal, alignment, mask_kind, seed


@pytest.mark.claim(
    "004 Efficient Attention Computation",
    "Flash attention: same math as standard attention, only the execution differs (kernel fusion)",
    "verified",
    domain="B, H_kv in 1..2, grouped heads, L, S in 1..9 (L != S included), D in 1..4, D_v in 1..3, "
           "every tile size including 1, non-divisors and tiles larger than the sequence, causal "
           "with both alignments, random and padding masks with fully masked rows, hypothesis")
@SETTINGS
@given(problem=flash_problems())
def test_flash_equals_plain_attention_forward_and_backward_for_any_tiling(problem):
    dims, block_q, block_k, causal, alignment, mask_kind, seed = problem
    q, k, v = random_qkv(**dims, seed=seed)
    B, H, L, S = dims["B"], dims["H"], dims["L"], dims["S"]
    rng = np.random.default_rng(seed)
    mask = {"none": None,
            "full": rng.random((B, H, L, S)) > 0.4,  # may leave rows fully masked
            "row": rng.random((B, 1, 1, S)) > 0.3}[mask_kind]
    out, cache = flash_attention_forward(q, k, v, block_q=block_q, block_k=block_k, mask=mask,
                                         causal=causal, causal_alignment=alignment)
    combined = combine_masks(mask, causal_mask(L, S, alignment=alignment) if causal else None)
    expected, plain_cache = scaled_dot_product_attention(q, k, v, mask=combined)
    assert_close(out, expected, name="out")
    dout = rng.standard_normal(out.shape)
    grads = flash_attention_backward(dout, cache)
    for name, a, e in zip(AttentionGrads._fields, grads, attention_backward(dout, plain_cache)):
        assert_close(a, e, name=name)


def test_flash_accepts_plain_matrices():
    rng = np.random.default_rng(8)
    q, k, v = rng.standard_normal((5, 3)), rng.standard_normal((7, 3)), rng.standard_normal((7, 2))
    out, cache = flash_attention_forward(q, k, v, block_q=2, block_k=3, causal=True)
    assert out.shape == (5, 2) and cache.lse.shape == (5,)
    assert_close(out, sdpa_oracle(q, k, v, causal=True), name="out")
    grads = flash_attention_backward(np.ones((5, 2)), cache)
    assert grads.dq.shape == (5, 3) and grads.dk.shape == (7, 3) and grads.dv.shape == (7, 2)


# --------------------------------------------------------------------------- gradient


@pytest.mark.parametrize("causal", [False, True])
def test_flash_backward_matches_central_differences(causal):
    q, k, v = random_qkv(B=1, H=2, L=4, S=5, D=3, D_v=2, H_kv=1, seed=9)
    mask = np.ones((4, 5), dtype=bool)
    mask[1, 2] = False
    w = np.random.default_rng(10).standard_normal((1, 2, 4, 2))  # loss = sum(w * out)
    opts = dict(block_q=3, block_k=2, mask=mask, causal=causal, causal_alignment="bottom_right")
    _, cache = flash_attention_forward(q, k, v, **opts)
    grads = flash_attention_backward(w, cache)
    check_gradient(lambda x: np.sum(w * flash_attention_forward(x, k, v, **opts)[0]), q, grads.dq,
                   name="q")
    check_gradient(lambda x: np.sum(w * flash_attention_forward(q, x, v, **opts)[0]), k, grads.dk,
                   name="k")
    check_gradient(lambda x: np.sum(w * flash_attention_forward(q, k, x, **opts)[0]), v, grads.dv,
                   name="v")


# --------------------------------------------------------------------------- properties


def test_rowsum_of_dout_times_out_equals_rowsum_of_p_times_dp():
    q, k, v = random_qkv(B=1, H=2, L=6, S=7, D=4, seed=11)
    out, plain = scaled_dot_product_attention(q, k, v)
    dout = np.random.default_rng(12).standard_normal(out.shape)
    dprobs = dout @ np.swapaxes(v, -1, -2)  # (B, H, L, S)
    assert_close(np.sum(dout * out, axis=-1), np.sum(plain.probs * dprobs, axis=-1), name="D_i")


def test_causal_forward_skips_key_tiles_above_the_diagonal(monkeypatch):
    # Top-left with L < S: keys L..S-1 are seen by nobody; no score tile may read them, in the
    # forward or in the backward (every score tile is made by Problem.scores).
    from attnmath import core

    q, k, v = random_qkv(B=1, H=1, L=4, S=12, D=3, seed=13)
    tiles = []
    scores = core.Problem.scores

    def recording(self, q_rows, rows, cols):
        tiles.append(cols.indices(self.S)[:2])
        return scores(self, q_rows, rows, cols)

    monkeypatch.setattr(core.Problem, "scores", recording)
    out, cache = flash_attention_forward(q, k, v, block_q=2, block_k=4, causal=True)
    grads = flash_attention_backward(np.ones_like(out), cache)
    assert tiles and all(j0 < 4 for j0, _ in tiles), tiles
    expected, _ = scaled_dot_product_attention(q, k[..., :4, :], v[..., :4, :],
                                               mask=causal_mask(4))
    assert_close(out, expected, name="out")
    assert_close(grads.dk[..., 4:, :], np.zeros((1, 1, 8, 3)), name="dk of unseen keys")


def test_result_does_not_depend_on_the_tiling():
    q, k, v = random_qkv(B=1, H=2, L=13, S=10, D=4, seed=14)
    ref, _ = flash_attention_forward(q, k, v, block_q=13, block_k=10)
    for bq, bk in [(1, 1), (2, 3), (5, 7), (64, 64)]:
        out, _ = flash_attention_forward(q, k, v, block_q=bq, block_k=bk)
        assert_close(out, ref, rtol=1e-12, atol=1e-14, name=f"tiles {bq}x{bk}")


def test_float32_input_stays_float32():
    q, k, v = random_qkv(B=1, H=1, L=5, D=4, seed=15, dtype=np.float32)
    out, cache = flash_attention_forward(q, k, v, block_q=2, block_k=2)
    grads = flash_attention_backward(np.ones_like(out), cache)
    assert out.dtype == cache.lse.dtype == grads.dq.dtype == np.float32
    expected, _ = scaled_dot_product_attention(q.astype(np.float64), k.astype(np.float64),
                                               v.astype(np.float64))
    assert_close(out, expected.astype(np.float32), rtol=1e-5, atol=1e-6, name="float32 out")


# --------------------------------------------------------------------------- memory


@pytest.mark.claim(
    "002 §6.1",
    "Flash attention computes attention block by block, never materialising the full n x n matrix",
    "verified",
    domain="L = S = 2048, D = 16, tiles of 64: the peak traced memory against one (L, S) float64 "
           "array, and the cache's extra arrays")
@pytest.mark.claim(
    "002 §6.1",
    "Flash attention: same time O(n^2 d), but memory O(n)",
    "corrected",
    correction="The inputs and output already take O(nd); flash attention needs O(n) memory besides "
               "them (lse, one number per row and head, plus a tile independent of n): O(nd) in "
               "total, against O(n^2 + nd) for plain attention.",
    domain="L = S = 2048, D = 16, tiles of 64: the peak traced memory against one (L, S) float64 "
           "array, and the cache's extra arrays",
    box="corr-flash-memory")
@pytest.mark.claim(
    "003 §5.2",
    "Flash attention: memory O(n^2) -> O(n)",
    "corrected",
    correction="The O(n^2) attention matrix is removed, but the total stays O(nd) for Q, K, V and "
               "O; the extra memory is O(n) (lse).",
    domain="L = S = 2048, D = 16, tiles of 64: the peak traced memory against one (L, S) float64 "
           "array, and the cache's extra arrays",
    box="corr-flash-memory")
def test_forward_never_allocates_an_l_by_s_array():
    L = S = 2048
    D = 16
    q, k, v = random_qkv(B=1, H=1, L=L, S=S, D=D, seed=16)
    peak, (out, cache) = _peak_bytes(lambda: flash_attention_forward(q, k, v, block_q=64, block_k=64))
    score_bytes = L * S * 8  # 32 MiB: one float64 (L, S) matrix
    assert peak < score_bytes / 16, f"peak {peak} B is not far below {score_bytes} B"
    # What the cache adds beyond inputs and output is lse alone: O(L), not O(L S).
    extra = [a for a in cache if isinstance(a, np.ndarray) and not any(a is b for b in (q, k, v, out))]
    assert sum(a.nbytes for a in extra) == L * 8


@pytest.mark.claim(
    "004 Attention as Matrix Operations",
    "Memory: gradients through attention O(n^2)",
    "corrected",
    correction="Only for the backward that stores the weights; the recomputing backward forms P and "
               "dS one tile at a time from lse and D_i = rowsum(dO * O), so it needs O(n) memory "
               "besides the O(nd) inputs, outputs and gradients. Its time stays O(n^2 d).",
    domain="L = S = 2048, D = 16, causal, tiles of 128: the backward's peak traced memory against "
           "one (L, S) float64 array",
    box="corr-backward-memory")
@pytest.mark.claim(
    "003 §5.2",
    "Flash attention recomputes the attention weights during backpropagation instead of storing them",
    "verified",
    domain="L = S = 2048, D = 16, causal, tiles of 128: the backward's peak traced memory against "
           "one (L, S) float64 array")
def test_backward_never_allocates_an_l_by_s_array():
    L = S = 2048
    q, k, v = random_qkv(B=1, H=1, L=L, S=S, D=16, seed=17)
    out, cache = flash_attention_forward(q, k, v, block_q=128, block_k=128, causal=True)
    dout = np.ones_like(out)
    peak, _ = _peak_bytes(lambda: flash_attention_backward(dout, cache))
    assert peak < L * S * 8 / 16, f"peak {peak} B is not far below {L * S * 8} B"


@pytest.mark.claim(
    "001 Computational Complexity",
    "Memory: O(n^2) for the attention matrix; flash attention is a solution",
    "verified",
    domain="n = 512 and 1024, D = 8: peak traced memory of flash (linear) and plain attention "
           "(quadratic)")
def test_flash_forward_memory_grows_linearly_while_plain_grows_quadratically():
    def peaks(n):
        q, k, v = random_qkv(B=1, H=1, L=n, D=8, seed=n)
        flash, _ = _peak_bytes(lambda: flash_attention_forward(q, k, v, block_q=32, block_k=32))
        plain, _ = _peak_bytes(lambda: scaled_dot_product_attention(q, k, v))
        return flash, plain

    flash_1, plain_1 = peaks(512)
    flash_2, plain_2 = peaks(1024)
    assert flash_2 < 2.5 * flash_1, f"flash peak {flash_1} -> {flash_2} B when n doubles"
    assert plain_2 > 3.5 * plain_1, f"plain peak {plain_1} -> {plain_2} B when n doubles"


@pytest.mark.claim(
    "002 §5.3",
    "n = 4096 in FP16: attention matrix 4096^2 x 2 = 33.5 MB per head; with 32 heads ~1 GB",
    "verified",
    domain="the sources' own numbers: n = 2048 and 4096, 1, 12 and 32 heads, float32 and float16")
@pytest.mark.claim(
    "004 Attention as Matrix Operations",
    "n = 2048: 4M floats x 4 bytes = 16MB per attention head; 12 heads: 192MB",
    "verified",
    domain="the sources' own numbers: n = 2048 and 4096, 1, 12 and 32 heads, float32 and float16")
@pytest.mark.parametrize(
    "L, H, bytes_per_elem, expected_bytes, decimal_mb, binary_mib",
    [
        # "4096^2 x 2 = 33.5 MB per head": 33.55 MB decimal, exactly 32 MiB.
        (4096, 1, 2, 4096 * 4096 * 2, 33.554432, 32.0),
        # "with 32 heads ~1 GB": 1.07 GB decimal, exactly 1 GiB = 1024 MiB.
        (4096, 32, 2, 32 * 4096 * 4096 * 2, 1073.741824, 1024.0),
        # "4M floats x 4 bytes = 16MB per head": 16 MiB, but 16.8 MB decimal.
        (2048, 1, 4, 2048 * 2048 * 4, 16.777216, 16.0),
        # "For 12 heads: 192MB": 192 MiB, but 201 MB decimal.
        (2048, 12, 4, 12 * 2048 * 2048 * 4, 201.326592, 192.0),
    ],
)
def test_attention_matrix_bytes_checks_the_memory_arithmetic(L, H, bytes_per_elem, expected_bytes,
                                                             decimal_mb, binary_mib):
    n_bytes = attention_matrix_bytes(L, L, H=H, bytes_per_elem=bytes_per_elem)
    assert n_bytes == expected_bytes
    assert n_bytes / 1e6 == pytest.approx(decimal_mb, abs=1e-9)
    assert n_bytes / 2**20 == pytest.approx(binary_mib, abs=1e-9)


@pytest.mark.claim(
    "002 §5.2",
    "Storing the attention matrix A takes O(n^2) memory, the main bottleneck; total O(n^2 + nd)",
    "verified",
    domain="B = 2, H = 3, L = 5 != S = 7: the bytes of the stored weights")
@pytest.mark.claim(
    "003 §5.1",
    "Space complexity O(n^2) (attention weight matrix)",
    "verified",
    domain="B = 2, H = 3, L = 5 != S = 7: the bytes of the stored weights")
@pytest.mark.claim(
    "000 Complexity Analysis",
    "Space: the attention matrix A takes O(n m)",
    "verified",
    domain="B = 2, H = 3, L = 5 != S = 7: the bytes of the stored weights")
def test_attention_matrix_bytes_matches_the_probs_plain_attention_keeps():
    q, k, v = random_qkv(B=2, H=3, L=5, S=7, D=4, seed=18)
    _, cache = scaled_dot_product_attention(q, k, v)
    assert cache.probs.nbytes == attention_matrix_bytes(5, 7, H=3, B=2, bytes_per_elem=8)


# --------------------------------------------------------------------------- bad input


def test_flash_rejects_bad_input():
    q, k, v = random_qkv(B=1, H=4, L=3, D=4, H_kv=2)
    with pytest.raises(ValueError, match="block_q"):
        flash_attention_forward(q, k, v, block_q=0)
    with pytest.raises(ValueError, match="block_k"):
        flash_attention_forward(q, k, v, block_k=-2)
    with pytest.raises(TypeError, match="block_q"):
        flash_attention_forward(q, k, v, block_q=2.0)
    with pytest.raises(ValueError, match="head dim"):
        flash_attention_forward(q, k[..., :3], v)
    q3, k3, v3 = random_qkv(B=1, H=3, L=3, D=4, H_kv=2)
    with pytest.raises(ValueError, match="multiple"):
        flash_attention_forward(q3, k3, v3)
    with pytest.raises(ValueError, match="causal_alignment"):
        flash_attention_forward(q, k, v, causal=True, causal_alignment="diagonal")
    with pytest.raises(TypeError, match="causal"):
        flash_attention_forward(q, k, v, causal="yes")
    with pytest.raises(ValueError, match="does not broadcast"):
        flash_attention_forward(q, k, v, mask=np.ones((2, 3), dtype=bool))
    with pytest.raises(TypeError, match="boolean"):
        flash_attention_forward(q, k, v, mask=np.ones((3, 3)))
    out, cache = flash_attention_forward(q, k, v)
    with pytest.raises(ValueError, match="dout"):
        flash_attention_backward(np.ones((1, 4, 3, 3)), cache)
    with pytest.raises(TypeError, match="FlashCache"):
        flash_attention_backward(np.ones_like(out), tuple(cache))
    with pytest.raises(ValueError, match="bytes_per_elem"):
        attention_matrix_bytes(4, 4, bytes_per_elem=0)
    assert isinstance(cache, FlashCache)


# --------------------------------------------------------------------------- merging states


@st.composite
def _split_problem(draw):
    """q, k, v with grouped heads, a mask (rows may be fully masked) and a split of the keys."""
    H_kv = draw(st.integers(1, 2))
    g = draw(st.integers(1, 2))
    L, S = draw(st.integers(1, 6)), draw(st.integers(0, 12))
    D, D_v = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**16))
    q, k, v = random_qkv(B=1, H=H_kv * g, L=L, S=S, D=D, D_v=D_v, H_kv=H_kv, seed=seed)
    mask = np.random.default_rng(seed + 1).random((1, 1, L, S)) < draw(st.floats(0.0, 1.0))
    cuts = sorted(draw(st.lists(st.integers(0, S), max_size=4)))
    bounds = [0, *cuts, S]
    return q, k, v, mask, list(zip(bounds[:-1], bounds[1:]))


def _states(q, k, v, mask, blocks):
    return [attention_state(q, k[..., a:b, :], v[..., a:b, :], mask=mask[..., a:b])
            for a, b in blocks]


@SETTINGS
@given(problem=_split_problem(), order_seed=st.integers(0, 2**16))
def test_merged_states_over_any_split_in_any_order_equal_plain_attention(problem, order_seed):
    q, k, v, mask, blocks = problem
    states = _states(q, k, v, mask, blocks)
    rng = np.random.default_rng(order_seed)
    # Any order and any tree: merge random neighbours of a shuffled list until one is left.
    work = [states[i] for i in rng.permutation(len(states))]
    while len(work) > 1:
        i = int(rng.integers(0, len(work) - 1))
        j = int(rng.integers(i + 1, len(work))) + 1
        work[i:j] = [merge_attention_states(work[i:j])]
    merged = work[0]
    expected = sdpa_oracle(q, k, v, mask=mask)
    seen = mask.any(axis=-1)  # (1, 1, L): rows with at least one key
    expected = np.where(seen[..., None], expected, 0.0)  # no key: out = 0 by convention
    assert_close(merged.out, expected, name="out")
    scores = np.where(mask, np.einsum("bhld,bhsd->bhls", q, np.repeat(k, q.shape[1] // k.shape[1],
                                                                       axis=1)) / np.sqrt(q.shape[-1]),
                      -np.inf)
    with np.errstate(divide="ignore"):
        lse = np.log(np.sum(np.exp(scores), axis=-1)) if scores.shape[-1] else \
            np.full(scores.shape[:-1], -np.inf)
    assert np.array_equal(np.isneginf(merged.lse), ~np.broadcast_to(seen, lse.shape))
    assert_close(np.where(np.isneginf(lse), 0.0, merged.lse), np.where(np.isneginf(lse), 0.0, lse),
                 name="lse")


@SETTINGS
@given(seed=st.integers(0, 2**16), n=st.integers(1, 5), dead=st.floats(0.0, 1.0))
def test_merge_is_commutative_and_associative(seed, n, dead):
    rng = np.random.default_rng(seed)
    states = [AttentionState(rng.standard_normal((2, 3, 4)),
                             np.where(rng.random((2, 3)) < dead, -np.inf,
                                      rng.uniform(-30, 30, (2, 3))))
              for _ in range(n)]
    flat = merge_attention_states(states)
    reordered = merge_attention_states(states[::-1])
    nested = merge_attention_states([merge_attention_states(states[:1]),
                                     merge_attention_states(states[1:])]) if n > 1 else flat
    for other in (reordered, nested):
        assert np.array_equal(np.isneginf(other.lse), np.isneginf(flat.lse))
        assert_close(other.out, flat.out, rtol=1e-12, atol=1e-14, name="out")
        finite = np.isfinite(flat.lse)
        assert_close(other.lse[finite], flat.lse[finite], rtol=1e-12, atol=1e-14, name="lse")
    # A row that no state saw has out = 0; one state alone is returned as it is.
    assert np.all(flat.out[np.isneginf(flat.lse)] == 0.0)
    single = merge_attention_states(states[:1])
    seen = np.isfinite(states[0].lse)
    assert np.array_equal(single.out[seen], states[0].out[seen])


def test_merge_keeps_float32_and_stays_finite_for_extreme_lse():
    a = AttentionState(np.ones((1, 2), np.float32), np.array([80.0], np.float32))
    b = AttentionState(np.zeros((1, 2), np.float32), np.array([-80.0], np.float32))
    merged = merge_attention_states([a, b])
    assert merged.out.dtype == np.float32 and np.isfinite(merged.out).all()
    assert_close(merged.out, np.ones((1, 2)), rtol=1e-6, name="out")


@pytest.mark.parametrize("states, kind, words", [
    ([], ValueError, "at least one"),
    (AttentionState(np.zeros((1, 2)), np.zeros(1)), TypeError, "sequence"),
    ([(np.zeros((1, 2)),)], TypeError, "states[0]"),
    ([AttentionState(np.zeros((1, 2)), np.zeros(2))], ValueError, "states[0].lse"),
    ([AttentionState(np.zeros((1, 2)), np.zeros(1)), AttentionState(np.zeros((2, 2)), np.zeros(2))],
     ValueError, "states[1].out"),
    ([AttentionState(np.zeros((1, 2)), np.array([np.nan]))], ValueError, "states[0].lse"),
    ([AttentionState(np.zeros((1, 2)), np.array([np.inf]))], ValueError, "states[0].lse"),
    ([AttentionState(np.full((1, 2), np.nan), np.zeros(1))], ValueError, "states[0].out"),
])
def test_merge_rejects_bad_states_naming_them(states, kind, words):
    with pytest.raises(kind, match=re.escape(words)):
        merge_attention_states(states)
