"""Tests for attnmath.scaling: the variance of q.k, softmax saturation and gradient size."""

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attnmath.scaling import (
    DotProductStats,
    attention_entropy,
    dot_product_mean_theory,
    dot_product_variance,
    dot_product_variance_theory,
    gradient_magnitude_curve,
    max_weight,
    saturation_curve,
    softmax_gradient_norm,
    softmax_jacobian_norm,
)
from attnmath.softmax import softmax, softmax_jacobian
from attnmath.testing import assert_close, to_torch

SETTINGS = settings(max_examples=40, deadline=None)

finite = st.floats(-20, 20, allow_nan=False, allow_infinity=False)


# ----------------------------------------------------------------------------------------------
# Variance of the dot product
# ----------------------------------------------------------------------------------------------

@pytest.mark.claim(
    "002 §2.3",
    r"For independent $q_i, k_i \sim \mathcal{N}(0, 1)$: $\mathbb{E}[q \cdot k] = 0$ and "
    r"$\operatorname{Var}(q \cdot k) = d_k$, so $\operatorname{Var}(q \cdot k / \sqrt{d_k}) = 1$",
    "verified",
    domain=r"every $1 \le d_k \le 512$, 20 000 samples each, within 5 standard errors, "
           "hypothesis over $d_k$ and the seed")
@pytest.mark.claim(
    "003 §2.2",
    r"Independent components with mean 0 and variance 1 give $\operatorname{Var}(q \cdot k) = d_k$ "
    r"and $\operatorname{Var}(q \cdot k / \sqrt{d_k}) = 1$",
    "verified",
    domain=r"every $1 \le d_k \le 512$, 20 000 samples each, within 5 standard errors, "
           "hypothesis over $d_k$ and the seed")
@pytest.mark.claim(
    r"001 Why Scale by $\sqrt{d_k}$?",
    "Without scaling, dot products grow large in magnitude as $d_k$ increases",
    "verified",
    domain=r"every $1 \le d_k \le 512$, 20 000 samples each, within 5 standard errors, "
           "hypothesis over $d_k$ and the seed")
@settings(max_examples=10, deadline=None)
@given(d_k=st.integers(1, 512), seed=st.integers(0, 2**16))
def test_dot_product_variance_of_standard_normal_entries_is_d_k(d_k, seed):
    n = 20_000
    stats = dot_product_variance(d_k, n_samples=n, seed=seed)
    assert isinstance(stats, DotProductStats)
    # q.k is a sum of d_k products with E[(q_i k_i)^4] = 9: the fourth central moment of the
    # sum is 3 d^2 + 6 d, so the sample variance has standard error sqrt((2 d^2 + 6 d) / n).
    se_var = np.sqrt((2 * d_k**2 + 6 * d_k) / n)
    assert abs(stats.var - d_k) < 5 * se_var
    assert abs(stats.mean) < 5 * np.sqrt(d_k / n)
    assert abs(stats.scaled_var - 1.0) < 5 * se_var / d_k
    assert dot_product_variance_theory(d_k) == d_k


def test_dot_product_variance_with_nonzero_means_matches_the_general_formula():
    d_k, n = 16, 100_000
    params = dict(mean_q=1.0, mean_k=-2.0, var_q=0.5, var_k=2.0)
    stats = dot_product_variance(d_k, n_samples=n, seed=3, **params)
    theory = dot_product_variance_theory(d_k, **params)
    # (0.5 + 1)(2 + 4) - 1 * 4 = 5 per coordinate.
    assert theory == pytest.approx(16 * 5.0)
    assert stats.var == pytest.approx(theory, rel=0.04)
    mean = dot_product_mean_theory(d_k, mean_q=1.0, mean_k=-2.0)
    assert mean == -32.0
    assert abs(stats.mean - mean) < 5 * np.sqrt(theory / n)


