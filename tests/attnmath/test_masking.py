"""Tests for attnmath.masking: causal, padding, combined and sliding-window masks.

Oracles: ``torch.ones(L, S, dtype=bool).tril(diagonal)`` and torch's ``causal_upper_left`` /
``causal_lower_right`` biases for the causal masks, explicit Python loops for the others.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.attention.bias import causal_lower_right, causal_upper_left

from attnmath.attention import scaled_dot_product_attention
from attnmath.masking import (
    broadcast_mask,
    causal_mask,
    causal_offset,
    combine_masks,
    left_padding_mask,
    mask_to_bias,
    padding_mask,
    sliding_window_mask,
)
from attnmath.softmax import masked_softmax
from attnmath.sparse import local_mask
from attnmath.testing import assert_close, random_qkv, to_torch

SETTINGS = settings(max_examples=40, deadline=None)
lengths = st.integers(min_value=1, max_value=12)


def _torch_tril(L: int, S: int, diagonal: int) -> np.ndarray:
    return torch.ones(L, S, dtype=torch.bool).tril(diagonal=diagonal).numpy()


def _torch_causal(L: int, S: int, alignment: str) -> np.ndarray:
    """torch's own causal bias, materialised as a boolean (L, S) mask."""
    make = causal_upper_left if alignment == "top_left" else causal_lower_right
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that L > S bottom-right rows are empty
        return make(L, S)._materialize().numpy()


# ---------------------------------------------------------------------------------------------
# causal_mask
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(L=lengths, S=lengths)
def test_top_left_causal_mask_equals_torch_tril(L, S):
    mask = causal_mask(L, S)
    assert mask.dtype == np.bool_
    assert mask.shape == (L, S)
    np.testing.assert_array_equal(mask, _torch_tril(L, S, 0))
    np.testing.assert_array_equal(mask, _torch_causal(L, S, "top_left"))


@SETTINGS
@given(L=lengths, S=lengths)
def test_bottom_right_causal_mask_equals_torch_tril_shifted_by_s_minus_l(L, S):
    mask = causal_mask(L, S, alignment="bottom_right")
    assert mask.shape == (L, S)
    np.testing.assert_array_equal(mask, _torch_tril(L, S, S - L))
    np.testing.assert_array_equal(mask, _torch_causal(L, S, "bottom_right"))


@pytest.mark.claim(
    "000 Masking",
    r"Causal mask: $M_{\mathrm{causal}}[i,j] = 1$ if $j \le i$, 0 if $j > i$; a lower-triangular "
    "attention matrix",
    "verified",
    domain=r"$1 \le L \le 12$, hypothesis, against `np.tril`")
@SETTINGS
@given(L=lengths)
def test_both_alignments_agree_when_lengths_are_equal(L):
    top_left = causal_mask(L)
    np.testing.assert_array_equal(top_left, causal_mask(L, L, alignment="bottom_right"))
    np.testing.assert_array_equal(top_left, causal_mask(L, L))
    # the seed's GPT mask: np.tril(np.ones((n, n))) with 1 = may attend
    np.testing.assert_array_equal(top_left, np.tril(np.ones((L, L))).astype(bool))


@SETTINGS
@given(L=lengths, S=lengths)
def test_bottom_right_with_more_queries_than_keys_leaves_the_first_rows_empty(L, S):
    mask = causal_mask(L, S, alignment="bottom_right")
    empty = max(L - S, 0)
    assert not mask[:empty].any()
    # every other row i sees keys 0 .. i + S - L: the last query sees every key
    np.testing.assert_array_equal(mask[empty:].sum(axis=1), np.arange(empty, L) + S - L + 1)
    assert mask[-1].all()


@SETTINGS
@given(L=lengths, S=lengths)
def test_top_left_causal_mask_never_leaves_a_row_empty(L, S):
    mask = causal_mask(L, S)
    assert mask.any(axis=1).all()
    assert mask[:, 0].all()
    np.testing.assert_array_equal(mask.sum(axis=1), np.minimum(np.arange(L) + 1, S))


@SETTINGS
@given(L=lengths, S=lengths, data=st.data())
def test_an_integer_offset_is_torch_tril_with_that_diagonal(L, S, data):
    # Any offset, including those that mask whole rows (offset < 0) or nothing (offset >= S).
    offset = data.draw(st.integers(-L - 3, S + 3))
    mask = causal_mask(L, S, alignment=offset)
    np.testing.assert_array_equal(mask, _torch_tril(L, S, offset))
    assert causal_offset(L, S, offset) == offset
    empty = min(L, max(0, -offset))  # rows i with i + offset < 0 see no key
    assert not mask[:empty].any() and mask[empty:, 0].all()


