"""Tests of attnmath.softmax: oracle (torch, float64), gradients, properties, extremes, errors."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays, array_shapes

from attnmath.softmax import (log_softmax, logsumexp, masked_softmax, softmax, softmax_jacobian,
                              softmax_vjp)
from attnmath.testing import assert_close, check_gradient, numerical_gradient, to_torch

finite = st.floats(min_value=-50, max_value=50, allow_nan=False, allow_infinity=False, width=64)
logit_arrays = arrays(np.float64, array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6), elements=finite)
SETTINGS = settings(max_examples=60, deadline=None)


# --- oracle: torch in float64 -------------------------------------------------------------

@pytest.mark.claim(
    "003 §1.1",
    r"$\softmax(z)_i = \exp(z_i) / \sum_j \exp(z_j)$, computed stably by subtracting the maximum",
    "verified",
    domain="1-D to 3-D arrays, every axis, temperatures 0.3, 1 and 4, against `torch.softmax`")
@pytest.mark.parametrize("shape,axis", [((5,), 0), ((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1), ((2, 1, 3), -3)])
@pytest.mark.parametrize("temperature", [1.0, 0.3, 4.0])
def test_softmax_matches_torch(shape, axis, temperature):
    x = np.random.default_rng(0).normal(scale=3.0, size=shape)
    expected = torch.softmax(to_torch(x) / temperature, dim=axis)
    assert_close(softmax(x, axis=axis, temperature=temperature), expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("shape,axis", [((5,), 0), ((3, 4), -1), ((2, 3, 4), 1)])
def test_log_softmax_and_logsumexp_match_torch(shape, axis):
    x = np.random.default_rng(1).normal(scale=3.0, size=shape)
    assert_close(log_softmax(x, axis=axis), torch.log_softmax(to_torch(x), dim=axis), rtol=1e-12, atol=1e-14)
    assert_close(logsumexp(x, axis=axis), torch.logsumexp(to_torch(x), dim=axis), rtol=1e-12, atol=1e-14)
    assert_close(logsumexp(x, axis=axis, keepdims=True),
                 torch.logsumexp(to_torch(x), dim=axis, keepdim=True), rtol=1e-12, atol=1e-14)


@pytest.mark.claim(
    "003 §1.4",
    r"The softmax Jacobian is $J = \operatorname{diag}(p) - p p^\top$",
    "verified",
    domain=r"every vector of length 1 to 10 with entries in $[-20, 20]$, temperatures from 0.1 to "
           "5, against `torch.autograd`, hypothesis")
@SETTINGS
@given(z=arrays(np.float64, st.integers(1, 10), elements=st.floats(-20, 20)),
       temperature=st.floats(0.1, 5.0))
def test_jacobian_matches_torch_autograd(z, temperature):
    expected = torch.autograd.functional.jacobian(lambda t: torch.softmax(t / temperature, 0), to_torch(z))
    # entries are at most 1/4; p (1 - p) near a saturated p loses digits to rounding in both
    assert_close(softmax_jacobian(z, temperature=temperature), expected, rtol=1e-12, atol=1e-13)


def test_batched_jacobian_is_the_jacobian_of_each_row():
    z = np.random.default_rng(2).normal(size=(2, 3, 4))
    J = softmax_jacobian(z)
    assert J.shape == (2, 3, 4, 4)
    for idx in np.ndindex(2, 3):
        assert_close(J[idx], softmax_jacobian(z[idx]), rtol=1e-15, atol=0)


@pytest.mark.claim(
    "002 §3.2",
    r"$\partial L/\partial S$ "
    r"$= A \odot (\partial L/\partial A - \operatorname{rowsum}(A \odot \partial L/\partial A))$ "
    "through the row-wise softmax",
    "verified",
    domain="1-D to 3-D arrays, several axes, temperatures 1 and 2.5, against `torch.autograd`",
    chapter="03_gradients")
@pytest.mark.parametrize("shape,axis", [((6,), 0), ((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1)])
@pytest.mark.parametrize("temperature", [1.0, 2.5])
def test_vjp_matches_torch_autograd(shape, axis, temperature):
    rng = np.random.default_rng(3)
    z, g = rng.normal(size=shape), rng.normal(size=shape)
    zt = to_torch(z, requires_grad=True)
    torch.softmax(zt / temperature, dim=axis).backward(to_torch(g))
    p = softmax(z, axis=axis, temperature=temperature)
    assert_close(softmax_vjp(p, g, axis=axis, temperature=temperature), zt.grad, rtol=1e-11, atol=1e-14)


def test_masked_softmax_matches_torch_where_rows_are_not_empty():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 6))
    mask = rng.random((3, 6)) < 0.6
    mask[:, 0] = True
    expected = torch.softmax(to_torch(np.where(mask, x, -np.inf)), dim=-1)
    assert_close(masked_softmax(x, mask), expected, rtol=1e-12, atol=1e-15)


# --- gradients: central differences ----------------------------------------------------------

def test_vjp_passes_central_difference_check():
    rng = np.random.default_rng(5)
    z, g = rng.normal(size=(2, 5)), rng.normal(size=(2, 5))
    analytic = softmax_vjp(softmax(z, axis=-1), g, axis=-1)
    check_gradient(lambda x: float(np.sum(g * softmax(x, axis=-1))), z, analytic, name="z")


def test_jacobian_passes_central_difference_check():
    z = np.random.default_rng(6).normal(size=4)
    J = softmax_jacobian(z, temperature=0.7)
    for i in range(4):
        check_gradient(lambda x: float(softmax(x, temperature=0.7)[i]), z, J[i], name=f"z (row {i})")


def test_logsumexp_gradient_is_softmax():
    z = np.random.default_rng(7).normal(size=6)
    assert_close(numerical_gradient(lambda x: float(logsumexp(x)), z), softmax(z), rtol=1e-6, atol=1e-9)


def test_numerical_gradient_detects_a_wrong_gradient():
    z = np.random.default_rng(8).normal(size=4)
    wrong = softmax(z)  # the gradient of lse, not of sum(softmax) (which is zero)
    with pytest.raises(AssertionError, match=r"gradient with respect to z"):
        check_gradient(lambda x: float(np.sum(softmax(x))), z, wrong, name="z")


# --- properties (hypothesis) -------------------------------------------------------------

@pytest.mark.claim(
    "003 §1.1",
    r"Softmax outputs a probability distribution: entries $\ge 0$ summing to 1",
    "verified",
    domain="every array of 1 to 3 dimensions (sides 1 to 6) with entries in $[-50, 50]$, every "
           "axis, hypothesis")
@SETTINGS
@given(logit_arrays, st.data())
def test_rows_are_probability_vectors(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    p = softmax(x, axis=axis)
    assert (p >= 0).all()
    assert_close(p.sum(axis=axis), np.ones_like(p.sum(axis=axis)), rtol=1e-12, atol=1e-12)


@pytest.mark.claim(
    "003 §1.1",
    r"Translation invariance: $\softmax(z + c\mathbf{1}) = \softmax(z)$",
    "verified",
    domain="every array of 1 to 3 dimensions with entries in [-50, 50], shifts in [-1000, 1000], "
           "hypothesis")
@SETTINGS
@given(logit_arrays, st.floats(-1e3, 1e3, allow_nan=False))
def test_softmax_is_shift_invariant(x, c):
    assert_close(softmax(x + c), softmax(x), rtol=1e-9, atol=1e-12)


@pytest.mark.claim(
    "003 §1.1",
    r"Order preservation: $z_i > z_j$ implies $\softmax(z)_i > \softmax(z)_j$",
    "verified",
    domain="every vector of length 2 to 8 with entries in $[-50, 50]$, every pair, hypothesis")
@SETTINGS
@given(arrays(np.float64, st.integers(2, 8), elements=finite))
def test_softmax_preserves_order(z):
    p = softmax(z)
    i, j = np.meshgrid(np.arange(z.size), np.arange(z.size), indexing="ij")
    strictly_larger = z[i] > z[j]
    # p is a strictly increasing function of z within a row; rounding may tie near-equal logits
    assert (p[i][strictly_larger] >= p[j][strictly_larger]).all()
    assert p[np.argmax(z)] == p.max()


@pytest.mark.claim(
    "003 Problem 1",
    "The rows of the softmax Jacobian sum to zero",
    "verified",
    domain="every vector of length 1 to 7 with entries in $[-50, 50]$, hypothesis")
@SETTINGS
@given(arrays(np.float64, st.integers(1, 7), elements=finite))
def test_jacobian_rows_sum_to_zero_and_it_is_symmetric_psd(z):
    J = softmax_jacobian(z)
    assert_close(J.sum(axis=1), np.zeros(z.size), rtol=0, atol=1e-14)
    assert_close(J, J.T, rtol=0, atol=0)
    assert np.linalg.eigvalsh(J).min() > -1e-14


@SETTINGS
@given(arrays(np.float64, st.integers(2, 7), elements=st.floats(-5, 5, width=64)), st.data())
def test_vjp_equals_jacobian_transpose_times_g(z, data):
    g = data.draw(arrays(np.float64, z.shape, elements=st.floats(-5, 5, width=64)))
    p = softmax(z)
    assert_close(softmax_vjp(p, g), softmax_jacobian(z).T @ g, rtol=1e-10, atol=1e-13)
    assert abs(softmax_vjp(p, g).sum()) < 1e-12


@SETTINGS
@given(arrays(np.float64, st.integers(2, 8), elements=st.floats(-10, 10, width=64)).filter(
    lambda z: np.sort(z)[-1] - np.sort(z)[-2] > 1e-3))
@pytest.mark.claim(
    "003 §1.3",
    r"As $\tau \to 0$ the temperature softmax becomes a one-hot distribution (hard max)",
    "corrected",
    correction="One-hot only when the maximum is unique; $k$ tied maxima each get weight $1/k$ in "
               "the limit.",
    domain="every vector of length 2 to 8 in $[-10, 10]$ with a unique maximum (gap $> 10^{-3}$): "
           "the argmax one-hot, hypothesis",
    box="corr-temperature-ties")
def test_zero_temperature_limit_is_the_argmax_one_hot(z):
    one_hot = np.eye(z.size)[np.argmax(z)]
    assert_close(softmax(z, temperature=1e-6), one_hot, rtol=0, atol=1e-12)


@pytest.mark.claim(
    "003 §1.3",
    r"As $\tau \to 0$ the temperature softmax becomes a one-hot distribution (hard max)",
    "corrected",
    correction="One-hot only when the maximum is unique; $k$ tied maxima each get weight $1/k$ in "
               "the limit.",
    domain=r"$1 \le k \le 6$ tied maxima in $[-9, 10]$ among 0 to 6 smaller entries, in any order, "
           r"temperatures down to $10^{-300}$, hypothesis",
    box="corr-temperature-ties")
@SETTINGS
@given(top=st.floats(-9, 10), k=st.integers(1, 6), data=st.data())
def test_zero_temperature_limit_splits_ties_equally(top, k, data):
    rest = data.draw(st.lists(st.floats(-10, top - 1e-3), max_size=6), label="smaller entries")
    z = np.array([top] * k + rest)
    z = z[data.draw(st.permutations(range(z.size)), label="order")]
    expected = np.where(z == top, 1.0 / k, 0.0)
    for temperature in (1e-6, 1e-300):
        assert_close(softmax(z, temperature=temperature), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("temperature", [1e-300, 1e-308, 5e-324])
def test_tiny_temperature_gives_the_one_hot_without_a_warning(temperature):
    """(x - max) / tau rounds to -inf far below the maximum: that is exact, not an overflow."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = softmax(np.array([1.0, 2.0, 3.0, 4.0]), temperature=temperature)
    assert_close(p, np.array([0.0, 0.0, 0.0, 1.0]), rtol=0, atol=0)