@pytest.mark.claim(
    r"004 Why $\sqrt{d_k}$ Scaling",
    r"$\operatorname{Var}[q \cdot k] = \sum \operatorname{Var}[q_i k_i]$ "
    r"$= \sum \mathbb{E}[q_i^2]\, \mathbb{E}[k_i^2] = d_k$ ($q_i$, $k_i$ independent)",
    "clarified",
    correction=r"Right under the source's stated assumption of independent $\mathcal{N}(0, 1)$ "
               "entries. The reason given (independence of $q_i$ and $k_i$) is not enough: the "
               r"shortcut $\operatorname{Var}(q_i k_i) = \mathbb{E}[q_i^2]\, \mathbb{E}[k_i^2]$ "
               "also needs zero means; for mutually independent entries "
               r"$\operatorname{Var}(q \cdot k)$ "
               "$= D[(s_q^2 + m_q^2)(s_k^2 + m_k^2) - m_q^2 m_k^2]$, and $2 d_k$ for $k = q$.",
    domain=r"under the source's $\mathcal{N}(0, 1)$ assumption the variance is checked by the "
           "$d_k$ tests; the caveat by a counterexample: $d_k = 16$, means 1 and $-2$, variances "
           "$1/2$ and 2, 50 000 samples",
    box="corr-variance-means")
def test_shortcut_var_equals_product_of_second_moments_fails_with_nonzero_means():
    """Var(q_i k_i) = E[q_i^2] E[k_i^2] needs a zero mean, not only independence."""
    d_k = 16
    params = dict(mean_q=1.0, mean_k=-2.0, var_q=0.5, var_k=2.0)
    stats = dot_product_variance(d_k, n_samples=50_000, seed=4, **params)
    shortcut = d_k * (0.5 + 1.0) * (2.0 + 4.0)  # d E[q^2] E[k^2] = 144, truth is 80
    assert abs(stats.var - shortcut) > 0.3 * shortcut


def test_dot_product_variance_needs_independent_query_and_key():
    """With k = q the dot product is |q|^2, whose variance is 2 d_k, not d_k."""
    d_k, n = 32, 40_000
    q = np.random.default_rng(5).standard_normal((n, d_k))
    var = np.var(np.sum(q * q, axis=1), ddof=1)
    assert var == pytest.approx(2 * d_k, rel=0.05)
    assert abs(var - dot_product_variance_theory(d_k)) > 0.5 * d_k


two_point = st.tuples(
    st.floats(-3, 3), st.floats(-3, 3), st.floats(0.05, 0.95)
)


def _moments(dist):
    a, b, p = dist
    mean = p * a + (1 - p) * b
    var = p * a * a + (1 - p) * b * b - mean * mean
    return mean, max(var, 0.0)


@SETTINGS
@given(dq=two_point, dk=two_point)
def test_variance_formula_is_exact_for_two_point_distributions(dq, dk):
    """Enumerate the four outcomes of (q_i, k_i) and the sixteen of two coordinates."""
    mq, vq = _moments(dq)
    mk, vk = _moments(dk)
    outcomes = [(qa * ka, qp * kp) for (qa, qp), (ka, kp) in itertools.product(
        [(dq[0], dq[2]), (dq[1], 1 - dq[2])], [(dk[0], dk[2]), (dk[1], 1 - dk[2])])]
    e1 = sum(x * w for x, w in outcomes)
    var1 = sum((x - e1) ** 2 * w for x, w in outcomes)
    scale = 1.0 + (vq + mq * mq) * (vk + mk * mk)
    moments = dict(var_q=vq, var_k=vk, mean_q=mq, mean_k=mk)
    assert abs(dot_product_variance_theory(1, **moments) - var1) <= 1e-9 * scale
    pairs = list(itertools.product(outcomes, outcomes))
    e2 = sum((x1 + x2) * w1 * w2 for (x1, w1), (x2, w2) in pairs)
    var2 = sum((x1 + x2 - e2) ** 2 * w1 * w2 for (x1, w1), (x2, w2) in pairs)
    assert abs(dot_product_variance_theory(2, **moments) - var2) <= 2e-9 * scale


def test_dot_product_variance_is_reproducible_from_its_seed():
    a = dot_product_variance(8, n_samples=1000, seed=11)
    b = dot_product_variance(8, n_samples=1000, seed=11)
    c = dot_product_variance(8, n_samples=1000, seed=np.random.default_rng(11))
    assert a == b == c