@SETTINGS
@given(L=lengths, S=lengths)
def test_the_named_alignments_are_offsets_zero_and_s_minus_l(L, S):
    assert causal_offset(L, S, "top_left") == 0 and causal_offset(L, S, "bottom_right") == S - L
    for name in ("top_left", "bottom_right"):
        np.testing.assert_array_equal(causal_mask(L, S, alignment=name),
                                      causal_mask(L, S, alignment=causal_offset(L, S, name)))


@SETTINGS
@given(L=lengths, S=lengths, window=st.integers(1, 8), data=st.data())
def test_a_sliding_window_with_an_integer_offset_ends_on_that_diagonal(L, S, window, data):
    offset = data.draw(st.integers(-L - 2, S + 2))
    mask = sliding_window_mask(L, window, S, alignment=offset)
    expected = _torch_tril(L, S, offset) & ~_torch_tril(L, S, offset - window)
    np.testing.assert_array_equal(mask, expected)


def test_an_offset_must_be_an_integer_or_a_named_alignment():
    for bad in (1.5, True, None):
        with pytest.raises(TypeError, match="alignment"):
            causal_offset(3, 4, bad)
    with pytest.raises(ValueError, match="alignment"):
        causal_mask(3, 4, alignment="diagonal")


def test_causal_mask_rejects_bad_input():
    with pytest.raises(ValueError, match="alignment"):
        causal_mask(3, 4, alignment="bottom-right")
    with pytest.raises(ValueError, match="L"):
        causal_mask(0)
    with pytest.raises(ValueError, match="S"):
        causal_mask(3, 0)
    with pytest.raises(TypeError, match="L"):
        causal_mask(3.0)


# ---------------------------------------------------------------------------------------------
# padding_mask
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data(), S=lengths)
def test_padding_mask_marks_exactly_the_first_length_keys(data, S):
    lens = data.draw(st.lists(st.integers(0, S), min_size=1, max_size=5))
    mask = padding_mask(np.array(lens), S)
    assert mask.dtype == np.bool_
    assert mask.shape == (len(lens), 1, 1, S)
    for b, n in enumerate(lens):
        for j in range(S):
            assert mask[b, 0, 0, j] == (j < n)


def test_padding_mask_accepts_a_list_and_handles_empty_and_full_sequences():
    mask = padding_mask([0, 3, 2], 3)
    expected = np.array([[False, False, False], [True, True, True], [True, True, False]])
    np.testing.assert_array_equal(mask[:, 0, 0, :], expected)


def test_padding_mask_rejects_bad_input():
    with pytest.raises(ValueError, match="lengths"):
        padding_mask(np.array([[1, 2]]), 3)
    with pytest.raises(TypeError, match="lengths"):
        padding_mask(np.array([1.0, 2.0]), 3)
    with pytest.raises(ValueError, match=r"\[0, S=3\]"):
        padding_mask([1, 4], 3)
    with pytest.raises(ValueError, match=r"\[0, S=3\]"):
        padding_mask([-1, 2], 3)
    with pytest.raises(ValueError, match="S"):
        padding_mask([0], 0)


@pytest.mark.claim(
    "000 Masking",
    r"Padding mask: $M_{\mathrm{pad}}[i,j] = 0$ for padding keys prevents attention to padding "
    "tokens",
    "verified",
    domain=r"$1 \le B, H \le 3$, $1 \le L, S \le 8$, $1 \le D \le 4$, every length from 1 to $S$: "
           "padded keys and values replaced by large arbitrary numbers change no output, hypothesis")
@SETTINGS
@given(B=st.integers(1, 3), H=st.integers(1, 3), L=st.integers(1, 8), S=st.integers(1, 8),
       D=st.integers(1, 4), data=st.data())
def test_padded_keys_do_not_change_the_output_of_the_valid_positions(B, H, L, S, D, data):
    lengths = data.draw(st.lists(st.integers(1, S), min_size=B, max_size=B), label="lengths")
    seed = data.draw(st.integers(0, 2**16), label="seed")
    q, k, v = random_qkv(B=B, H=H, L=L, S=S, D=D, seed=seed)
    mask = padding_mask(lengths, S)  # (B, 1, 1, S)
    out, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    k2, v2 = k.copy(), v.copy()
    rng = np.random.default_rng(seed + 1)
    for b, n in enumerate(lengths):
        k2[b, :, n:] = 100.0 * rng.standard_normal(k2[b, :, n:].shape)
        v2[b, :, n:] = -50.0
    out2, _ = scaled_dot_product_attention(q, k2, v2, mask=mask)
    assert_close(out2, out, name="output with changed padding")


