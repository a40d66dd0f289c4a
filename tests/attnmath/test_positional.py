"""Tests for attnmath.positional: sinusoidal encodings, RoPE (both pairings) and ALiBi."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnmath.attention import scaled_dot_product_attention
from attnmath.masking import causal_mask, left_padding_mask
from attnmath.positional import (
    alibi_bias,
    alibi_bias_symmetric,
    alibi_slopes,
    apply_rope,
    apply_rope_half,
    apply_rope_half_inverse,
    apply_rope_inverse,
    half_to_interleaved,
    interleaved_to_half,
    relative_rotation_matrix,
    rope_angles,
    sinusoidal_dot_product,
    sinusoidal_encoding,
    sinusoidal_frequencies,
)
from attnmath.softmax import softmax
from attnmath.testing import assert_close, check_gradient, random_qkv, to_torch
from attnmath.theory import (
    key_value_permutation_gap,
    permutation_equivariance_gap,
    permutation_invariance_gap,
)

SETTINGS = settings(max_examples=30, deadline=None)
even_widths = st.sampled_from([2, 4, 6, 8, 16, 32])


# ----------------------------------------------------------------------------------------------
# independent oracles
# ----------------------------------------------------------------------------------------------


def formula_encoding(L, C, base=10000.0):
    """The paper's definition, one entry at a time."""
    pe = np.zeros((L, C))
    for pos in range(L):
        for i in range(C // 2):
            angle = pos / math.pow(base, 2 * i / C)
            pe[pos, 2 * i] = math.sin(angle)
            pe[pos, 2 * i + 1] = math.cos(angle)
    return pe


def source_document_encoding(max_len, d_model):
    """The source document's vectorised version (exp/log form of the frequencies)."""
    PE = np.zeros((max_len, d_model))
    position = np.arange(max_len)[:, np.newaxis]
    div_term = np.exp(np.arange(0, d_model, 2) * -(np.log(10000.0) / d_model))
    PE[:, 0::2] = np.sin(position * div_term)
    PE[:, 1::2] = np.cos(position * div_term)
    return PE


def source_document_rope(q, k, positions, d_model):
    """The source document's RoPE (interleaved pairs (2i, 2i+1)), as written there."""
    assert d_model % 2 == 0
    inv_freq = 1.0 / (10000 ** (np.arange(0, d_model, 2) / d_model))
    angles = positions[:, np.newaxis] * inv_freq[np.newaxis, :]
    cos_angles = np.cos(angles)
    sin_angles = np.sin(angles)

    def apply_rotation(x, cos, sin):
        x_rot = np.zeros_like(x)
        x_rot[:, 0::2] = x[:, 0::2] * cos - x[:, 1::2] * sin
        x_rot[:, 1::2] = x[:, 0::2] * sin + x[:, 1::2] * cos
        return x_rot

    return apply_rotation(q, cos_angles, sin_angles), apply_rotation(k, cos_angles, sin_angles)


def formula_angles(positions, D, base=10000.0):
    return np.array([[m * math.pow(base, -2 * i / D) for i in range(D // 2)] for m in positions])


def complex_rope_interleaved(x, positions, base=10000.0):
    """x_{2i} + i x_{2i+1} multiplied by exp(i m theta_i)."""
    D = x.shape[-1]
    z = x[..., 0::2] + 1j * x[..., 1::2]
    z = z * np.exp(1j * formula_angles(positions, D, base))
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def complex_rope_half(x, positions, base=10000.0):
    """x_i + i x_{i + D/2} multiplied by exp(i m theta_i)."""
    D = x.shape[-1]
    z = (x[..., : D // 2] + 1j * x[..., D // 2 :]) * np.exp(1j * formula_angles(positions, D, base))
    return np.concatenate([z.real, z.imag], axis=-1)


def torch_rope_interleaved(x, angles):
    cos, sin = torch.cos(angles), torch.sin(angles)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def torch_rope_half(x, angles):
    """The GPT-NeoX / LLaMA form: x * cos + rotate_half(x) * sin."""
    D = x.shape[-1]
    cos, sin = torch.cos(torch.cat([angles, angles], -1)), torch.sin(torch.cat([angles, angles], -1))
    rotated = torch.cat([-x[..., D // 2 :], x[..., : D // 2]], dim=-1)
    return x * cos + rotated * sin


def reference_alibi_slopes(H):
    """The reference rule, written recursively with logarithms (as the authors' code does)."""
    def power_of_two(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(H).is_integer():
        return power_of_two(H)
    closest = 2 ** math.floor(math.log2(H))
    return power_of_two(closest) + reference_alibi_slopes(2 * closest)[0::2][: H - closest]


# ----------------------------------------------------------------------------------------------
# sinusoidal encoding
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("L, C, base", [(1, 2, 10000.0), (17, 8, 10000.0), (50, 32, 10000.0), (9, 6, 100.0)])
def test_sinusoidal_encoding_matches_the_papers_formula(L, C, base):
    assert_close(sinusoidal_encoding(L, C, base=base), formula_encoding(L, C, base), name="PE")


@pytest.mark.claim(
    "003 §4.2",
    r"$\mathrm{PE}(\mathrm{pos}, 2i) = \sin(\mathrm{pos} / 10000^{2i/d_{\mathrm{model}}})$, "
    r"$\mathrm{PE}(\mathrm{pos}, 2i+1) = \cos(\mathrm{pos} / 10000^{2i/d_{\mathrm{model}}})$",
    "verified",
    domain=r"1 to 300 positions, every even $2 \le d_{\mathrm{model}} \le 256$, against the "
           "source's own code and the formula written out entry by entry, hypothesis")
@SETTINGS
@given(n=st.integers(1, 300), half=st.integers(1, 128), data=st.data())
def test_sinusoidal_encoding_matches_the_source_documents_code(n, half, data):
    C = 2 * half
    pe = sinusoidal_encoding(n, C)
    assert_close(pe, source_document_encoding(n, C), rtol=1e-9, atol=1e-12)
    pos, i = data.draw(st.integers(0, n - 1), label="pos"), data.draw(st.integers(0, half - 1), label="i")
    angle = pos / 10000 ** (2 * i / C)
    assert pe[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-12)
    assert pe[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-12)


def test_sinusoidal_frequencies_match_the_formula():
    C, base = 12, 500.0
    expected = np.array([math.pow(base, -2 * i / C) for i in range(C // 2)])
    assert_close(sinusoidal_frequencies(C, base=base), expected)


def test_position_zero_encodes_as_alternating_zero_and_one():
    pe = sinusoidal_encoding(1, 10)[0]
    assert_close(pe, np.tile([0.0, 1.0], 5))


def test_source_documents_code_breaks_on_odd_width_and_library_says_why():
    with pytest.raises(ValueError):  # broadcasting error: 3 cosine columns, 4 frequencies
        source_document_encoding(4, 7)
    with pytest.raises(ValueError, match="C must be even.*C=7"):
        sinusoidal_encoding(4, 7)


@pytest.mark.claim(
    "003 §4.3",
    r"$\mathrm{PE}_{\mathrm{pos}+k} = T_k \cdot \mathrm{PE}_{\mathrm{pos}}$: a shift by $k$ is a "
    "linear map of the encoding, the same at every position",
    "verified",
    domain=r"$0 \le \mathrm{pos} \le 300$, $-300 \le k \le 300$, $C \in \{2, 4, 6, 8, 16, 32\}$, "
           "hypothesis")
@SETTINGS
@given(pos=st.integers(0, 300), k=st.integers(-300, 300), C=even_widths)
def test_relative_rotation_matrix_shifts_the_encoding_at_every_position(pos, k, C):
    if pos + k < 0:
        pos = -k
    pe = sinusoidal_encoding(pos + max(k, 0) + 1, C)
    T = relative_rotation_matrix(k, C)
    assert_close(T @ pe[pos], pe[pos + k], atol=1e-11, name="T_k PE_pos")


def test_relative_rotation_matrix_shifts_all_rows_at_once_with_the_row_convention():
    pe = sinusoidal_encoding(40, 16)
    k = 7
    assert_close(pe[:-k] @ relative_rotation_matrix(k, 16).T, pe[k:], atol=1e-12)


def test_relative_rotation_matrix_is_block_diagonal_with_the_derived_blocks():
    C, k = 8, 3
    omega = [math.pow(10000.0, -2 * i / C) for i in range(C // 2)]
    expected = np.zeros((C, C))
    for i, w in enumerate(omega):
        c, s = math.cos(w * k), math.sin(w * k)
        expected[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    assert_close(relative_rotation_matrix(k, C), expected)


@pytest.mark.claim(
    "003 §4.3",
    "$T_k$ is a rotation matrix (for each frequency)",
    "clarified",
    correction=r"True: $T_k$ is a rotation, by $-\omega k$, in the stored $(\sin, \cos)$ "
               "coordinates (blocks "
               r"$[[\cos \omega k, \sin \omega k], [-\sin \omega k, \cos \omega k]]$). The usual "
               r"counterclockwise rotation by $+\omega k$ (the one RoPE uses) maps "
               r"$\mathrm{PE}_{\mathrm{pos}}$ to $\mathrm{PE}_{\mathrm{pos}-k}$ instead.",
    domain=r"$C = 8$, $\mathrm{pos} = 20$, $k = 5$: both rotation blocks, against the shifted "
           "encodings",
    box="corr-rotation")
def test_counterclockwise_rotation_block_shifts_the_encoding_backwards():
    """With the (sin, cos) ordering, the textbook block [[cos, -sin], [sin, cos]] gives PE_{pos-k}."""
    C, pos, k = 8, 20, 5
    omega = sinusoidal_frequencies(C)
    wrong = np.zeros((C, C))
    for i, w in enumerate(omega):
        c, s = math.cos(w * k), math.sin(w * k)
        wrong[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, -s], [s, c]]
    pe = sinusoidal_encoding(pos + k + 1, C)
    assert not np.allclose(wrong @ pe[pos], pe[pos + k])
    assert_close(wrong @ pe[pos], pe[pos - k], atol=1e-12)


@SETTINGS
@given(a=st.integers(-500, 500), b=st.integers(-500, 500), C=even_widths)
def test_relative_rotation_matrices_are_orthogonal_and_compose_by_adding_shifts(a, b, C):
    Ta, Tb = relative_rotation_matrix(a, C), relative_rotation_matrix(b, C)
    assert_close(Ta @ Ta.T, np.eye(C), atol=1e-12, name="T T^T")
    assert_close(Ta @ Tb, relative_rotation_matrix(a + b, C), atol=1e-11, name="T_a T_b")
    assert_close(relative_rotation_matrix(-a, C), Ta.T, atol=1e-12, name="T_-a")
    assert_close(relative_rotation_matrix(0, C), np.eye(C))


@pytest.mark.claim(
    "003 Problem 3",
    r"The inner product $\mathrm{PE}_{\mathrm{pos}_1} \cdot \mathrm{PE}_{\mathrm{pos}_2}$ is a "
    "function of the position difference",
    "verified",
    domain=r"$0 \le \mathrm{pos}, k \le 400$, $C \in \{2, \dots, 32\}$, hypothesis")
@SETTINGS
@given(pos=st.integers(0, 400), k=st.integers(0, 400), C=even_widths)
def test_encoding_dot_product_depends_only_on_the_offset(pos, k, C):
    pe = sinusoidal_encoding(pos + k + 1, C)
    expected = float(pe[pos] @ pe[pos + k])
    assert_close(sinusoidal_dot_product(C, k), np.asarray(expected), atol=1e-11)
    assert_close(sinusoidal_dot_product(C, k), np.asarray(float(pe[0] @ pe[k])), atol=1e-11)


@SETTINGS
@given(k=st.integers(-2000, 2000), C=even_widths)
def test_encoding_dot_product_cannot_tell_before_from_after(k, C):
    assert_close(sinusoidal_dot_product(C, k), sinusoidal_dot_product(C, -k), atol=1e-12)
    pe = sinusoidal_encoding(2 * abs(k) + 1, C)
    centre = abs(k)
    assert_close(pe[centre] @ pe[centre + k], pe[centre] @ pe[centre - k], atol=1e-11)


def test_encoding_dot_product_is_largest_at_offset_zero_and_equals_half_the_width():
    C = 64
    f = sinusoidal_dot_product(C, np.arange(-3000, 3001))
    assert f[3000] == pytest.approx(C / 2, abs=1e-12)
    assert np.all(np.delete(f, 3000) < C / 2)


def test_encoding_dot_product_decays_on_average_but_not_monotonically():
    C = 128
    f = sinusoidal_dot_product(C, np.arange(0, 2000))
    window_means = [f[a:b].mean() for a, b in [(1, 10), (10, 100), (100, 1000), (1000, 2000)]]
    assert np.all(np.diff(window_means) < 0)
    increases = np.flatnonzero(np.diff(f) > 0)
    assert increases.size > 0  # not monotone
    k = int(increases[0])
    assert f[k + 1] > f[k]
    assert f.min() < 0  # far offsets can even score below orthogonal


def test_sinusoidal_functions_reject_bad_input():
    with pytest.raises(ValueError, match="L must be >= 1, got 0"):
        sinusoidal_encoding(0, 8)
    with pytest.raises(ValueError, match="C must be even"):
        sinusoidal_frequencies(9)
    with pytest.raises(ValueError, match="base must be > 0"):
        sinusoidal_encoding(4, 8, base=-1.0)
    with pytest.raises(TypeError, match="k must be an integer, got float"):
        relative_rotation_matrix(1.5, 8)
    with pytest.raises(ValueError, match="C must be even.*C=3"):
        relative_rotation_matrix(1, 3)
    with pytest.raises(TypeError, match="offsets must have an integer dtype"):
        sinusoidal_dot_product(8, np.array([0.5, 1.0]))


# ----------------------------------------------------------------------------------------------
# RoPE
# ----------------------------------------------------------------------------------------------


def test_rope_angles_match_the_formula():
    positions = np.array([0, 3, 11, 2, 100])
    assert_close(rope_angles(positions, 10, base=500.0), formula_angles(positions, 10, 500.0))


def test_apply_rope_matches_complex_multiplication():
    q, _, _ = random_qkv(B=2, H=3, L=6, D=16, seed=1)
    positions = np.array([5, 0, 17, 3, 3, 250])  # unsorted, repeated
    assert_close(apply_rope(q, positions), complex_rope_interleaved(q, positions), atol=1e-12)


def test_apply_rope_half_matches_complex_multiplication_on_half_pairs():
    q, _, _ = random_qkv(B=1, H=2, L=5, D=12, seed=2)
    positions = np.arange(5) * 7
    assert_close(apply_rope_half(q, positions, base=1000.0),
                 complex_rope_half(q, positions, base=1000.0), atol=1e-12)


@pytest.mark.claim(
    "003 §4.4",
    r"RoPE rotates each 2-D subspace $(q_{2i}, q_{2i+1})$ by the angle $m \theta_i$",
    "verified",
    domain=r"1 to 16 tokens at arbitrary positions in $[0, 10^4]$, every even "
           r"$2 \le d_{\mathrm{model}} \le 128$, against the source's own code, hypothesis")
@SETTINGS
@given(n=st.integers(1, 16), half=st.integers(1, 64), seed=st.integers(0, 2**16))
def test_apply_rope_matches_the_source_documents_code_on_the_interleaved_convention(n, half, seed):
    rng = np.random.default_rng(seed)
    d_model = 2 * half
    q, k = rng.standard_normal((n, d_model)), rng.standard_normal((n, d_model))
    positions = rng.integers(0, 10_001, n)
    q_doc, k_doc = source_document_rope(q, k, positions, d_model)
    # angles up to 10^4 rad: both codes round m theta_i, to about 10^4 eps each
    assert_close(apply_rope(q, positions), q_doc, atol=1e-10, name="q")
    assert_close(apply_rope(k, positions), k_doc, atol=1e-10, name="k")
    if d_model > 2 and positions.any():  # the half pairing is another rotation of the same vector
        assert not np.allclose(apply_rope_half(q, positions), q_doc)


@pytest.mark.claim(
    "003 §4.4",
    "With RoPE the inner product of query and key depends only on their relative position",
    "verified",
    domain=r"positions $0 \le m, n \le 1000$, shifts from $-500$ to 500, $D \in \{2, \dots, 32\}$, "
           "both pairings (interleaved and half), hypothesis")
@SETTINGS
@given(m=st.integers(0, 1000), n=st.integers(0, 1000), shift=st.integers(-500, 500),
       D=even_widths, seed=st.integers(0, 2**16))
def test_rope_score_depends_only_on_offset(m, n, shift, D, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((1, D)), rng.standard_normal((1, D))
    for rope in (apply_rope, apply_rope_half):
        score = float(np.sum(rope(q, [m]) * rope(k, [n])))
        shifted = float(np.sum(rope(q, [m + shift]) * rope(k, [n + shift])))
        relative = float(np.sum(q * rope(k, [n - m])))
        assert shifted == pytest.approx(score, abs=1e-9)
        assert relative == pytest.approx(score, abs=1e-9)


@SETTINGS
@given(D=even_widths, L=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_rope_preserves_norms_and_is_undone_by_its_inverse(D, L, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, L, D))
    positions = rng.integers(-1000, 1000, size=L)
    for rope, inverse in ((apply_rope, apply_rope_inverse), (apply_rope_half, apply_rope_half_inverse)):
        y = rope(x, positions)
        assert_close(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-12)
        assert_close(inverse(y, positions), x, atol=1e-12)


def test_rope_at_position_zero_is_the_identity():
    x, _, _ = random_qkv(B=1, H=2, L=4, D=8, seed=4)
    zeros = np.zeros(4, dtype=np.int64)
    assert np.array_equal(apply_rope(x, zeros), x)
    assert np.array_equal(apply_rope_half(x, zeros), x)


def test_rope_inverse_is_rope_at_negated_positions():
    x, _, _ = random_qkv(B=1, H=1, L=5, D=8, seed=5)
    positions = np.array([1, 4, 9, 16, 25])
    assert_close(apply_rope_inverse(x, positions), apply_rope(x, -positions), atol=1e-14)


@pytest.mark.parametrize("rope, inverse, torch_rope", [
    (apply_rope, apply_rope_inverse, torch_rope_interleaved),
    (apply_rope_half, apply_rope_half_inverse, torch_rope_half),
])
def test_rope_forward_and_gradient_match_torch_autograd(rope, inverse, torch_rope):
    x, dout, _ = random_qkv(B=2, H=2, L=7, D=10, seed=6)
    positions = np.array([0, 1, 2, 50, 51, 400, 3])
    xt = to_torch(x, requires_grad=True)
    angles = to_torch(formula_angles(positions, 10))
    yt = torch_rope(xt, angles)
    assert_close(rope(x, positions), yt, atol=1e-12, name="forward")
    (yt * to_torch(dout)).sum().backward()
    assert_close(inverse(dout, positions), xt.grad, atol=1e-12, name="dx")


@pytest.mark.parametrize("rope, inverse", [(apply_rope, apply_rope_inverse),
                                           (apply_rope_half, apply_rope_half_inverse)])
def test_rope_gradient_matches_central_differences(rope, inverse):
    x, dout, _ = random_qkv(B=1, H=2, L=3, D=6, seed=7)
    positions = np.array([2, 7, 30])
    check_gradient(lambda z: float(np.sum(rope(z, positions) * dout)), x,
                   inverse(dout, positions), name="x")


def test_interleaved_to_half_is_the_stated_permutation_and_is_undone():
    x = np.arange(8, dtype=np.float64)
    assert np.array_equal(interleaved_to_half(x), [0, 2, 4, 6, 1, 3, 5, 7])
    assert np.array_equal(half_to_interleaved(x), [0, 4, 1, 5, 2, 6, 3, 7])
    y = np.random.default_rng(8).standard_normal((3, 4, 10))
    assert np.array_equal(half_to_interleaved(interleaved_to_half(y)), y)
    assert np.array_equal(interleaved_to_half(half_to_interleaved(y)), y)


@SETTINGS
@given(D=even_widths, seed=st.integers(0, 2**16))
def test_half_pairing_is_the_interleaved_rotation_after_a_permutation(D, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 5, D))
    positions = rng.integers(0, 2000, size=5)
    assert_close(apply_rope_half(interleaved_to_half(x), positions),
                 interleaved_to_half(apply_rope(x, positions)), atol=1e-12)


def test_both_pairings_give_the_same_scores_after_permuting_the_weight_columns():
    rng = np.random.default_rng(9)
    L, C, D = 9, 12, 8
    tokens = rng.standard_normal((L, C))
    w_q, w_k = rng.standard_normal((C, D)), rng.standard_normal((C, D))
    positions = np.arange(L)
    scores_interleaved = apply_rope(tokens @ w_q, positions) @ apply_rope(tokens @ w_k, positions).T
    w_q_half, w_k_half = interleaved_to_half(w_q), interleaved_to_half(w_k)  # permute columns
    scores_half = (apply_rope_half(tokens @ w_q_half, positions)
                   @ apply_rope_half(tokens @ w_k_half, positions).T)
    assert_close(scores_half, scores_interleaved, rtol=1e-10, atol=1e-10)
    # The same weights under the other pairing give other scores: the deviation is not harmless.
    scores_mixed = apply_rope_half(tokens @ w_q, positions) @ apply_rope_half(tokens @ w_k, positions).T
    assert not np.allclose(scores_mixed, scores_interleaved, atol=1e-3)


def test_rope_attention_output_is_unchanged_when_all_positions_shift():
    q, k, v = random_qkv(B=1, H=2, L=6, D=8, seed=10)
    positions = np.arange(6)
    mask = causal_mask(6)
    out, _ = scaled_dot_product_attention(apply_rope(q, positions), apply_rope(k, positions), v, mask=mask)
    out_shifted, _ = scaled_dot_product_attention(apply_rope(q, positions + 123),
                                                  apply_rope(k, positions + 123), v, mask=mask)
    assert_close(out_shifted, out, atol=1e-11)


def test_rope_rejects_bad_input():
    x = np.zeros((2, 4, 7))
    with pytest.raises(ValueError, match="D=7"):
        apply_rope(x, np.arange(4))
    with pytest.raises(ValueError, match="D=7"):
        apply_rope_half(x, np.arange(4))
    with pytest.raises(ValueError, match="D must be even.*D=5"):
        rope_angles(np.arange(3), 5)
    x = np.zeros((2, 4, 8))
    with pytest.raises(TypeError, match="positions must have an integer dtype, got float64"):
        apply_rope(x, np.arange(4.0))
    with pytest.raises(ValueError, match=r"per-sequence positions must have shape \(B, L\)"):
        apply_rope(x, np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match=r"positions must have length L=4 .*got shape \(3,\)"):
        apply_rope_inverse(x, np.arange(3))
    with pytest.raises(ValueError, match="x must have shape"):
        apply_rope(np.zeros(8), np.arange(1))
    with pytest.raises(TypeError, match="x must have a floating dtype"):
        apply_rope(np.zeros((4, 8), dtype=np.int64), np.arange(4))
    with pytest.raises(ValueError, match="D=5"):
        interleaved_to_half(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="D=3"):
        half_to_interleaved(np.zeros(3))


# ----------------------------------------------------------------------------------------------
# ALiBi
# ----------------------------------------------------------------------------------------------


def test_alibi_slopes_for_eight_heads_are_the_powers_of_one_half():
    assert_close(alibi_slopes(8), np.array([1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256]))


def test_alibi_slopes_for_six_heads_interleave_the_eight_head_slopes():
    # four heads: 2^-2, 2^-4, 2^-6, 2^-8; then every other eight-head slope 2^-1, 2^-3 (first two)
    assert_close(alibi_slopes(6), np.array([1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8]))
    assert_close(alibi_slopes(6), np.array(reference_alibi_slopes(6)))


def test_alibi_slopes_for_twelve_heads_add_half_integer_powers():
    expected = [2.0**-e for e in (1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5)]
    assert_close(alibi_slopes(12), np.array(expected))
    assert_close(alibi_slopes(12), np.array(reference_alibi_slopes(12)))


@SETTINGS
@given(H=st.integers(1, 100))
def test_alibi_slopes_follow_the_reference_rule_for_any_head_count(H):
    slopes = alibi_slopes(H)
    assert slopes.shape == (H,)
    assert_close(slopes, np.array(reference_alibi_slopes(H)), rtol=1e-12)
    assert np.all((slopes > 0) & (slopes < 1))
    assert len(np.unique(slopes)) == H


@pytest.mark.parametrize("H", [1, 2, 4, 16, 32])
def test_alibi_slopes_for_a_power_of_two_are_geometric_from_two_to_minus_eight_over_h(H):
    slopes = alibi_slopes(H)
    ratio = 2.0 ** (-8.0 / H)
    assert slopes[0] == pytest.approx(ratio, rel=1e-14)
    assert_close(slopes[1:] / slopes[:-1], np.full(H - 1, ratio), rtol=1e-12)
    assert slopes[-1] == pytest.approx(2.0**-8, rel=1e-12)


@pytest.mark.parametrize("L, S, alignment", [(6, 6, "top_left"), (4, 7, "top_left"), (7, 4, "top_left"),
                                             (4, 7, "bottom_right"), (5, 5, "bottom_right")])
def test_alibi_attention_matches_torch_with_float_bias_and_causal_mask(L, S, alignment):
    H = 6
    q, k, v = random_qkv(B=2, H=H, L=L, S=S, D=8, seed=11)
    bias = alibi_bias(H, L, S, alignment=alignment)
    mask = causal_mask(L, S, alignment=alignment)
    out, _ = scaled_dot_product_attention(q, k, v, mask=mask, bias=bias)
    attn_mask = torch.from_numpy(bias).masked_fill(~torch.from_numpy(mask), float("-inf"))
    expected = F.scaled_dot_product_attention(*to_torch(q, k, v), attn_mask=attn_mask)
    assert_close(out, expected, rtol=1e-10, atol=1e-12)


def test_symmetric_alibi_attention_matches_torch_with_float_bias():
    H, L, S = 4, 5, 8
    q, k, v = random_qkv(B=2, H=H, L=L, S=S, D=8, seed=12)
    bias = alibi_bias_symmetric(H, L, S, alignment="bottom_right")
    out, _ = scaled_dot_product_attention(q, k, v, bias=bias)
    expected = F.scaled_dot_product_attention(*to_torch(q, k, v), attn_mask=torch.from_numpy(bias))
    assert_close(out, expected, rtol=1e-10, atol=1e-12)


def test_alibi_bias_matches_minus_slope_times_distance_entry_by_entry():
    H, L, S = 3, 4, 6
    slopes = reference_alibi_slopes(H)
    for alignment, offset in (("top_left", 0), ("bottom_right", S - L)):
        causal = alibi_bias(H, L, S, alignment=alignment)
        symmetric = alibi_bias_symmetric(H, L, S, alignment=alignment)
        for h in range(H):
            for i in range(L):
                for j in range(S):
                    d = i + offset - j
                    assert symmetric[h, i, j] == pytest.approx(-slopes[h] * abs(d), abs=1e-15)
                    assert causal[h, i, j] == pytest.approx(-slopes[h] * d if d >= 0 else 0.0, abs=1e-15)


@SETTINGS
@given(H=st.integers(1, 12), L=st.integers(1, 12), S=st.integers(1, 12),
       alignment=st.sampled_from(["top_left", "bottom_right"]))
def test_alibi_bias_depends_only_on_distance_and_is_largest_for_the_nearest_key(H, L, S, alignment):
    bias = alibi_bias_symmetric(H, L, S, alignment=alignment)
    assert bias.shape == (H, L, S)
    if L > 1 and S > 1:  # Toeplitz: constant along diagonals
        assert np.array_equal(bias[:, 1:, 1:], bias[:, :-1, :-1])
    assert np.all(bias <= 0)
    allowed = causal_mask(L, S, alignment=alignment)
    causal = alibi_bias(H, L, S, alignment=alignment)
    assert np.array_equal(np.where(allowed, causal, 0.0), np.where(allowed, bias, 0.0))
    for i in range(L):
        visible = np.flatnonzero(allowed[i])
        if visible.size:  # among visible keys the newest has the largest bias
            assert np.all(np.argmax(causal[:, i, visible], axis=-1) == visible.size - 1)


@pytest.mark.claim(
    "003 §4.5",
    r"ALiBi scores: $\softmax(q_i K^\top / \sqrt{d_k}$ $+ m \cdot [0, -1, -2, \dots, -(i-1)])$",
    "corrected",
    correction=r"Read as a row over the keys $1, \dots, i$ this favours the oldest key and "
               r"penalises the recent ones. ALiBi's row is $m \cdot [-(i-1), \dots, -1, 0]$: key "
               "$j$ gets $-m (i - j)$, zero for the query's own position.",
    domain="a counterexample: slope 0.5, query 7",
    box="corr-alibi-sign")
def test_source_documents_alibi_row_favours_the_oldest_key_instead_of_the_newest():
    """softmax(q_i K^T + m [0, -1, ..., -(i-1)]) read as key j -> -m j penalises recent keys."""
    m, i = 0.5, 7  # query i sees keys 0 .. i
    zero_scores = np.zeros(i + 1)  # isolate the bias' effect
    j = np.arange(i + 1)
    as_written = softmax(zero_scores + m * -j)  # m * [0, -1, ..., -i]
    paper = softmax(zero_scores - m * (i - j))  # m * [-i, ..., -1, 0]
    assert_close(alibi_bias(1, i + 1)[0, i], -alibi_slopes(1)[0] * (i - j))
    assert np.argmax(as_written) == 0 and np.argmax(paper) == i
    assert_close(as_written, paper[::-1])  # mirror images, not the same distribution
    assert not np.allclose(as_written, paper)
    # The reference code's row +m j is right: it differs from -m (i - j) by a constant per row.
    assert_close(softmax(zero_scores + m * j), paper)


def test_alibi_rejects_bad_input():
    with pytest.raises(ValueError, match="H must be >= 1, got 0"):
        alibi_slopes(0)
    with pytest.raises(TypeError, match="H must be an integer, got float"):
        alibi_slopes(8.0)
    with pytest.raises(ValueError, match="H must be >= 1, got -2"):
        alibi_bias(-2, 4)
    with pytest.raises(ValueError, match="L must be >= 1, got 0"):
        alibi_bias(4, 0)
    with pytest.raises(ValueError, match="S must be >= 1, got 0"):
        alibi_bias_symmetric(4, 3, 0)
    with pytest.raises(ValueError, match="alignment must be one of"):
        alibi_bias(4, 3, alignment="bottom")


# ----------------------------------------------------------------------------------------------
# why positions: permutation symmetry, and how much relative position each encoding keeps
# ----------------------------------------------------------------------------------------------


@pytest.mark.claim(
    "003 §4.1",
    "The attention mechanism is permutation-invariant: changing the input order changes the output "
    "in the same way",
    "corrected",
    correction="That behaviour is permutation equivariance, "
               r"$\operatorname{Attn}(PX) = P \operatorname{Attn}(X)$; the output is not "
               "invariant, its rows move with the tokens.",
    domain="$L = 6$, $H = 2$, $D = 4$, every permutation of 6 tokens, hypothesis",
    box="corr-equivariant-positional")
@SETTINGS
@given(seed=st.integers(0, 2**16), perm=st.permutations(list(range(6))))
def test_attention_without_positions_is_permutation_equivariant_not_invariant(seed, perm):
    # Seed 000 makes the same claim; its marker is on tests/attnmath/test_theory.py::test_self_attention_is_not_permutation_invariant.
    perm = np.array(perm)
    q, k, v = random_qkv(B=1, H=2, L=6, D=4, seed=seed)
    assert permutation_equivariance_gap(q, k, v, perm) < 1e-13
    assert key_value_permutation_gap(q, k, v, perm) < 1e-13
    if not np.array_equal(perm, np.arange(6)):
        assert permutation_invariance_gap(q, k, v, perm) > 1e-3


def test_adding_a_positional_encoding_breaks_permutation_equivariance():
    rng = np.random.default_rng(13)
    L, C, D = 6, 8, 4
    x = rng.standard_normal((L, C))
    w_q, w_k, w_v = rng.standard_normal((3, C, D))
    perm = np.array([2, 0, 1, 5, 3, 4])

    def layer(tokens):
        h = tokens + sinusoidal_encoding(L, C)
        return scaled_dot_product_attention(h @ w_q, h @ w_k, h @ w_v)[0]

    assert np.abs(layer(x[perm]) - layer(x)[perm]).max() > 1e-2


def test_rope_and_alibi_scores_depend_on_the_offset_only_and_added_sinusoids_do_not():
    rng = np.random.default_rng(5)
    C, D = 64, 16
    w_q, w_k = rng.standard_normal((2, C, D)) / np.sqrt(C)
    x, y = rng.standard_normal((2, C))
    pe = sinusoidal_encoding(2100, C)
    deltas = np.arange(-20, 21)
    starts = np.arange(50, 2001, 50)
    added = np.array([((x + pe[p]) @ w_q) @ ((y + pe[p + deltas]) @ w_k).T for p in starts])
    rope = np.array([apply_rope((x @ w_q)[None], [p]) @ apply_rope(np.repeat((y @ w_k)[None], deltas.size, 0),
                                                                     p + deltas).T for p in starts])[:, 0]
    bias = alibi_bias_symmetric(1, 2100)[0]
    alibi = np.array([float((x @ w_q) @ (y @ w_k)) + bias[p, p + deltas] for p in starts])
    spread = lambda s: (s.max(axis=0) - s.min(axis=0)).max()  # over start positions
    assert spread(rope) < 1e-11 and spread(alibi) < 1e-12
    assert spread(added) > 1.0


# ------------------------------------------------------------------------------------------
# Per-sequence positions (left padding, packing) and dtypes
# ------------------------------------------------------------------------------------------


def _hf_rope(x, position_ids, base):
    """Hugging Face LLaMA's convention, written out in torch: cos/sin of shape (B, L, D) from
    position_ids (B, L), unsqueezed over the heads, and rotate_half pairing."""
    x, pos = torch.from_numpy(x), torch.from_numpy(position_ids)
    D = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.float64) / D))  # (D/2,)
    freqs = pos[..., None].double() * inv_freq  # (B, L, D/2)
    emb = torch.cat([freqs, freqs], dim=-1)  # (B, L, D)
    cos, sin = emb.cos()[:, None], emb.sin()[:, None]  # (B, 1, L, D)
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin  # (B, H, L, D)


@SETTINGS
@given(B=st.integers(1, 3), H=st.integers(1, 3), L=st.integers(1, 6), half_D=st.integers(1, 4),
       seed=st.integers(0, 10_000))
def test_rope_half_with_per_sequence_positions_matches_hugging_face_position_ids(B, H, L, half_D, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, H, L, 2 * half_D))
    position_ids = rng.integers(-5, 50, size=(B, L))
    assert_close(apply_rope_half(x, position_ids, base=500.0), _hf_rope(x, position_ids, 500.0))


@SETTINGS
@given(lengths=st.lists(st.integers(0, 6), min_size=1, max_size=4), seed=st.integers(0, 10_000))
def test_left_padded_tokens_are_rotated_as_the_unpadded_sequence(lengths, seed):
    rng = np.random.default_rng(seed)
    B, L, D = len(lengths), 6, 4
    x = rng.standard_normal((B, 2, L, D))
    valid = left_padding_mask(np.array(lengths), L)[:, 0, 0, :]  # (B, L)
    position_ids = np.where(valid, np.cumsum(valid, axis=-1) - 1, 1)  # Hugging Face's rule
    for rope in (apply_rope, apply_rope_half):
        out = rope(x, position_ids)
        for b, n in enumerate(lengths):
            alone = rope(x[b, :, L - n:], np.arange(n))  # the sequence without its padding
            np.testing.assert_array_equal(out[b, :, L - n:], alone)


def test_packed_sequences_are_rotated_as_if_each_stood_alone():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 7, 8))
    position_ids = np.array([[0, 1, 2, 0, 1, 2, 3]])  # two documents packed in one row
    out = apply_rope(x, position_ids)
    np.testing.assert_array_equal(out[0, :, :3], apply_rope(x[0, :, :3], np.arange(3)))
    np.testing.assert_array_equal(out[0, :, 3:], apply_rope(x[0, :, 3:], np.arange(4)))
    assert_close(apply_rope_inverse(out, position_ids), x)
    assert_close(apply_rope_half_inverse(apply_rope_half(x, position_ids), position_ids), x)


def test_per_sequence_positions_need_the_batch_axis_first():
    with pytest.raises(ValueError, match=r"per-sequence positions must have shape \(B, L\)"):
        apply_rope(np.zeros((2, 3, 4)), np.zeros((3, 3), dtype=np.int64))
    with pytest.raises(ValueError, match=r"per-sequence positions must have shape \(B, L\)"):
        apply_rope(np.zeros((3, 4)), np.zeros((1, 3), dtype=np.int64))
    with pytest.raises(ValueError, match=r"positions must have shape \(L,\) or \(B, L\)"):
        apply_rope(np.zeros((1, 2, 3, 4)), np.zeros((1, 2, 3), dtype=np.int64))
    assert rope_angles(np.zeros((2, 3), dtype=np.int64), 4).shape == (2, 3, 2)


@pytest.mark.parametrize("rope", [apply_rope, apply_rope_half, apply_rope_inverse, apply_rope_half_inverse])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_rope_returns_the_input_dtype_and_rotates_half_precision_in_float32(rope, dtype):
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 8)).astype(dtype)
    pos = np.arange(5) * 97
    out = rope(x, pos)
    assert out.dtype == dtype
    exact = rope(x.astype(np.float64), pos)
    # float16: one rounding of a float32 result (a relative 2^-11); not a float16 computation.
    bound = {np.float16: 2.0 ** -11, np.float32: 8 * 2.0 ** -24, np.float64: 1e-14}[dtype]
    assert np.max(np.abs(out.astype(np.float64) - exact)) <= bound * max(1.0, np.max(np.abs(exact)))

