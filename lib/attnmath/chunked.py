r"""Query-chunked attention and the one-pass (online) softmax it leads to.

Plain attention forms the whole score matrix, :math:`O(LS)` numbers per head. Two ways to need
less:

* **Query chunks** (:func:`chunked_attention`). Rows of the softmax are independent, so the
  queries can be processed ``chunk_size`` rows at a time, each chunk doing an ordinary softmax
  over *all* keys. The result is exact; the peak extra memory is :math:`O(\text{chunk}\cdot S)`
  per head instead of :math:`O(LS)`; the work is unchanged, :math:`O(LSD)`.
* **Key blocks with an online softmax** (:func:`online_softmax`, :func:`online_logsumexp`).
  The normaliser of a softmax can be accumulated in one streaming pass over blocks of a row,
  keeping only a running maximum :math:`m` and a running sum :math:`\ell`:

  .. math::

      m_{\text{new}} = \max\bigl(m, \max_{j \in \text{block}} x_j\bigr), \qquad
      \ell \leftarrow \ell\, e^{m - m_{\text{new}}} + \sum_{j \in \text{block}} e^{x_j - m_{\text{new}}},

  and at the end :math:`\log\sum_j e^{x_j} = m + \log \ell`. This is the recurrence the
  flash-tiled attention (:mod:`attnmath.flash`) runs over key tiles.
"""

from __future__ import annotations


import numpy as np

from ._validate import as_array, check_axis, check_bool, check_logits, check_positive_int
from .core import prepare, softmax_rows_inplace, work_dtype

__all__ = [
    "chunked_attention",
    "online_softmax",
    "online_logsumexp",
]


# ---------------------------------------------------------------------------------------------
# Query-chunked attention
# ---------------------------------------------------------------------------------------------


def chunked_attention(q, k, v, *, chunk_size: int, mask=None, bias=None, scale=None,
                      causal: bool = False, causal_alignment: str | int = "top_left",
                      window: int | None = None) -> np.ndarray:
    r"""Exact attention computed ``chunk_size`` query rows at a time.

    .. math::

        O_{I} = \operatorname{softmax}\!\left(s\, Q_I K^\top + \text{bias}_I\right)_{\text{masked}} V,
        \qquad I = \{i_0, \dots, i_0 + \text{chunk} - 1\},

    for consecutive blocks :math:`I` of query rows; each block's softmax runs over all
    :math:`S` keys, so the result equals plain attention exactly.

    Parameters
    ----------
    q, k, v : ndarray, shapes (B, H, L, D), (B, H_kv, S, D), (B, H_kv, S, D_v)
        Queries, keys and values (any leading axes; plain ``(L, D)`` works);
        ``H % H_kv == 0`` (grouped-query attention).
    chunk_size : int
        Query rows per block, ``>= 1``; it need not divide ``L`` (the last block is shorter).
    mask : ndarray of bool, optional
        ``True`` = may attend; broadcasts to ``(B, H, L, S)``. Sliced per block, never
        broadcast to full size.
    bias : ndarray, optional
        Additive bias broadcasting to ``(B, H, L, S)`` (ALiBi); ``-inf`` acts as masked.
    scale : float, optional
        Score scale :math:`s`, ``1/sqrt(D)`` by default.
    causal, causal_alignment, window
        Causal mask, its alignment and a sliding window, as in
        :func:`attnmath.attention.scaled_dot_product_attention`.

    Returns
    -------
    out : ndarray, shape (B, H, L, D_v)
        In the inputs' dtype (float16 is computed in float32, :mod:`attnmath.core`).

    Notes
    -----
    Peak extra memory is one block of scores, :math:`O(B\,H\,\text{chunk}\,S)`, against
    :math:`O(B\,H\,L\,S)` for plain attention; the arithmetic is the same :math:`O(LSD)`.
    There is no cache and no hand-written backward: a backward pass would need the weights
    of every block again (recompute them, as :func:`attnmath.flash.flash_attention_backward`
    does). A fully masked row gives zeros; ``S = 0`` gives zeros; NaN or :math:`\pm\infty` in
    ``q``, ``k``, ``v`` raises ``ValueError`` naming the argument (:mod:`attnmath.core`). Grouped heads follow ``repeat_interleave``
    (torch's ``enable_gqa``). Oracle: :func:`attnmath.attention.scaled_dot_product_attention`
    and ``torch.nn.functional.scaled_dot_product_attention`` in float64.
    """
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    prob = prepare(q, k, v, mask=mask, bias=bias, scale=scale, causal=causal,
                   causal_alignment=causal_alignment, window=window)
    q5, v5 = prob.q5, prob.v5  # (B, H_kv, g, L, D), (B, H_kv, 1, S, D_v)
    out5 = np.empty(q5.shape[:-1] + (v5.shape[-1],), dtype=prob.dtype)  # (B, H_kv, g, L, D_v)
    for i0 in range(0, prob.L, chunk_size):
        rows = slice(i0, min(prob.L, i0 + chunk_size))
        # One (c, S) block is alive at a time: scores become probabilities in place.
        block = prob.scores(q5[..., rows, :], rows, slice(None))  # (B, H_kv, g, c, S), masked
        softmax_rows_inplace(block)  # an all -inf row -> zeros
        out5[..., rows, :] = block @ v5  # (B, H_kv, g, c, D_v)
        del block
    return prob.finish(out5)  # (B, H, L, D_v)


# ---------------------------------------------------------------------------------------------
# Online (streaming) softmax
# ---------------------------------------------------------------------------------------------