# ---------------------------------------------------------------------------------------------
# combine_masks
# ---------------------------------------------------------------------------------------------


@pytest.mark.claim(
    "000 Masking",
    r"Combined mask: $M_{\mathrm{combined}} = M_{\mathrm{pad}} \odot M_{\mathrm{causal}}$, where "
    r"$\odot$ is element-wise AND",
    "verified",
    domain=r"$1 \le B \le 4$, $1 \le L \le 10$, every length from 0 to $L$, hypothesis: every "
           "entry of the combined mask")
@SETTINGS
@given(L=st.integers(1, 10), data=st.data())
def test_combined_padding_and_causal_mask_is_the_elementwise_and(L, data):
    lengths = data.draw(st.lists(st.integers(0, L), min_size=1, max_size=4), label="lengths")
    B = len(lengths)
    pad = padding_mask(lengths, L)  # (B, 1, 1, S)
    causal = causal_mask(L)  # (L, S)
    combined = combine_masks(pad, causal)
    assert combined.shape == (B, 1, L, L)
    for b in range(B):
        for i in range(L):
            for j in range(L):
                assert combined[b, 0, i, j] == (pad[b, 0, 0, j] and j <= i)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 4))
def test_combine_masks_is_logical_and_with_broadcasting_and_ignores_none(seed, n):
    rng = np.random.default_rng(seed)
    shapes = [(2, 1, 1, 5), (1, 3, 4, 5), (4, 5), (2, 3, 4, 1)]
    masks = [rng.random(shapes[i]) < 0.7 for i in range(n)]
    expected = np.ones((), dtype=bool)
    for m in masks:
        expected = np.logical_and(expected, m)
    with_none = [None] + [x for m in masks for x in (m, None)]
    np.testing.assert_array_equal(combine_masks(*with_none), expected)
    np.testing.assert_array_equal(combine_masks(*reversed(masks)), expected)


def test_combine_masks_of_nothing_is_none():
    assert combine_masks() is None
    assert combine_masks(None, None) is None


def test_combine_masks_rejects_bad_input():
    with pytest.raises(TypeError, match="mask 1 must be boolean"):
        combine_masks(np.ones((2, 2), bool), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"mask 1 of shape \(3, 2\).*\(2, 2\)"):
        combine_masks(np.ones((2, 2), bool), np.ones((3, 2), bool))


# ---------------------------------------------------------------------------------------------
# sliding_window_mask
# ---------------------------------------------------------------------------------------------


def _window_loop(L, window, S, offset):
    mask = np.zeros((L, S), dtype=bool)
    for i in range(L):
        for j in range(S):
            mask[i, j] = 0 <= (i + offset) - j < window
    return mask


@SETTINGS
@given(L=lengths, window=st.integers(1, 14))
def test_each_query_sees_min_of_window_and_its_position_plus_one_keys(L, window):
    mask = sliding_window_mask(L, window)
    assert mask.shape == (L, L)
    np.testing.assert_array_equal(mask.sum(axis=1), np.minimum(window, np.arange(L) + 1))
    assert np.diag(mask).all()  # each query sees itself


@SETTINGS
@given(L=lengths, S=lengths, window=st.integers(1, 14))
def test_sliding_window_mask_equals_an_explicit_double_loop(L, S, window):
    np.testing.assert_array_equal(sliding_window_mask(L, window, S), _window_loop(L, window, S, 0))
    np.testing.assert_array_equal(
        sliding_window_mask(L, window, S, alignment="bottom_right"), _window_loop(L, window, S, S - L)
    )


@SETTINGS
@given(L=lengths, S=lengths, extra=st.integers(0, 5))
def test_window_covering_every_key_position_is_the_causal_mask(L, S, extra):
    # Query i sits on key position i + delta; the causal mask lets it see j = 0 .. i + delta, that
    # is i + delta + 1 keys. The window equals it once w >= (last position) + 1: w >= S
    # bottom-right, and w >= max(L, S) top-left (where queries past S sit beyond the last key).
    window = S + extra
    np.testing.assert_array_equal(
        sliding_window_mask(L, window, S, alignment="bottom_right"),
        causal_mask(L, S, alignment="bottom_right"),
    )
    window = max(L, S) + extra
    np.testing.assert_array_equal(sliding_window_mask(L, window, S), causal_mask(L, S))