def test_dot_product_variance_rejects_bad_input():
    with pytest.raises(ValueError, match="d_k must be >= 1"):
        dot_product_variance(0)
    with pytest.raises(ValueError, match="n_samples must be >= 2"):
        dot_product_variance(4, n_samples=1)
    with pytest.raises(ValueError, match="var_q must be >= 0"):
        dot_product_variance(4, var_q=-1.0)
    with pytest.raises(TypeError, match="seed must be an int"):
        dot_product_variance(4, seed="x")
    with pytest.raises(TypeError, match="d_k must be an integer"):
        dot_product_variance_theory(2.5)
    with pytest.raises(ValueError, match="var_k must be >= 0"):
        dot_product_variance_theory(2, var_k=-0.1)
    with pytest.raises(ValueError, match="mean_q must be finite"):
        dot_product_mean_theory(2, mean_q=float("nan"))


# ----------------------------------------------------------------------------------------------
# Entropy and largest weight
# ----------------------------------------------------------------------------------------------

def test_entropy_of_uniform_row_is_log_s_and_of_one_hot_row_is_zero():
    S = 7
    assert_close(attention_entropy(np.full(S, 1.0 / S)), np.array(np.log(S)))
    assert attention_entropy(np.eye(S)[2]) == 0.0
    assert attention_entropy(np.zeros(S)) == 0.0  # a fully masked row


def test_entropy_matches_torch_categorical():
    p = softmax(np.random.default_rng(0).standard_normal((2, 3, 4, 9)) * 3)
    expected = torch.distributions.Categorical(probs=to_torch(p)).entropy()
    assert_close(attention_entropy(p), expected)


def test_entropy_and_max_weight_follow_the_axis_argument():
    p = softmax(np.random.default_rng(1).standard_normal((5, 6)), axis=0)
    assert_close(attention_entropy(p, axis=0), attention_entropy(p.T))
    assert_close(max_weight(p, axis=0), max_weight(p.T))


@SETTINGS
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 12)), elements=finite))
def test_entropy_lies_between_zero_and_log_s_and_max_weight_between_one_over_s_and_one(logits):
    p = softmax(logits)
    S = p.shape[-1]
    h, m = attention_entropy(p), max_weight(p)
    assert np.all(h >= -1e-12) and np.all(h <= np.log(S) + 1e-12)
    assert np.all(m >= 1.0 / S - 1e-12) and np.all(m <= 1.0)
    # H >= -log max p (min-entropy bound)
    assert np.all(h >= -np.log(m) - 1e-12)


def test_max_weight_matches_torch_max():
    p = softmax(np.random.default_rng(2).standard_normal((3, 4, 10)))
    assert_close(max_weight(p), torch.max(to_torch(p), dim=-1).values)


def test_entropy_and_max_weight_reject_bad_input():
    with pytest.raises(ValueError, match="probs must hold probabilities"):
        attention_entropy(np.array([0.5, -0.1, 0.6]))
    with pytest.raises(ValueError, match="probs must have at least 1 dimension"):
        max_weight(np.float64(0.3))
    with pytest.raises(TypeError, match="probs must have a floating dtype"):
        max_weight(np.array([True, False]))
    with pytest.raises(ValueError, match="axis=2 is out of range"):
        attention_entropy(np.full((2, 2), 0.5), axis=2)


# ----------------------------------------------------------------------------------------------
# Saturation curve
# ----------------------------------------------------------------------------------------------

def test_scaled_entropy_stays_near_log_s_minus_one_half_for_every_d_k():
    """Scaled scores of a row are N(0, |q|^2/d) given q, with E|q|^2/d = 1: H ~ log S - 1/2."""
    S = 2000
    curve = saturation_curve([8, 64, 512], n_keys=S, n_queries=400, seed=0)
    assert_close(curve.entropy_scaled, np.full(3, np.log(S) - 0.5), atol=0.06, rtol=0)


@pytest.mark.claim(
    "002 §2.3",
    "For large $d_k$ the softmax of the unscaled scores is near 1 for the max and near 0 for the "
    "others",
    "verified",
    domain=r"$d_k = 8, 32, 128, 512$, 16, 64 and 128 keys, 256 rows, hypothesis over the seeds")
