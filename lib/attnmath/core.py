r"""The attention core: one set of rules shared by every exact attention variant.

Plain (:mod:`attnmath.attention`), query-chunked (:mod:`attnmath.chunked`), flash-tiled
(:mod:`attnmath.flash`), sliding-window (:mod:`attnmath.sparse`), KV-cache decoding
(:mod:`attnmath.kv_cache`) and, through them, multi-head attention compute

.. math::

    O = \operatorname{softmax}\!\left(s\, Q K^\top + \text{bias} + \mathrm{bias}_M\right) V

by different schedules. Everything except the schedule lives here, so the variants cannot
disagree on it:

* **Validation** (:func:`prepare`): ``q (..., H, L, D)``, ``k (..., H_kv, S, D)``,
  ``v (..., H_kv, S, D_v)``, or plain ``(L, D)`` matrices; ``H`` a multiple of ``H_kv``;
  ``D >= 1``; a boolean ``mask`` and a real ``bias`` broadcasting to ``(..., H, L, S)``.
* **Non-finite inputs raise.** NaN or :math:`\pm\infty` anywhere in ``q``, ``k``, ``v`` (or
  ``dout`` in a backward) raises ``ValueError`` naming the argument. Torch propagates them
  (one NaN key spoils every row that sees it, an infinite query gives NaN rows); a reference
  library that returns such rows silently hides the bug that produced them. In ``bias``,
  ``-inf`` means "masked" and is allowed; NaN and ``+inf`` raise.
* **Grouped-query heads** (:func:`grouped`, :func:`repeat_kv`): query head ``h`` reads
  key/value head ``h // (H // H_kv)``, torch's ``enable_gqa`` (``repeat_interleave``).
* **Masks**: ``mask`` (``True`` = may attend), the causal mask in either alignment and a
  sliding ``window`` combine by AND, tile by tile (:meth:`Problem.scores`); nothing of size
  ``L x S`` is built unless the caller's mask already is.
* **Working dtype** (``attnmath._validate.work_dtype``): float16 inputs are computed in float32 (scores,
  exponentials, ``dP``, ``dZ`` and accumulators alike) and the results are rounded once to the
  input dtype; float32 stays float32 and float64 stays float64.
* **Empty lengths**: ``L = 0`` gives an empty output; ``S = 0`` gives zeros (no key to
  attend to), as torch does. A fully masked row gives zeros and zero gradients.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ._validate import check_finite as _check_finite
from ._validate import (ALIGNMENTS, as_array, check_bool, check_causal_alignment, check_logits,
                        check_positive_int, check_qkv, check_scale, work_dtype)
from .masking import broadcast_mask, causal_offset

__all__ = [
    "ALIGNMENTS",
    "AttentionGrads",
    "Problem",
    "check_finite",
    "check_causal",
    "prepare",
    "grouped",
    "repeat_kv",
    "softmax_rows_inplace",
    "check_cache",
    "check_dout",
]

class AttentionGrads(NamedTuple):
    """Gradients of the loss with respect to ``q``, ``k`` and ``v``, in their shapes and dtype.

    Every attention backward of the library returns this type (plain, dropout, flash NumPy and
    flash Triton); for grouped heads ``dk`` and ``dv`` are summed over the query heads of each
    key/value head.
    """

    #: Gradient of the loss with respect to ``q``, shape ``(B, H, L, D)``.
    dq: Any  # np.ndarray; torch.Tensor from the Triton kernels
    #: Gradient with respect to ``k``, shape ``(B, H_kv, S, D)``, summed over each group's query heads.
    dk: Any
    #: Gradient with respect to ``v``, shape ``(B, H_kv, S, D_v)``, summed over each group's query heads.
    dv: Any


def check_finite(x: np.ndarray, name: str) -> None:
    """Raise ``ValueError`` naming ``name`` if ``x`` holds NaN or an infinity (attention inputs)."""
    _check_finite(x, name, hint=" (mask entries with `mask` or a -inf `bias` instead)")


def check_causal(causal: bool, causal_alignment: str | int) -> tuple[bool, str | int]:
    """Return ``(bool(causal), causal_alignment)`` or raise naming the argument; the alignment
    is ``"top_left"``, ``"bottom_right"`` or an integer offset (:func:`attnmath.masking.causal_offset`)."""
    return check_bool(causal, "causal"), check_causal_alignment(causal_alignment, "causal_alignment")


def grouped(x: np.ndarray, H_kv: int) -> np.ndarray:
    """View ``x (..., H, n, d)`` as ``(..., H_kv, H // H_kv, n, d)``; no data is copied.

    For queries this puts the query heads that share a key/value head on their own axis; keys
    and values, ``(..., H_kv, n, d)``, get an axis of size one there (``H_kv = H``). Plain
    ``(n, d)`` matrices get two leading axes of size one (``H_kv`` must then be 1). Any dtype
    (boolean keep masks too); values are moved as they are, NaN included.
    """
    if not isinstance(x, np.ndarray):
        raise TypeError(f"x must be a NumPy array, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"x must be an array of shape (..., H, n, d) or (n, d), got {np.shape(x)}")
    H_kv = check_positive_int(H_kv, "H_kv")
    if x.ndim == 2:
        if H_kv != 1:
            raise ValueError(f"H_kv must be 1 for a plain (n, d) matrix, got {H_kv}")
        return x[None, None]
    if x.shape[-3] % H_kv != 0:
        raise ValueError(f"H_kv={H_kv} must divide the {x.shape[-3]} heads of x (shape {x.shape})")
    *batch, H, n, d = x.shape
    return x.reshape(*batch, H_kv, H // H_kv, n, d)


def repeat_kv(x, H: int) -> np.ndarray:
    """Repeat key/value heads ``(..., H_kv, S, D)`` to ``(..., H, S, D)`` for grouped queries.

    Query head ``h`` uses key/value head ``h // (H // H_kv)``: torch's ``enable_gqa``, i.e.
    ``repeat_interleave`` along the head axis. With ``H == H_kv`` this returns ``x`` itself.

    ``H`` is the number of *query heads*. Hugging Face's ``repeat_kv(hidden_states, n_rep)``
    takes the repetition factor instead: ``n_rep = H // H_kv``, so HF's
    ``repeat_kv(x, n_rep)`` is ``repeat_kv(x, n_rep * H_kv)`` here, with the same head order.
    ``H`` must be a positive multiple of ``H_kv``, else ``ValueError``.
    """
    x = as_array(x, "x")
    if x.ndim < 3:
        raise ValueError(f"x must have shape (..., H_kv, S, D), got shape {x.shape}")
    if isinstance(H, bool) or not isinstance(H, (int, np.integer)):
        raise TypeError(f"H must be an integer, got {type(H).__name__}")
    H_kv = x.shape[-3]
    if H < 1 or H_kv == 0 or H % H_kv != 0:
        raise ValueError(
            f"H={H} query heads must be a positive multiple of the H_kv={H_kv} key/value heads of x"
        )
    return x if H == H_kv else np.repeat(x, H // H_kv, axis=-3)  # (..., H, S, D)


def softmax_rows_inplace(x: np.ndarray) -> None:
    """Overwrite ``x`` with its softmax along the last axis; ``-inf`` entries are masked.

    The row maximum is subtracted before the exponential; a row that is entirely ``-inf``
    (fully masked) and a row of length zero become zeros.
    """
    if not isinstance(x, np.ndarray) or not np.issubdtype(x.dtype, np.floating):
        raise TypeError(f"x must be a floating NumPy array (overwritten in place), got {type(x).__name__} "
                        f"{getattr(x, 'dtype', '')}")
    if x.ndim == 0:
        raise ValueError("x must have at least 1 dimension (the softmax axis), got a scalar")
    check_logits(x, "x")
    if x.shape[-1] == 0:
        return
    m = np.max(x, axis=-1, keepdims=True)  # (..., 1)
    m[np.isneginf(m)] = 0.0
    x -= m
    np.exp(x, out=x)
    total = np.sum(x, axis=-1, keepdims=True)  # (..., 1)
    total[total == 0.0] = 1.0
    x /= total


class Problem(NamedTuple):
    """A validated attention problem in its working dtype (from :func:`prepare`).

    ``q5 (..., H_kv, g, L, D)``, ``k5 (..., H_kv, 1, S, D)``, ``v5 (..., H_kv, 1, S, D_v)`` are
    the grouped views (:func:`grouped`) cast to ``dtype``; ``mask`` and ``bias`` are broadcast
    views of shape ``(..., H, L, S)`` (``None`` when absent); ``offset`` is ``S - L`` for the
    bottom-right causal alignment, ``0`` for top-left, or the integer alignment given
    (:func:`attnmath.masking.causal_offset`); ``window`` bounds how far back a query
    sees (``None``: no bound); ``inputs`` are the checked ``(q, k, v)`` in their own dtypes.
    """

    #: Grouped query view ``(..., H_kv, g, L, D)`` with ``g = H / H_kv``, in ``dtype``.
    q5: np.ndarray
    #: Key view ``(..., H_kv, 1, S, D)``, in ``dtype``.
    k5: np.ndarray
    #: Value view ``(..., H_kv, 1, S, D_v)``, in ``dtype``.
    v5: np.ndarray
    #: Score scale (a scalar; ``1/sqrt(D)`` unless given).
    scale: float
    #: Boolean ``(..., H, L, S)`` broadcast view, True = may attend; ``None`` without a mask.
    mask: np.ndarray | None
    #: Additive bias ``(..., H, L, S)`` broadcast view; ``None`` without one.
    bias: np.ndarray | None
    #: Whether query ``i`` sees only keys up to its own position (shifted by ``offset``).
    causal: bool
    #: Query ``i`` sits on key ``i + offset`` (``S - L`` bottom-right, ``0`` top-left, or the integer given).
    offset: int
    #: How many keys back a query sees, itself included (``None`` for no bound).
    window: int | None
    #: Working dtype the computation runs in (float32 for float16 inputs).
    dtype: np.dtype
    #: Dtype of the returned output, the dtype of the inputs.
    out_dtype: np.dtype
    #: Shape of the returned output, ``(..., H, L, D_v)``.
    out_shape: tuple
    #: The checked ``(q, k, v)`` in their own dtypes and shapes.
    inputs: tuple[np.ndarray, np.ndarray, np.ndarray]

    @property
    def L(self) -> int:
        return self.q5.shape[-2]

    @property
    def S(self) -> int:
        return self.k5.shape[-2]

    def allowed(self, rows: slice, cols: slice, shape) -> np.ndarray | None:
        """Boolean tile ``shape = (..., H_kv, g, l, s)`` of what may be attended; ``None``: all."""
        i0, i1 = _check_tile(rows, "rows", self.L)
        j0, j1 = _check_tile(cols, "cols", self.S)
        if not isinstance(shape, tuple) or tuple(shape[-2:]) != (i1 - i0, j1 - j0):
            raise ValueError(f"shape must be a tuple ending in (l, s) = ({i1 - i0}, {j1 - j0}), got {shape!r}")
        allowed: np.ndarray | None = None
        if self.causal or self.window is not None:
            i = np.arange(i0, i1)[:, None] + self.offset  # (l, 1): the key each query sits on
            j = np.arange(j0, j1)[None, :]  # (1, s)
            band = np.ones((i1 - i0, j1 - j0), dtype=bool)
            if self.causal:
                band &= j <= i
            if self.window is not None:
                band &= j > i - self.window
            if not band.all():
                allowed = band
        if self.mask is not None:
            tile = self.mask[..., rows, cols].reshape(shape)  # a view: split heads, slice
            allowed = tile if allowed is None else (tile & allowed)
        return allowed

    def scores(self, q_rows: np.ndarray, rows: slice, cols: slice) -> np.ndarray:
        """Score tile ``s q k^T + bias`` of queries ``rows`` and keys ``cols``, masked to ``-inf``.

        ``q_rows`` is ``q5[..., rows, :]`` (passed in so that a caller can reuse it).
        """
        i0, i1 = _check_tile(rows, "rows", self.L)
        want = self.q5.shape[:-2] + (i1 - i0, self.q5.shape[-1])
        if not isinstance(q_rows, np.ndarray) or q_rows.shape != want:
            raise ValueError(f"q_rows must be q5[..., rows, :] of shape {want}, got {np.shape(q_rows)}")
        check_finite(q_rows, "q_rows")
        _check_tile(cols, "cols", self.S)
        tile = q_rows @ np.swapaxes(self.k5[..., cols, :], -1, -2)  # (..., H_kv, g, l, s)
        tile *= self.scale
        if self.bias is not None:
            tile += self.bias[..., rows, cols].reshape(tile.shape)
        allowed = self.allowed(rows, cols, tile.shape)
        if allowed is not None:
            np.copyto(tile, -np.inf, where=~allowed)
        return tile

    def finish(self, out5: np.ndarray) -> np.ndarray:
        """Output ``(..., H_kv, g, L, D_v)`` back to ``(..., H, L, D_v)`` in the input dtype.

        Values are moved as they are (NaN passes through)."""
        want = self.q5.shape[:-1] + (self.v5.shape[-1],)
        out5 = as_array(out5, "out5")
        if out5.shape != want:
            raise ValueError(f"out5 must have shape (..., H_kv, g, L, D_v) = {want}, got {np.shape(out5)}")
        return out5.reshape(self.out_shape).astype(self.out_dtype, copy=False)


def _check_tile(rows: object, name: str, n: int) -> tuple[int, int]:
    """``(start, stop)`` of a tile: a step-1 slice of ``range(n)``."""
    if not isinstance(rows, slice):
        raise TypeError(f"{name} must be a slice, got {type(rows).__name__}")
    try:
        start, stop, step = rows.indices(n)
    except TypeError:
        raise TypeError(f"{name} must be a slice of integers, got {rows!r}") from None
    if step != 1:
        raise ValueError(f"{name} must be a slice with step 1, got {rows!r}")
    return start, max(start, stop)


def _check_window(window) -> int | None:
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)):
        raise TypeError(f"window must be an integer or None, got {type(window).__name__}")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    return int(window)


def prepare(q, k, v, *, mask=None, bias=None, scale=None, causal: bool = False,
            causal_alignment: str | int = "top_left", window: int | None = None) -> Problem:
    """Validate an attention call and return its :class:`Problem` in the working dtype.

    Raises ``TypeError`` or ``ValueError`` naming the argument: shapes (as
    ``attnmath._validate.check_qkv``),
    ``D = 0``, non-finite ``q``, ``k``, ``v``, a non-boolean or non-broadcasting ``mask``, a
    ``bias`` with NaN or ``+inf`` or of the wrong shape, a bad ``scale``, ``causal``,
    ``causal_alignment`` or ``window``.
    """
    q, k, v = check_qkv(q, k, v)
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_finite(x, name)
    D = q.shape[-1]
    if D == 0:
        raise ValueError(f"q and k must have a head dim D >= 1, got q of shape {q.shape}")
    scale = check_scale(scale, D)
    causal, causal_alignment = check_causal(causal, causal_alignment)
    window = _check_window(window)
    L, S, D_v = q.shape[-2], k.shape[-2], v.shape[-1]
    score_shape = q.shape[:-1] + (S,)  # (..., H, L, S)
    full_mask = None if mask is None else broadcast_mask(mask, score_shape)  # a view
    full_bias = None
    if bias is not None:
        b = as_array(bias, "bias", allow_int=True)
        if np.isnan(b).any() or np.isposinf(b).any():
            raise ValueError("bias must not contain NaN or +inf (-inf marks a masked entry)")
        try:
            full_bias = np.broadcast_to(b, score_shape)  # a view
        except ValueError:
            raise ValueError(
                f"bias of shape {b.shape} does not broadcast to the scores' shape {score_shape}"
            ) from None
    out_dtype = np.result_type(q, k, v)
    dtype = work_dtype(q, k, v)
    H_kv = 1 if q.ndim == 2 else k.shape[-3]
    q5 = grouped(q, H_kv).astype(dtype, copy=False)  # (..., H_kv, g, L, D)
    k5 = grouped(k, H_kv).astype(dtype, copy=False)  # (..., H_kv, 1, S, D)
    v5 = grouped(v, H_kv).astype(dtype, copy=False)  # (..., H_kv, 1, S, D_v)
    offset = causal_offset(L, S, causal_alignment)
    return Problem(q5, k5, v5, scale, full_mask, full_bias, causal, offset, window, dtype,
                   out_dtype, q.shape[:-1] + (D_v,), (q, k, v))


def check_cache(cache, cls: type, forward: str, backward: str):
    """Raise ``TypeError`` unless ``cache`` is a ``cls`` (the forward's cache), naming both."""
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a class, got {type(cls).__name__}")
    for name, value in (("forward", forward), ("backward", backward)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a function's name (str), got {type(value).__name__}")
    if not isinstance(cache, cls):
        raise TypeError(
            f"cache must be the {cls.__name__} returned by {forward}, got "
            f"{type(cache).__name__}; pass each forward's cache to its own backward ({backward})"
        )
    return cache


def check_dout(dout, shape: tuple) -> np.ndarray:
    """``dout`` as a finite floating array of the output's ``shape``, or a clear error."""
    dout = as_array(dout, "dout")
    if dout.shape != tuple(shape):
        raise ValueError(f"dout must have the output's shape {tuple(shape)}, got {dout.shape}")
    check_finite(dout, "dout")
    return dout