@pytest.mark.claim(
    "003 §1.3",
    r"As $\tau \to \infty$, $\softmax(z/\tau)$ tends to the uniform distribution",
    "verified",
    domain="every vector of length 1 to 8 with entries in $[-50, 50]$, hypothesis")
@SETTINGS
@given(arrays(np.float64, st.integers(1, 8), elements=finite))
def test_infinite_temperature_limit_is_uniform(z):
    assert_close(softmax(z, temperature=1e12), np.full(z.size, 1.0 / z.size), rtol=1e-9, atol=0)


@SETTINGS
@given(arrays(np.float64, st.integers(1, 8), elements=finite))
def test_logsumexp_lies_between_max_and_max_plus_log_n(z):
    lse = logsumexp(z)
    assert z.max() - 1e-12 <= lse <= z.max() + np.log(z.size) + 1e-12


# --- extremes: no overflow, no NaN ---------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_extreme_logits_give_finite_probabilities(dtype):
    x = np.array([[1e4, -1e4, 0.0, 9990.0], [-1e4, -1e4, -1e4, -1e4], [1e4, 1e4, 1e4, 1e4]], dtype=dtype)
    p = softmax(x, axis=-1)
    assert p.dtype == dtype
    assert np.isfinite(p).all()
    expected = torch.softmax(to_torch(x.astype(np.float64)), dim=-1)
    assert_close(p.astype(np.float64), expected, rtol=2e-3 if dtype == np.float16 else 1e-6, atol=1e-3)
    assert np.isfinite(log_softmax(x)).all()
    assert np.isfinite(logsumexp(x)).all()