@pytest.mark.claim(
    r"004 Why $\sqrt{d_k}$ Scaling",
    r"With $1/\sqrt{d_k}$ scaling: variance = 1, softmax in a reasonable range",
    "verified",
    domain=r"$d_k = 8, 32, 128, 512$, 16, 64 and 128 keys, 256 rows, hypothesis over the seeds")
@settings(max_examples=8, deadline=None)
@given(n_keys=st.sampled_from([16, 64, 128]), seed=st.integers(0, 2**16))
def test_unscaled_rows_saturate_as_d_k_grows_and_scaled_rows_do_not(n_keys, seed):
    d = [8, 32, 128, 512]
    curve = saturation_curve(d, n_keys=n_keys, n_queries=256, seed=seed)
    assert curve.d_k.tolist() == d
    assert np.all(np.diff(curve.max_weight_unscaled) > 0)
    assert np.all(np.diff(curve.entropy_unscaled) < 0)
    assert curve.max_weight_unscaled[-1] > 0.8
    assert curve.entropy_unscaled[-1] < 0.1 * np.log(n_keys)
    assert curve.max_weight_scaled.max() < 1.5 * curve.max_weight_scaled.min()
    assert curve.entropy_scaled.max() < 1.1 * curve.entropy_scaled.min()


@pytest.mark.claim(
    "004 Softmax Saturation",
    "With scores of variance 512 over 100 keys a typical row is [0.98, 0.01, 0.00, 0.00, ..., "
    "0.01]: almost one-hot",
    "corrected",
    correction="Almost one-hot, yes, but the median row is more so: largest weight about 0.997, "
               "runner-up about 0.002, the rest below 1e-4; and rows vary: the mean largest weight "
               "is about 0.92, the runner-up gets more than 2 % in about 37 % of the rows and more "
               "than 10 % in about one row in five.",
    domain=r"the source's setting: 4000 rows of 100 scores drawn from $\mathcal{N}(0, 512)$, "
           "float64",
    box="corr-typical-row")
def test_seed_example_of_a_typical_row_with_score_variance_512():
    """Scores ~ N(0, 512) over 100 keys: the median row is even more one-hot than [0.98, 0.01, ...].

    The median largest weight is about 0.997 and the median runner-up about 0.002, but the mean
    largest weight is only about 0.92: in about 37 % of the rows the runner-up gets more than 2 %,
    in about one row in five more than 10 %.
    """
    rng = np.random.default_rng(0)
    p = softmax(rng.standard_normal((4000, 100)) * np.sqrt(512))
    top = max_weight(p)
    second = np.sort(p, axis=-1)[:, -2]
    assert np.median(top) > 0.99
    assert np.median(second) < 0.01
    assert np.mean(top) < 0.96
    assert 0.3 < np.mean(top < 0.98) < 0.45
    assert 0.15 < np.mean(second > 0.1) < 0.3  # a sizeable minority, not "more than a third", split the weight


def test_saturation_curve_rejects_bad_input():
    with pytest.raises(ValueError, match="d_k_values must be a 1-D sequence"):
        saturation_curve(8)
    with pytest.raises(ValueError, match="d_k_values entry must be >= 1"):
        saturation_curve([8, 0])
    with pytest.raises(ValueError, match="n_keys must be >= 1"):
        saturation_curve([8], n_keys=0)


# ----------------------------------------------------------------------------------------------
# Gradient magnitude
# ----------------------------------------------------------------------------------------------

def test_jacobian_norm_matches_the_frobenius_norm_of_softmax_jacobian():
    z = np.random.default_rng(3).standard_normal((2, 3, 7)) * 2
    expected = np.linalg.norm(softmax_jacobian(z), axis=(-2, -1))
    assert_close(softmax_jacobian_norm(z), expected)


def test_jacobian_norm_matches_torch_autograd():
    z = np.random.default_rng(4).standard_normal((5, 6)) * 3
    for row in range(z.shape[0]):
        jac = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, dim=-1), to_torch(z[row]))
        assert_close(softmax_jacobian_norm(z[row]), torch.linalg.matrix_norm(jac), name=f"row {row}")