def test_top_left_window_of_s_keys_is_not_causal_when_queries_outnumber_keys():
    # L = 4 queries, S = 2 keys, w = S: query 3 sits at position 3 and key 0 is 3 steps back,
    # outside the window, although the top-left causal mask allows it.
    window_mask = sliding_window_mask(4, 2, 2)
    assert causal_mask(4, 2)[3, 0]
    assert not window_mask[3, 0]
    assert not window_mask[3].any()  # positions 2 and 3 hold no key


def test_window_of_one_is_the_diagonal():
    np.testing.assert_array_equal(sliding_window_mask(5, 1), np.eye(5, dtype=bool))


def test_sliding_window_mask_rejects_bad_input():
    with pytest.raises(ValueError, match="window"):
        sliding_window_mask(4, 0)
    with pytest.raises(TypeError, match="window"):
        sliding_window_mask(4, 2.5)
    with pytest.raises(ValueError, match="alignment"):
        sliding_window_mask(4, 2, alignment="centre")


# ---------------------------------------------------------------------------------------------
# broadcast_mask
# ---------------------------------------------------------------------------------------------


def test_broadcast_mask_returns_the_mask_at_the_full_shape():
    mask = causal_mask(3, 4)
    full = broadcast_mask(mask, (2, 5, 3, 4))
    assert full.shape == (2, 5, 3, 4)
    for b in range(2):
        for h in range(5):
            np.testing.assert_array_equal(full[b, h], mask)


def test_broadcast_mask_rejects_bad_input():
    with pytest.raises(ValueError, match=r"mask of shape \(3, 2\) does not broadcast.*\(2, 5, 3, 4\)"):
        broadcast_mask(np.ones((3, 2), bool), (2, 5, 3, 4))
    with pytest.raises(ValueError, match=r"key_mask of shape \(3, 1, 1, 4\)"):
        broadcast_mask(np.ones((3, 1, 1, 4), bool), (2, 5, 3, 4), name="key_mask")
    # the seed's 0/1 float masks are refused: True/False says which way round it is
    with pytest.raises(TypeError, match="mask must be boolean.*float64"):
        broadcast_mask(np.tril(np.ones((3, 4))), (3, 4))
    with pytest.raises(TypeError, match="boolean"):
        broadcast_mask(np.ones((3, 4), dtype=np.int64), (3, 4))


# ---------------------------------------------------------------------------------------------
# mask_to_bias and the sentinels of the source texts
# ---------------------------------------------------------------------------------------------


def test_mask_to_bias_gives_zero_where_allowed_and_minus_inf_elsewhere():
    mask = np.array([[True, False, True], [False, False, True]])
    bias = mask_to_bias(mask)
    assert bias.dtype == np.float64
    assert (bias[mask] == 0.0).all()
    assert np.isneginf(bias[~mask]).all()
    assert mask_to_bias(mask, dtype=np.float32).dtype == np.float32


def test_mask_to_bias_rejects_a_non_boolean_mask():
    with pytest.raises(TypeError, match="mask must be boolean"):
        mask_to_bias(np.array([[1, 0], [1, 1]]))


def test_masking_through_a_bias_equals_masking_through_a_mask():
    q, k, v = random_qkv(B=2, H=2, L=4, S=6, D=3, seed=5)
    mask = combine_masks(padding_mask([4, 2], 6), causal_mask(4, 6, alignment="bottom_right"))
    mask[1, 0, 0] = False  # one fully masked row
    out_mask, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    out_bias, _ = scaled_dot_product_attention(q, k, v, bias=mask_to_bias(mask))
    assert_close(out_bias, out_mask, name="output with the mask as a bias")
    assert not out_mask[1, :, 0].any()


@pytest.mark.claim(
    "000 Masking",
    "Apply the padding mask before softmax as "
    r"$S_{\mathrm{masked}} = S + (1 - M_{\mathrm{pad}}) \cdot (-\infty)$",
    "corrected",
    correction=r"$0 \cdot (-\infty)$ is NaN in IEEE arithmetic, so the formula turns every allowed "
               "score into NaN; the mask must select: `where(M, S, -inf)`, or add a bias built as "
               "`where(M, 0, -inf)`.",
    domain=r"a counterexample: a $3 \times 4$ score matrix with 3 valid keys",
    box="corr-mask-nan")