def _online_max_and_sum(x: np.ndarray, block_size: int):
    """One pass over blocks of the last axis: running max ``m`` and sum ``l`` of ``e^{x - m}``.

    ``m`` is ``-inf`` and ``l`` is ``0`` for a row that is entirely ``-inf``; a ``+inf`` entry
    makes ``m = +inf`` and ``l = +inf``.
    """
    n = x.shape[-1]
    m = np.full(x.shape[:-1], -np.inf, dtype=x.dtype)  # (...,)
    total = np.zeros(x.shape[:-1], dtype=x.dtype)  # (...,)
    with np.errstate(over="ignore"):
        for j0 in range(0, n, block_size):
            block = x[..., j0:j0 + block_size]  # (..., b)
            m_new = np.maximum(m, np.max(block, axis=-1))  # (...,)
            # Shift by a finite number: e^{-inf - (-inf)} would be NaN.
            shift = np.where(np.isfinite(m_new), m_new, 0.0)  # (...,)
            total = total * np.exp(m - shift) + np.sum(np.exp(block - shift[..., None]), axis=-1)
            m = m_new
    return m, total


def _prepare_rows(x, axis, block_size):
    x = as_array(x, "x", allow_int=True)
    if x.ndim == 0:
        raise ValueError("x must have at least 1 dimension, got a scalar")
    axis = check_axis(axis, x.ndim)
    block_size = check_positive_int(block_size, "block_size")
    if np.isnan(x).any():
        raise ValueError("x contains NaN")
    xw = np.moveaxis(x.astype(work_dtype(x), copy=False), axis, -1)  # (..., n)
    return x, xw, axis, block_size


def online_softmax(x, *, block_size: int, axis: int = -1) -> np.ndarray:
    r"""Softmax whose normaliser is accumulated in one streaming pass over blocks.

    .. math::

        \begin{aligned}
        &m^{(t)} = \max\bigl(m^{(t-1)}, \max_{j \in b_t} x_j\bigr), \\
        &\ell^{(t)} = \ell^{(t-1)} e^{m^{(t-1)} - m^{(t)}} + \sum_{j \in b_t} e^{x_j - m^{(t)}}, \qquad p_i =
          \frac{e^{x_i - m}}{\ell},
        \end{aligned}

    starting from :math:`m^{(0)} = -\infty`, :math:`\ell^{(0)} = 0` and ending with
    :math:`m, \ell` after the last block :math:`b_t` of ``block_size`` entries.

    Parameters
    ----------
    x : array_like, shape (..., n, ...)
        Logits; ``-inf`` marks an entry with zero probability.
    block_size : int
        Entries read per step, ``>= 1``; it need not divide ``n``.
    axis : int
        The normalised axis. Default: the last.

    Returns
    -------
    ndarray, same shape and dtype as ``x``

    Notes
    -----
    The rescaling factor :math:`e^{m^{(t-1)} - m^{(t)}} \le 1` corrects the terms summed
    against an older, smaller maximum, so every exponent stays :math:`\le 0` and nothing
    overflows; the result does not depend on ``block_size`` (up to rounding). The normaliser
    takes one pass; writing the probabilities needs a second pass over ``x`` (the safe softmax
    takes three: max, sum, divide). Attention avoids that second pass by carrying the
    unnormalised output :math:`\sum_j e^{x_j - m} v_j` along with :math:`\ell`
    (:mod:`attnmath.flash`). As :func:`attnmath.softmax.softmax`, a row that is entirely
    ``-inf`` (no distribution) and ``+inf`` or NaN entries raise ``ValueError``.
    Oracle: :func:`attnmath.softmax.softmax`, for every block size from 1 to ``n``.
    """
    x, xw, axis, block_size = _prepare_rows(x, axis, block_size)
    check_logits(xw, "x")
    m, total = _online_max_and_sum(xw, block_size)  # (...,), (...,)
    if np.isneginf(m).any():
        raise ValueError(
            "x has a row that is entirely -inf (no distribution); use masked_softmax for fully masked rows"
        )
    probs = np.exp(xw - m[..., None]) / total[..., None]  # (..., n)
    return np.moveaxis(probs, -1, axis).astype(x.dtype, copy=False)


def online_logsumexp(x, *, block_size: int, axis: int = -1, keepdims: bool = False) -> np.ndarray:
    r"""Log-sum-exp accumulated in one streaming pass over blocks of ``block_size`` entries.

    .. math:: \log \sum_j e^{x_j} = m + \log \ell,

    with the running maximum :math:`m` and running sum :math:`\ell` of :func:`online_softmax`.

    Parameters
    ----------
    x : array_like, shape (..., n, ...)
    block_size : int
        Entries read per step, ``>= 1``.
    axis : int
        The reduced axis.
    keepdims : bool
        Keep the reduced axis with size one.

    Returns
    -------
    ndarray
        ``x``'s shape without ``axis`` (or with it of size one).

    Notes
    -----
    A row that is entirely ``-inf`` gives ``-inf`` (the log of an empty sum) and a ``+inf``
    entry gives ``+inf``; NaN raises ``ValueError``. This is the per-row statistic the
    flash-tiled attention keeps for its backward pass. Oracle:
    :func:`attnmath.softmax.logsumexp` and ``torch.logsumexp``.
    """
    keepdims = check_bool(keepdims, "keepdims")
    x, xw, axis, block_size = _prepare_rows(x, axis, block_size)
    m, total = _online_max_and_sum(xw, block_size)  # (...,), (...,)
    shift = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = shift + np.log(total)  # (...,); log(0) = -inf for an all -inf row
    if keepdims:
        out = np.expand_dims(out, axis)
    return out.astype(x.dtype, copy=False)
