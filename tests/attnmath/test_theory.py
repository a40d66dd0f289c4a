"""Tests for attnmath.theory: kernel smoothing, in-context regression, symmetry and rank."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from attnmath.attention import scaled_dot_product_attention
from attnmath.masking import causal_mask
from attnmath.testing import assert_close, random_qkv, to_torch
from attnmath.theory import (
    LinearAttentionWeights,
    attention_output_rank,
    attention_rank_bound,
    dot_product_log_kernel,
    gaussian_kernel_smoother,
    gaussian_log_kernel,
    gd_linear_attention_weights,
    gd_one_step_prediction,
    gd_prediction,
    in_context_tokens,
    is_permutation_equivariant,
    kernel_smoother,
    key_value_permutation_gap,
    least_squares_prediction,
    linear_self_attention,
    linear_self_attention_gd_step,
    multi_head_output_rank,
    multi_head_rank_bound,
    nadaraya_watson,
    permutation_equivariance_gap,
    permutation_invariance_gap,
)

SETTINGS = settings(max_examples=30, deadline=None)
seeds = st.integers(0, 2**31 - 1)


def _literal_ratio(kernel, values):
    """sum_j k_ij v_j / sum_j k_ij, written out without any stabilisation."""
    return (kernel @ values) / kernel.sum(axis=-1, keepdims=True)


# ----------------------------------------------------------------------------------------------
# Kernel smoothing
# ----------------------------------------------------------------------------------------------

def test_kernel_smoother_equals_torch_scaled_dot_product_attention():
    q, k, v = random_qkv(B=2, H=3, L=5, S=7, D=8, D_v=4, seed=0)
    expected = F.scaled_dot_product_attention(*to_torch(q, k, v))
    assert_close(kernel_smoother(q, k, v), expected)


def test_kernel_smoother_equals_attnmath_attention_with_any_scale():
    q, k, v = random_qkv(B=1, H=2, L=4, S=6, D=5, D_v=3, seed=1)
    assert_close(kernel_smoother(q, k, v, scale=0.7), scaled_dot_product_attention(q, k, v, scale=0.7)[0])


@pytest.mark.claim(
    "002 §11",
    r"Attention is a Nadaraya-Watson estimator with kernel $K(q, k) = \exp(q^\top k / \sqrt{d_k})$",
    "verified",
    domain=r"$1 \le B, H \le 2$, $1 \le L, S \le 8$ ($L \ne S$ included), $1 \le D, D_v \le 5$, "
           "against the ratio written out, hypothesis")
@SETTINGS
@given(B=st.integers(1, 2), H=st.integers(1, 2), L=st.integers(1, 8), S=st.integers(1, 8),
       D=st.integers(1, 5), D_v=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_kernel_smoother_equals_the_literal_nadaraya_watson_ratio(B, H, L, S, D, D_v, seed):
    q, k, v = random_qkv(B=B, H=H, L=L, S=S, D=D, D_v=D_v, seed=seed)
    kernel = np.exp(q @ np.swapaxes(k, -1, -2) / np.sqrt(D))
    assert_close(kernel_smoother(q, k, v), _literal_ratio(kernel, v))


def test_kernel_smoother_does_not_overflow_where_the_literal_ratio_does():
    q, k, v = random_qkv(B=1, H=1, L=3, S=4, D=4, seed=3)
    out = kernel_smoother(q * 1e3, k * 1e3, v)
    assert np.all(np.isfinite(out))
    assert_close(out, F.scaled_dot_product_attention(*to_torch(q * 1e3, k * 1e3, v)), rtol=1e-9)


def test_dot_product_log_kernel_is_the_scaled_score():
    q, k, _ = random_qkv(B=1, H=1, L=3, S=5, D=4, seed=4)
    assert_close(dot_product_log_kernel(q, k), np.einsum("bhld,bhsd->bhls", q, k) / 2.0)


def test_gaussian_log_kernel_matches_a_loop_over_pairs():
    rng = np.random.default_rng(5)
    x, xk = rng.standard_normal((4, 3)), rng.standard_normal((6, 3))
    expected = np.array([[-np.linalg.norm(a - b) ** 2 / (2 * 0.8**2) for b in xk] for a in x])
    assert_close(gaussian_log_kernel(x, xk, bandwidth=0.8), expected)


def test_gaussian_kernel_smoother_equals_the_literal_ratio():
    rng = np.random.default_rng(6)
    x, xk, y = rng.standard_normal((5, 2)), rng.standard_normal((8, 2)), rng.standard_normal((8, 3))
    kernel = np.exp(-np.sum((x[:, None] - xk[None]) ** 2, axis=-1) / (2 * 0.5**2))
    assert_close(gaussian_kernel_smoother(x, xk, y, 0.5), _literal_ratio(kernel, y))


def test_gaussian_kernel_smoother_is_attention_with_a_key_norm_bias():
    """-|q-k|^2/2h^2 = q.k/h^2 - |q|^2/2h^2 - |k|^2/2h^2; the |q|^2 term cancels in the ratio."""
    q, k, v = random_qkv(B=2, H=2, L=5, S=6, D=4, D_v=3, seed=7)
    h = 1.3
    bias = -np.sum(k * k, axis=-1)[..., None, :] / (2 * h * h)  # (B, H, 1, S)
    expected = scaled_dot_product_attention(q, k, v, scale=1 / h**2, bias=bias)[0]
    assert_close(gaussian_kernel_smoother(q, k, v, bandwidth=h), expected)


@SETTINGS
@given(seed=seeds, D=st.integers(1, 16), norm=st.floats(0.1, 4.0), L=st.integers(1, 6), S=st.integers(1, 8))
def test_attention_with_equal_norm_keys_is_a_gaussian_smoother_of_bandwidth_d_to_the_quarter(
        seed, D, norm, L, S):
    q, k, v = random_qkv(B=1, H=2, L=L, S=S, D=D, D_v=3, seed=seed)
    k = norm * k / np.linalg.norm(k, axis=-1, keepdims=True)
    assert_close(gaussian_kernel_smoother(q, k, v, D**0.25), scaled_dot_product_attention(q, k, v)[0],
                 rtol=1e-9, atol=1e-12)


def test_attention_with_unequal_key_norms_is_not_that_gaussian_smoother():
    q, k, v = random_qkv(B=1, H=1, L=4, S=6, D=4, seed=8)
    k = k * np.arange(1, 7)[:, None]
    attn = scaled_dot_product_attention(q, k, v)[0]
    gap = np.max(np.abs(gaussian_kernel_smoother(q, k, v, 4**0.25) - attn))
    assert gap > 1e-2


def test_nadaraya_watson_with_a_box_kernel_averages_the_neighbours():
    x_keys = np.arange(6.0)[:, None]  # (S, 1)
    y = (np.arange(6.0) ** 2)[:, None]
    x_query = np.array([[2.2], [100.0]])

    def box(a, b):
        return np.where(np.abs(a[..., :, None, 0] - b[..., None, :, 0]) <= 1.0, 0.0, -np.inf)

    out = nadaraya_watson(x_query, x_keys, y, log_kernel=box)
    assert_close(out, np.array([[(4.0 + 9.0) / 2], [0.0]]))  # neighbours 2, 3; none at 100


def test_kernel_smoothers_reject_bad_input():
    q, k, v = random_qkv(B=1, H=1, L=3, S=4, D=5, seed=9)
    with pytest.raises(ValueError, match="must share the last dim D"):
        kernel_smoother(q, k[..., :4], v)
    with pytest.raises(ValueError, match="values must have shape"):
        nadaraya_watson(q, k, v[..., :3, :], log_kernel=dot_product_log_kernel)
    with pytest.raises(TypeError, match="log_kernel must be callable"):
        nadaraya_watson(q, k, v, log_kernel=None)
    with pytest.raises(ValueError, match="log_kernel must return shape"):
        nadaraya_watson(q, k, v, log_kernel=lambda a, b: np.zeros(3))
    with pytest.raises(ValueError, match="bandwidth must be > 0"):
        gaussian_kernel_smoother(q, k, v, 0.0)
    with pytest.raises(ValueError, match="x_query must have at least 2 dimensions"):
        gaussian_log_kernel(np.zeros(3), np.zeros((2, 3)), bandwidth=1.0)
    with pytest.raises(TypeError, match="scale must be a real number"):
        dot_product_log_kernel(q, k, scale="big")


# ----------------------------------------------------------------------------------------------
# In-context learning
# ----------------------------------------------------------------------------------------------

regression = st.tuples(seeds, st.integers(1, 12), st.integers(1, 5), st.floats(0.01, 3.0))


def _problem(seed, N, d, M=None):
    rng = np.random.default_rng(seed)
    X, y = rng.standard_normal((N, d)), rng.standard_normal(N)
    xq = rng.standard_normal(d) if M is None else rng.standard_normal((M, d))
    return X, y, xq


@pytest.mark.claim(
    "002 §12",
    "Self-attention can implement one step of gradient descent on a linear regression objective "
    "(von Oswald et al.)",
    "verified",
    domain=r"$1 \le N \le 12$ examples, $1 \le d \le 5$, learning rates in $[0.01, 3]$, hypothesis")
@SETTINGS
@given(regression)
def test_linear_self_attention_layer_predicts_one_gradient_descent_step(case):
    seed, N, d, lr = case
    X, y, xq = _problem(seed, N, d)
    expected = gd_one_step_prediction(X, y, xq, lr)
    # the same quantity written out: w_1 = lr/N X^T y
    assert expected == pytest.approx(float(xq @ (lr / N * X.T @ y)), rel=1e-12, abs=1e-12)
    assert linear_self_attention_gd_step(X, y, xq, lr=lr) == pytest.approx(expected, rel=1e-10, abs=1e-12)


def test_each_query_token_gets_its_own_one_step_prediction():
    X, y, xq = _problem(0, N=9, d=3, M=4)
    assert_close(linear_self_attention_gd_step(X, y, xq, lr=0.3), gd_one_step_prediction(X, y, xq, 0.3))


def test_the_layer_adds_the_one_step_prediction_to_every_context_label():
    X, y, xq = _problem(1, N=7, d=2)
    N, d = X.shape
    out = linear_self_attention(in_context_tokens(X, y, xq), gd_linear_attention_weights(d, N, lr=0.5))
    assert_close(out[:, :d], np.vstack([X, xq]))  # inputs pass through unchanged
    assert_close(out[:N, d], y + gd_one_step_prediction(X, y, X, 0.5))


def test_linear_self_attention_matches_a_double_loop():
    rng = np.random.default_rng(2)
    T, C = 5, 4
    z = rng.standard_normal((T, C))
    w = LinearAttentionWeights(*(rng.standard_normal((C, C)) for _ in range(4)))
    expected = np.array([
        z[j] + w.p @ sum(np.outer(w.w_v @ z[i], w.w_k @ z[i]) @ (w.w_q @ z[j]) for i in range(T))
        for j in range(T)
    ])
    assert_close(linear_self_attention(z, w), expected)


def test_in_context_tokens_put_context_first_and_a_zero_label_on_the_query():
    X, y, xq = _problem(3, N=4, d=2)
    tokens = in_context_tokens(X, y, xq)
    assert_close(tokens, np.array([[*X[i], y[i]] for i in range(4)] + [[*xq, 0.0]]))


def test_gd_prediction_with_one_step_is_the_one_step_prediction_and_zero_steps_give_zero():
    X, y, xq = _problem(4, N=10, d=3)
    one = gd_one_step_prediction(X, y, xq, 0.2)
    assert gd_prediction(X, y, xq, lr=0.2, n_steps=1) == pytest.approx(one, rel=1e-12)
    assert gd_prediction(X, y, xq, lr=0.2, n_steps=0) == 0.0


@pytest.mark.claim(
    "002 §12",
    "Given training data $(X, Y)$ in context, attention outputs approximately "
    r"$X(X^\top X)^{-1} X^\top Y$: exactly the least-squares solution",
    "corrected",
    correction=r"$X(X^\top X)^{-1} X^\top Y$ are the least-squares fitted values at the context "
               "inputs, not a prediction at the query; one linear self-attention layer outputs the "
               r"one-step gradient-descent prediction $(\mathrm{lr}/N)\, x_q^\top X^\top y$, which "
               r"equals the least-squares prediction only when $X^\top X / N = \lambda I$ and "
               r"$\mathrm{lr} = 1/\lambda$; many steps (layers) converge to it.",
    domain="a counterexample: $N = 20$, $d = 4$, four learning rates; many steps converge",
    box="corr-one-step-gd")
def test_one_gradient_step_is_not_the_least_squares_solution():
    """The claim 'attention outputs the least-squares solution' fails for a generic context."""
    X, y, xq = _problem(5, N=20, d=4)
    ls = least_squares_prediction(X, y, xq)
    for lr in (0.1, 0.5, 1.0, 2.0):
        assert abs(linear_self_attention_gd_step(X, y, xq, lr=lr) - ls) > 1e-2
    # Many steps do converge to it (eta < 2 N / lambda_max).
    lr = 1.0 / np.linalg.eigvalsh(X.T @ X / 20).max()
    assert gd_prediction(X, y, xq, lr=lr, n_steps=3000) == pytest.approx(ls, rel=1e-9)


@SETTINGS
@given(seed=seeds, N=st.integers(2, 15), d=st.integers(1, 5), lam=st.floats(0.1, 10.0))
def test_one_step_equals_least_squares_when_the_covariance_is_a_multiple_of_identity(seed, N, d, lam):
    assume(d <= N)
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((N, d)))  # (N, d), orthonormal columns
    X = np.sqrt(N * lam) * basis  # X^T X / N = lam * I
    y, xq = rng.standard_normal(N), rng.standard_normal(d)
    ls = least_squares_prediction(X, y, xq)
    assert linear_self_attention_gd_step(X, y, xq, lr=1.0 / lam) == pytest.approx(ls, rel=1e-9, abs=1e-10)


@pytest.mark.claim(
    "002 §12",
    "Given training data $(X, Y)$ in context, attention outputs approximately "
    r"$X(X^\top X)^{-1} X^\top Y$: exactly the least-squares solution",
    "corrected",
    correction=r"$X(X^\top X)^{-1} X^\top Y$ are the least-squares fitted values at the context "
               "inputs, not a prediction at the query; one linear self-attention layer outputs the "
               r"one-step gradient-descent prediction $(\mathrm{lr}/N)\, x_q^\top X^\top y$, which "
               r"equals the least-squares prediction only when $X^\top X / N = \lambda I$ and "
               r"$\mathrm{lr} = 1/\lambda$; many steps (layers) converge to it.",
    domain="a counterexample: $N = 12$, $d = 3$",
    box="corr-one-step-gd")
def test_hat_matrix_expression_is_the_least_squares_fit_at_the_context_inputs():
    """X (X^T X)^{-1} X^T y are fitted values at the x_i, not a prediction at the query."""
    X, y, _ = _problem(6, N=12, d=3)
    hat = X @ np.linalg.solve(X.T @ X, X.T @ y)
    assert_close(least_squares_prediction(X, y, X), hat, rtol=1e-9)
    assert np.max(np.abs(gd_one_step_prediction(X, y, X, 1.0) - hat)) > 1e-2


def test_least_squares_prediction_solves_the_normal_equations():
    X, y, xq = _problem(7, N=15, d=4, M=3)
    w = np.linalg.solve(X.T @ X, X.T @ y)
    assert_close(least_squares_prediction(X, y, xq), xq @ w, rtol=1e-9)
    w_fit = least_squares_prediction(X, y, np.eye(4))
    assert_close(X.T @ (X @ w_fit - y), np.zeros(4), atol=1e-10)


def test_in_context_functions_reject_bad_input():
    X, y, xq = _problem(8, N=5, d=2)
    with pytest.raises(ValueError, match=r"y must have shape \(N,\)"):
        gd_one_step_prediction(X, y[:4], xq, 0.1)
    with pytest.raises(ValueError, match="x_query must have shape"):
        least_squares_prediction(X, y, np.zeros(3))
    with pytest.raises(ValueError, match="lr must be > 0"):
        linear_self_attention_gd_step(X, y, xq, lr=0.0)
    with pytest.raises(ValueError, match="X must have 2 dimensions"):
        gd_prediction(y, y, xq, lr=0.1, n_steps=2)
    with pytest.raises(ValueError, match="n_steps must be >= 0"):
        gd_prediction(X, y, xq, lr=0.1, n_steps=-1)
    with pytest.raises(ValueError, match="n_context must be >= 1"):
        gd_linear_attention_weights(2, 0, lr=0.1)
    with pytest.raises(TypeError, match="weights must be a LinearAttentionWeights"):
        linear_self_attention(np.zeros((3, 3)), (np.eye(3),) * 4)
    with pytest.raises(ValueError, match=r"weights.w_v must have shape \(C, C\)"):
        bad = LinearAttentionWeights(np.eye(3), np.eye(3), np.eye(2), np.eye(3))
        linear_self_attention(np.zeros((3, 3)), bad)
    with pytest.raises(ValueError, match=r"y must have 1 dimensions"):
        in_context_tokens(X, y[:, None], xq)


# ----------------------------------------------------------------------------------------------
# Permutations
# ----------------------------------------------------------------------------------------------

perm_case = st.tuples(seeds, st.integers(2, 7)).flatmap(
    lambda t: st.tuples(st.just(t[0]), st.just(t[1]), st.permutations(list(range(t[1]))))
)


@SETTINGS
@given(perm_case)
def test_unmasked_self_attention_is_permutation_equivariant(case):
    seed, L, perm = case
    q, k, v = random_qkv(B=2, H=2, L=L, D=4, D_v=3, seed=seed)
    assert permutation_equivariance_gap(q, k, v, np.array(perm)) < 1e-13
    assert is_permutation_equivariant(q, k, v, np.array(perm))


@SETTINGS
@given(perm_case)
def test_causal_self_attention_is_not_permutation_equivariant(case):
    seed, L, perm = case
    assume(perm != list(range(L)))
    q, k, v = random_qkv(B=1, H=2, L=L, D=4, D_v=3, seed=seed)
    assert permutation_equivariance_gap(q, k, v, np.array(perm), mask=causal_mask(L)) > 1e-6
    assert not is_permutation_equivariant(q, k, v, np.array(perm), mask=causal_mask(L))


def test_permuting_the_causal_mask_with_the_tokens_restores_equivariance():
    q, k, v = random_qkv(B=1, H=1, L=6, D=4, seed=10)
    perm = np.array([3, 0, 5, 1, 4, 2])
    mask = causal_mask(6)
    out = scaled_dot_product_attention(q, k, v, mask=mask)[0]
    out_p = scaled_dot_product_attention(q[..., perm, :], k[..., perm, :], v[..., perm, :],
                                         mask=mask[perm][:, perm])[0]
    assert_close(out_p, out[..., perm, :])


def test_equivariance_gap_matches_torch_with_a_causal_mask():
    q, k, v = random_qkv(B=2, H=2, L=5, D=4, seed=11)
    perm = np.array([4, 2, 0, 1, 3])
    tq, tk, tv = to_torch(q, k, v)
    out = F.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    out_p = F.scaled_dot_product_attention(
        tq[..., perm, :], tk[..., perm, :], tv[..., perm, :], is_causal=True)
    expected = float(torch.max(torch.abs(out_p - out[..., perm, :])))
    gap = permutation_equivariance_gap(q, k, v, perm, mask=causal_mask(5))
    assert gap == pytest.approx(expected, rel=1e-10)


@pytest.mark.claim(
    "000 Permutation Invariance",
    "Without positional encoding, attention is permutation-invariant: "
    r"$\operatorname{Attention}(PQ, PK, PV)$ $= P \operatorname{Attention}(Q, K, V)$",
    "corrected",
    correction="The identity is permutation equivariance (the output rows move with the input "
               "rows); attention is not invariant under permuting the sequence. It is invariant "
               "under reordering the key-value pairs at fixed queries, and a causal mask breaks "
               "both.",
    domain=r"$2 \le L \le 7$, every non-identity permutation, hypothesis",
    box="corr-equivariant-theory")
@SETTINGS
@given(perm_case)
def test_self_attention_is_not_permutation_invariant(case):
    """'Permutation-invariant' is the wrong word: the rows of the output move with the input."""
    seed, L, perm = case
    assume(perm != list(range(L)))
    q, k, v = random_qkv(B=1, H=1, L=L, D=4, D_v=3, seed=seed)
    assert permutation_invariance_gap(q, k, v, np.array(perm)) > 1e-6


@SETTINGS
@given(seed=seeds, L=st.integers(1, 5), S=st.integers(2, 7), data=st.data())
def test_reordering_key_value_pairs_leaves_the_output_unchanged(seed, L, S, data):
    perm = np.array(data.draw(st.permutations(list(range(S)))))
    q, k, v = random_qkv(B=1, H=2, L=L, S=S, D=4, D_v=3, seed=seed)
    assert key_value_permutation_gap(q, k, v, perm) < 1e-13


def test_reordering_key_value_pairs_under_a_causal_mask_changes_the_output():
    q, k, v = random_qkv(B=1, H=1, L=4, D=4, seed=12)
    assert key_value_permutation_gap(q, k, v, np.array([3, 2, 1, 0]), mask=causal_mask(4)) > 1e-3


def test_permutation_functions_reject_bad_input():
    q, k, v = random_qkv(B=1, H=1, L=4, S=5, D=3, seed=13)
    with pytest.raises(ValueError, match="L must equal S"):
        permutation_equivariance_gap(q, k, v, np.arange(4))
    q, k, v = random_qkv(B=1, H=1, L=4, D=3, seed=13)
    with pytest.raises(ValueError, match=r"perm must be a permutation of range\(4\)"):
        permutation_invariance_gap(q, k, v, np.array([0, 1, 1, 2]))
    with pytest.raises(TypeError, match="perm must be an integer array"):
        key_value_permutation_gap(q, k, v, np.array([0.0, 1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="rtol must be > 0"):
        is_permutation_equivariant(q, k, v, np.arange(4), rtol=-1.0)


# ----------------------------------------------------------------------------------------------
# Rank
# ----------------------------------------------------------------------------------------------

def _probs(L, S, D, seed):
    q, k, _ = random_qkv(B=1, H=1, L=L, S=S, D=D, seed=seed)
    return scaled_dot_product_attention(q, k, np.zeros_like(k))[1].probs[0, 0]  # (L, S)


@pytest.mark.claim(
    "002 §4.2",
    "Single attention has limited rank: "
    r"$\operatorname{rank}(AV) \le \min(\operatorname{rank}(A), \operatorname{rank}(V))$",
    "verified",
    domain=r"$1 \le L, S, D_v \le 8$ ($L \ne S$ included), hypothesis")
@SETTINGS
@given(seed=seeds, L=st.integers(1, 8), S=st.integers(1, 8), D_v=st.integers(1, 8))
def test_attention_output_rank_is_at_most_min_of_l_s_and_d_v(seed, L, S, D_v):
    probs = _probs(L, S, 3, seed)
    v = np.random.default_rng(seed).standard_normal((S, D_v))
    rank = attention_output_rank(probs, v)
    assert rank <= attention_rank_bound(L, S, D_v) == min(L, S, D_v)
    assert rank <= min(np.linalg.matrix_rank(probs), np.linalg.matrix_rank(v))


@pytest.mark.claim(
    "002 §13",
    "Attention outputs have bounded rank: "
    r"$\operatorname{rank}(\operatorname{Attention}(Q, K, V)) \le \min(n, d_v)$",
    "clarified",
    correction="Right for self-attention ($L = S = n$), the source's setting. With $L$ queries and "
               r"$S$ keys the bound is $\min(L, S, D_v)$, and generic inputs attain it: the "
               r"softmax weights are generically of full rank $\min(L, S)$ even when $QK^\top$ has "
               "low rank.",
    domain=r"generic random queries, keys and values: $1 \le L, S \le 10$ ($L \ne S$ included), "
           r"$1 \le D_v \le 10$, $D = 8$, float64, hypothesis; checked against "
           "`torch.linalg.matrix_rank`",
    box="corr-rank-theory")
@SETTINGS
@given(seed=seeds, L=st.integers(1, 10), S=st.integers(1, 10), D_v=st.integers(1, 10))
def test_attention_output_rank_reaches_the_bound_for_generic_inputs(seed, L, S, D_v):
    probs = _probs(L, S, 8, seed)
    v = np.random.default_rng(seed + 1).standard_normal((S, D_v))
    expected = int(torch.linalg.matrix_rank(to_torch(probs) @ to_torch(v)))
    assert attention_output_rank(probs, v) == expected == min(L, S, D_v)


def test_attention_output_rank_is_one_for_rank_one_values():
    v = np.outer(np.arange(1.0, 7.0), [1.0, -2.0, 0.5])  # (S, D_v), rank 1
    assert attention_output_rank(_probs(5, 6, 4, 16), v) == 1


def test_softmax_of_rank_one_scores_has_full_rank():
    """exp(q_i k_j) is a generalised Vandermonde matrix: the softmax undoes the rank-1 scores."""
    q = np.array([[0.0], [0.6], [1.2], [1.8]])  # (L, 1): D = 1
    k = np.array([[-1.0], [0.0], [0.7], [1.5]])  # (S, 1)
    probs = scaled_dot_product_attention(q, k, np.zeros((4, 1)))[1].probs
    assert np.linalg.matrix_rank(q @ k.T) == 1
    assert attention_output_rank(probs, np.eye(4)) == 4


def test_attention_output_rank_is_computed_per_batch_and_head():
    q, k, v = random_qkv(B=2, H=3, L=5, D=4, D_v=2, seed=17)
    probs = scaled_dot_product_attention(q, k, v)[1].probs
    v = v.copy()
    v[1, 2] = v[1, 2, :, :1] * np.ones(2)  # head (1, 2): rank-1 values
    ranks = attention_output_rank(probs, v)
    assert ranks.shape == (2, 3)
    assert ranks[1, 2] == 1 and np.sum(ranks == 2) == 5


def test_multi_head_output_exceeds_the_rank_of_one_head():
    L, S, H, D_v, C = 8, 8, 4, 2, 8
    q, k, v = random_qkv(B=1, H=H, L=L, S=S, D=4, D_v=D_v, seed=18)
    probs = scaled_dot_product_attention(q, k, v)[1].probs[0]  # (H, L, S)
    w_o = np.random.default_rng(19).standard_normal((H * D_v, C))
    per_head = [attention_output_rank(probs[h], v[0, h]) for h in range(H)]
    assert max(per_head) == D_v
    concat = torch.cat([to_torch(probs[h] @ v[0, h]) for h in range(H)], dim=-1) @ to_torch(w_o)
    rank = multi_head_output_rank(probs, v[0], w_o)
    assert rank == int(torch.linalg.matrix_rank(concat)) == multi_head_rank_bound(L, S, H, D_v, C) == 8
    assert rank > D_v


@SETTINGS
@given(seed=seeds, L=st.integers(1, 6), S=st.integers(1, 6), H=st.integers(1, 3),
       D_v=st.integers(1, 3), C=st.integers(1, 8))
def test_multi_head_output_rank_is_at_most_min_of_l_h_times_d_v_and_c(seed, L, S, H, D_v, C):
    q, k, v = random_qkv(B=1, H=H, L=L, S=S, D=3, D_v=D_v, seed=seed)
    probs = scaled_dot_product_attention(q, k, v)[1].probs[0]
    w_o = np.random.default_rng(seed).standard_normal((H * D_v, C))
    assert multi_head_output_rank(probs, v[0], w_o) <= multi_head_rank_bound(L, S, H, D_v, C)


def test_rank_functions_reject_bad_input():
    with pytest.raises(ValueError, match="must agree on S"):
        attention_output_rank(np.ones((3, 4)) / 4, np.ones((5, 2)))
    with pytest.raises(ValueError, match="tol must be > 0"):
        attention_output_rank(np.ones((3, 4)) / 4, np.ones((4, 2)), tol=0.0)
    with pytest.raises(ValueError, match=r"w_o must have shape \(H \* D_v, C\)"):
        multi_head_output_rank(np.ones((2, 3, 4)) / 4, np.ones((2, 4, 2)), np.ones((5, 3)))
    with pytest.raises(ValueError, match="must share the head and batch axes"):
        multi_head_output_rank(np.ones((2, 3, 4)) / 4, np.ones((3, 4, 2)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="D_v must be >= 1"):
        attention_rank_bound(3, 3, 0)
    with pytest.raises(TypeError, match="C must be an integer"):
        multi_head_rank_bound(3, 3, 2, 2, 4.0)


# ----------------------------------------------------------------------------------------------
# Corrections of the source documents that need more than one function
# ----------------------------------------------------------------------------------------------

@pytest.mark.claim(
    "002 §11",
    "Attention can be viewed as a kernel density estimator",
    "corrected",
    correction="It is kernel regression (the Nadaraya-Watson estimator): a kernel-weighted average "
               "of the values whose weights sum to one over the samples for each query. A kernel "
               "density estimator involves no values and integrates to one over space; it is (up to "
               "a constant) the denominator of the Nadaraya-Watson ratio.",
    domain="12 samples, a Gaussian kernel of bandwidth 0.4 on a grid of 4001 points",
    box="corr-kernel-regression")
def test_kernel_smoother_is_regression_not_density_estimation():
    rng = np.random.default_rng(20)
    keys = rng.uniform(-2, 2, size=(12, 1))
    values = np.sin(2 * keys) + 0.1 * rng.standard_normal((12, 1))
    grid = np.linspace(-6, 6, 4001)[:, None]
    h = 0.4
    kernel = np.exp(-(grid - keys.T) ** 2 / (2 * h**2))  # (L, S)
    kde = kernel.sum(axis=1) / (12 * h * np.sqrt(2 * np.pi))
    assert np.trapezoid(kde, grid[:, 0]) == pytest.approx(1.0, abs=1e-6)  # a density integrates to one
    smooth = gaussian_kernel_smoother(grid, keys, values, h)
    # The estimator is the ratio of the value-weighted sum to the density's (unnormalised) sum.
    assert_close(smooth[:, 0], (kernel @ values)[:, 0] / (12 * h * np.sqrt(2 * np.pi) * kde))
    # A regression estimator: constants are reproduced and outputs are averages of the values.
    assert_close(gaussian_kernel_smoother(grid, keys, np.full_like(values, 3.0), h), np.full((4001, 1), 3.0))
    assert smooth.min() >= values.min() - 1e-12 and smooth.max() <= values.max() + 1e-12
    # Its integral over space is not one (it is not a density).
    assert abs(np.trapezoid(smooth[:, 0], grid[:, 0]) - 1.0) > 0.1


@pytest.mark.claim(
    "004 Attention as Kernel Smoothing",
    r"Attention is kernel smoothing with $K(x_i, x_j) = \softmax(q_i \cdot k_j / \sqrt{d_k})$, so "
    r"$K(x_i, x_j) \ge 0$ and $\sum_j K(x_i, x_j) = 1$",
    "corrected",
    correction=r"The kernel is $\exp(q_i \cdot k_j / \sqrt{d_k})$; the softmax weight is that "
               "kernel value divided by its sum over all keys, so it depends on every key, not on "
               "the pair alone, and summing to one is the property of the normalised weights. With "
               r"$W_Q \ne W_K$ the kernel is not symmetric in the tokens.",
    domain="a counterexample: 4 tokens of width 3, one key added",
    box="corr-kernel-pair")
@pytest.mark.claim(
    "004 Attention as Kernel Smoothing",
    "Unlike fixed kernels such as the Gaussian, the attention kernel is learned and input-dependent",
    "verified",
    domain="a counterexample: 4 tokens of width 3, one key added")
def test_softmax_weights_are_not_a_kernel_of_the_pair():
    rng = np.random.default_rng(21)
    x = rng.standard_normal((4, 3))
    w_q, w_k = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    q, k = x @ w_q, x @ w_k

    def weights(keys):
        return scaled_dot_product_attention(q, keys, np.eye(keys.shape[0]))[0]  # values = I: the weights

    more = np.vstack([k, 2.0 * q[:1]])  # one more key, aligned with query 0
    assert abs(weights(k)[0, 1] - weights(more)[0, 1]) > 1e-3  # the weight of a pair depends on other keys
    kappa = np.exp(dot_product_log_kernel(q, k))
    kappa_more = np.exp(dot_product_log_kernel(q, more))
    assert_close(kappa_more[:, :4], kappa)  # the kernel of a pair does not
    assert_close(weights(k), kappa / kappa.sum(axis=-1, keepdims=True))
    assert not np.allclose(kappa, kappa.T)  # not symmetric in the tokens
    # Learned: other projections give another kernel on the same tokens.
    assert not np.allclose(np.exp(dot_product_log_kernel(x @ w_k, x @ w_q)), kappa)


@pytest.mark.claim(
    "002 §4.2", "Multi-head can achieve higher effective rank through concatenation", "clarified",
    correction=r"Higher than one head of the same width $D_v = C/H$, always ($\min(L, S, D_v)$ "
               r"against $\min(L, C, 1 + H(S - 1))$). Against one head of full width $C$ it "
               r"depends on the number of keys: both reach $\min(L, C)$ when $S \ge C$, and $H$ "
               r"heads reach more, $\min(L, C, 1 + H(S - 1))$ against $\min(L, S, C)$, when "
               "$1 < S < C$ and $L > S$. The all-ones vector lies in every head's column space, so "
               r"$H$ heads never reach $H \min(S, D_v)$ when $S \le D_v$.",
    domain=r"generic softmax weights and values: $1 \le L, S \le 12$ ($L \ne S$ included), "
           r"$1 \le H \le 4$, $1 \le D_v \le 3$, $C = H D_v$, $W_O$ of shape $(C, C)$, float64, "
           "hypothesis; the review's cases $(L, S, C, H) = (12, 3, 8, 4)$ and $(12, 2, 8, 4)$",
    box="corr-rank-theory")
@pytest.mark.claim(
    "002 §13", "Bounded rank limits expressivity; multi-head attention helps by combining subspaces",
    "corrected",
    correction="Combining $H$ heads of width $C/H$ raises the cap of one narrow head, "
               r"$\min(L, S, C/H)$, to $\min(L, C, 1 + H(S - 1))$, not to "
               r"$\min(L, H \min(S, C/H), C)$: every head's column space holds the all-ones "
               r"vector. One head of width $C$ is capped at $\min(L, S, C)$: the same when "
               r"$S \ge C$, lower when $S < C$. The output projection to width $C$ bounds both.",
    domain=r"generic softmax weights and values: $1 \le L, S \le 12$ ($L \ne S$ included), "
           r"$1 \le H \le 4$, $1 \le D_v \le 3$, $C = H D_v$, $W_O$ of shape $(C, C)$, float64, "
           "hypothesis",
    box="corr-rank-theory")
@settings(max_examples=40, deadline=None)
@given(L=st.integers(1, 12), S=st.integers(1, 12), H=st.integers(1, 4), D_v=st.integers(1, 3), seed=seeds)
def test_multi_head_rank_is_min_l_c_1_plus_h_s_minus_1_and_one_wide_head_min_l_s_c(L, S, H, D_v, seed):
    C = H * D_v
    rng = np.random.default_rng(seed)
    probs = scaled_dot_product_attention(*random_qkv(B=1, H=H, L=L, S=S, D=3, D_v=1, seed=seed))[1].probs[0]
    v = rng.standard_normal((H, S, D_v))  # (H, S, D_v)
    w_o = rng.standard_normal((C, C))
    multi = multi_head_output_rank(probs, v, w_o)
    assert multi == min(L, C, 1 + H * (S - 1)) == multi_head_rank_bound(L, S, H, D_v, C)
    if S <= D_v and H > 1 and L > 1 + H * (S - 1) and C > 1 + H * (S - 1):
        assert multi < min(L, H * min(S, D_v), C)  # the old bound is not reached
    q1, k1, v1 = random_qkv(B=1, H=1, L=L, S=S, D=C, D_v=C, seed=seed + 1)
    full = attention_output_rank(scaled_dot_product_attention(q1, k1, v1)[1].probs[0, 0], v1[0, 0])
    assert full == min(L, S, C) == attention_rank_bound(L, S, C)
    assert (multi > full) == (1 < S < C and L > S and H > 1)
    assert multi >= attention_output_rank(probs[0], v[0])


@pytest.mark.parametrize("L,S,C,H,expected", [(12, 3, 8, 4, 8), (12, 2, 8, 4, 5)])
def test_review_cases_of_the_multi_head_rank(L, S, C, H, expected):
    D_v = C // H
    probs = scaled_dot_product_attention(*random_qkv(B=1, H=H, L=L, S=S, D=3, D_v=1, seed=L + S))[1].probs[0]
    rng = np.random.default_rng(S)
    multi = multi_head_output_rank(probs, rng.standard_normal((H, S, D_v)), rng.standard_normal((C, C)))
    assert multi == expected == multi_head_rank_bound(L, S, H, D_v, C)
    assert expected > min(L, S, C)  # one head of width C: rank S


def _attention_stack(x, layers):
    """Residual multi-head self-attention layers: no positions, no feed-forward layers, no norms."""
    for w_q, w_k, w_v, w_o in layers:
        q, k, v = (np.einsum("lc,hcd->hld", x, w) for w in (w_q, w_k, w_v))
        heads, _ = scaled_dot_product_attention(q, k, v)
        x = x + np.einsum("hld,hdc->lc", heads, w_o)
    return x


@pytest.mark.claim(
    "000 Universal Approximation",
    "Multi-head attention with sufficient heads and dimensions can approximate any continuous "
    "function on compact sets",
    "corrected",
    correction="Not for attention alone without positional information, whatever the number of "
               "heads: it is then permutation equivariant (equal tokens get equal outputs) and, "
               "without feed-forward layers, linear on constant sequences. With positional "
               "encodings attention-only networks are universal approximators (arXiv:2504.15956), "
               "and Yun et al. (2020) prove it for transformers (attention plus token-wise "
               "feed-forward layers, with positional encodings) for continuous "
               r"sequence-to-sequence functions of compact support in $L^p$, $1 \le p < \infty$; "
               "without positional encodings, exactly the permutation-equivariant ones.",
    domain=r"residual attention-only stacks without positional encodings: $1 \le H \le 16$ heads, "
           r"1 to 5 layers, $2 \le L \le 8$, random weights and permutations (hypothesis); the "
           "positional case is cited, not tested",
    box="corr-universality")
@settings(max_examples=25, deadline=None)
@given(H=st.integers(1, 16), n_layers=st.integers(1, 5), L=st.integers(3, 8), seed=seeds)
def test_attention_alone_cannot_approximate_non_equivariant_or_nonlinear_functions(H, n_layers, L, seed):
    from attnmath.positional import sinusoidal_encoding

    rng = np.random.default_rng(seed)
    C, D = 4, 2
    shapes = [(H, C, D), (H, C, D), (H, C, D), (H, D, C)]
    layers = [tuple(rng.standard_normal(s) / np.sqrt(C) for s in shapes) for _ in range(n_layers)]
    x = rng.standard_normal((L, C))
    perm = rng.permutation(L)
    assert_close(_attention_stack(x[perm], layers), _attention_stack(x, layers)[perm], rtol=1e-10, atol=1e-10)
    # Equal tokens get equal outputs, so "output the position index" has error >= 1/2 somewhere.
    a, b = rng.standard_normal(C), rng.standard_normal(C)
    x_rep = np.stack([a if i % 2 == 0 else b for i in range(L)])
    out = _attention_stack(x_rep, layers)
    assert all(np.array_equal(out[0], out[i]) for i in range(0, L, 2))
    # Linear on constant sequences: g(-a) = -g(a), so |a| (an equivariant target) is out of reach.
    const = np.tile(a, (L, 1))
    g_pos, g_neg = _attention_stack(const, layers), _attention_stack(-const, layers)
    assert_close(g_neg, -g_pos, rtol=0, atol=1e-10)
    err = np.maximum(np.abs(g_pos - np.abs(const)), np.abs(g_neg - np.abs(const)))
    assert (err >= np.abs(const) / 2 - 1e-10).all()
    # Both obstructions need the absence of positions: with positional encodings added, equal
    # tokens get different outputs and constant sequences are no longer constant.
    pe = sinusoidal_encoding(L, C)
    out_pe = _attention_stack(x_rep + pe, layers)
    assert np.abs(out_pe[0] - out_pe[2]).max() > 1e-8
    assert not np.allclose(_attention_stack(-const + pe, layers) - pe, -(_attention_stack(const + pe, layers) - pe))


@pytest.mark.claim(
    "002 §14",
    "Transformers with hard attention (argmax instead of softmax) are Turing complete (Perez et "
    "al., 2019)",
    "corrected",
    correction="Perez et al. prove it for average-hard attention (uniform weight on all maximal "
               "scores, not an argmax), arbitrary-precision rational activations, positional "
               "encodings and an unbounded number of decoding steps; with a fixed finite precision "
               "the result fails.",
    domain="a row with tied maxima, scales 1, 10 and 30",
    box="corr-turing")
@pytest.mark.claim(
    "002 §14",
    "Soft attention transformers are computationally universal under reasonable assumptions",
    "corrected",
    correction="Perez et al. prove nothing about softmax attention; their construction needs hard "
               "attention, unbounded precision and unbounded decoding steps. Softmax attention "
               "reaches average-hard attention only in the limit of infinitely large scores; at "
               "every finite scale all weights are positive.",
    domain="a row with tied maxima, scales 1, 10 and 30",
    box="corr-turing")
def test_softmax_attention_reaches_average_hard_attention_only_in_the_limit():
    scores = np.array([[2.0, 5.0, 1.0, 5.0, 4.9]])
    v = np.eye(5)
    is_max = scores == scores.max(axis=-1, keepdims=True)
    hard = is_max / is_max.sum(axis=-1, keepdims=True)  # average-hard: ties averaged
    assert hard.tolist() == [[0.0, 0.5, 0.0, 0.5, 0.0]]
    assert np.argmax(scores) == 1  # an argmax would pick one of the tied keys, not average them
    gaps = []
    for scale in (1.0, 10.0, 30.0):
        w = scaled_dot_product_attention(np.ones((1, 1)), scores.T, v, scale=scale)[0]  # (1, 5): q = 1, k_j = score j
        assert (w > 0).all()
        gaps.append(np.abs(w - hard).max())
    assert gaps[0] > gaps[1] > gaps[2] > 0
    limit = scaled_dot_product_attention(np.ones((1, 1)), scores.T, v, scale=1e4)[0]
    assert_close(limit, hard, rtol=0, atol=1e-12)


@SETTINGS
@given(L=st.integers(2, 6), D=st.integers(1, 4), seed=st.integers(0, 10_000),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_equivariance_check_follows_the_dtype_of_its_input(L, D, seed, dtype):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((2, L, D)).astype(dtype) for _ in range(3))
    perm = rng.permutation(L)
    assert is_permutation_equivariant(q, k, v, perm)  # self-attention is equivariant in any dtype
    if not np.array_equal(perm, np.arange(L)):
        # a causal mask breaks it, and the dtype's tolerance still sees that
        assume(permutation_equivariance_gap(q, k, v, perm, mask=causal_mask(L)) > 1e-2)
        assert not is_permutation_equivariant(q, k, v, perm, mask=causal_mask(L))


@pytest.mark.parametrize("bandwidth", [1e-3, 1e-100, 1e-160, 1e-300])
def test_a_tiny_bandwidth_gives_the_nearest_key_value_not_zeros(bandwidth):
    rng = np.random.default_rng(6)
    x_keys, y = rng.standard_normal((9, 2)), rng.standard_normal((9, 3))
    x_query = rng.standard_normal((5, 2))
    nearest = np.argmin(((x_query[:, None, :] - x_keys[None]) ** 2).sum(-1), axis=1)  # (5,)
    out = gaussian_kernel_smoother(x_query, x_keys, y, bandwidth)
    assert_close(out, y[nearest], atol=1e-12 if bandwidth < 1e-50 else 1e-6)


def test_the_gaussian_log_kernel_of_a_point_with_itself_is_zero_for_any_bandwidth():
    x = np.random.default_rng(7).standard_normal((4, 3))
    for h in (1.0, 1e-160, 1e-300):
        assert np.all(np.diag(gaussian_log_kernel(x, x, bandwidth=h)) == 0)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_kernel_smoothers_return_the_input_dtype(dtype):
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal((2, 4, 3)).astype(dtype) for _ in range(3))
    for out, exact in [
        (kernel_smoother(q, k, v), kernel_smoother(*(a.astype(np.float64) for a in (q, k, v)))),
        (gaussian_kernel_smoother(q, k, v, 0.7),
         gaussian_kernel_smoother(*(a.astype(np.float64) for a in (q, k, v)), 0.7)),
    ]:
        assert out.dtype == dtype
        assert_close(out.astype(np.float64), exact, atol=float(np.finfo(dtype).eps) * 8, rtol=0)
