r"""Attention masks: padding, causal, combined and sliding-window.

Every mask is boolean with ``True`` = *may attend* (torch's convention for
``scaled_dot_product_attention``) and broadcasts to the score shape ``(B, H, L, S)``.
A mask becomes an additive bias only inside the softmax, as :math:`-\infty` where it is False:

.. math::

    \tilde S_{ij} = \begin{cases} S_{ij} & M_{ij} \\ -\infty & \lnot M_{ij} \end{cases}
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from ._validate import (
    BoolArray,
    FloatArray,
    check_bool_mask,
    check_causal_alignment,
    check_float_dtype,
    check_int_array,
    check_positive_int,
)

__all__ = [
    "causal_offset",
    "causal_mask",
    "padding_mask",
    "left_padding_mask",
    "combine_masks",
    "sliding_window_mask",
    "broadcast_mask",
    "mask_to_bias",
]

def causal_offset(L: int, S: int, alignment: str | int = "top_left") -> int:
    r"""The offset :math:`\delta` of a causal mask: query ``i`` may attend key ``j`` iff
    ``j <= i + offset``.

    .. math:: \delta = \begin{cases} 0 & \text{top-left} \\ S - L & \text{bottom-right} \\
              \delta & \text{an integer given} \end{cases}

    Parameters
    ----------
    L, S : int
        Query and key lengths, ``>= 0``.
    alignment : {"top_left", "bottom_right"} or int
        ``"top_left"`` is torch's ``is_causal`` (query ``i`` sits on key ``i``);
        ``"bottom_right"`` aligns the last query with the last key (KV-cache decoding); an
        integer is the offset itself, any value: negative offsets hide the first keys from
        every query and leave the first ``-offset`` rows fully masked, offsets ``>= S`` mask
        nothing.

    Returns
    -------
    int

    Notes
    -----
    Every causal mask of the library (:func:`causal_mask`, :func:`sliding_window_mask`, the
    ``causal_alignment`` of :func:`attnmath.attention.scaled_dot_product_attention` and of
    :func:`attnmath.flash.flash_attention_forward`, whose tile skipping follows it) reads its
    diagonal from here. A fully masked row returns zeros (and ``lse = -inf`` in the flash
    forward), as ``torch.nn.functional.scaled_dot_product_attention`` does.
    """
    L = check_positive_int(L, "L", allow_zero=True)
    S = check_positive_int(S, "S", allow_zero=True)
    alignment = check_causal_alignment(alignment)
    if isinstance(alignment, int):
        return alignment
    return 0 if alignment == "top_left" else S - L


def _query_positions(L: int, S: int, alignment: str | int) -> np.ndarray:
    """Key index each query sits on: ``i + causal_offset(L, S, alignment)``."""
    return np.arange(L)[:, None] + causal_offset(L, S, alignment)  # (L, 1)


def causal_mask(
    L: int, S: int | None = None, *, alignment: str | int = "top_left"
) -> BoolArray:
    r"""Lower-triangular mask: query ``i`` may attend to key ``j`` iff ``j <= i + offset``.

    .. math::

        M_{ij} = [\, j \le i + \delta \,], \qquad
        \delta = \begin{cases} 0 & \text{top-left} \\ S - L & \text{bottom-right} \\
        k & \text{alignment } k \in \mathbb{Z} \end{cases}

    Parameters
    ----------
    L, S : int
        Query and key lengths (``S`` defaults to ``L``).
    alignment : {"top_left", "bottom_right"} or int
        Where the diagonal sits when ``L != S``. ``"top_left"`` is torch's ``is_causal=True``
        (``torch.ones(L, S).tril()``). ``"bottom_right"`` aligns the *last* query with the last
        key: the layout of KV-cache decoding, where ``L`` new queries follow ``S - L`` cached
        keys. With ``L == S`` both are the same. An integer is the offset
        :math:`\delta` itself (:func:`causal_offset`).

    Returns
    -------
    ndarray of bool, shape (L, S)

    Notes
    -----
    Top-left never leaves a row empty (query 0 always sees key 0). Bottom-right with ``L > S``
    leaves the first ``L - S`` rows fully masked, and so does any offset :math:`\delta < 0`
    for its first :math:`\min(L, -\delta)` rows; their attention output is zero.
    Oracle: ``torch.ones(L, S, dtype=bool).tril(diagonal=delta)``.
    """
    L = check_positive_int(L, "L")
    S = L if S is None else check_positive_int(S, "S")
    return np.arange(S)[None, :] <= _query_positions(L, S, alignment)  # (L, S)


def padding_mask(lengths: ArrayLike, S: int) -> BoolArray:
    r"""Key-padding mask from the true length of each sequence in a batch.

    .. math:: M_{b,j} = [\, j < \ell_b \,]

    Parameters
    ----------
    lengths : array_like of int, shape (B,)
        Valid tokens per sequence, each in ``[0, S]``.
    S : int
        Padded key length.

    Returns
    -------
    ndarray of bool, shape (B, 1, 1, S)
        Broadcasts over heads and queries.
    """
    S = check_positive_int(S, "S")
    lengths = _check_lengths(lengths, S)
    return (np.arange(S)[None, :] < lengths[:, None])[:, None, None, :]  # (B, 1, 1, S)


def _check_lengths(lengths, S: int) -> np.ndarray:
    lengths = check_int_array(lengths, "lengths", ndim=1)  # (B,)
    if ((lengths < 0) | (lengths > S)).any():
        raise ValueError(f"every entry of lengths must lie in [0, S={S}], got {lengths.tolist()}")
    return lengths


def left_padding_mask(lengths: ArrayLike, S: int) -> BoolArray:
    r"""Key-padding mask of a left-padded batch: sequence ``b`` occupies the last ``lengths[b]`` slots.

    .. math:: M_{b,j} = [\, j \ge S - \ell_b \,]

    Arguments and result as :func:`padding_mask`: ``lengths (B,)`` in ``[0, S]``, a mask
    ``(B, 1, 1, S)``.

    Notes
    -----
    Decoders batch prompts of different lengths padded on the *left*, so that every sequence
    ends at slot ``S - 1`` and generation appends at the same index for all. The positions of
    the real tokens then start at ``0`` at slot ``S - lengths[b]``: pass them to
    :func:`attnmath.positional.apply_rope` as per-sequence positions ``(B, L)``, which is what
    Hugging Face computes as ``attention_mask.cumsum(-1) - 1``. Combine with
    :func:`causal_mask` by :func:`combine_masks`. Oracle: ``padding_mask`` flipped along ``S``.
    """
    S = check_positive_int(S, "S")
    lengths = _check_lengths(lengths, S)
    return (np.arange(S)[None, :] >= S - lengths[:, None])[:, None, None, :]  # (B, 1, 1, S)


def combine_masks(*masks: ArrayLike | None) -> BoolArray | None:
    """Logical AND of masks with broadcasting; ``None`` entries are ignored.

    Returns ``None`` when every mask is ``None`` (nothing is masked).

    Notes
    -----
    The combined mask is the *element-wise AND*: the reference sheet's ``M_pad ⊙ M_causal`` is the same
    thing written as a product of 0/1 matrices.
    """
    result = None
    for i, m in enumerate(masks):
        if m is None:
            continue
        m = check_bool_mask(m, f"mask {i}")
        if result is None:
            result = m
            continue
        try:
            result = result & m
        except ValueError:
            raise ValueError(
                f"mask {i} of shape {m.shape} does not broadcast with the others ({result.shape})"
            ) from None
    return result


def sliding_window_mask(
    L: int, window: int, S: int | None = None, *, alignment: str | int = "top_left"
) -> BoolArray:
    r"""Causal sliding window: query ``i`` sees itself and the ``window - 1`` keys before it.

    .. math:: M_{ij} = [\, 0 \le (i + \delta) - j < w \,]

    Parameters
    ----------
    L : int
        Query length.
    window : int
        :math:`w \ge 1`, the number of keys each query sees (itself included). With
        ``window >= S`` (bottom-right) or ``window >= max(L, S)`` (top-left) it is the plain
        causal mask.
    S : int, optional
        Key length, default ``L``.
    alignment : {"top_left", "bottom_right"} or int
        As in :func:`causal_mask`.

    Returns
    -------
    ndarray of bool, shape (L, S)

    Notes
    -----
    This is the window of Mistral-style decoders (causal, ``w`` most recent tokens). The
    symmetric band :math:`|i - j| \le r` of bidirectional local attention is
    :func:`attnmath.sparse.local_mask`.
    """
    L = check_positive_int(L, "L")
    window = check_positive_int(window, "window")
    S = L if S is None else check_positive_int(S, "S")
    distance = _query_positions(L, S, alignment) - np.arange(S)[None, :]  # (L, S)
    return (distance >= 0) & (distance < window)


def broadcast_mask(
    mask: ArrayLike, shape: tuple[int, ...], name: str = "mask"
) -> BoolArray:
    """Check that ``mask`` is boolean and broadcasts to ``shape``; return the broadcast view."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a string (the argument named in errors), got {type(name).__name__}")
    mask = check_bool_mask(mask, name)
    if isinstance(shape, (str, bytes)) or not all(
        isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 0 for n in np.atleast_1d(shape)
    ):
        raise TypeError(f"shape must be a tuple of non-negative integers, got {shape!r}")
    try:
        return np.broadcast_to(mask, tuple(shape))
    except ValueError:
        raise ValueError(
            f"{name} of shape {mask.shape} does not broadcast to the scores' shape {tuple(shape)}"
        ) from None


def mask_to_bias(mask: ArrayLike, dtype: DTypeLike = np.float64) -> FloatArray:
    r"""Additive bias: ``0`` where ``mask`` is True, ``-inf`` where it is False.

    Notes
    -----
    Built with ``np.where``, not as :math:`(1 - M)\cdot(-\infty)`: in IEEE arithmetic
    :math:`0 \cdot (-\infty)` is NaN, so that formula (as some texts write it) poisons every
    *allowed* score.
    """
    mask = check_bool_mask(mask, "mask")
    dtype = check_float_dtype(dtype, "dtype")  # the bias holds -inf
    return np.where(mask, 0.0, -np.inf).astype(dtype)
