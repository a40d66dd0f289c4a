r"""Scaled dot-product attention: forward, hand-written backward, and its relatives.

.. math::

    \operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{D}} + \mathrm{bias}_M + \mathrm{bias}\right) V

with :math:`\mathrm{bias}_M` the boolean mask :math:`M` in additive form (0 where allowed,
:math:`-\infty` elsewhere) and :math:`\mathrm{bias}` any additive bias (the notation page).
Layout is torch's: ``q (B, H, L, D)``, ``k (B, H_kv, S, D)``, ``v (B, H_kv, S, D_v)``; any
number of leading batch axes works, and plain ``(L, D)`` matrices too.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._validate import as_array, check_probability
from .core import (AttentionGrads, check_cache, check_dout, check_finite, grouped, prepare,
                   repeat_kv, softmax_rows_inplace, work_dtype)
from .masking import broadcast_mask

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
    """What the forward pass keeps for the backward: the inputs and ``probs (B, H, L, S)``.

    ``q``, ``k``, ``v`` are the inputs in their own dtype; ``probs`` is in the working dtype
    (float32 for float16 inputs). The mask and bias are not kept: the backward reads only
    ``probs``, whose masked entries are zero.
    """

    #: Queries ``(B, H, L, D)``, in the caller's dtype.
    q: np.ndarray
    #: Keys ``(B, H_kv, S, D)``, in the caller's dtype.
    k: np.ndarray
    #: Values ``(B, H_kv, S, D_v)``, in the caller's dtype.
    v: np.ndarray
    #: Attention weights ``(B, H, L, S)`` in the working dtype; masked entries are zero.
    probs: np.ndarray
    #: The factor the scores were multiplied by (a scalar, usually ``1/sqrt(D)``).
    scale: float


def _backward(dout, att: AttentionCache, keep=None, p: float = 0.0) -> AttentionGrads:
    """Gradients from the weights ``probs``; with ``keep``, through inverted dropout on them."""
    q, k, v, probs, scale = att
    if not (q.ndim == k.ndim == v.ndim and probs.shape == q.shape[:-1] + (k.shape[-2],)
            and k.shape[:-1] == v.shape[:-1]):
        raise ValueError(
            f"cache is inconsistent: probs {probs.shape} do not match q {q.shape}, k {k.shape}, "
            f"v {v.shape}; pass the cache its forward returned, unchanged"
        )
    dout = check_dout(dout, probs.shape[:-1] + (v.shape[-1],))
    dtype = work_dtype(q, k, v, dout)
    H_kv = 1 if q.ndim == 2 else k.shape[-3]
    q5, k5, v5 = (grouped(x, H_kv).astype(dtype, copy=False) for x in (q, k, v))
    probs5 = grouped(probs, H_kv).astype(dtype, copy=False)  # (..., H_kv, g, L, S)
    dout5 = grouped(dout, H_kv).astype(dtype, copy=False)  # (..., H_kv, g, L, D_v)
    dprobs = dout5 @ np.swapaxes(v5, -1, -2)  # (..., H_kv, g, L, S)
    weights = probs5
    if keep is not None:
        drop = grouped(keep, H_kv) / (1.0 - p)  # (..., H_kv, g, L, S)
        weights = probs5 * drop
        dprobs *= drop
    dv = np.sum(np.swapaxes(weights, -1, -2) @ dout5, axis=-3)  # (..., H_kv, S, D_v)
    # Softmax backward, row by row: dZ = P * (dP - rowsum(P * dP)); no S x S Jacobian.
    dscores = probs5 * (dprobs - np.sum(probs5 * dprobs, axis=-1, keepdims=True))
    dq = (dscores @ k5) * scale  # (..., H_kv, g, L, D)
    dk = np.sum(np.swapaxes(dscores, -1, -2) @ q5, axis=-3) * scale  # (..., H_kv, S, D)
    return AttentionGrads(dq.reshape(q.shape).astype(q.dtype, copy=False),
                          dk.reshape(k.shape).astype(k.dtype, copy=False),
                          dv.reshape(v.shape).astype(v.dtype, copy=False))


def scaled_dot_product_attention(q, k, v, *, mask=None, bias=None, scale=None,
                                 causal: bool = False, causal_alignment: str | int = "top_left",
                                 window: int | None = None):
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
    causal : bool
        Add a causal mask (combined with ``mask`` by AND).
    causal_alignment : {"top_left", "bottom_right"} or int
        With ``L != S``: ``"top_left"`` lets query ``i`` see keys ``j <= i`` (torch's
        ``is_causal``); ``"bottom_right"`` lets it see ``j <= i + S - L`` (KV-cache decoding);
        an integer ``offset`` lets it see ``j <= i + offset``
        (:func:`attnmath.masking.causal_offset`).
    window : int, optional
        Sliding window: query ``i`` also may not see keys ``j <= i + offset - window`` (with
        ``offset`` that of the causal alignment), i.e. at most ``window`` keys up to
        its diagonal, as Mistral's; combined with the other masks by AND. ``None``: no window.

    Returns
    -------
    out : ndarray, shape (B, H, L, D_v)
        In the inputs' dtype.
    cache : AttentionCache
        Holds ``probs (B, H, L, S)``: the :math:`O(LS)` memory this method pays.

    Notes
    -----
    The rules shared by every exact variant are those of :mod:`attnmath.core`: NaN or
    :math:`\pm\infty` in ``q``, ``k``, ``v`` raises ``ValueError``; float16 is computed in
    float32 and returned as float16; ``S = 0`` gives zeros; masked scores are :math:`-\infty`
    and a fully masked row returns zeros, as torch does. Grouped heads follow
    ``repeat_interleave`` (torch's ``enable_gqa``). Oracle: :func:`attnmath.testing.sdpa_oracle`
    (``torch.nn.functional.scaled_dot_product_attention`` in float64).
    """
    prob = prepare(q, k, v, mask=mask, bias=bias, scale=scale, causal=causal,
                   causal_alignment=causal_alignment, window=window)
    probs5 = prob.scores(prob.q5, slice(None), slice(None))  # (B, H_kv, g, L, S)
    softmax_rows_inplace(probs5)  # a fully masked row -> zeros
    out = prob.finish(probs5 @ prob.v5)  # (B, H, L, D_v)
    probs = probs5.reshape(prob.out_shape[:-1] + (prob.S,))  # (B, H, L, S)
    return out, AttentionCache(*prob.inputs, probs, prob.scale)


