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
    FastMemory,
    IOCount,
    attention_matrix_bytes,
    causal_tile_schedule,
    flash_attention_2_io,
    flash_attention_backward,
    flash_attention_forward,
    flash_attention_io,
    flash_block_sizes,
    standard_attention_io,
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
    alignment = draw(st.one_of(st.sampled_from(["top_left", "bottom_right"]),
                               st.integers(-dims["L"] - 2, dims["S"] + 2)))  # any offset
    mask_kind = draw(st.sampled_from(["none", "full", "row"]))
    seed = draw(st.integers(0, 2**31 - 1))
    return dims, block_q, block_k, causal, alignment, mask_kind, seed


@pytest.mark.claim(
    "004 Efficient Attention Computation",
    "Flash attention: same math as standard attention, only the execution differs (kernel fusion)",
    "verified",
    domain=r"$1 \le B, H_{kv} \le 2$, grouped heads, $1 \le L, S \le 9$ ($L \ne S$ included), "
           r"$1 \le D \le 4$, $1 \le D_v \le 3$, every tile size including 1, non-divisors and "
           "tiles larger than the sequence, causal with both alignments and any integer offset, "
           "random and padding masks "
           "with fully masked rows, hypothesis")
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


@pytest.mark.claim(
    "book: the causal forward and backward passes of `attnmath.flash`",
    "Keys that no query may see are never read by the causal forward or backward pass",
    "verified on", chapter="08_flash",
    quote="keys no query may see are never read",
    domain="top-left alignment, $L = 4$ queries, $S = 12$ keys, tiles of $2 \\times 4$: every score tile "
           "the forward and the backward make is recorded")
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


