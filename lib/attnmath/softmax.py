r"""Softmax, log-softmax and log-sum-exp, with temperature, the Jacobian and its product.

.. math::

    \operatorname{softmax}(z/\tau)_i = \frac{e^{z_i/\tau}}{\sum_j e^{z_j/\tau}}, \qquad
    J = \frac{\partial p}{\partial z} = \frac{1}{\tau}\left(\operatorname{diag}(p) - p\,p^\top\right).

Every function works along one ``axis`` of an array of any shape, so the same code serves a
single vector, a batch of rows, and the ``(B, H, L, S)`` score tensor of attention.
"""

from __future__ import annotations


import numpy as np
from numpy.typing import ArrayLike

from ._validate import (FloatArray, as_array, check_axis, check_bool, check_bool_mask, check_logits, check_real,
                        work_dtype)

__all__ = [
    "softmax",
    "log_softmax",
    "logsumexp",
    "masked_softmax",
    "softmax_jacobian",
    "softmax_vjp",
]


def _check_temperature(temperature) -> float:
    return check_real(temperature, "temperature", positive=True)


def _shifted(x: np.ndarray, axis: int, temperature: float) -> np.ndarray:
    """``(x - max(x)) / tau`` along ``axis``: every entry is <= 0, the largest is exactly 0."""
    xw = x.astype(work_dtype(x), copy=False)
    check_logits(xw, "x")
    if xw.size == 0:  # nothing to normalise: the result is empty too, as torch.softmax
        return xw / temperature
    m = np.max(xw, axis=axis, keepdims=True)
    if np.isneginf(m).any():
        raise ValueError(
            "x has a row that is entirely -inf; use masked_softmax for fully masked rows"
        )
    # Subtract before dividing: (x - m) / tau is <= 0, so it never reaches +inf (NaN after exp),
    # even for tau -> 0; an entry far below the maximum may round to -inf, whose exp is exactly 0.
    with np.errstate(over="ignore"):
        return (xw - m) / temperature


def softmax(x: ArrayLike, axis: int = -1, *, temperature: float = 1.0) -> FloatArray:
    r"""Numerically stable softmax along ``axis``.

    .. math::

        \operatorname{softmax}(x/\tau)_i = \frac{e^{(x_i - m)/\tau}}{\sum_j e^{(x_j - m)/\tau}},
        \qquad m = \max_j x_j .

    Parameters
    ----------
    x : array_like, shape (..., n, ...)
        Logits. Floating dtype; ``-inf`` marks an entry with zero probability.
    axis : int
        The axis that is normalised. Default: the last.
    temperature : float
        :math:`\tau > 0`. :math:`\tau \to 0` tends to the (tie-splitting) argmax one-hot,
        :math:`\tau \to \infty` to the uniform distribution.

    Returns
    -------
    ndarray, same shape and dtype as ``x``
        Non-negative, summing to one along ``axis``.

    Notes
    -----
    Subtracting the maximum leaves the result unchanged (shift invariance) and makes every
    exponent :math:`\le 0`, so nothing overflows: logits of :math:`\pm 10^4` are fine in
    float16. Half precision is accumulated in float32. A row that is entirely ``-inf`` has no
    softmax and raises ``ValueError``; :func:`masked_softmax` returns zeros there instead.
    Oracle: ``torch.softmax`` in float64.
    """
    x = as_array(x, "x", allow_int=True)
    if x.ndim == 0:
        raise ValueError("x must have at least 1 dimension, got a scalar")
    axis = check_axis(axis, x.ndim)
    temperature = _check_temperature(temperature)
    e = np.exp(_shifted(x, axis, temperature))
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(x.dtype, copy=False)


def log_softmax(
    x: ArrayLike, axis: int = -1, *, temperature: float = 1.0
) -> FloatArray:
    r"""Log of the softmax, computed without taking the log of a small number.

    .. math::

        \log \operatorname{softmax}(x/\tau)_i = \frac{x_i - m}{\tau}
            - \log \sum_j e^{(x_j - m)/\tau}.

    Same arguments and shape as :func:`softmax`. Oracle: ``torch.log_softmax``.
    """
    x = as_array(x, "x", allow_int=True)
    if x.ndim == 0:
        raise ValueError("x must have at least 1 dimension, got a scalar")
    axis = check_axis(axis, x.ndim)
    temperature = _check_temperature(temperature)
    z = _shifted(x, axis, temperature)
    if z.size == 0:
        return z.astype(x.dtype)
    return (z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))).astype(x.dtype, copy=False)


def logsumexp(x: ArrayLike, axis: int = -1, *, keepdims: bool = False) -> FloatArray:
    r"""Stable :math:`\log \sum_j e^{x_j}` along ``axis``.

    .. math:: \operatorname{lse}(x) = m + \log \sum_j e^{x_j - m}, \qquad m = \max_j x_j.

    A row that is entirely ``-inf`` gives ``-inf`` (the log of an empty sum), which is what the
    flash-tiled attention stores for a fully masked query; a ``+inf`` entry gives ``+inf``; NaN
    is refused. Oracle: ``torch.logsumexp``.
    """
    x = as_array(x, "x", allow_int=True)
    if x.ndim == 0:
        raise ValueError("x must have at least 1 dimension, got a scalar")
    axis = check_axis(axis, x.ndim)
    keepdims = check_bool(keepdims, "keepdims")
    if np.isnan(x).any():
        raise ValueError("x contains NaN")
    xw = x.astype(work_dtype(x), copy=False)
    m = np.max(xw, axis=axis, keepdims=True, initial=-np.inf)  # an empty row's maximum: -inf
    m_safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = m_safe + np.log(np.sum(np.exp(xw - m_safe), axis=axis, keepdims=True))
    if not keepdims:
        out = np.squeeze(out, axis=axis)
    return out.astype(x.dtype, copy=False)