def test_the_multiplicative_minus_inf_formula_turns_allowed_scores_into_nan():
    # Seed 000 writes S_masked = S + (1 - M_pad) * (-inf). For an allowed entry (M = 1) this is
    # S + 0 * (-inf), and 0 * (-inf) is NaN in IEEE arithmetic: the formula poisons every score.
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((3, 4))
    mask = padding_mask([3], 4)[0, 0, 0]  # (S,): keys 0..2 valid
    with np.errstate(invalid="ignore"):
        seed_formula = scores + (1 - mask.astype(np.float64)) * (-np.inf)
    assert np.isnan(seed_formula[:, mask]).all()
    assert np.isneginf(seed_formula[:, ~mask]).all()
    # mask_to_bias keeps the allowed scores intact
    ours = scores + mask_to_bias(mask)
    assert_close(ours[:, mask], scores[:, mask], name="allowed scores")
    assert np.isneginf(ours[:, ~mask]).all()


def _seed_003_attention(q, k, v, mask):
    """Seed 003's masked attention: ``np.where(mask == 0, -1e9, scores)`` then a row softmax."""
    scores = q @ k.T / np.sqrt(q.shape[-1])
    scores = np.where(mask == 0, -1e9, scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ v, weights


@pytest.mark.claim(
    "003 §2.1",
    "Mask the scores with `np.where(mask == 0, -1e9, scores)` before the softmax",
    "corrected",
    correction=r"`-1e9` is not $-\infty$: a fully masked row becomes uniform (its output is the "
               r"mean of all values, padding included). Mask with $-\infty$ and return zeros for a "
               "row with no allowed key, as torch's `scaled_dot_product_attention` does.",
    domain="a counterexample: $L = 3$, $S = 5$ with one fully masked row",
    box="corr-minus-1e9")
def test_the_minus_1e9_sentinel_leaks_uniform_weight_on_a_fully_masked_row_while_ours_gives_zeros():
    rng = np.random.default_rng(4)
    L, S, D = 3, 5, 4
    q, k, v = (rng.standard_normal((n, D)) for n in (L, S, S))
    mask = causal_mask(L, S)
    mask[1] = False  # query 1 may attend to nothing
    seed_out, seed_weights = _seed_003_attention(q, k, v, mask.astype(np.float64))
    # the sentinel: every score in row 1 is -1e9, so the softmax is uniform over the masked keys
    assert_close(seed_weights[1], np.full(S, 1.0 / S), name="seed weights of the empty row")
    assert_close(seed_out[1], v.mean(axis=0), name="seed output of the empty row")
    ours, cache = scaled_dot_product_attention(q, k, v, mask=mask)
    assert not cache.probs[1].any()
    assert not ours[1].any()
    # on the rows that keep at least one key the sentinel is harmless in float64
    keep = [0, 2]
    assert_close(ours[keep], seed_out[keep], name="rows with an allowed key")


@pytest.mark.claim(
    "003 §2.1",
    r"A large negative constant (`-1e9`) can stand in for $-\infty$ in masked scores",
    "corrected",
    correction=r"In float16 (largest finite 65504) `-1e9` rounds to $-\infty$, and a fully masked "
               r"row then gives $-\infty - (-\infty) = \mathrm{NaN}$ in the max-subtracted "
               r"softmax; use $-\infty$ with an explicit zero-row rule.",
    domain="float16, a fully masked row",
    box="corr-minus-1e9")
def test_the_minus_1e9_sentinel_overflows_to_minus_inf_in_float16():
    with np.errstate(over="ignore"):
        assert np.isneginf(np.float16(-1e9))
    assert float(np.finfo(np.float16).max) == 65504.0  # far above it: -1e9 is not representable
    # a fully masked float16 row filled with the sentinel is all -inf, and the max-subtracted
    # softmax of the seed computes -inf - (-inf) = NaN
    scores = np.zeros((1, 4), dtype=np.float16)
    with np.errstate(over="ignore"):
        filled = np.where(np.zeros((1, 4), bool), scores, np.float16(-1e9))
    assert filled.dtype == np.float16 and np.isneginf(filled).all()
    with np.errstate(invalid="ignore"):
        e = np.exp(filled - filled.max(axis=-1, keepdims=True))
    assert np.isnan(e).all()
    # the -inf convention with a zero-row rule gives zeros in float16 too
    probs = masked_softmax(scores, np.zeros((1, 4), bool))
    assert probs.dtype == np.float16
    assert not probs.any()


def test_float16_finfo_min_plus_a_score_overflows_exactly_from_minus_16():
    # Chapter 04: the finfo.min sentinel absorbs small negative scores and overflows from -16 on.
    lowest = np.finfo(np.float16).min
    every = np.arange(2**16, dtype=np.uint16).view(np.float16)
    scores = every[np.isfinite(every) & (every <= 0)]  # every non-positive float16 score
    with np.errstate(over="ignore"):
        shifted = lowest + scores  # float16 arithmetic
    assert shifted.dtype == np.float16
    assert (shifted[scores > -16] == lowest).all()
    assert np.isneginf(shifted[scores <= -16]).all()
    with np.errstate(over="ignore"):
        assert np.isneginf(lowest + lowest)


@pytest.mark.claim(
    "003 §6.2",
    r"GPT uses the causal mask $\mathrm{Mask}_{ij} = 1$ if $j \le i$, 0 if $j > i$ (lower "
    "triangular, `np.tril`)",
    "verified",
    domain=r"$1 \le B, H \le 3$, $2 \le L \le 9$, $1 \le D \le 4$, every changed suffix: "
           "the mask against `np.tril` and torch's `is_causal`, hypothesis")
@SETTINGS
@given(B=st.integers(1, 3), H=st.integers(1, 3), L=st.integers(2, 9), D=st.integers(1, 4),
       data=st.data())
def test_bert_all_true_mask_masks_nothing_and_gpt_mask_is_causal(B, H, L, D, data):
    # Seed 003: BERT uses Mask_ij = 1 for all i, j (padding aside nothing is masked), GPT the
    # lower triangle.
    t = data.draw(st.integers(1, L - 1), label="first changed position")
    q, k, v = random_qkv(B=B, H=H, L=L, D=D, seed=data.draw(st.integers(0, 2**16), label="seed"))
    bert = np.ones((L, L), dtype=bool)
    out_bert, _ = scaled_dot_product_attention(q, k, v, mask=bert)
    out_none, _ = scaled_dot_product_attention(q, k, v)
    assert_close(out_bert, out_none, name="BERT output")
    # with padding, BERT's mask is just the padding mask
    pad = padding_mask(np.arange(B) % L + 1, L)
    np.testing.assert_array_equal(combine_masks(bert, pad), np.broadcast_to(pad, (B, 1, L, L)))
    # GPT: the lower triangle; changing a later key or value never changes an earlier output row
    np.testing.assert_array_equal(causal_mask(L), np.tril(np.ones((L, L), dtype=bool)))
    out_gpt, _ = scaled_dot_product_attention(q, k, v, mask=causal_mask(L))
    assert_close(out_gpt, F.scaled_dot_product_attention(*to_torch(q, k, v), is_causal=True), name="GPT")
    k2, v2 = k.copy(), v.copy()
    k2[..., t:, :] += 10.0
    v2[..., t:, :] -= 7.0
    out_gpt2, _ = scaled_dot_product_attention(q, k2, v2, mask=causal_mask(L))
    assert_close(out_gpt2[..., :t, :], out_gpt[..., :t, :], name="causal rows before the change")
    assert not np.allclose(out_gpt2[..., t:, :], out_gpt[..., t:, :])


@pytest.mark.claim(
    "003 §6.1",
    r"BERT's attention mask is $\mathrm{Mask}_{ij} = 1$ for all $i, j$ (bidirectional)",
    "corrected",
    correction="All ones only for a sequence without padding. In a padded batch BERT's attention "
               r"mask is the key-padding mask $[j < \mathrm{length}_b]$, bidirectional among the "
               "real tokens; the all-ones mask lets the padding change their outputs.",
    domain="a counterexample: two sequences of lengths 5 and 3 padded to 5",
    box="corr-bert-mask")
def test_an_all_ones_mask_on_a_padded_batch_lets_the_padding_change_the_real_tokens():
    lengths, S = [5, 3], 5
    q, k, v = random_qkv(B=2, H=2, L=S, D=4, seed=7)
    k2, v2 = k.copy(), v.copy()
    k2[1, :, 3:] += 3.0
    v2[1, :, 3:] -= 2.0
    all_ones = np.ones((S, S), dtype=bool)
    out, _ = scaled_dot_product_attention(q, k, v, mask=all_ones)
    out2, _ = scaled_dot_product_attention(q, k2, v2, mask=all_ones)
    assert np.abs(out2 - out)[1, :, :3].max() > 1e-2  # real tokens of sequence 1 moved
    pad = padding_mask(lengths, S)
    out, _ = scaled_dot_product_attention(q, k, v, mask=pad)
    out2, _ = scaled_dot_product_attention(q, k2, v2, mask=pad)
    assert_close(out2[1, :, :3], out[1, :, :3], name="real tokens under the padding mask")


@pytest.mark.claim(
    "002 §8",
    r"Causal attention sets $S_{ij} = -\infty$ for $j > i$; after softmax, future positions have "
    "zero weight",
    "verified",
    domain=r"$1 \le B, H \le 3$, $1 \le L \le 10$, $1 \le D \le 5$, against torch's "
           "`is_causal`, hypothesis")
@pytest.mark.claim(
    "001 Masked (Causal) Attention",
    r"Set future positions to $-\infty$ before softmax to prevent attending to subsequent positions",
    "verified",
    domain=r"$1 \le B, H \le 3$, $1 \le L \le 10$, $1 \le D \le 5$, against torch's "
           "`is_causal`, hypothesis")
@SETTINGS
@given(B=st.integers(1, 3), H=st.integers(1, 3), L=st.integers(1, 10), D=st.integers(1, 5),
       seed=st.integers(0, 2**16))
def test_future_positions_get_exactly_zero_weight_under_the_causal_mask(B, H, L, D, seed):
    q, k, v = random_qkv(B=B, H=H, L=L, D=D, seed=seed)
    out, cache = scaled_dot_product_attention(q, k, v, mask=causal_mask(L))
    future = np.triu(np.ones((L, L), dtype=bool), 1)
    assert (cache.probs[..., future] == 0.0).all()
    assert_close(cache.probs.sum(axis=-1), np.ones((B, H, L)), name="row sums")
    assert_close(out, F.scaled_dot_product_attention(*to_torch(q, k, v), is_causal=True), name="causal output")


def test_the_band_formula_is_not_a_window_of_w_previous_positions():
    # Seed 002 §10 (its claim marker is on tests/attnmath/test_sparse.py::test_causal_window_and_symmetric_band_are_different_patterns).
    n, w = 16, 4
    band = local_mask(n, radius=w // 2)  # |i - j| <= w/2, the formula
    window = sliding_window_mask(n, w)  # w previous positions, itself included
    expected_band = np.array([[abs(i - j) <= w / 2 for j in range(n)] for i in range(n)])
    np.testing.assert_array_equal(band, expected_band)
    assert np.triu(band, 1).any()  # looks ahead
    assert not np.triu(window, 1).any()  # never a future key
    assert (band.sum(axis=1)[w:-w] == w + 1).all()
    assert (window.sum(axis=1)[w:] == w).all()


@pytest.mark.claim(
    "002 §10",
    "Sliding-window attention costs $O(nw)$",
    "verified",
    domain=r"$1 \le n \le 40$, $1 \le w \le 12$, hypothesis: the exact count $n m - m(m - 1)/2$ "
           r"with $m = \min(w, n)$")
@SETTINGS
@given(n=st.integers(1, 40), w=st.integers(1, 12))
def test_a_window_mask_allows_at_most_n_times_w_pairs(n, w):
    allowed = int(sliding_window_mask(n, w).sum())
    m = min(w, n)
    assert allowed == n * m - m * (m - 1) // 2
    assert allowed <= n * w


#: Mistral 7B (Jiang et al., 2023, Table 1): 32 layers, every one with a causal window of 4096.
MISTRAL_LAYERS, MISTRAL_WINDOW = 32, 4096


@pytest.mark.claim(
    "002 §9",
    "Mistral 7B interleaves sliding-window layers with full-attention layers",
    "corrected",
    correction="Mistral 7B uses a sliding window of $W = 4096$ in every layer; tokens farther "
               r"back are reached through the stack of layers: after $\ell$ windowed layers "
               r"position $i$ depends on positions $i - \ell (W - 1)$ to $i$, about "
               "131 000 tokens back after its 32 layers, with no full-attention layer.",
    domain=r"stacks of $1 \le \ell \le 4$ residual windowed self-attention layers with random "
           r"weights, $1 \le n \le 12$ tokens, windows $1 \le w \le 5$, width 3: which inputs "
           r"each output depends on (autograd), against $[\, 0 \le i - j \le \ell (w - 1) \,]$, "
           "hypothesis; the reach at Mistral 7B's published $W$ and layer count",
    chapter="04_masking",
    box="corr-mistral-window")
@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 12), w=st.integers(1, 5), layers=st.integers(1, 4),
       seed=st.integers(0, 2**16))
