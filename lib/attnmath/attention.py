r"""Scaled dot-product attention: forward, hand-written backward, and its relatives.

.. math::

    \operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{D}} + M\right) V

with :math:`M` the mask (0 where allowed, :math:`-\infty` elsewhere) plus any additive bias.
Layout is torch's: ``q (B, H, L, D)``, ``k (B, H_kv, S, D)``, ``v (B, H_kv, S, D_v)``; any
number of leading batch axes works, and plain ``(L, D)`` matrices too.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._validate import as_array, check_probability, check_qkv, check_scale
from .masking import broadcast_mask
from .softmax import masked_softmax, softmax_vjp

__all__ = [
    "AttentionCache",
    "AttentionGrads",
    "scaled_dot_product_attention",
    "attention_backward",
    "dot_product_attention",
    "additive_scores",
    "additive_attention",
    "DropoutCache",
    "dropout_attention",
    "dropout_attention_backward",
    "repeat_kv",
]


class AttentionCache(NamedTuple):
    """What the forward pass keeps for the backward: the inputs and ``probs (B, H, L, S)``."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    probs: np.ndarray
    scale: float
    mask: np.ndarray | None


class AttentionGrads(NamedTuple):
    """Gradients of the loss with respect to ``q``, ``k`` and ``v`` (their shapes)."""

    dq: np.ndarray
    dk: np.ndarray
    dv: np.ndarray


def _check_qkv(q, k, v):
    """:func:`attnmath._validate.check_qkv`, and no NaN anywhere (it would spread to every row)."""
    q, k, v = check_qkv(q, k, v)
    for name, x in (("q", q), ("k", k), ("v", v)):
        if np.isnan(x).any():
            raise ValueError(f"{name} contains NaN")
    return q, k, v


