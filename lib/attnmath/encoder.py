r"""The Transformer encoder block in NumPy: layer norm, feed-forward, post- and pre-norm blocks.

.. math::

    \text{post-norm:}\quad y = \operatorname{LN}_1(x + \operatorname{MHA}(x)), \quad
    \text{out} = \operatorname{LN}_2(y + \operatorname{FFN}(y)); \\
    \text{pre-norm:}\quad y = x + \operatorname{MHA}(\operatorname{LN}_1(x)), \quad
    \text{out} = y + \operatorname{FFN}(\operatorname{LN}_2(y)).

The NumPy reference of :class:`attnmath.nn.TransformerEncoderBlock` and, through it, of
``torch.nn.TransformerEncoderLayer``; the multi-head attention inside is
:func:`attnmath.multihead.self_attention`. Taught in ``book/11_capstone.md``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ._validate import FloatArray, as_array, check_finite, check_positive_int, check_real, check_seed
from .multihead import MultiHeadParams, init_multihead_params, self_attention

__all__ = [
    "layer_norm",
    "feed_forward",
    "EncoderBlockParams",
    "init_encoder_block_params",
    "encoder_block_forward",
    "pre_norm_encoder_block_forward",
]


def layer_norm(
    x: ArrayLike, gamma: ArrayLike, beta: ArrayLike, *, eps: float = 1e-5
) -> FloatArray:
    r"""Layer normalisation over the last axis.

    .. math::

        \operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta, \qquad
        \mu = \tfrac1C \textstyle\sum_c x_c,\quad \sigma^2 = \tfrac1C \textstyle\sum_c (x_c - \mu)^2 .

    Parameters
    ----------
    x : ndarray, shape (..., C)
    gamma, beta : ndarray, shape (C,)
    eps : float

    Returns
    -------
    ndarray, shape (..., C)

    Notes
    -----
    The biased variance (divide by ``C``), as ``torch.nn.LayerNorm``, the oracle.
    """
    x = as_array(x, "x")
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"x must have shape (..., C) with C >= 1, got shape {x.shape}")
    check_finite(x, "x")
    C = x.shape[-1]
    gamma = as_array(gamma, "gamma", ndim=1, finite=True)
    beta = as_array(beta, "beta", ndim=1, finite=True)
    if gamma.shape != (C,) or beta.shape != (C,):
        raise ValueError(f"gamma and beta must have shape (C,) = ({C},), got {gamma.shape} and {beta.shape}")
    eps = check_real(eps, "eps", positive=True)
    mu = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)  # (..., 1)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta  # (..., C)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def feed_forward(
    x: ArrayLike, w_1: ArrayLike, b_1: ArrayLike | None, w_2: ArrayLike,
    b_2: ArrayLike | None, *, activation: str = "relu"
) -> FloatArray:
    r"""Position-wise feed-forward network: two affine maps with an activation between.

    .. math::

        \operatorname{FFN}(x) = \phi(x W_1 + b_1) W_2 + b_2, \qquad \phi = \max(0, \cdot) \text{ or } \\
        \operatorname{GELU}(z) = z\,\Phi(z) = \tfrac{z}{2}\bigl(1 + \operatorname{erf}(z/\sqrt2)\bigr).

    Parameters
    ----------
    x : ndarray, shape (..., C)
    w_1 : ndarray, shape (C, F)
    b_1 : ndarray of shape (F,), or None
    w_2 : ndarray, shape (F, C)
    b_2 : ndarray of shape (C,), or None
    activation : {"relu", "gelu"}
        ``"gelu"`` is the exact (erf) form, torch's default.

    Returns
    -------
    ndarray, shape (..., C)
    """
    if activation not in ("relu", "gelu"):
        raise ValueError(f"activation must be 'relu' or 'gelu', got {activation!r}")
    x = as_array(x, "x", finite=True)
    if x.ndim == 0:
        raise ValueError("x must have shape (..., C), got a scalar")
    w_1 = as_array(w_1, "w_1", ndim=2, finite=True)
    w_2 = as_array(w_2, "w_2", ndim=2, finite=True)
    if w_1.shape[0] != x.shape[-1] or w_2.shape != (w_1.shape[1], w_1.shape[0]):
        raise ValueError(
            f"w_1 must have shape (C, F) and w_2 (F, C) with C={x.shape[-1]}, got {w_1.shape} and {w_2.shape}"
        )
    C, F = w_1.shape
    b_1 = _check_bias(b_1, "b_1", F)
    b_2 = _check_bias(b_2, "b_2", C)
    hidden = x @ w_1  # (..., F)
    if b_1 is not None:
        hidden = hidden + b_1
    if activation == "relu":
        hidden = np.maximum(hidden, 0.0)
    else:
        hidden = 0.5 * hidden * (1.0 + _erf(hidden / math.sqrt(2.0)))
    out = hidden @ w_2  # (..., C)
    return out if b_2 is None else out + b_2


def _check_bias(b: ArrayLike | None, name: str, size: int) -> FloatArray | None:
    """A bias is one vector shared by every position: shape ``(size,)``, never per row."""
    if b is None:
        return None
    b = as_array(b, name, finite=True)
    if b.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},) (one bias for every position), got {b.shape}")
    return b


class EncoderBlockParams(NamedTuple):
    """Weights of a Transformer encoder block, row-vector convention.

    ``attn`` (:class:`MultiHeadParams`), ``w_1 (C, F)``, ``b_1 (F,)``, ``w_2 (F, C)``, ``b_2 (C,)``,
    and the two layer norms' ``ln1_gamma, ln1_beta, ln2_gamma, ln2_beta (C,)``. ``F`` is the
    feed-forward width. Torch's ``linear1.weight`` is ``w_1.T``.
    """

    #: Self-attention weights (:class:`~attnmath.multihead.MultiHeadParams`).
    attn: MultiHeadParams
    #: First feed-forward weight ``(C, F)``, ``F`` the feed-forward width.
    w_1: np.ndarray
    #: First feed-forward bias ``(F,)``, or ``None``.
    b_1: np.ndarray | None
    #: Second feed-forward weight ``(F, C)``.
    w_2: np.ndarray
    #: Second feed-forward bias ``(C,)``, or ``None``.
    b_2: np.ndarray | None
    #: Gain ``(C,)`` of the layer norm around attention.
    ln1_gamma: np.ndarray
    #: Shift ``(C,)`` of the layer norm around attention.
    ln1_beta: np.ndarray
    #: Gain ``(C,)`` of the layer norm around the feed-forward.
    ln2_gamma: np.ndarray
    #: Shift ``(C,)`` of the layer norm around the feed-forward.
    ln2_beta: np.ndarray


def init_encoder_block_params(
    C: int, H: int, ffn_dim: int, *, seed: int = 0
) -> EncoderBlockParams:
    """Random encoder block weights (layer-norm scales near 1 and shifts near 0, all nonzero)."""
    ffn_dim = check_positive_int(ffn_dim, "ffn_dim")
    seed = check_seed(seed)
    attn = init_multihead_params(C, H, seed=seed)
    rng = np.random.default_rng(seed + 1)
    a1, a2 = 1.0 / math.sqrt(C), 1.0 / math.sqrt(ffn_dim)
    return EncoderBlockParams(
        attn,
        rng.uniform(-a1, a1, size=(C, ffn_dim)), rng.uniform(-a1, a1, size=(ffn_dim,)),
        rng.uniform(-a2, a2, size=(ffn_dim, C)), rng.uniform(-a2, a2, size=(C,)),
        1.0 + 0.1 * rng.standard_normal(C), 0.1 * rng.standard_normal(C),
        1.0 + 0.1 * rng.standard_normal(C), 0.1 * rng.standard_normal(C),
    )


def _encoder_sublayers(x, params, H, mask, activation, eps):
    if not isinstance(params, EncoderBlockParams):
        raise TypeError(f"params must be an EncoderBlockParams, got {type(params).__name__}")
    C = as_array(params.w_1, "params.w_1", ndim=2).shape[0]
    if x.shape[-1] != C:
        raise ValueError(f"x must have width C={C} (the rows of params.w_1), got shape {x.shape}")

    def attn(z):
        return self_attention(z, params.attn, H, mask=mask)[0]  # (B, L, C)

    def ffn(z):
        # (B, L, C)
        return feed_forward(z, params.w_1, params.b_1, params.w_2, params.b_2, activation=activation)

    def ln1(z):
        return layer_norm(z, params.ln1_gamma, params.ln1_beta, eps=eps)  # (B, L, C)

    def ln2(z):
        return layer_norm(z, params.ln2_gamma, params.ln2_beta, eps=eps)  # (B, L, C)

    return attn, ffn, ln1, ln2


def encoder_block_forward(
    x: ArrayLike, params: EncoderBlockParams, H: int, *, mask: ArrayLike | None = None,
    activation: str = "relu", eps: float = 1e-5
) -> FloatArray:
    r"""Transformer encoder block, post-norm (the original Transformer's order).

    .. math::

        y = \operatorname{LN}_1\bigl(x + \operatorname{MHA}(x)\bigr), \qquad
        \text{out} = \operatorname{LN}_2\bigl(y + \operatorname{FFN}(y)\bigr) .

    Parameters
    ----------
    x : ndarray, shape (B, L, C)
    params : EncoderBlockParams
    H : int
        Heads.
    mask : ndarray of bool, optional
        ``True`` = may attend, broadcastable to ``(B, H, L, L)``; a padding mask is
        ``(B, 1, 1, L)``.
    activation : {"relu", "gelu"}
        The feed-forward nonlinearity.
    eps : float
        Layer-norm epsilon.

    Returns
    -------
    ndarray, shape (B, L, C)

    Notes
    -----
    Without dropout (evaluation). The NumPy reference of
    :class:`attnmath.nn.TransformerEncoderBlock` with ``norm_first=False`` and, through it, of
    ``torch.nn.TransformerEncoderLayer(batch_first=True, norm_first=False)``. The pre-norm
    variant is :func:`pre_norm_encoder_block_forward`.
    """
    x = as_array(x, "x", ndim=3, finite=True)
    attn, ffn, ln1, ln2 = _encoder_sublayers(x, params, H, mask, activation, eps)
    y = ln1(x + attn(x))  # (B, L, C)
    return ln2(y + ffn(y))  # (B, L, C)


def pre_norm_encoder_block_forward(
    x: ArrayLike, params: EncoderBlockParams, H: int, *, mask: ArrayLike | None = None,
    activation: str = "relu", eps: float = 1e-5
) -> FloatArray:
    r"""Transformer encoder block, pre-norm (layer norm inside the residual branch).

    .. math::

        y = x + \operatorname{MHA}\bigl(\operatorname{LN}_1(x)\bigr), \qquad
        \text{out} = y + \operatorname{FFN}\bigl(\operatorname{LN}_2(y)\bigr) .

    Parameters and returns as :func:`encoder_block_forward`.

    Notes
    -----
    The residual stream is never normalised, so the identity path from input to output is
    intact (the reason pre-norm trains without warm-up); there is no final layer norm here
    (models add one after the last block). Reference of
    :class:`attnmath.nn.TransformerEncoderBlock` with ``norm_first=True`` and of
    ``torch.nn.TransformerEncoderLayer(norm_first=True)``.
    """
    x = as_array(x, "x", ndim=3, finite=True)
    attn, ffn, ln1, ln2 = _encoder_sublayers(x, params, H, mask, activation, eps)
    y = x + attn(ln1(x))  # (B, L, C)
    return y + ffn(ln2(y))  # (B, L, C)