@pytest.mark.claim(
    "000 Implementation",
    "Subtracting the maximum before exponentiating makes softmax numerically stable",
    "verified",
    domain=r"every float64 vector of length 1 to 8 with entries in $[-10^{300}, 10^{300}]$ "
           r"(hypothesis, against `torch.softmax`), and the logits $(1000, 999)$ where "
           "the naive formula gives NaN")
@SETTINGS
@given(arrays(np.float64, st.integers(1, 8), elements=st.floats(-1e300, 1e300)))
def test_naive_formula_overflows_where_the_stable_one_does_not(x):
    p = softmax(x)
    assert np.isfinite(p).all() and (p >= 0).all() and abs(p.sum() - 1) < 1e-12
    assert_close(p, torch.softmax(torch.from_numpy(x), dim=-1), rtol=1e-12, atol=1e-300)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        naive = np.exp(x) / np.exp(x).sum()
    if x.max() > np.log(np.finfo(np.float64).max):  # exp overflows: the naive formula breaks
        assert not np.isfinite(naive).all()
    pair = np.array([1000.0, 999.0])
    with np.errstate(over="ignore", invalid="ignore"):
        assert np.isnan(np.exp(pair) / np.exp(pair).sum()).all()
    assert_close(softmax(pair), np.array([1.0, np.exp(-1.0)]) / (1.0 + np.exp(-1.0)), rtol=1e-15, atol=0)