def attention_backward(dout, cache: AttentionCache) -> AttentionGrads:
    r"""Backward pass of :func:`scaled_dot_product_attention`.

    .. math::

        \begin{aligned}
        &dV = P^\top dO, \quad dP = dO\, V^\top, \quad dZ = P \odot \bigl(dP - \operatorname{rowsum}(P \odot
          dP)\bigr), \\
        &dQ = s\, dZ\, K, \quad dK = s\, dZ^\top Q .
        \end{aligned}

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
    The softmax step is the vector-Jacobian product of :func:`attnmath.softmax.softmax_vjp`,
    :math:`P \odot (dP - \operatorname{rowsum}(P \odot dP))`: no ``S x S`` Jacobian is formed.
    Masked entries have ``P = 0`` and so receive no gradient. Float16 is computed in float32;
    each gradient has its input's dtype. ``dout`` must be finite. A cache of another method
    (e.g. a ``FlashCache``) raises ``TypeError``. Oracle: ``torch.autograd``.
    """
    check_cache(cache, AttentionCache, "scaled_dot_product_attention", "attention_backward")
    return _backward(dout, cache)


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
    for name, x in (("q", q), ("k", k)):
        if x.ndim < 2:
            raise ValueError(f"{name} must have shape (..., length, dim), got shape {x.shape}")
    if q.shape[:-2] != k.shape[:-2]:
        raise ValueError(
            f"q and k must have the same leading (batch, head) axes, got q {q.shape}, k {k.shape}"
        )
    for name, x in (("q", q), ("k", k), ("w_q", w_q), ("w_k", w_k), ("w_a", w_a)):
        check_finite(x, name)
    if q.shape[-1] != w_q.shape[0]:
        raise ValueError(f"w_q must have shape (D_q, A) with q's D_q={q.shape[-1]}, got {w_q.shape}")
    if k.shape[-1] != w_k.shape[0]:
        raise ValueError(f"w_k must have shape (D_k, A) with k's D_k={k.shape[-1]}, got {w_k.shape}")
    if not (w_q.shape[1] == w_k.shape[1] == w_a.shape[0]):
        raise ValueError(
            f"w_q, w_k and w_a must share the attention width A, got {w_q.shape}, {w_k.shape}, {w_a.shape}"
        )
    out_dtype = np.result_type(q, k, w_q, w_k, w_a)
    dtype = work_dtype(q, k, w_q, w_k, w_a)
    hq = q.astype(dtype, copy=False) @ w_q.astype(dtype, copy=False)  # (..., L, A)
    hk = k.astype(dtype, copy=False) @ w_k.astype(dtype, copy=False)  # (..., S, A)
    scores = np.tanh(hq[..., :, None, :] + hk[..., None, :, :]) @ w_a.astype(dtype, copy=False)
    return scores.astype(out_dtype, copy=False)  # (..., L, S)


