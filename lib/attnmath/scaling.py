r"""Why scores are divided by :math:`\sqrt{D}`: variance, saturation and gradient size.

For a query and a key with independent entries,

.. math::

    \operatorname{Var}(q\cdot k) = \sum_{i=1}^{D} \operatorname{Var}(q_i k_i)
    = D\bigl[(\sigma_q^2+\mu_q^2)(\sigma_k^2+\mu_k^2) - \mu_q^2\mu_k^2\bigr],

which is :math:`D` for standard normal entries. Unscaled scores therefore spread like
:math:`\sqrt{D}`, the softmax of a row tends to a one-hot vector, and its Jacobian
:math:`J = \operatorname{diag}(p) - pp^\top` tends to zero. This module measures each step of
that argument: the Monte Carlo moments of :math:`q\cdot k` against the exact formula, the
entropy and the largest weight of softmax rows, and the Frobenius norm of the softmax Jacobian,
each as a function of :math:`D` with and without the factor :math:`1/\sqrt{D}`.

Shape legend: ``L`` queries (rows), ``S`` keys (columns), ``D`` head dim.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ._validate import FloatArray, as_array, as_rng, check_axis, check_logits, check_positive_int, check_real
from .softmax import softmax

__all__ = [
    "DotProductStats",
    "dot_product_variance",
    "dot_product_mean_theory",
    "dot_product_variance_theory",
    "attention_entropy",
    "max_weight",
    "SaturationCurve",
    "saturation_curve",
    "softmax_jacobian_norm",
    "softmax_gradient_norm",
    "GradientCurve",
    "gradient_magnitude_curve",
]

# Entries drawn per Monte Carlo chunk: bounds the memory of dot_product_variance.
_CHUNK_ENTRIES = 1 << 21


class DotProductStats(NamedTuple):
    """Sample moments of :math:`q\\cdot k` over ``n_samples`` independent pairs."""

    #: Sample mean of :math:`q\cdot k` (a scalar).
    mean: float
    #: Unbiased sample variance of :math:`q\cdot k` (a scalar).
    var: float
    #: Unbiased sample variance of :math:`q\cdot k/\sqrt{D}`, that is ``var / D``.
    scaled_var: float


class SaturationCurve(NamedTuple):
    """Mean largest weight and mean entropy of softmax rows, per head dim.

    Every field is an ndarray of shape ``(len(d_k),)``; entropies are in nats and lie in
    :math:`[0, \\log S]`.
    """

    #: Head dims ``D`` studied, shape ``(len(d_k),)``.
    d_k: np.ndarray
    #: Mean largest softmax weight per row with ``1/sqrt(D)`` scaling, ``(len(d_k),)``.
    max_weight_scaled: np.ndarray
    #: Mean largest softmax weight per row without scaling, ``(len(d_k),)``.
    max_weight_unscaled: np.ndarray
    #: Mean row entropy in nats, in ``[0, log S]``, with scaling, ``(len(d_k),)``.
    entropy_scaled: np.ndarray
    #: Mean row entropy in nats, in ``[0, log S]``, without scaling, ``(len(d_k),)``.
    entropy_unscaled: np.ndarray


class GradientCurve(NamedTuple):
    """Mean and median over rows of the softmax-Jacobian norm, per head dim.

    Every field is an ndarray of shape ``(len(d_k),)``.
    """

    #: Head dims ``D`` studied, shape ``(len(d_k),)``.
    d_k: np.ndarray
    #: Mean softmax-Jacobian norm over rows with scaling, ``(len(d_k),)``.
    scaled: np.ndarray
    #: Mean softmax-Jacobian norm over rows without scaling, ``(len(d_k),)``.
    unscaled: np.ndarray
    #: Median softmax-Jacobian norm over rows with scaling, ``(len(d_k),)``.
    scaled_median: np.ndarray
    #: Median softmax-Jacobian norm over rows without scaling, ``(len(d_k),)``.
    unscaled_median: np.ndarray


def _check_d_k_values(d_k_values) -> np.ndarray:
    if isinstance(d_k_values, (str, bytes)) or np.ndim(d_k_values) != 1:
        raise ValueError(f"d_k_values must be a 1-D sequence of positive ints, got {d_k_values!r}")
    values = [check_positive_int(d, "d_k_values entry") for d in d_k_values]
    if not values:
        raise ValueError("d_k_values must not be empty")
    return np.asarray(values, dtype=np.int64)


def dot_product_variance(
    d_k: int, *, n_samples: int = 100_000, seed: int | np.random.Generator = 0,
    mean_q: float = 0.0, mean_k: float = 0.0, var_q: float = 1.0, var_k: float = 1.0
) -> DotProductStats:
    r"""Monte Carlo mean and variance of :math:`q\cdot k` for Gaussian ``q`` and ``k``.

    .. math::

        \begin{aligned}
        &q_i \sim \mathcal N(\mu_q, \sigma_q^2), \quad k_i \sim \mathcal N(\mu_k, \sigma_k^2), \quad \text{all
          } 2D \text{ entries independent}; \\
        &\widehat{\operatorname{Var}}(q\cdot k) = \frac{1}{n-1}\sum_{s=1}^{n} \bigl(q^{(s)}\cdot k^{(s)} -
          \overline{q\cdot k}\bigr)^2 .
        \end{aligned}

    Parameters
    ----------
    d_k : int
        Head dim ``D``.
    n_samples : int
        Number of independent pairs ``(q, k)``; at least 2.
    seed : int or numpy.random.Generator
        Source of randomness; an int gives a reproducible result.
    mean_q, mean_k : float
        Entry means :math:`\mu_q, \mu_k`.
    var_q, var_k : float
        Entry variances :math:`\sigma_q^2, \sigma_k^2` (non-negative).

    Returns
    -------
    DotProductStats
        ``mean``, ``var`` and ``scaled_var = var / d_k``.

    Notes
    -----
    The pairs are drawn in chunks, so memory stays bounded for large ``n_samples * d_k``.
    The standard error of ``var`` is about ``var * sqrt(2 / n_samples)`` when ``d_k`` is large
    (the dot product is then close to Gaussian). Oracle: :func:`dot_product_variance_theory`
    and :func:`dot_product_mean_theory`, within a few standard errors.
    """
    d_k = check_positive_int(d_k, "d_k")
    n_samples = check_positive_int(n_samples, "n_samples")
    if n_samples < 2:
        raise ValueError(f"n_samples must be >= 2 to estimate a variance, got {n_samples}")
    mean_q, mean_k = check_real(mean_q, "mean_q"), check_real(mean_k, "mean_k")
    std_q, std_k = np.sqrt(check_real(var_q, "var_q", nonnegative=True)), np.sqrt(check_real(var_k, "var_k", nonnegative=True))
    rng = as_rng(seed)
    rows = max(1, _CHUNK_ENTRIES // d_k)
    dots = np.empty(n_samples, dtype=np.float64)  # (n_samples,)
    for start in range(0, n_samples, rows):
        n = min(rows, n_samples - start)
        q = mean_q + std_q * rng.standard_normal((n, d_k))  # (n, D)
        k = mean_k + std_k * rng.standard_normal((n, d_k))  # (n, D)
        dots[start:start + n] = np.einsum("nd,nd->n", q, k)  # (n,)
    var = float(np.var(dots, ddof=1))
    return DotProductStats(mean=float(np.mean(dots)), var=var, scaled_var=var / d_k)


def dot_product_mean_theory(
    d_k: int, *, mean_q: float = 0.0, mean_k: float = 0.0
) -> float:
    r"""Exact mean of :math:`q\cdot k` for entries with means :math:`\mu_q, \mu_k`.

    .. math:: \mathbb E[q\cdot k] = \sum_{i=1}^{D} \mathbb E[q_i]\,\mathbb E[k_i] = D\,\mu_q\mu_k .

    Parameters
    ----------
    d_k : int
        Head dim ``D``.
    mean_q, mean_k : float
        Entry means.

    Returns
    -------
    float

    Notes
    -----
    Needs only that :math:`q_i` and :math:`k_i` are uncorrelated. Oracle: the Monte Carlo
    estimate of :func:`dot_product_variance`.
    """
    d_k = check_positive_int(d_k, "d_k")
    return d_k * check_real(mean_q, "mean_q") * check_real(mean_k, "mean_k")


def dot_product_variance_theory(
    d_k: int, *, var_q: float = 1.0, var_k: float = 1.0, mean_q: float = 0.0,
    mean_k: float = 0.0
) -> float:
    r"""Exact variance of :math:`q\cdot k` for independent entries of any distribution.

    .. math::

        \begin{aligned}
        &\operatorname{Var}(q_i k_i) = \mathbb E[q_i^2]\,\mathbb E[k_i^2] - \mu_q^2\mu_k^2 =
          (\sigma_q^2+\mu_q^2)(\sigma_k^2+\mu_k^2) - \mu_q^2\mu_k^2, \\
        &\operatorname{Var}(q\cdot k) = D\,\operatorname{Var}(q_i k_i).
        \end{aligned}

    With zero means this is :math:`D\,\sigma_q^2\sigma_k^2`, and :math:`D` for unit variances.

    Parameters
    ----------
    d_k : int
        Head dim ``D``.
    var_q, var_k : float
        Entry variances (non-negative).
    mean_q, mean_k : float
        Entry means.

    Returns
    -------
    float

    Notes
    -----
    Assumptions: the :math:`2D` entries are independent and the :math:`D` coordinates are
    identically distributed. The common shortcut
    :math:`\operatorname{Var}(q_i k_i) = \mathbb E[q_i^2]\mathbb E[k_i^2]` needs both the
    independence of :math:`q_i` and :math:`k_i` *and* :math:`\mu_q\mu_k = 0`; with dependent
    entries it fails too (for :math:`k = q` standard normal, :math:`\operatorname{Var}(q\cdot q)
    = 2D`). Only the first two moments enter, so the formula holds beyond the Gaussian case.
    Oracle: exact enumeration over two-point distributions, and the Monte Carlo estimate of
    :func:`dot_product_variance`.
    """
    d_k = check_positive_int(d_k, "d_k")
    var_q, var_k = check_real(var_q, "var_q", nonnegative=True), check_real(var_k, "var_k", nonnegative=True)
    mean_q, mean_k = check_real(mean_q, "mean_q"), check_real(mean_k, "mean_k")
    # (s_q + m_q^2)(s_k + m_k^2) - m_q^2 m_k^2, expanded so that the m_q^2 m_k^2 terms cancel
    # exactly instead of in floating point.
    per_coordinate = var_q * var_k + var_q * mean_k**2 + mean_q**2 * var_k
    return d_k * per_coordinate


def _check_probs(probs, name: str = "probs") -> np.ndarray:
    probs = as_array(probs, name, allow_int=True)
    if probs.ndim == 0:
        raise ValueError(f"{name} must have at least 1 dimension, got a scalar")
    if np.isnan(probs).any():
        raise ValueError(f"{name} contains NaN")
    if (probs < 0).any() or (probs > 1 + 1e-9).any():
        raise ValueError(
            f"{name} must hold probabilities in [0, 1], got values in [{probs.min()}, {probs.max()}]"
        )
    return probs


def _check_row_axis(x: np.ndarray, axis, name: str) -> int:
    """The normalised axis, which must hold at least one entry (an empty row has no weights)."""
    axis = check_axis(axis, x.ndim)
    if x.shape[axis] == 0:
        raise ValueError(f"{name} has no entries along axis {axis} (shape {x.shape}): a row needs S >= 1")
    return axis


def attention_entropy(probs: ArrayLike, axis: int = -1) -> FloatArray:
    r"""Shannon entropy (nats) of each attention row, with :math:`0 \log 0 = 0`.

    .. math:: H(p) = -\sum_{j=1}^{S} p_j \log p_j, \qquad 0 \le H(p) \le \log S .

    Parameters
    ----------
    probs : array_like, shape (..., S, ...)
        Attention weights, e.g. ``(B, H, L, S)``; each row non-negative.
    axis : int
        The axis that sums to one. Default: the last.

    Returns
    -------
    ndarray, shape of ``probs`` without ``axis``
        :math:`\log S` for a uniform row, 0 for a one-hot row (and for a fully masked row of
        zeros).

    Notes
    -----
    Rows are not renormalised: the sum is taken as given. Oracle:
    ``torch.distributions.Categorical(probs=...).entropy()`` and the closed forms for
    uniform and one-hot rows.
    """
    probs = _check_probs(probs)
    axis = _check_row_axis(probs, axis, "probs")
    safe = np.where(probs > 0, probs, 1.0)
    return -np.sum(np.where(probs > 0, probs * np.log(safe), 0.0), axis=axis)


def max_weight(probs: ArrayLike, axis: int = -1) -> FloatArray:
    r"""Largest weight of each attention row, :math:`\max_j p_j \in [1/S, 1]`.

    Parameters
    ----------
    probs : array_like, shape (..., S, ...)
        Attention weights.
    axis : int
        The normalised axis. Default: the last.

    Returns
    -------
    ndarray, shape of ``probs`` without ``axis``

    Notes
    -----
    A value near 1 means the row is (almost) one-hot: the softmax is saturated.
    Oracle: ``torch.max``.
    """
    probs = _check_probs(probs)
    axis = _check_row_axis(probs, axis, "probs")
    return np.max(probs, axis=axis)


def _random_scores(rng, d_k: int, n_queries: int, n_keys: int) -> np.ndarray:
    q = rng.standard_normal((n_queries, d_k))  # (L, D)
    k = rng.standard_normal((n_keys, d_k))  # (S, D)
    return q @ k.T  # (L, S)


def saturation_curve(
    d_k_values: ArrayLike, *, n_keys: int = 64, n_queries: int = 256,
    seed: int | np.random.Generator = 0
) -> SaturationCurve:
    r"""Mean largest weight and mean entropy of softmax rows as the head dim grows.

    For each ``d`` in ``d_k_values``: draw ``Q (L, d)`` and ``K (S, d)`` with standard normal
    entries, form :math:`QK^\top` and report, averaged over the ``L`` rows,

    .. math::

        \begin{aligned}
        &\max_j \operatorname{softmax}(QK^\top/\sqrt d)_{ij}, \quad
          H\bigl(\operatorname{softmax}(QK^\top/\sqrt d)_{i\cdot}\bigr) \\
        &\text{and the same without } 1/\sqrt d .
        \end{aligned}

    Parameters
    ----------
    d_k_values : sequence of int
        Head dims to evaluate.
    n_keys : int
        ``S``, the length of each softmax row.
    n_queries : int
        ``L``, the number of rows averaged.
    seed : int or numpy.random.Generator
        Source of randomness. The scaled and unscaled columns use the same draws.

    Returns
    -------
    SaturationCurve
        Arrays of shape ``(len(d_k_values),)``.

    Notes
    -----
    With scaling the scores of a row are, given the query, iid
    :math:`\mathcal N(0, \lVert q\rVert^2/d)` with :math:`\mathbb E\lVert q\rVert^2/d = 1`, so
    the curve is nearly flat in ``d`` once :math:`\lVert q\rVert^2/d` concentrates (from
    :math:`d \approx 4`; at :math:`d = 1` it is :math:`\chi^2_1`-distributed, scaled and unscaled
    coincide, and the means differ from the later level); for large ``S`` the entropy tends to
    :math:`\log S - 1/2` (a second-order expansion of :math:`\log\sum_j e^{s_j}`). Without
    scaling the score variance is ``d`` and the rows approach one-hot vectors. Oracle: the
    :math:`\log S - 1/2` limit and the monotone trend, tested with fixed seeds.
    """
    d_values = _check_d_k_values(d_k_values)
    n_keys = check_positive_int(n_keys, "n_keys")
    n_queries = check_positive_int(n_queries, "n_queries")
    rng = as_rng(seed)
    out = np.empty((4, d_values.size))
    for idx, d in enumerate(d_values):
        scores = _random_scores(rng, int(d), n_queries, n_keys)  # (L, S)
        p_scaled = softmax(scores / np.sqrt(d))  # (L, S)
        p_unscaled = softmax(scores)  # (L, S)
        out[:, idx] = (max_weight(p_scaled).mean(), max_weight(p_unscaled).mean(),
                       attention_entropy(p_scaled).mean(), attention_entropy(p_unscaled).mean())
    return SaturationCurve(d_values, *out)


def softmax_jacobian_norm(scores: ArrayLike, axis: int = -1) -> FloatArray:
    r"""Frobenius norm of the softmax Jacobian of each row, computed without cancellation.

    .. math::

        \begin{aligned}
        J &= \operatorname{diag}(p) - pp^\top, \\
        \lVert J\rVert_F^2 &= \sum_i p_i^2 (1-p_i)^2 + \sum_{i\ne j} p_i^2 p_j^2 \\
        &= \sum_i p_i^2\Bigl[(1-p_i)^2 + \sum_{j\ne i} p_j^2\Bigr].
        \end{aligned}

    Parameters
    ----------
    scores : array_like, shape (..., S, ...)
        Logits (``-inf`` allowed, not a whole row of them).
    axis : int
        The softmax axis. Default: the last.

    Returns
    -------
    ndarray, shape of ``scores`` without ``axis``
        In :math:`[0, 1)`; it satisfies
        :math:`p_{\max}(1-p_{\max}) \le \lVert J\rVert_F \le 2(1-p_{\max})`, so it vanishes
        exactly as fast as the row becomes one-hot.

    Notes
    -----
    For the largest entry :math:`m`, both :math:`1-p_m` and :math:`\sum_{j\ne m}p_j^2` are
    formed as sums over the other entries, never as differences, so the norm keeps its
    relative accuracy in the saturated regime (:math:`\approx 2e^{-t}` for two logits a
    gap :math:`t` apart) where ``1 - p_m`` would round to zero. For every other entry
    :math:`p_i \le 1/2` and the differences lose at most one bit. Oracles:
    :func:`attnmath.softmax.softmax_jacobian` with ``numpy.linalg.norm``, the Jacobian from
    ``torch.autograd.functional.jacobian`` of ``torch.softmax``, and the two-logit closed form
    :math:`2\sigma(t)\sigma(-t)`.
    """
    scores = as_array(scores, "scores", allow_int=True)
    if scores.ndim == 0:
        raise ValueError("scores must have at least 1 dimension, got a scalar")
    axis = _check_row_axis(scores, axis, "scores")
    check_logits(scores, "scores")
    p = np.moveaxis(softmax(scores, axis=axis), axis, -1)  # (..., S)
    S = p.shape[-1]
    top = np.argmax(p, axis=-1)[..., None]  # (..., 1)
    is_top = np.arange(S) == top  # (..., S)
    others = np.where(is_top, 0.0, p)  # (..., S), the largest entry zeroed
    p2 = p * p  # (..., S)
    rest_sum = np.sum(others, axis=-1, keepdims=True)  # (..., 1) = 1 - p_m, no cancellation
    rest_sq = np.sum(others * others, axis=-1, keepdims=True)  # (..., 1) = sum_{j != m} p_j^2
    total_sq = rest_sq + np.take_along_axis(p2, top, axis=-1)  # (..., 1) = sum_j p_j^2
    one_minus = np.where(is_top, rest_sum, 1.0 - p)  # (..., S)
    sq_others = np.where(is_top, rest_sq, total_sq - p2)  # (..., S)
    return np.sqrt(np.sum(p2 * (one_minus**2 + sq_others), axis=-1))


def softmax_gradient_norm(scores: ArrayLike, axis: int = -1) -> float:
    r"""Mean over rows of the Frobenius norm of the softmax Jacobian.

    .. math::

        \frac{1}{R}\sum_{r=1}^{R}
        \bigl\lVert \partial\,\operatorname{softmax}(s_r)/\partial s_r\bigr\rVert_F

    Parameters
    ----------
    scores : array_like, shape (..., S, ...)
        Logits; every index outside ``axis`` is one row.
    axis : int
        The softmax axis.

    Returns
    -------
    float

    Notes
    -----
    The Jacobian is taken with respect to the logits the softmax receives; the factor
    :math:`1/\sqrt D` of the scaled scores multiplies the gradient with respect to ``q`` and
    ``k`` once more. Oracle: the mean of :func:`softmax_jacobian_norm`, itself tested against
    ``torch.autograd``.
    """
    norms = softmax_jacobian_norm(scores, axis=axis)
    if norms.size == 0:
        raise ValueError(f"scores holds no rows (shape {np.shape(scores)}): the mean over rows is undefined")
    return float(np.mean(norms))


def gradient_magnitude_curve(
    d_k_values: ArrayLike, *, n_keys: int = 64, n_queries: int = 256,
    seed: int | np.random.Generator = 0
) -> GradientCurve:
    r"""Mean softmax-Jacobian norm of random score rows, with and without :math:`1/\sqrt D`.

    For each ``d``: ``Q (L, d)``, ``K (S, d)`` standard normal,

    .. math::

        g_{\text{scaled}}(d) = \frac1L\sum_i \bigl\lVert J\bigl(q_i K^\top/\sqrt d\bigr)\bigr\rVert_F,
        \qquad
        g_{\text{unscaled}}(d) = \frac1L\sum_i \bigl\lVert J\bigl(q_i K^\top\bigr)\bigr\rVert_F .

    Parameters
    ----------
    d_k_values : sequence of int
        Head dims.
    n_keys, n_queries : int
        ``S`` and ``L``.
    seed : int or numpy.random.Generator
        Source of randomness; both columns use the same draws.

    Returns
    -------
    GradientCurve
        ``d_k``; ``scaled`` and ``unscaled`` (means over rows); ``scaled_median`` and
        ``unscaled_median``; each of shape ``(len(d_k_values),)``.

    Notes
    -----
    Scaled, the logits keep unit variance and both mean and median stay roughly constant in
    ``d``. Unscaled, the logits spread like :math:`\sqrt d` and the two statistics part ways.
    The *median* row saturates: its norm is about :math:`2(1-p_{\max}) \approx 2e^{-\Delta}` with a gap
    :math:`\Delta \propto \sqrt d` between the two largest logits, so it collapses
    exponentially in :math:`\sqrt d`. The *mean* falls only like :math:`1/\sqrt d`: the rare
    rows whose two largest logits lie within :math:`O(1)` of each other keep a norm of order
    one, and the probability of such a near-tie is proportional to :math:`1/\sqrt d`
    (density of the top gap at zero, :math:`S(S-1)\int\varphi^2\Phi^{S-2}`, divided by the
    score scale, times :math:`\int_0^\infty 2\sigma(t)\sigma(-t)\,dt = 1`).
    Oracle: these trends, tested with fixed seeds and wide margins.
    """
    d_values = _check_d_k_values(d_k_values)
    n_keys = check_positive_int(n_keys, "n_keys")
    n_queries = check_positive_int(n_queries, "n_queries")
    rng = as_rng(seed)
    out = np.empty((4, d_values.size))
    for idx, d in enumerate(d_values):
        scores = _random_scores(rng, int(d), n_queries, n_keys)  # (L, S)
        norm_scaled = softmax_jacobian_norm(scores / np.sqrt(d))  # (L,)
        norm_unscaled = softmax_jacobian_norm(scores)  # (L,)
        out[:, idx] = (norm_scaled.mean(), norm_unscaled.mean(),
                       np.median(norm_scaled), np.median(norm_unscaled))
    return GradientCurve(d_values, *out)