@pytest.mark.claim(
    "003 §1.1",
    "Stable softmax: `z - np.max(z)`, then `exp(z) / np.sum(exp(z))`",
    "corrected",
    correction="Right for one vector only; for a matrix of scores the maximum and the sum must run "
               "along each row (`axis=-1`), or rows are normalised together and can underflow to "
               "zero.",
    domain=r"a counterexample: a $2 \times 3$ score matrix",
    box="corr-softmax-rows")
def test_global_max_vector_formula_is_wrong_for_a_matrix():
    """The vector formula exp(z - max z) / sum(...) normalises a whole matrix, and underflows rows."""
    scores = np.array([[1.0, 2.0, 3.0], [-900.0, -901.0, -902.0]])
    e = np.exp(scores - np.max(scores))
    vector_formula = e / np.sum(e)
    assert not np.allclose(vector_formula.sum(axis=-1), 1.0)
    assert (vector_formula[1] == 0).all()
    assert_close(softmax(scores, axis=-1)[1], softmax(scores[1] + 900.0), rtol=1e-15, atol=0)


@pytest.mark.claim(
    "003 §1.2",
    r"The expected index $\sum_i i \softmax(z)_i$ is a differentiable (soft) argmax",
    "corrected",
    correction="The expected index approximates the argmax only when one entry dominates; for "
               "$z = (5, 0, 5)$ it is 1, the argmin. Softmax smooths the one-hot argmax vector; "
               "log-sum-exp is the smooth max.",
    domain="the counterexample $z = (5, 0, 5)$",
    box="corr-expected-index")