@pytest.mark.parametrize("t", [1.0, 20.0, 40.0, 300.0])
def test_jacobian_norm_keeps_relative_accuracy_for_saturated_rows(t):
    """Two logits t apart: J = p1 p2 [[1, -1], [-1, 1]], |J|_F = 2 sigma(t) sigma(-t)."""
    exact = 2.0 * np.exp(-t) / (1.0 + np.exp(-t)) ** 2
    assert_close(softmax_jacobian_norm(np.array([t, 0.0])), np.array(exact), rtol=1e-13)
    assert_close(softmax_jacobian_norm(np.array([0.0, t])), np.array(exact), rtol=1e-13)


def test_jacobian_norm_follows_the_axis_argument():
    z = np.random.default_rng(5).standard_normal((6, 3))
    assert_close(softmax_jacobian_norm(z, axis=0), softmax_jacobian_norm(z.T))


@SETTINGS
@given(hnp.arrays(np.float64, st.integers(2, 10), elements=st.floats(-60, 60)))
def test_jacobian_norm_vanishes_exactly_as_fast_as_the_row_becomes_one_hot(z):
    """p_max (1 - p_max) <= |J|_F <= 2 (1 - p_max): a saturated softmax passes no gradient."""
    p = softmax(z)
    top = np.argmax(p)
    rest = np.sum(np.delete(p, top))  # 1 - p_max without rounding to zero
    norm = float(softmax_jacobian_norm(z))
    assert norm >= p[top] * rest * (1 - 1e-12)
    assert norm <= 2.0 * rest * (1 + 1e-12)


def test_gradient_norm_is_the_mean_of_the_row_norms():
    z = np.random.default_rng(6).standard_normal((4, 5, 8))
    assert softmax_gradient_norm(z) == pytest.approx(float(np.mean(softmax_jacobian_norm(z))), rel=1e-14)
    assert softmax_gradient_norm(np.zeros((3, 4))) == pytest.approx(np.sqrt(1 / 4 - 2 / 16 + 1 / 16))


@pytest.mark.claim(
    r"001 Why Scale by $\sqrt{d_k}$?",
    "Large dot products push softmax into regions with extremely small gradients",
    "verified",
    domain=r"$d_k = 8, 32, 128, 512, 2048$, 16 to 128 keys, 400 rows, hypothesis over the seeds: "
           "mean and median Jacobian norms fall at every step from $d_k = 32$ unscaled, stay put "
           "scaled")
@pytest.mark.claim(
    "000 Step 2: Scaling",
    "When $d_k$ is large, dot products grow large in magnitude, pushing softmax into regions with "
    "small gradients",
    "verified",
    domain=r"$d_k = 8, 32, 128, 512, 2048$, 16 to 128 keys, 400 rows, hypothesis over the seeds: "
           "mean and median Jacobian norms fall at every step from $d_k = 32$ unscaled, stay put "
           "scaled")
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**16), n_keys=st.sampled_from([16, 64, 128]))
def test_unscaled_gradients_shrink_with_d_k_while_scaled_gradients_stay_constant(seed, n_keys):
    curve = gradient_magnitude_curve([8, 32, 128, 512, 2048], n_keys=n_keys, n_queries=400, seed=seed)
    # The typical (median) row: unscaled, its norm collapses from d_k = 32 on (between 8 and 32
    # it sits near its peak); scaled, it does not move.
    assert (np.diff(curve.unscaled_median[1:]) < 0).all()
    assert curve.unscaled_median[-1] / curve.unscaled_median[0] < 0.01
    assert (0.5 < curve.scaled_median / curve.scaled_median[0]).all()
    assert (curve.scaled_median / curve.scaled_median[0] < 2.0).all()
    assert (0.5 < curve.scaled / curve.scaled[0]).all() and (curve.scaled / curve.scaled[0] < 2.0).all()
    # The mean falls too, more slowly: near-tie rows keep it up (next test).
    assert (np.diff(curve.unscaled[1:]) < 0).all()
    assert curve.unscaled[-1] / curve.unscaled[0] < 0.5