def test_stacked_window_layers_reach_layers_times_window_minus_one_back(n, w, layers, seed):
    rng = np.random.default_rng(seed)
    weights = [torch.from_numpy(0.5 * rng.standard_normal((3, 3, 3))) for _ in range(layers)]
    allowed = torch.from_numpy(sliding_window_mask(n, w))  # (n, n)

    def stack(x):  # (n, 3): residual windowed self-attention layers, as in a decoder
        for wq_wk_wv in weights:
            q, k, v = (x @ m for m in wq_wk_wv)
            x = x + F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        return x

    jac = torch.autograd.functional.jacobian(stack, torch.from_numpy(rng.standard_normal((n, 3))))
    depends = (jac.abs().sum(dim=(1, 3)) > 0).numpy()  # (n, n): output i reads input j
    distance = np.arange(n)[:, None] - np.arange(n)[None, :]
    assert np.array_equal(depends, (distance >= 0) & (distance <= layers * (w - 1)))
    reach = MISTRAL_LAYERS * (MISTRAL_WINDOW - 1)
    assert 130_000 < reach < 132_000


@SETTINGS
@given(t=st.integers(0, 6), L=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_bottom_right_mask_reproduces_the_last_rows_of_full_causal_attention(t, L, seed):
    q, k, v = random_qkv(B=1, H=2, L=t + L, D=4, seed=seed)
    full, _ = scaled_dot_product_attention(q, k, v, mask=causal_mask(t + L))
    new, _ = scaled_dot_product_attention(q[:, :, t:], k, v,
                                          mask=causal_mask(L, t + L, alignment="bottom_right"))
    assert_close(new, full[:, :, t:], name="bottom-right rows")
    if t > 0:  # top-left hides the cached keys i < j <= t + i from new query i
        wrong, _ = scaled_dot_product_attention(q[:, :, t:], k, v, mask=causal_mask(L, t + L))
        assert not np.allclose(wrong, full[:, :, t:])


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 1e-5), (np.float16, 3e-3)])
def test_fully_masked_rows_are_zero_as_in_torch_in_every_precision(dtype, tol):
    q, k, v = (x.astype(dtype) for x in random_qkv(B=2, H=2, L=4, S=5, D=4, seed=10))
    mask = combine_masks(padding_mask([0, 5], 5), causal_mask(4, 5))  # sequence 0 has no keys
    mask[1, 0, 2] = False  # and one more empty row
    out, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    assert out.dtype == dtype and np.isfinite(out).all()
    assert not out[0].any() and not out[1, :, 2].any()
    expected = F.scaled_dot_product_attention(*to_torch(q, k, v), attn_mask=torch.from_numpy(mask))
    assert_close(out, expected, rtol=tol, atol=tol, name=f"{np.dtype(dtype).name} output")