def test_expected_index_is_not_an_argmax():
    z = np.array([5.0, 0.0, 5.0])
    expected_index = np.arange(3) @ softmax(z)
    assert expected_index == pytest.approx(1.0)
    assert np.argmin(z) == 1


def test_masked_softmax_of_a_fully_masked_row_is_zero_and_its_gradient_too():
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = np.array([[True, False, True], [False, False, False]])
    p = masked_softmax(x, mask)
    assert_close(p[1], np.zeros(3), rtol=0, atol=0)
    assert p[0, 1] == 0.0 and p[0].sum() == pytest.approx(1.0)
    assert_close(softmax_vjp(p, np.ones_like(p))[1], np.zeros(3), rtol=0, atol=0)


def test_logsumexp_of_an_all_minus_inf_row_is_minus_inf():
    out = logsumexp(np.array([[-np.inf, -np.inf], [0.0, -np.inf]]))
    assert out[0] == -np.inf and out[1] == 0.0


# --- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize("temperature,err", [(0.0, ValueError), (-1.0, ValueError), (np.inf, ValueError),
                                             ("hot", TypeError), (True, TypeError)])
def test_bad_temperature_is_rejected(temperature, err):
    with pytest.raises(err, match="temperature"):
        softmax(np.zeros(3), temperature=temperature)


@pytest.mark.parametrize("fn", [softmax, log_softmax, logsumexp, masked_softmax])
def test_bad_input_is_rejected_with_a_named_error(fn):
    with pytest.raises(ValueError, match="at least 1 dimension"):
        fn(np.float64(3.0))
    with pytest.raises(ValueError, match="axis=2 is out of range"):
        fn(np.zeros((2, 2)), axis=2)
    with pytest.raises(TypeError, match="x must have a floating dtype"):
        fn(np.array([True, False]))
    with pytest.raises(TypeError, match="torch tensor"):
        fn(torch.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        fn(np.array([1.0, np.nan]))


def test_softmax_rejects_plus_inf_and_all_minus_inf_rows():
    with pytest.raises(ValueError, match=r"\+inf"):
        softmax(np.array([np.inf, 0.0]))
    with pytest.raises(ValueError, match="entirely -inf.*masked_softmax"):
        softmax(np.array([[0.0, 1.0], [-np.inf, -np.inf]]))


def test_vjp_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"grad_p must have the shape of p \(3,\), got \(4,\)"):
        softmax_vjp(np.ones(3) / 3, np.ones(4))


def test_masked_softmax_rejects_bad_masks():
    with pytest.raises(TypeError, match="mask must be boolean"):
        masked_softmax(np.zeros((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"mask of shape \(4,\) does not broadcast to x of shape \(2, 3\)"):
        masked_softmax(np.zeros((2, 3)), np.ones(4, dtype=bool))


def test_lists_and_integers_are_accepted_as_float64():
    assert_close(softmax([1, 2, 3]), softmax(np.array([1.0, 2.0, 3.0])), rtol=0, atol=0)
    assert softmax(np.arange(3)).dtype == np.float64


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3), (2, 0, 4)])
def test_empty_input_gives_empty_output_as_torch(shape):
    x = np.zeros(shape)
    t = torch.from_numpy(x)
    assert softmax(x).shape == torch.softmax(t, -1).shape
    assert log_softmax(x).shape == torch.log_softmax(t, -1).shape
    assert masked_softmax(x).shape == shape
    np.testing.assert_array_equal(logsumexp(x), torch.logsumexp(t, -1).numpy())  # -inf on empty rows
    assert softmax_jacobian(x).shape == shape + (shape[-1],)


@SETTINGS
@given(extra=st.integers(1, 3), L=st.integers(1, 4), S=st.integers(1, 4))
def test_a_mask_never_adds_axes_to_the_output(extra, L, S):
    x = np.zeros((L, S))
    with pytest.raises(ValueError, match="does not broadcast to x"):
        masked_softmax(x, np.ones((extra, L, S), dtype=bool))
    assert masked_softmax(x, np.ones((1, S), dtype=bool)).shape == (L, S)


def test_keepdims_must_be_a_bool():
    with pytest.raises(TypeError, match="keepdims must be True or False"):
        logsumexp(np.zeros(3), keepdims="no")