def test_unscaled_mean_gradient_decays_like_one_over_sqrt_d_k():
    """Near-ties between the two largest logits have probability ~ 1/sqrt(d): mean ~ d^(-1/2)."""
    curve = gradient_magnitude_curve([512, 2048, 8192], n_keys=64, n_queries=3000, seed=8)
    ratios = curve.unscaled[1:] / curve.unscaled[:-1]
    assert np.all((ratios > 0.35) & (ratios < 0.7))  # 1/sqrt(4) = 0.5
    # the median is gone long before: exponential in sqrt(d)
    assert curve.unscaled_median[-1] < 1e-6 * curve.unscaled[-1]


def test_gradient_functions_reject_bad_input():
    with pytest.raises(ValueError, match="scores must have at least 1 dimension"):
        softmax_jacobian_norm(np.float64(1.0))
    with pytest.raises(ValueError, match="NaN"):
        softmax_gradient_norm(np.array([0.0, np.nan]))
    with pytest.raises(TypeError, match="scores must be a NumPy array, got a torch tensor"):
        softmax_gradient_norm(torch.zeros(3))
    with pytest.raises(ValueError, match="d_k_values must not be empty"):
        gradient_magnitude_curve([])
    with pytest.raises(TypeError, match="d_k_values entry must be an integer"):
        gradient_magnitude_curve([8.5])


@pytest.mark.claim(
    "004 Gradient Magnitude",
    r"$\partial \softmax / \partial x_i$ is proportional to $\softmax(x)_i (1 - \softmax(x)_i)$; "
    "it vanishes when the softmax is saturated",
    "corrected",
    correction=r"$p_i (1 - p_i)$ is only the diagonal entry $\partial p_i/\partial x_i$ (an "
               r"equality); $\partial p_i/\partial x_j = -p_i p_j$, and the gradient of a loss is "
               r"$p \odot (g - p^\top g)$, which can have the opposite sign. Saturation kills the "
               r"whole Jacobian: $p_{\max} (1 - p_{\max}) \le \lVert J \rVert_F$ "
               r"$\le 1 - \lVert p \rVert^2$ $\le 2 (1 - p_{\max})$.",
    domain="a counterexample for the diagonal shortcut, and the bounds on random rows",
    box="corr-softmax-derivative")
def test_softmax_gradient_is_not_its_diagonal_alone_and_all_of_it_vanishes_with_saturation():
    x = np.array([0.0, 0.85, 0.0])
    p = softmax(x)
    g = np.array([1.0, 3.0, 0.0])  # dL/dp for L = p_1 + 3 p_2
    xt = to_torch(x, requires_grad=True)
    (torch.softmax(xt, 0) @ to_torch(g)).backward()
    full = xt.grad.numpy()
    diagonal_only = p * (1 - p) * g
    assert full[0] < 0 < diagonal_only[0]  # opposite signs
    assert full[2] < 0 == diagonal_only[2]  # the off-diagonal entries move x_3
    J = softmax_jacobian(x)
    assert_close(np.diag(J), p * (1 - p), name="diagonal")
    assert_close(J - np.diag(np.diag(J)), -(np.outer(p, p) - np.diag(p * p)), name="off-diagonal")
    for gap in (5.0, 20.0, 40.0):  # every entry of the Jacobian vanishes, not only the diagonal
        z = np.array([gap, 0.0, 0.0, 0.0])
        rest = softmax(z)[1:].sum()  # 1 - p_max, about 3 exp(-gap)
        assert rest < 4 * np.exp(-gap)
        assert np.abs(softmax_jacobian(z)).max() <= rest * (1 + 1e-6)  # up to rounding in p - p^2


@SETTINGS
@given(hnp.arrays(np.float64, st.integers(2, 10), elements=st.floats(-30, 30)))
def test_jacobian_norm_is_at_most_one_minus_the_squared_norm_of_p(z):
    """|J|_F <= tr J = 1 - |p|^2 because J = diag(p) - p p^T is positive semi-definite."""
    p = softmax(z)
    norm = float(softmax_jacobian_norm(z))
    assert norm <= (1.0 - p @ p) * (1 + 1e-12) + 1e-15
    assert_close(np.trace(softmax_jacobian(z)), np.array(1.0 - p @ p), rtol=1e-12, atol=1e-15, name="trace")