def masked_softmax(
    x: ArrayLike, mask: ArrayLike | None = None, axis: int = -1
) -> FloatArray:
    r"""Softmax over the entries where ``mask`` is True; a row with none gives all zeros.

    Parameters
    ----------
    x : array_like
        Scores, e.g. ``(B, H, L, S)``.
    mask : array_like of bool, optional
        ``True`` = may attend; broadcast against ``x``. ``-inf`` entries of ``x`` count as
        masked too.
    axis : int
        The normalised axis.

    Notes
    -----
    Masked entries are set to ``-inf`` (never a large negative sentinel such as ``-1e9``, which
    leaks weight when every entry of a row is masked and overflows in float16). A fully masked
    row returns zeros, as ``torch.nn.functional.scaled_dot_product_attention`` does for its
    output.
    """
    x = as_array(x, "x", allow_int=True)
    if x.ndim == 0:
        raise ValueError("x must have at least 1 dimension, got a scalar")
    axis = check_axis(axis, x.ndim)
    check_logits(x, "x")
    xw = x.astype(work_dtype(x), copy=False)
    if mask is not None:
        mask = check_bool_mask(mask, "mask")
        try:
            ok = np.broadcast_shapes(mask.shape, x.shape) == x.shape
        except ValueError:
            ok = False
        if not ok:  # a mask may select entries of x, never add axes to it
            raise ValueError(f"mask of shape {mask.shape} does not broadcast to x of shape {x.shape}")
        xw = np.where(mask, xw, -np.inf)
    m = np.max(xw, axis=axis, keepdims=True, initial=-np.inf)
    m = np.where(np.isneginf(m), 0.0, m)
    e = np.exp(xw - m)
    total = np.sum(e, axis=axis, keepdims=True)
    return (e / np.where(total == 0.0, 1.0, total)).astype(x.dtype, copy=False)


def softmax_jacobian(z: ArrayLike, *, temperature: float = 1.0) -> FloatArray:
    r"""Jacobian of the softmax of the last axis: :math:`J = (\operatorname{diag}(p) - pp^\top)/\tau`.

    .. math::

        J_{ij} = \frac{\partial p_i}{\partial z_j} = \frac{p_i(\delta_{ij} - p_j)}{\tau}.

    Parameters
    ----------
    z : array_like, shape (..., n)
        Logits; leading axes are a batch.
    temperature : float
        :math:`\tau > 0`.

    Returns
    -------
    ndarray, shape (..., n, n)
        Symmetric, rows and columns summing to zero, positive semi-definite.

    Notes
    -----
    Forms an ``n x n`` matrix per row: use :func:`softmax_vjp` in a backward pass.
    Oracle: ``torch.autograd.functional.jacobian`` of ``torch.softmax``.
    """
    z = as_array(z, "z", allow_int=True)
    if z.ndim == 0:
        raise ValueError("z must have at least 1 dimension, got a scalar")
    check_logits(z, "z")
    p = softmax(z, axis=-1, temperature=temperature)
    diag = p[..., :, None] * np.eye(p.shape[-1], dtype=p.dtype)  # (..., n, n)
    return (diag - p[..., :, None] * p[..., None, :]) / _check_temperature(temperature)


def softmax_vjp(
    p: ArrayLike, grad_p: ArrayLike, axis: int = -1, *, temperature: float = 1.0
) -> FloatArray:
    r"""Vector-Jacobian product :math:`g^\top J` without forming :math:`J`.

    .. math::

        \frac{\partial \mathcal{L}}{\partial z} = \frac{1}{\tau}\, p \odot
            \Bigl(g - \textstyle\sum_j p_j g_j\Bigr), \qquad g = \frac{\partial \mathcal{L}}{\partial p}.

    Parameters
    ----------
    p : array_like
        The softmax output (what a forward pass keeps), any shape.
    grad_p : array_like, same shape as ``p``
        Upstream gradient with respect to ``p``.
    axis : int
        The axis the softmax normalised.
    temperature : float
        The forward pass's :math:`\tau`.

    Returns
    -------
    ndarray, same shape as ``p``
        The gradient with respect to the logits; it sums to zero along ``axis``.

    Notes
    -----
    Costs :math:`O(n)` per row instead of the :math:`O(n^2)` of ``grad_p @ J``. Since ``J`` is
    symmetric, this is also the Jacobian-vector product. A row of zeros in ``p`` (a fully
    masked row) gives a zero gradient. Oracle: ``torch.autograd`` through ``torch.softmax``.
    """
    p = as_array(p, "p", allow_int=True, finite=True)
    grad_p = as_array(grad_p, "grad_p", allow_int=True, finite=True)
    if p.shape != grad_p.shape:
        raise ValueError(f"grad_p must have the shape of p {p.shape}, got {grad_p.shape}")
    if p.ndim == 0:
        raise ValueError("p must have at least 1 dimension, got a scalar")
    axis = check_axis(axis, p.ndim)
    tau = _check_temperature(temperature)
    inner = np.sum(p * grad_p, axis=axis, keepdims=True)
    return p * (grad_p - inner) / tau