def _recorded_tiles(monkeypatch, L, S, block_q, block_k, alignment):
    """The (query tile, key tile) pairs whose scores the causal forward and the backward compute,
    each with whether the causal mask removed any entry of it (every score tile is made by
    Problem.scores)."""
    from attnmath import core

    q, k, v = random_qkv(B=1, H=1, L=L, S=S, D=2, seed=L * 100 + S)
    seen = {"forward": {}, "backward": {}}
    scores, phase = core.Problem.scores, ["forward"]

    def recording(self, q_rows, rows, cols):
        tile = scores(self, q_rows, rows, cols)
        seen[phase[0]][rows.start // block_q, cols.start // block_k] = bool(np.isneginf(tile).any())
        return tile

    monkeypatch.setattr(core.Problem, "scores", recording)
    out, cache = flash_attention_forward(q, k, v, block_q=block_q, block_k=block_k, causal=True,
                                         causal_alignment=alignment)
    phase[0] = "backward"
    flash_attention_backward(np.ones_like(out), cache)
    monkeypatch.undo()
    return seen


@pytest.mark.claim(
    "book: the causal tile schedule of `attnmath.flash`",
    "A key tile that the causal mask hides entirely from a query tile is never computed, a tile it "
    "hides in part is computed with the mask applied inside, and a tile it does not touch needs no mask",
    "verified on", chapter="08_flash",
    quote="contributes nothing to any row of the query tile and is never computed",
    domain="$0 \\le L, S \\le 14$, tiles of 1 to 6 rows and columns, top-left, bottom-right and integer "
           "alignments, hypothesis: every score tile of the forward and the backward recorded")
@settings(max_examples=60, deadline=None)
@given(L=st.integers(0, 14), S=st.integers(0, 14), block_q=st.integers(1, 6),
       block_k=st.integers(1, 6), data=st.data())
def test_the_tile_schedule_is_what_the_causal_forward_and_backward_compute(L, S, block_q, block_k,
                                                                           data):
    alignment = data.draw(st.one_of(st.sampled_from(["top_left", "bottom_right"]),
                                    st.integers(-L - 3, S + 3)))
    schedule = causal_tile_schedule(L, S, block_q=block_q, block_k=block_k,
                                    causal_alignment=alignment)
    assert schedule.shape == (-(-L // block_q), -(-S // block_k))
    with pytest.MonkeyPatch.context() as monkeypatch:
        seen = _recorded_tiles(monkeypatch, L, S, block_q, block_k, alignment)
    computed = {tile: "masked" if masked else "full" for tile, masked in seen["forward"].items()}
    want = {(i, j): computed.get((i, j), "skipped") for i in range(schedule.shape[0])
            for j in range(schedule.shape[1])}
    assert {(i, j): str(kind) for (i, j), kind in np.ndenumerate(schedule)} == want
    assert set(seen["backward"]) == set(seen["forward"])  # the backward skips the same tiles
    # A tile is skipped exactly when the dense causal mask hides all of it from its rows.
    if L and S:
        dense = causal_mask(L, S, alignment=alignment)
        for (i, j), kind in np.ndenumerate(schedule):
            block = dense[i * block_q:(i + 1) * block_q, j * block_k:(j + 1) * block_k]
            assert (kind == "skipped") == (not block.any()), (i, j, kind)
            assert (kind == "full") == bool(block.all()), (i, j, kind)


@settings(max_examples=40, deadline=None)
@given(L=st.integers(1, 9), S=st.integers(1, 9), block_q=st.integers(1, 4),
       block_k=st.integers(1, 4), data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_an_integer_offset_matches_torch_and_fully_masked_rows_give_zeros(L, S, block_q, block_k,
                                                                         data, seed):
    # Query i sees key j iff j <= i + offset; rows with i + offset < 0 see nothing and return
    # zeros with lse = -inf and zero gradients, as torch's SDPA convention the library follows.
    offset = data.draw(st.integers(-L - 2, S + 2))
    q, k, v = random_qkv(B=1, H=2, L=L, S=S, D=3, D_v=2, H_kv=1, seed=seed)
    dout = np.random.default_rng(seed).standard_normal((1, 2, L, 2))
    out, cache = flash_attention_forward(q, k, v, block_q=block_q, block_k=block_k, causal=True,
                                         causal_alignment=offset)
    grads = flash_attention_backward(dout, cache)
    expected, (dq, dk, dv) = sdpa_oracle(q, k, v, mask=causal_mask(L, S, alignment=offset),
                                          dout=dout)
    assert_close(out, expected, name="out")
    for name, a, e in zip(("dq", "dk", "dv"), grads, (dq, dk, dv)):
        assert_close(a, e, name=name)
    empty = min(L, max(0, -offset))
    assert not out[..., :empty, :].any() and not grads.dq[..., :empty, :].any()
    assert np.isneginf(cache.lse[..., :empty]).all() and np.isfinite(cache.lse[..., empty:]).all()


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
    r"Flash attention computes attention block by block, never materialising the full $n \times n$ "
    "matrix",
    "verified on",
    domain="$L = S = 2048$, $D = 16$, tiles of 64: the peak traced memory against one $(L, S)$ "
           "float64 array, and the cache's extra arrays")
@pytest.mark.claim(
    "002 §6.1",
    "Flash attention: same time $O(n^2 d)$, but memory $O(n)$",
    "corrected",
    correction="The inputs and output already take $O(nd)$; flash attention needs $O(n)$ memory "
               "besides them (lse, one number per row and head, plus a tile independent of $n$): "
               "$O(nd)$ in total, against $O(n^2 + nd)$ for plain attention.",
    domain="$L = S = 2048$, $D = 16$, tiles of 64: the peak traced memory against one $(L, S)$ "
           "float64 array, and the cache's extra arrays",
    box="corr-flash-memory")
@pytest.mark.claim(
    "003 §5.2",
    r"Flash attention: memory $O(n^2) \to O(n)$",
    "corrected",
    correction="The $O(n^2)$ attention matrix is removed, but the total stays $O(nd)$ for $Q$, "
               "$K$, $V$ and $O$; the extra memory is $O(n)$ (lse).",
    domain="$L = S = 2048$, $D = 16$, tiles of 64: the peak traced memory against one $(L, S)$ "
           "float64 array, and the cache's extra arrays",
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
    "003 §5.2",
    "Flash attention recomputes the attention weights during backpropagation instead of storing them",
    "verified",
    domain=r"$1 \le B, H_{kv} \le 2$, $H / H_{kv} \in \{1, 2\}$, $1 \le L, S \le 40$, "
           r"$1 \le D, D_v \le 4$, tiles from 1 to 16, causal or not, hypothesis: besides the "
           "inputs and the output the forward keeps one number per query row and head, and the "
           "backward from it equals the backward from the stored weights")
@settings(max_examples=30, deadline=None)
@given(B=st.integers(1, 2), H_kv=st.integers(1, 2), n_rep=st.integers(1, 2), L=st.integers(1, 40),
       S=st.integers(1, 40), D=st.integers(1, 4), D_v=st.integers(1, 4), block_q=st.integers(1, 16),
       block_k=st.integers(1, 16), causal=st.booleans(), seed=st.integers(0, 2**16))
def test_the_flash_cache_keeps_one_number_per_row_and_the_backward_recomputes_the_weights(
        B, H_kv, n_rep, L, S, D, D_v, block_q, block_k, causal, seed):
    H = H_kv * n_rep
    q, k, v = random_qkv(B=B, H=H, H_kv=H_kv, L=L, S=S, D=D, D_v=D_v, seed=seed)
    out, cache = flash_attention_forward(q, k, v, block_q=block_q, block_k=block_k, causal=causal)
    kept = [a for a in cache if isinstance(a, np.ndarray) and not any(a is b for b in (q, k, v))]
    assert sum(a.size for a in kept) == B * H * L * (1 + D_v)  # out and lse, no (L, S) array
    dout = np.random.default_rng(seed + 1).standard_normal(out.shape)
    mask = causal_mask(L, S) if causal else None
    _, stored = scaled_dot_product_attention(q, k, v, mask=mask)
    recomputed, from_weights = flash_attention_backward(dout, cache), attention_backward(dout, stored)
    for name in ("dq", "dk", "dv"):
        assert_close(getattr(recomputed, name), getattr(from_weights, name), name=name)


@pytest.mark.claim(
    "004 Attention as Matrix Operations",
    "Memory: gradients through attention $O(n^2)$",
    "corrected",
    correction="Only for the backward that stores the weights; the recomputing backward forms $P$ "
               "and $dS$ one tile at a time from lse and "
               r"$D_i = \operatorname{rowsum}(dO \odot O)$, so it needs $O(n)$ memory besides the "
               "$O(nd)$ inputs, outputs and gradients. Its time stays $O(n^2 d)$.",
    domain="$L = S = 2048$, $D = 16$, causal, tiles of 128: the backward's peak traced memory "
           "against one $(L, S)$ float64 array",
    box="corr-backward-memory")
def test_backward_never_allocates_an_l_by_s_array():
    L = S = 2048
    q, k, v = random_qkv(B=1, H=1, L=L, S=S, D=16, seed=17)
    out, cache = flash_attention_forward(q, k, v, block_q=128, block_k=128, causal=True)
    dout = np.ones_like(out)
    peak, _ = _peak_bytes(lambda: flash_attention_backward(dout, cache))
    assert peak < L * S * 8 / 16, f"peak {peak} B is not far below {L * S * 8} B"


@pytest.mark.claim(
    "001 Computational Complexity",
    "Memory: $O(n^2)$ for the attention matrix; flash attention is a solution",
    "verified on",
    domain="$n = 512$ and 1024, $D = 8$: peak traced memory of flash (linear) and plain attention "
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
    r"$n = 4096$ in FP16: attention matrix $4096^2 \times 2$ = 33.5 MB per head; with 32 heads ~1 "
    "GB",
    "verified",
    domain="the sources' own numbers: $n = 2048$ and 4096, 1, 12 and 32 heads, float32 and float16")
@pytest.mark.claim(
    "004 Attention as Matrix Operations",
    r"$n = 2048$: 4M floats $\times$ 4 bytes = 16MB per attention head; 12 heads: 192MB",
    "verified",
    domain="the sources' own numbers: $n = 2048$ and 4096, 1, 12 and 32 heads, float32 and float16")
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
    "Storing the attention matrix $A$ takes $O(n^2)$ memory; total $O(n^2 + nd)$",
    "verified",
    domain=r"$1 \le B, H \le 3$, $1 \le L, S \le 12$ ($L \ne S$ included), $1 \le D, D_v \le 5$, "
           "hypothesis: the bytes plain attention keeps for its backward")
@pytest.mark.claim(
    "003 §5.1",
    "Space complexity $O(n^2)$ (attention weight matrix)",
    "verified",
    domain=r"$1 \le B, H \le 3$, $1 \le L, S \le 12$ ($L \ne S$ included), $1 \le D, D_v \le 5$, "
           "hypothesis: the bytes plain attention keeps for its backward")
@pytest.mark.claim(
    "000 Complexity Analysis",
    "Space: the attention matrix $A$ takes $O(n m)$",
    "verified",
    domain=r"$1 \le B, H \le 3$, $1 \le L, S \le 12$ ($L \ne S$ included), $1 \le D, D_v \le 5$, "
           "hypothesis: the bytes plain attention keeps for its backward")
@settings(max_examples=40, deadline=None)
@given(B=st.integers(1, 3), H=st.integers(1, 3), L=st.integers(1, 12), S=st.integers(1, 12),
       D=st.integers(1, 5), D_v=st.integers(1, 5))
def test_attention_matrix_bytes_matches_the_probs_plain_attention_keeps(B, H, L, S, D, D_v):
    q, k, v = random_qkv(B=B, H=H, L=L, S=S, D=D, D_v=D_v, seed=18)
    _, cache = scaled_dot_product_attention(q, k, v)
    matrix = attention_matrix_bytes(L, S, H=H, B=B, bytes_per_elem=8)
    assert cache.probs.nbytes == matrix == 8 * B * H * L * S  # O(n m) per head
    # everything the backward keeps: the L x S weights plus the n x d inputs
    kept = sum(a.nbytes for a in (cache.q, cache.k, cache.v, cache.probs))
    assert kept == 8 * B * H * (L * S + L * D + S * D + S * D_v)


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


# --------------------------------------------------------------------------- IO complexity
#
# The counts of attnmath.flash.*_io are made by running the loops against a FastMemory; the
# closed forms below are derived in book/08_flash.md ("IO complexity") and must agree exactly.

IO_SETTINGS = settings(max_examples=25, deadline=None)


def _flash_live(block_r, block_c, d):
    """Elements held by one inner step: Q_i, O_i, K_j, V_j, the tile and four statistics."""
    return 2 * (block_r + block_c) * d + block_r * block_c + 4 * max(block_r, block_c)


@st.composite
def _n_d_m(draw, max_n=160, max_d=16):
    """(N, d, M) with d <= M <= N d, M large enough for one row of every block."""
    d = draw(st.integers(1, max_d))
    N = draw(st.integers(4 + -(-5 // d), max_n))  # so that N d >= 4 d + 5
    M = draw(st.integers(4 * d + 5, N * d))
    return N, d, M


@IO_SETTINGS
@given(st.integers(1, 64), st.integers(1, 40_000))
def test_flash_block_sizes_are_the_papers_unless_they_overflow_then_the_largest_that_fit(d, M):
    if M < 4 * d + 5:
        with pytest.raises(ValueError, match="M"):
            flash_block_sizes(d, M)
        return
    block_r, block_c = flash_block_sizes(d, M)
    paper = -(-M // (4 * d))  # B_c = ceil(M / 4d)
    assert block_r == min(block_c, d)
    assert _flash_live(block_r, block_c, d) <= M
    if _flash_live(min(paper, d), paper, d) <= M:
        assert block_c == paper
    else:
        assert block_c < paper
        assert _flash_live(min(block_c + 1, d), block_c + 1, d) > M


@IO_SETTINGS
@given(_n_d_m())
def test_flash_attention_io_equals_its_closed_form(ndm):
    N, d, M = ndm
    block_r, block_c = flash_block_sizes(d, M)
    T_c = -(-N // block_c)
    count = flash_attention_io(N, d, M)
    assert count.reads == 2 * N * d + T_c * (2 * N * d + 2 * N)
    assert count.writes == (T_c + 1) * (N * d + 2 * N)
    assert count.total == count.reads + count.writes
    assert count.peak <= M


@IO_SETTINGS
@given(_n_d_m())
def test_flash_attention_2_io_equals_its_closed_form(ndm):
    N, d, M = ndm
    small, big = flash_block_sizes(d, M)
    T_r = -(-N // big)  # FlashAttention-2 puts the large block on the queries
    count = flash_attention_2_io(N, d, M)
    assert count.reads == N * d + 2 * T_r * N * d
    assert count.writes == N * d + N
    assert count.peak <= M


@IO_SETTINGS
@given(st.integers(1, 200), st.integers(1, 16), st.integers(3, 3000))
def test_standard_attention_io_equals_its_closed_form(N, d, M):
    if M < 2 * d + 1:
        with pytest.raises(ValueError, match="M"):
            standard_attention_io(N, d, M)
        return
    b = max(b for b in range(1, M + 1) if 2 * b * d + b * b <= M)  # the largest tile of S
    T = -(-N // b)
    r = 1 if N + 2 <= M else 2  # a row of S read once if it fits, else twice
    count = standard_attention_io(N, d, M)
    assert count.reads == N * d + 2 * T * N * d + (r + 1) * N * N
    assert count.writes == 2 * N * N + N * d
    assert count.peak <= M


@IO_SETTINGS
@given(_n_d_m(max_n=128), st.integers(1, 40), st.integers(1, 40))
def test_the_fast_memory_refuses_blocks_that_do_not_fit(ndm, block_r, block_c):
    # The counter's own bookkeeping decides; it must agree with the live set of one inner
    # step: Q_i, O_i, K_j, V_j, the score tile and four statistics per query row.
    N, d, M = ndm
    rows, cols = min(block_r, N), min(block_c, N)  # blocks never exceed the sequence
    live = 2 * (rows + cols) * d + rows * cols + 4 * rows
    for simulate in (flash_attention_io, flash_attention_2_io):
        if live <= M:
            assert simulate(N, d, M, block_r=block_r, block_c=block_c).peak == live
        else:
            with pytest.raises(ValueError, match="fast memory overflow"):
                simulate(N, d, M, block_r=block_r, block_c=block_c)


def test_the_papers_block_sizes_overflow_a_small_fast_memory():
    # B_c = ceil(M / 4d), B_r = min(B_c, d) leave no room for the score tile when M < 8 d^2.
    d, M = 16, 1024
    with pytest.raises(ValueError, match="fast memory overflow"):
        flash_attention_io(64, d, M, block_r=min(-(-M // (4 * d)), d), block_c=-(-M // (4 * d)))
    assert flash_attention_io(64, d, M).peak <= M


@pytest.mark.claim(
    "003 §5.2",
    "Flash attention gives a speed improvement through reduced I/O",
    "clarified",
    correction=r"In the two-level memory model flash attention moves $\Theta(N^2 d^2 / M)$ "
               r"elements to and from slow memory against $\Theta(N^2 + N d)$ for standard "
               "attention: fewer only when the fast memory $M$ is larger than a few $d^2$ (for the "
               "paper's loop order the counts cross near $M = 2 d^2$, for FlashAttention-2's near "
               "$M = d^2$). On an H100 (228 KB of shared memory per SM, 116,736 bf16 elements) "
               "that holds for $d = 64$ and 128 in both orders; for $d = 256$ not in the paper's "
               "order.",
    domain=r"$2 \le d \le 16$, $16 d \le N \le 16 d + 256$, $16 d^2 \le M \le N d$: fewer "
           "accesses in both loop orders, hypothesis",
    box="corr-flash-io")
@IO_SETTINGS
@given(st.data())
def test_flash_moves_fewer_elements_than_standard_attention_only_when_m_exceeds_a_few_d_squared(data):
    d = data.draw(st.integers(2, 16))
    N = data.draw(st.integers(16 * d, 16 * d + 256))
    M = data.draw(st.integers(16 * d * d, N * d))
    standard = standard_attention_io(N, d, M).total
    assert flash_attention_io(N, d, M).total < standard
    assert flash_attention_2_io(N, d, M).total < standard


@pytest.mark.claim(
    "003 §5.2",
    "Flash attention gives a speed improvement through reduced I/O",
    "clarified",
    correction=r"In the two-level memory model flash attention moves $\Theta(N^2 d^2 / M)$ "
               r"elements to and from slow memory against $\Theta(N^2 + N d)$ for standard "
               "attention: fewer only when the fast memory $M$ is larger than a few $d^2$ (for the "
               "paper's loop order the counts cross near $M = 2 d^2$, for FlashAttention-2's near "
               "$M = d^2$). On an H100 (228 KB of shared memory per SM, 116,736 bf16 elements) "
               "that holds for $d = 64$ and 128 in both orders; for $d = 256$ not in the paper's "
               "order.",
    domain=r"$d = 32, 64, 128$, $N = 256$ and 1024, $M = d^2 / 2$: more accesses for Algorithm 1; "
           r"an H100's shared memory ($M = 116\,736$ elements), $N$ from 1024 to 16 384: fewer "
           r"in both orders for $d = 64$ and 128, more in the paper's order for $d = 256$",
    box="corr-flash-io")
@pytest.mark.parametrize("d", [32, 64, 128])
@pytest.mark.parametrize("N", [256, 1024])
def test_flash_moves_more_elements_than_standard_attention_when_m_is_below_d_squared(d, N):
    M = d * d // 2
    assert flash_attention_io(N, d, M).total > standard_attention_io(N, d, M).total
    h100 = 228 * 1024 // 2  # bf16 elements in an H100 SM's 228 KB of shared memory
    for n in (4 * N, 16 * N):
        standard = standard_attention_io(n, d, h100).total
        assert flash_attention_2_io(n, d, h100).total < standard
        assert (flash_attention_io(n, d, h100).total < standard) == (d <= 128)
        wide = standard_attention_io(n, 256, h100).total
        assert flash_attention_io(n, 256, h100).total > wide > flash_attention_2_io(n, 256, h100).total


@pytest.mark.claim(
    "004 Efficient Attention Computation",
    "Flash attention: $Q$, $K$, $V$ from HBM -> compute in shared memory -> output to HBM "
    "(traditional: store attn, read attn)",
    "corrected",
    correction=r"Standard attention does write and read back the $N \times N$ scores and weights "
               "($4 N^2$ of its accesses). Flash attention never does, but it does not read $Q$, "
               "$K$, $V$ once either: unless one block covers the whole sequence it re-reads $Q$ "
               "and $O$ (the paper's Algorithm 1) or $K$ and $V$ (FlashAttention-2) once per outer "
               r"step, $\Theta(N^2 d^2 / M)$ accesses in all.",
    domain=r"$4 d + 5 \le M \le N d$ with $1 \le d \le 16$, $N$ up to 160 (hypothesis)",
    box="corr-flash-io")
@IO_SETTINGS
@given(_n_d_m())
def test_flash_reads_its_inputs_once_only_when_one_block_covers_the_sequence(ndm):
    N, d, M = ndm
    small, big = flash_block_sizes(d, M)
    standard = standard_attention_io(N, d, M)
    assert standard.writes >= 2 * N * N and standard.reads >= 2 * N * N  # S and P, both ways
    fa1, fa2 = flash_attention_io(N, d, M), flash_attention_2_io(N, d, M)
    one_pass = 3 * N * d  # Q, K and V read once
    assert (fa2.reads == one_pass) == (N <= big)
    if N > big:  # a second outer step re-reads K, V (FlashAttention-2) or Q, O, l, m (Algorithm 1)
        assert fa2.reads >= one_pass + 2 * N * d
        assert fa1.reads >= one_pass + N * d + 2 * (N * d + 2 * N)
    assert fa2.writes == N * d + N  # O and lse, once


@IO_SETTINGS
@given(_n_d_m())
def test_flash_io_is_theta_of_n2_d2_over_m(ndm):
    # Theorem 2 of Dao et al. (2022): Theta(N^2 d^2 / M) for d <= M <= N d. The constants
    # 6 <= count / (N^2 d^2 / M) <= 138 (Algorithm 1) and 4 <= . <= 41 (FlashAttention-2)
    # are derived in book/08_flash.md from 1 <= B_c <= ceil(M / 4d) and B_c >= M / (18 d).
    N, d, M = ndm
    unit = N * N * d * d / M
    assert 6 <= flash_attention_io(N, d, M).total / unit <= 138
    assert 4 <= flash_attention_2_io(N, d, M).total / unit <= 41


@IO_SETTINGS
@given(st.integers(1, 200), st.integers(1, 16), st.data())
def test_standard_attention_io_is_theta_of_n2_plus_nd_once_tiles_are_d_wide(N, d, data):
    # The paper's Theta(Nd + N^2) reads Q, K, V once; a tiled product re-reads them
    # ceil(N / b) times, O(N^2) in all once b >= d, that is M >= 3 d^2.
    M = data.draw(st.integers(3 * d * d, 3 * d * d + 4000))
    ratio = standard_attention_io(N, d, M).total / (N * N + N * d)
    assert 4 <= ratio <= 7


@pytest.mark.parametrize("d", [8, 32, 64])
def test_standard_attention_io_grows_like_n2_d_when_m_is_below_d_squared(d):
    # With M = 3d the tile of S is 1 x 1: Q and K (and P and V) are re-read N times.
    N = 2 * d
    assert standard_attention_io(N, d, 3 * d).total / (N * N + N * d) >= d


@IO_SETTINGS
@given(_n_d_m(max_n=128))
def test_flash_io_decreases_as_the_fast_memory_grows(ndm):
    N, d, M = ndm
    for simulate in (flash_attention_io, flash_attention_2_io):
        now, doubled, quadrupled = (simulate(N, d, m).total for m in (M, 2 * M, 4 * M))
        assert doubled <= now and quadrupled <= doubled
        if N > flash_block_sizes(d, M)[1]:  # more than one outer step: 4 M halves them at least
            assert quadrupled < now


def test_io_simulations_reject_bad_sizes():
    with pytest.raises(ValueError, match="N"):
        flash_attention_io(0, 4, 100)
    with pytest.raises(TypeError, match="d"):
        flash_attention_2_io(8, 4.0, 100)
    with pytest.raises(ValueError, match="M"):
        flash_attention_io(8, 4, 20)
    with pytest.raises(ValueError, match="block_c"):
        flash_attention_io(8, 4, 100, block_r=2)
    with pytest.raises(ValueError, match="M"):
        standard_attention_io(8, 4, 8)
    fast = FastMemory(10)
    fast.load(6)
    with pytest.raises(ValueError, match="fast memory overflow"):
        fast.hold(5)
    with pytest.raises(ValueError, match="n"):
        fast.store(7)
    with pytest.raises(ValueError, match="n"):
        fast.free(7)
    fast.store(6)
    fast.free(6)
    assert fast.count() == IOCount(reads=6, writes=6, peak=6)