@SETTINGS
@given(lengths=st.lists(st.integers(0, 7), min_size=1, max_size=5))
def test_left_padding_mask_is_the_padding_mask_flipped_along_the_keys(lengths):
    S = 7
    left = left_padding_mask(np.array(lengths), S)  # (B, 1, 1, S)
    np.testing.assert_array_equal(left, padding_mask(np.array(lengths), S)[..., ::-1])
    np.testing.assert_array_equal(left.sum(axis=-1)[:, 0, 0], lengths)
    assert left.shape == (len(lengths), 1, 1, S)


def test_left_padded_causal_attention_matches_the_unpadded_sequence():
    # A left-padded batch with a causal mask: the real tokens attend exactly as they would alone.
    rng = np.random.default_rng(4)
    lengths, S, D = np.array([5, 2, 0]), 5, 3
    q, k, v = (rng.standard_normal((3, 1, S, D)) for _ in range(3))
    mask = combine_masks(left_padding_mask(lengths, S), causal_mask(S))
    out, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    for b, n in enumerate(lengths):
        if n:
            alone, _ = scaled_dot_product_attention(q[b, :, S - n:], k[b, :, S - n:], v[b, :, S - n:],
                                                    mask=causal_mask(n))
            assert_close(out[b, :, S - n:], alone)
        assert not out[b, :, :S - n].any()  # padding queries see no key: zero rows


def test_left_padding_mask_rejects_bad_lengths():
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, S=4\]"):
        left_padding_mask(np.array([1, 5]), 4)
    with pytest.raises(TypeError, match="lengths must have an integer dtype"):
        left_padding_mask(np.array([1.0]), 4)


@pytest.mark.parametrize("dtype", [int, bool, np.int8, np.uint16, "text"])
def test_mask_to_bias_refuses_a_dtype_that_cannot_hold_minus_infinity(dtype):
    with pytest.raises(TypeError, match="dtype must be a floating"):
        mask_to_bias(np.array([True, False]), dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_mask_to_bias_holds_zero_and_minus_infinity_in_the_requested_dtype(dtype):
    bias = mask_to_bias(np.array([True, False]), dtype=dtype)
    assert bias.dtype == dtype and bias[0] == 0 and np.isneginf(bias[1])