def additive_attention(q, k, v, w_q, w_k, w_a, *, mask=None):
    """Attention with additive (Bahdanau) scores: ``softmax(additive_scores) @ v``.

    Returns ``(out (..., L, D_v), probs (..., L, S))``; a fully masked row gives zeros.
    """
    v = as_array(v, "v")
    scores = additive_scores(q, k, w_q, w_k, w_a)  # (..., L, S)
    k_shape = np.shape(k)
    if v.ndim != len(k_shape) or v.shape[:-1] != k_shape[:-1]:
        raise ValueError(
            f"v must have k's leading axes and S={scores.shape[-1]} rows, (..., S, D_v), "
            f"got v {v.shape} with k {k_shape}"
        )
    check_finite(v, "v")
    out_dtype = np.result_type(scores, v)
    probs = scores.astype(work_dtype(scores, v))  # (..., L, S), a copy in the working dtype
    if mask is not None:
        np.copyto(probs, -np.inf, where=~broadcast_mask(mask, scores.shape))
    softmax_rows_inplace(probs)  # a fully masked row -> zeros
    out = probs @ v.astype(probs.dtype, copy=False)  # (..., L, D_v)
    return out.astype(out_dtype, copy=False), probs.astype(out_dtype, copy=False)


class DropoutCache(NamedTuple):
    """Forward state of :func:`dropout_attention`: the plain cache and the kept-weights mask."""

    #: The plain forward's :class:`AttentionCache` (weights before dropout).
    attention: AttentionCache
    #: Boolean ``(B, H, L, S)``; True where a weight survived dropout.
    keep: np.ndarray
    #: Dropout probability (a scalar in ``[0, 1)``).
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
    H_kv = 1 if cache.q.ndim == 2 else cache.k.shape[-3]
    dropped5 = grouped(cache.probs * keep / (1.0 - p), H_kv)  # (B, H_kv, g, L, S)
    v5 = grouped(cache.v, H_kv).astype(cache.probs.dtype, copy=False)  # (B, H_kv, 1, S, D_v)
    out = (dropped5 @ v5).reshape(cache.probs.shape[:-1] + (cache.v.shape[-1],))  # (B, H, L, D_v)
    return out.astype(np.result_type(cache.q, cache.k, cache.v), copy=False), DropoutCache(cache, keep, p)


def dropout_attention_backward(dout, cache: DropoutCache) -> AttentionGrads:
    """Backward of :func:`dropout_attention`: the dropout is a fixed linear map on ``probs``.

    ``cache`` must be the :class:`DropoutCache` of :func:`dropout_attention` (another method's
    cache raises ``TypeError``); returns :class:`AttentionGrads`.
    """
    check_cache(cache, DropoutCache, "dropout_attention", "dropout_attention_backward")
    att, keep, p = cache
    check_cache(att, AttentionCache, "scaled_dot_product_attention", "dropout_attention_backward")
    keep = np.asarray(keep)
    if keep.dtype != np.bool_ or keep.shape != att.probs.shape:
        raise ValueError(
            f"cache.keep must be a boolean array of the weights' shape {att.probs.shape}, got "
            f"{keep.dtype} {keep.shape}"
        )
    return _backward(dout, att, keep, check_probability(p, "cache.p"))