def repeat_kv(x: np.ndarray, H: int) -> np.ndarray:
    """Repeat key/value heads ``(..., H_kv, S, D)`` to ``(..., H, S, D)`` for grouped queries.

    Query head ``h`` uses key/value head ``h // (H // H_kv)`` (as torch's ``enable_gqa``, i.e.
    ``repeat_interleave`` along the head axis). With ``H == H_kv`` this returns ``x`` itself.
    """
    if x.ndim < 3 or x.shape[-3] == H:
        return x
    return np.repeat(x, H // x.shape[-3], axis=-3)  # (..., H, S, D)


def _sum_groups(dx: np.ndarray, H_kv: int) -> np.ndarray:
    """Adjoint of :func:`repeat_kv`: sum the gradients of the heads that shared a kv head."""
    if dx.ndim < 3 or dx.shape[-3] == H_kv:
        return dx
    *batch, H, S, D = dx.shape
    return dx.reshape(*batch, H_kv, H // H_kv, S, D).sum(axis=-3)  # (..., H_kv, S, D)


def _scores(q, k_rep, scale, bias, mask):
    """Scaled scores with bias, the validated mask, and their score shape."""
    scores = (q @ np.swapaxes(k_rep, -1, -2)) * scale  # (B, H, L, S)
    if bias is not None:
        bias = as_array(bias, "bias", allow_int=True)
        if np.isnan(bias).any() or np.isposinf(bias).any():
            raise ValueError("bias must not contain NaN or +inf")
        try:
            scores = scores + bias  # (B, H, L, S)
        except ValueError:
            raise ValueError(
                f"bias of shape {bias.shape} does not broadcast to the scores' shape {scores.shape}"
            ) from None
        if scores.shape != q.shape[:-1] + (k_rep.shape[-2],):
            raise ValueError(
                f"bias of shape {bias.shape} does not broadcast to the scores' shape "
                f"{q.shape[:-1] + (k_rep.shape[-2],)}"
            )
    if mask is not None:
        mask = broadcast_mask(mask, scores.shape)
    return scores, mask


def scaled_dot_product_attention(q, k, v, *, mask=None, bias=None, scale=None):
    r"""Scaled dot-product attention, keeping the attention weights for the backward pass.

    .. math::

        P = \operatorname{softmax}\!\left(s\, Q K^\top + \text{bias}\right)_{\text{masked}},
        \qquad O = P V, \qquad s = 1/\sqrt{D} \text{ by default}.

    Parameters
    ----------
    q : ndarray, shape (B, H, L, D)
        Queries (any leading axes; ``(L, D)`` works).
    k : ndarray, shape (B, H_kv, S, D)
        Keys. ``H_kv`` must divide ``H`` (grouped-query attention; ``H_kv = 1`` is multi-query).
    v : ndarray, shape (B, H_kv, S, D_v)
        Values.
    mask : ndarray of bool, optional
        ``True`` = may attend; broadcasts to ``(B, H, L, S)``.
    bias : ndarray, optional
        Additive score bias broadcasting to ``(B, H, L, S)`` (ALiBi, relative positions);
        ``-inf`` entries act as masked.
    scale : float, optional
        Score scale; ``1/sqrt(D)`` by default.

    Returns
    -------
    out : ndarray, shape (B, H, L, D_v)
    cache : AttentionCache
        Holds ``probs (B, H, L, S)``: the :math:`O(LS)` memory this method pays.

    Notes
    -----
    Masked scores are :math:`-\infty` and a fully masked row returns zeros, as torch does.
    Grouped heads follow ``repeat_interleave`` (torch's ``enable_gqa``). Oracle:
    ``torch.nn.functional.scaled_dot_product_attention`` in float64.
    """
    q, k, v = _check_qkv(q, k, v)
    scale = check_scale(scale, q.shape[-1])
    H = q.shape[-3] if q.ndim >= 3 else None
    k_rep, v_rep = repeat_kv(k, H), repeat_kv(v, H)  # (B, H, S, D), (B, H, S, D_v)
    scores, full_mask = _scores(q, k_rep, scale, bias, mask)  # (B, H, L, S)
    probs = masked_softmax(scores, full_mask, axis=-1)  # (B, H, L, S)
    out = probs @ v_rep  # (B, H, L, D_v)
    return out, AttentionCache(q, k, v, probs, scale, mask)


def attention_backward(dout, cache: AttentionCache) -> AttentionGrads:
    r"""Backward pass of :func:`scaled_dot_product_attention`.

    .. math::

        dV = P^\top dO, \quad dP = dO\, V^\top, \quad
        dS = P \odot \bigl(dP - \operatorname{rowsum}(P \odot dP)\bigr), \quad
        dQ = s\, dS\, K, \quad dK = s\, dS^\top Q .

    Parameters
    ----------
    dout : ndarray, shape (B, H, L, D_v)
        Gradient of the loss with respect to the output.
    cache : AttentionCache
        From the forward pass.

    Returns
    -------
    AttentionGrads
        ``dq (B, H, L, D)``, ``dk (B, H_kv, S, D)``, ``dv (B, H_kv, S, D_v)``; grouped heads'
        key/value gradients are summed over the group.

    Notes
    -----
    The softmax step is :func:`attnmath.softmax.softmax_vjp`: no ``S x S`` Jacobian is formed.
    Masked entries have ``P = 0`` and so receive no gradient. Oracle: ``torch.autograd``.
    """
    q, k, v, probs, scale, _ = cache
    dout = as_array(dout, "dout")
    expected = probs.shape[:-1] + (v.shape[-1],)
    if dout.shape != expected:
        raise ValueError(f"dout must have the output's shape {expected}, got {dout.shape}")
    H = q.shape[-3] if q.ndim >= 3 else None
    k_rep, v_rep = repeat_kv(k, H), repeat_kv(v, H)
    dv_rep = np.swapaxes(probs, -1, -2) @ dout  # (B, H, S, D_v)
    dprobs = dout @ np.swapaxes(v_rep, -1, -2)  # (B, H, L, S)
    dscores = softmax_vjp(probs, dprobs, axis=-1)  # (B, H, L, S)
    dq = (dscores @ k_rep) * scale  # (B, H, L, D)
    dk_rep = (np.swapaxes(dscores, -1, -2) @ q) * scale  # (B, H, S, D)
    H_kv = k.shape[-3] if k.ndim >= 3 else None
    return AttentionGrads(dq, _sum_groups(dk_rep, H_kv), _sum_groups(dv_rep, H_kv))


def dot_product_attention(q, k, v, *, mask=None, bias=None):
    r"""Unscaled dot-product attention, :math:`\operatorname{softmax}(QK^\top)V` (Luong's "dot").

    The same as :func:`scaled_dot_product_attention` with ``scale=1``; its backward is
    :func:`attention_backward`. With large ``D`` its scores have variance ``D`` and the softmax
    saturates, which is the point of the scaled version.
    """
    return scaled_dot_product_attention(q, k, v, mask=mask, bias=bias, scale=1.0)


def additive_scores(q, k, w_q, w_k, w_a):
    r"""Additive (Bahdanau) similarity :math:`s(q, k) = w_a^\top \tanh(W_q q + W_k k)`.

    Parameters
    ----------
    q : ndarray, shape (..., L, D_q)
    k : ndarray, shape (..., S, D_k)
    w_q : ndarray, shape (D_q, A)
    w_k : ndarray, shape (D_k, A)
    w_a : ndarray, shape (A,)

    Returns
    -------
    ndarray, shape (..., L, S)

    Notes
    -----
    Row-vector convention: :math:`q W_q` with ``w_q (D_q, A)``. Unlike the dot product, the two
    sides may have different sizes and the cost is :math:`O(L S A)` with an ``(L, S, A)``
    intermediate. Oracle: the same formula in torch with autograd.
    """
    q = as_array(q, "q")
    k = as_array(k, "k")
    w_q = as_array(w_q, "w_q", ndim=2)
    w_k = as_array(w_k, "w_k", ndim=2)
    w_a = as_array(w_a, "w_a", ndim=1)
    if q.shape[-1] != w_q.shape[0]:
        raise ValueError(f"w_q must have shape (D_q={q.shape[-1]}, A), got {w_q.shape}")
    if k.shape[-1] != w_k.shape[0]:
        raise ValueError(f"w_k must have shape (D_k={k.shape[-1]}, A), got {w_k.shape}")
    if not (w_q.shape[1] == w_k.shape[1] == w_a.shape[0]):
        raise ValueError(
            f"w_q, w_k and w_a must share the attention width A, got {w_q.shape}, {w_k.shape}, {w_a.shape}"
        )
    hq = q @ w_q  # (..., L, A)
    hk = k @ w_k  # (..., S, A)
    return np.tanh(hq[..., :, None, :] + hk[..., None, :, :]) @ w_a  # (..., L, S)


def additive_attention(q, k, v, w_q, w_k, w_a, *, mask=None):
    """Attention with additive (Bahdanau) scores: ``softmax(additive_scores) @ v``.

    Returns ``(out (..., L, D_v), probs (..., L, S))``; a fully masked row gives zeros.
    """
    v = as_array(v, "v")
    scores = additive_scores(q, k, w_q, w_k, w_a)  # (..., L, S)
    if v.shape[-2] != scores.shape[-1]:
        raise ValueError(f"v must have S={scores.shape[-1]} rows like k, got shape {v.shape}")
    if mask is not None:
        mask = broadcast_mask(mask, scores.shape)
    probs = masked_softmax(scores, mask, axis=-1)  # (..., L, S)
    return probs @ v, probs  # (..., L, D_v)


class DropoutCache(NamedTuple):
    """Forward state of :func:`dropout_attention`: the plain cache and the kept-weights mask."""

    attention: AttentionCache
    keep: np.ndarray
    p: float


def dropout_attention(q, k, v, *, p: float, rng: np.random.Generator, mask=None, bias=None, scale=None):
    r"""Attention with dropout on the attention weights (inverted dropout).

    .. math:: O = \Bigl(\frac{Z \odot P}{1 - p}\Bigr) V, \qquad Z_{ij} \sim \operatorname{Bernoulli}(1 - p).

    Each query row keeps a random subset of its connections; :math:`\mathbb{E}[O] = PV`, the
    output without dropout, which is why nothing is rescaled at evaluation time. The dropped
    rows no longer sum to one. Returns ``(out (B, H, L, D_v), DropoutCache)``.

    Notes
    -----
    Torch's ``dropout_p`` in ``scaled_dot_product_attention`` draws its own random numbers, so
    the oracle test replays the same ``keep`` mask in torch and compares gradients.
    """
    p = check_probability(p, "p")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    _, cache = scaled_dot_product_attention(q, k, v, mask=mask, bias=bias, scale=scale)
    keep = rng.random(cache.probs.shape) >= p  # (B, H, L, S)
    H = cache.q.shape[-3] if cache.q.ndim >= 3 else None
    out = (cache.probs * keep / (1.0 - p)) @ repeat_kv(cache.v, H)  # (B, H, L, D_v)
    return out, DropoutCache(cache, keep, p)


def dropout_attention_backward(dout, cache: DropoutCache) -> AttentionGrads:
    """Backward of :func:`dropout_attention`: the dropout is a fixed linear map on ``probs``."""
    att, keep, p = cache
    dout = as_array(dout, "dout")
    expected = att.probs.shape[:-1] + (att.v.shape[-1],)
    if dout.shape != expected:
        raise ValueError(f"dout must have the output's shape {expected}, got {dout.shape}")
    H = att.q.shape[-3] if att.q.ndim >= 3 else None
    k_rep, v_rep = repeat_kv(att.k, H), repeat_kv(att.v, H)
    dropped = att.probs * keep / (1.0 - p)  # (B, H, L, S)
    dv_rep = np.swapaxes(dropped, -1, -2) @ dout  # (B, H, S, D_v)
    dprobs = (dout @ np.swapaxes(v_rep, -1, -2)) * keep / (1.0 - p)  # (B, H, L, S)
    dscores = softmax_vjp(att.probs, dprobs, axis=-1)  # (B, H, L, S)
    dq = (dscores @ k_rep) * att.scale  # (B, H, L, D)
    dk_rep = (np.swapaxes(dscores, -1, -2) @ att.q) * att.scale  # (B, H, S, D)
    H_kv = att.k.shape[-3] if att.k.ndim >= 3 else None
    return AttentionGrads(dq, _sum_groups(dk_rep, H_kv), _sum_groups(dv_rep, H_kv))
