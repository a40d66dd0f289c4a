r"""Flash-tiled attention in NumPy: the FlashAttention-2 algorithm, forward and backward.

The forward pass walks over query tiles and, inside each, over key tiles, and never forms the
``(L, S)`` score matrix. Per query row it keeps the running maximum :math:`m`, the running
normaliser :math:`\ell` and the unnormalised output :math:`\tilde o`; for a key tile :math:`j`
with scores :math:`S^{(j)} = s\,Q_i K_j^\top`:

.. math::

    \begin{aligned}
    &m' = \max\bigl(m, \operatorname{rowmax} S^{(j)}\bigr), \quad \tilde P = e^{S^{(j)} - m'}, \quad \ell' =
      e^{m - m'}\ell + \operatorname{rowsum}\tilde P, \\
    &\tilde o' = e^{m - m'}\tilde o + \tilde P V_j,
    \end{aligned}

and after the last tile :math:`o = \tilde o / \ell` and :math:`\operatorname{lse} = m + \log\ell`.
The only state kept for the backward pass beyond the inputs and the output is ``lse (B, H, L)``.

The backward pass recomputes each probability tile from ``lse`` as
:math:`P = e^{S - \operatorname{lse}}` and uses :math:`D_i = \sum_d dO_{id} O_{id}`, which
equals :math:`\sum_j P_{ij}\, dP_{ij}` because :math:`O = PV` and :math:`dP = dO\,V^\top`:

.. math::

    \begin{aligned}
    &dV_j \mathrel{+}= P^\top dO_i, \quad dP = dO_i V_j^\top, \quad dZ = P \odot (dP - D_i), \\
    &dQ_i \mathrel{+}= s\, dZ\, K_j, \quad dK_j \mathrel{+}= s\, dZ^\top Q_i .
    \end{aligned}

**Memory.** The forward's working memory is one tile, :math:`O(B\,H\,(\text{block\_q}\cdot
\text{block\_k} + \text{block\_q}\cdot D_v))`, independent of the sequence lengths; nothing
of size :math:`L \times S` is allocated, the mask included (a broadcast view sliced per tile).
With the :math:`O(nD)` inputs and output the total is :math:`O(nD)`; the extra state is
:math:`O(n)`, and the backward too keeps one tile plus ``D (B, H, L)``. The arithmetic is the
same :math:`O(LSD)` as plain attention, except that with a causal mask the key tiles that no
query of a tile may see are skipped (about half the work for ``L = S``;
:func:`causal_tile_schedule` says which).

**Conventions.** A fully masked row gives ``out = 0`` and ``lse = -inf`` and zero gradient;
``S = 0`` gives zeros. NaN or :math:`\pm\infty` in ``q``, ``k``, ``v`` raises ``ValueError``
naming the argument (the rules of :mod:`attnmath.core`, shared by every exact variant).
Float16 inputs are computed in float32 (score tiles, exponentials, accumulators) and results
have the inputs' dtypes. This NumPy version shows the algorithm and its memory; the speed of
the paper comes from keeping tiles in GPU on-chip memory, which NumPy cannot express.

References: Dao et al., "FlashAttention" (2022); Dao, "FlashAttention-2" (2024).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ._validate import as_array, check_causal_alignment, check_positive_int
from .core import AttentionGrads, check_cache, check_dout, prepare
from .masking import causal_offset

__all__ = [
    "FlashCache",
    "flash_attention_forward",
    "flash_attention_backward",
    "causal_tile_schedule",
    "attention_matrix_bytes",
    "AttentionState",
    "attention_state",
    "merge_attention_states",
    "IOCount",
    "FastMemory",
    "flash_block_sizes",
    "standard_attention_io",
    "flash_attention_io",
    "flash_attention_2_io",
]


class FlashCache(NamedTuple):
    """What the flash forward keeps: inputs, output and ``lse (B, H, L)``; no ``(L, S)`` array.

    Every field is read by :func:`flash_attention_backward`: ``mask`` and ``bias`` are the
    caller's arrays as given (not broadcast; ``None`` without one), needed to recompute the
    probabilities; ``out`` and ``lse`` are in the working dtype (float32 for float16 inputs),
    so that ``D_i = rowsum(dO * O)`` does not see the rounding of the returned output.
    """

    #: Queries ``(B, H, L, D)`` as given.
    q: np.ndarray
    #: Keys ``(B, H_kv, S, D)`` as given.
    k: np.ndarray
    #: Values ``(B, H_kv, S, D_v)`` as given.
    v: np.ndarray
    #: Output ``(B, H, L, D_v)`` in the working dtype.
    out: np.ndarray
    #: Log-sum-exp of each query's scores ``(B, H, L)``, in the working dtype.
    lse: np.ndarray
    #: Score scale (a scalar).
    scale: float
    #: Whether the forward was causal.
    causal: bool
    #: Where the causal diagonal sits (``"top_left"``, ``"bottom_right"`` or an integer offset).
    causal_alignment: str | int
    #: Sliding-window length (keys a query sees, itself included), ``None`` for no window.
    window: int | None
    #: The caller's boolean mask, broadcastable to ``(B, H, L, S)``; ``None`` without one.
    mask: np.ndarray | None
    #: The caller's additive bias, broadcastable to ``(B, H, L, S)``; ``None`` without one.
    bias: np.ndarray | None
    #: Query tile length (rows of a tile, a scalar).
    block_q: int
    #: Key tile length (columns of a tile, a scalar).
    block_k: int


def _key_stop(S: int, i1: int, offset: int) -> int:
    """Causal: query rows ``< i1`` see only keys ``< i1 + offset``; key tiles from there on are
    skipped."""
    return min(S, max(0, i1 + offset))


def _first_query_tile(L: int, j0: int, offset: int, block_q: int) -> int:
    """Causal: the first row of the first query tile that sees key ``j0`` (``L`` when no query
    does: the earlier tiles are skipped by the forward, and so by the backward)."""
    first = max(0, j0 - offset)  # the first query row that sees key j0
    return L if first >= L else first - first % block_q


def causal_tile_schedule(L: int, S: int, *, block_q: int, block_k: int,
                         causal_alignment: str | int = "top_left") -> np.ndarray:
    r"""What the causal flash forward does with each (query tile, key tile).

    .. math::

        \text{tile } (i, j) \text{ is } \begin{cases}
        \text{skipped} & j_0 \ge i_1 + \delta \\
        \text{full} & j_1 - 1 \le i_0 + \delta \\
        \text{masked} & \text{otherwise}
        \end{cases}

    for the tile's query rows :math:`[i_0, i_1)`, keys :math:`[j_0, j_1)` and the causal offset
    :math:`\delta` (:func:`attnmath.masking.causal_offset`): a skipped tile is never computed
    (no query of the tile may see any of its keys), a full one is computed with no entry
    masked, a masked one with the causal mask applied inside.

    Parameters
    ----------
    L, S : int
        Query and key lengths, ``>= 0``.
    block_q, block_k : int
        Tile sizes, ``>= 1``.
    causal_alignment : {"top_left", "bottom_right"} or int
        As in :func:`flash_attention_forward`.

    Returns
    -------
    ndarray of str, shape (ceil(L / block_q), ceil(S / block_k))
        ``"full"``, ``"masked"`` or ``"skipped"``.

    Notes
    -----
    :func:`flash_attention_forward` skips tiles by the same rule (the causal mask alone; a
    ``mask``, ``bias`` or ``window`` may mask more inside the computed tiles). Oracle: the
    tiles the forward pass computes, recorded, and the dense causal mask in the tests.
    """
    L = check_positive_int(L, "L", allow_zero=True)
    S = check_positive_int(S, "S", allow_zero=True)
    block_q = check_positive_int(block_q, "block_q")
    block_k = check_positive_int(block_k, "block_k")
    offset = causal_offset(L, S, check_causal_alignment(causal_alignment, "causal_alignment"))
    i0 = np.arange(0, L, block_q)[:, None]  # (T_q, 1): first row of each query tile
    i1 = np.minimum(L, i0 + block_q)
    j0 = np.arange(0, S, block_k)[None, :]  # (1, T_k): first key of each key tile
    j1 = np.minimum(S, j0 + block_k)
    skipped = j0 >= np.minimum(S, np.maximum(0, i1 + offset))  # as _key_stop
    full = j1 - 1 <= i0 + offset
    return np.where(skipped, "skipped", np.where(full, "full", "masked"))  # (T_q, T_k)


def _online_update(m: np.ndarray, ell: np.ndarray, acc: np.ndarray, tile: np.ndarray,
                   v_j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fold one masked score tile into the running max ``m``, sum ``ell`` and unnormalised
    output ``acc`` (updated in place, as is ``tile``, which becomes ``P~``); return the new
    ``(m, ell)``."""
    m_new = np.maximum(m, np.max(tile, axis=-1))  # (B, H_kv, g, l)
    shift = np.where(np.isneginf(m_new), 0.0, m_new)  # finite: e^{-inf - (-inf)} is NaN
    alpha = np.exp(m - shift)  # (B, H_kv, g, l), <= 1: rescales the old sums
    tile -= shift[..., None]
    np.exp(tile, out=tile)  # P~ = e^{S - m_new}, (B, H_kv, g, l, s)
    ell = ell * alpha + np.sum(tile, axis=-1)  # (B, H_kv, g, l)
    acc *= alpha[..., None]
    acc += tile @ v_j  # (B, H_kv, g, l, D_v)
    return m_new, ell


def _online_finish(m: np.ndarray, ell: np.ndarray, acc: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``out = acc / ell`` and ``lse = m + log ell``; a fully masked row (``ell = 0``) gets
    ``out = 0`` and ``lse = -inf``."""
    seen = ell > 0.0  # False only for a fully masked row
    out = acc / np.where(seen, ell, 1.0)[..., None]  # (B, H_kv, g, l, D_v)
    shift = np.where(np.isneginf(m), 0.0, m)
    with np.errstate(divide="ignore"):
        return out, shift + np.log(ell)  # (B, H_kv, g, l); -inf where nothing is seen


def flash_attention_forward(q, k, v, *, block_q: int = 64, block_k: int = 64, mask=None,
                            bias=None, causal: bool = False, causal_alignment: str | int = "top_left",
                            window: int | None = None, scale=None):
    r"""Exact attention by tiles with an online softmax; keeps only ``lse`` for the backward.

    .. math::

        O = \operatorname{softmax}\!\left(s\, Q K^\top\right)_{\text{masked}} V, \qquad
        \operatorname{lse}_i = \log \sum_{j \text{ allowed}} e^{s\, q_i \cdot k_j},

    computed tile by tile (the recurrence, memory and conventions: the module docstring).

    Parameters
    ----------
    q, k, v : ndarray, shapes (B, H, L, D), (B, H_kv, S, D), (B, H_kv, S, D_v)
        Any leading axes (plain ``(L, D)`` works); ``H % H_kv == 0`` (torch's ``enable_gqa``).
    block_q, block_k : int
        Tile sizes along the queries and the keys, ``>= 1``; need not divide ``L``, ``S``.
    mask, bias : ndarray, optional
        Boolean mask (``True`` = may attend) and additive bias (``-inf`` = masked), each
        broadcasting to ``(B, H, L, S)``; sliced per tile, never materialised.
    causal, causal_alignment, window
        As in :func:`attnmath.attention.scaled_dot_product_attention` (``causal_alignment``
        ``"top_left"``, ``"bottom_right"`` or an integer offset); key tiles no query of a tile
        may see are skipped (:func:`causal_tile_schedule`).
    scale : float, optional
        Score scale :math:`s`, ``1/sqrt(D)`` by default.

    Returns
    -------
    out : ndarray, shape (B, H, L, D_v)
        In the inputs' dtype (float16 inputs are computed in float32).
    cache : FlashCache
        Inputs, ``out`` and ``lse (B, H, L)``: :math:`O(BHL)` numbers besides inputs and output.

    Notes
    -----
    A fully masked row gives ``out = 0`` and ``lse = -inf``. Oracle: torch's
    ``scaled_dot_product_attention`` and ``logsumexp`` in float64.
    """
    block_q, block_k = (check_positive_int(b, n) for b, n in ((block_q, "block_q"), (block_k, "block_k")))
    prob = prepare(q, k, v, mask=mask, bias=bias, scale=scale, causal=causal,
                   causal_alignment=causal_alignment, window=window)
    L, S, D_v, dtype = prob.L, prob.S, prob.v5.shape[-1], prob.dtype
    lead = prob.q5.shape[:-2]  # (B, H_kv, g)
    out5, lse5 = np.empty(lead + (L, D_v), dtype), np.empty(lead + (L,), dtype)  # (.., L, D_v), (.., L)
    for i0 in range(0, L, block_q):
        i1 = min(L, i0 + block_q)
        q_i = prob.q5[..., i0:i1, :]  # (B, H_kv, g, l, D)
        m = np.full(lead + (i1 - i0,), -np.inf, dtype=dtype)  # (B, H_kv, g, l) running max
        ell = np.zeros(lead + (i1 - i0,), dtype=dtype)  # (B, H_kv, g, l) running sum
        acc = np.zeros(lead + (i1 - i0, D_v), dtype=dtype)  # (B, H_kv, g, l, D_v) unnormalised out
        for j0 in range(0, _key_stop(S, i1, prob.offset) if prob.causal else S, block_k):
            tile = prob.scores(q_i, slice(i0, i1), slice(j0, min(S, j0 + block_k)))  # (B, H_kv, g, l, s)
            m, ell = _online_update(m, ell, acc, tile, prob.v5[..., j0:j0 + block_k, :])
        out5[..., i0:i1, :], lse5[..., i0:i1] = _online_finish(m, ell, acc)
    out_work = out5.reshape(prob.out_shape)  # (B, H, L, D_v)
    cache = FlashCache(*prob.inputs, out_work, lse5.reshape(prob.out_shape[:-1]), prob.scale,
                       prob.causal, causal_alignment, prob.window, mask, bias, block_q, block_k)
    return out_work.astype(prob.out_dtype, copy=False), cache  # in the inputs' dtype


def _backward_problem(dout, cache: FlashCache):
    """The checked problem of a flash cache and ``(dout5, out5, lse5)`` in its working dtype."""
    check_cache(cache, FlashCache, "flash_attention_forward", "flash_attention_backward")
    q, k, v, out, lse, scale, causal, causal_alignment, window, mask, bias, block_q, block_k = cache
    try:
        prob = prepare(q, k, v, mask=mask, bias=bias, scale=scale, causal=causal,
                       causal_alignment=causal_alignment, window=window)
        check_positive_int(block_q, "block_q")
        check_positive_int(block_k, "block_k")
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"cache is invalid (pass the cache its forward returned, unchanged): {exc}") from None
    if np.shape(out) != prob.out_shape or np.shape(lse) != prob.out_shape[:-1]:
        raise ValueError(
            f"cache is inconsistent: out {np.shape(out)} and lse {np.shape(lse)} do not match "
            f"q {q.shape}, v {v.shape}; pass the cache its forward returned, unchanged"
        )
    dout = check_dout(dout, prob.out_shape)
    lead, L, D_v, dtype = prob.q5.shape[:-2], prob.L, prob.v5.shape[-1], prob.dtype  # (B, H_kv, g)
    dout5 = dout.reshape(lead + (L, D_v)).astype(dtype, copy=False)  # (B, H_kv, g, L, D_v)
    out5 = np.asarray(out).reshape(lead + (L, D_v)).astype(dtype, copy=False)  # (B, H_kv, g, L, D_v)
    lse5 = np.asarray(lse).reshape(lead + (L,)).astype(dtype, copy=False)  # (B, H_kv, g, L)
    return prob, dout5, out5, lse5


def flash_attention_backward(dout, cache: FlashCache) -> AttentionGrads:
    r"""Backward pass of :func:`flash_attention_forward`, recomputing probabilities tile by tile.

    .. math::

        \begin{aligned}
        &P_{ij} = e^{s\, q_i \cdot k_j - \operatorname{lse}_i}, \quad D_i = \sum_d dO_{id}\, O_{id}, \\
        &dP = dO\,V^\top, \quad dZ_{ij} = P_{ij}\bigl(dP_{ij} - D_i\bigr), \\
        &dQ = s\, dZ\, K, \qquad dK = s\, dZ^\top Q, \qquad dV = P^\top dO .
        \end{aligned}

    Parameters
    ----------
    dout : ndarray, shape (B, H, L, D_v)
        Gradient of the loss with respect to the output.
    cache : FlashCache
        From the forward pass.

    Returns
    -------
    AttentionGrads
        ``dq (B, H, L, D)``, ``dk (B, H_kv, S, D)``, ``dv (B, H_kv, S, D_v)``; for grouped
        heads the key/value gradients are summed over the query heads of each group.

    Notes
    -----
    :math:`D_i` replaces :math:`\operatorname{rowsum}(P \odot dP)` of the softmax backward
    (equal, since :math:`O = PV`) and needs no row of :math:`P` in full. Key tiles outside,
    query tiles inside (FlashAttention-2's order), skipping the causal forward's skipped
    tiles; memory, dtypes and fully masked rows as in the module docstring. A cache of
    another method raises ``TypeError``; one whose fields disagree ``ValueError``. Oracle:
    ``torch.autograd`` through ``torch.nn.functional.scaled_dot_product_attention`` and
    central differences.
    """
    prob, dout5, out5, lse5 = _backward_problem(dout, cache)
    (L, S, s), (block_q, block_k) = (prob.L, prob.S, prob.scale), (cache.block_q, cache.block_k)
    q5, k5, v5 = prob.q5, prob.k5, prob.v5  # (B, H_kv, g, L, D), (B, H_kv, 1, S, D), (B, H_kv, 1, S, D_v)
    lse_shift = np.where(np.isneginf(lse5), 0.0, lse5)  # such rows have every score -inf: P = 0
    delta = np.sum(dout5 * out5, axis=-1)  # (B, H_kv, g, L): D_i = rowsum(dO * O)
    dq5, dk5, dv5 = (np.zeros(x.shape, dtype=prob.dtype) for x in (q5, k5, v5))
    for j0 in range(0, S, block_k):
        keys = slice(j0, min(S, j0 + block_k))
        first = _first_query_tile(L, j0, prob.offset, block_q) if prob.causal else 0
        for i0 in range(first, L, block_q):
            rows = slice(i0, min(L, i0 + block_q))
            q_i, do_i = q5[..., rows, :], dout5[..., rows, :]  # (B, H_kv, g, l, D), (.., D_v)
            probs = prob.scores(q_i, rows, keys)  # (B, H_kv, g, l, s): masked scores, then P
            probs -= lse_shift[..., rows, None]
            np.exp(probs, out=probs)  # P = e^{S - lse}
            dv5[..., keys, :] += np.sum(np.swapaxes(probs, -1, -2) @ do_i, axis=-3, keepdims=True)
            dscores = do_i @ np.swapaxes(v5[..., keys, :], -1, -2)  # dP, (B, H_kv, g, l, s)
            dscores -= delta[..., rows, None]
            dscores *= probs  # dZ = P * (dP - D_i), (B, H_kv, g, l, s)
            del probs
            dq5[..., rows, :] += (dscores @ k5[..., keys, :]) * s  # (B, H_kv, g, l, D)
            dk5[..., keys, :] += np.sum(np.swapaxes(dscores, -1, -2) @ q_i, axis=-3,
                                        keepdims=True) * s  # (B, H_kv, 1, s, D)
    return AttentionGrads(*(g.reshape(x.shape).astype(x.dtype, copy=False)
                            for g, x in zip((dq5, dk5, dv5), prob.inputs)))


def attention_matrix_bytes(L: int, S: int, H: int = 1, B: int = 1, bytes_per_elem: int = 4) -> int:
    r"""Bytes of the ``(B, H, L, S)`` attention matrix that plain attention stores.

    .. math:: \text{bytes} = B \cdot H \cdot L \cdot S \cdot \text{bytes\_per\_elem}.

    Parameters
    ----------
    L, S : int
        Query and key lengths.
    H, B : int
        Heads and batch size.
    bytes_per_elem : int
        2 for float16/bfloat16, 4 for float32, 8 for float64.

    Returns
    -------
    int
        Exact byte count. Divide by ``10**6`` for MB or ``2**20`` for MiB: the two differ by
        4.9 %, which is why ``4096**2 * 2`` bytes reads as "33.5 MB" (decimal) and as
        "32 MiB" (binary), and ``2048**2 * 4`` bytes as "16.8 MB" or "16 MiB".

    Notes
    -----
    The flash-tiled forward keeps ``lse (B, H, L)`` instead, a factor ``S`` smaller.
    """
    for value, name in ((L, "L"), (S, "S"), (H, "H"), (B, "B"), (bytes_per_elem, "bytes_per_elem")):
        check_positive_int(value, name)
    return int(B) * int(H) * int(L) * int(S) * int(bytes_per_elem)


# ---------------------------------------------------------------------------------------------
# Partial attention states and their exact merge (flash-decoding, paged and ring attention)
# ---------------------------------------------------------------------------------------------


class AttentionState(NamedTuple):
    r"""Attention of some queries over one set of keys, in a form that merges exactly.

    ``out (..., H, L, D_v)`` is the attention output over the keys of the set, normalised over
    them alone; ``lse (..., H, L)`` is the log-sum-exp of the (scaled, biased) scores over the
    same keys, :math:`-\infty` for a row that sees none of them. Two states over disjoint key
    sets determine the state over their union (:func:`merge_attention_states`).
    """

    #: Output ``(..., H, L, D_v)`` normalised over this key set alone.
    out: np.ndarray
    #: Log-sum-exp ``(..., H, L)`` of the scores over the key set; ``-inf`` where a row sees none.
    lse: np.ndarray


def attention_state(q, k, v, *, mask=None, bias=None, scale=None, causal: bool = False,
                    causal_alignment: str | int = "top_left", window: int | None = None,
                    block_q: int = 64, block_k: int = 64) -> AttentionState:
    r"""The :class:`AttentionState` of queries ``q`` over the keys ``k`` and values ``v``.

    .. math::

        \begin{aligned}
        &\operatorname{lse}_i = \log \sum_{j \text{ allowed}} e^{z_{ij}}, \qquad o_i = \sum_{j \text{
          allowed}} e^{z_{ij} - \operatorname{lse}_i}\, v_j, \\
        &z_{ij} = s\, q_i \cdot k_j + b_{ij}.
        \end{aligned}

    Parameters are those of :func:`flash_attention_forward`, which computes the state (the
    same validation, masks, grouped heads and working dtype as every exact variant). A key
    block that is a slice of a longer sequence needs the matching slice of the mask (or of
    the bias) for causal masking by global positions.

    Returns
    -------
    AttentionState
        ``out (..., H, L, D_v)`` and ``lse (..., H, L)`` in the working dtype (float32 for
        float16 inputs), so that merging does not see the output's rounding.
    """
    _, cache = flash_attention_forward(q, k, v, block_q=block_q, block_k=block_k, mask=mask,
                                       bias=bias, causal=causal,
                                       causal_alignment=causal_alignment, window=window,
                                       scale=scale)
    return AttentionState(cache.out, cache.lse)


def _check_state(state, i: int) -> tuple[np.ndarray, np.ndarray]:
    if not (isinstance(state, tuple) and len(state) == 2):
        raise TypeError(f"states[{i}] must be an AttentionState (out, lse), "
                        f"got {type(state).__name__}")
    out = as_array(state[0], f"states[{i}].out")
    lse = as_array(state[1], f"states[{i}].lse")
    if out.ndim < 1 or lse.shape != out.shape[:-1]:
        raise ValueError(f"states[{i}].lse must have the shape of out without its last axis, "
                         f"got out {out.shape} and lse {lse.shape}")
    if not np.isfinite(out).all():
        raise ValueError(f"states[{i}].out must be finite (NaN or inf found)")
    if np.isnan(lse).any() or np.isposinf(lse).any():
        raise ValueError(f"states[{i}].lse must not contain NaN or +inf (-inf: no key seen)")
    return out, lse


def merge_attention_states(states: Sequence[AttentionState]) -> AttentionState:
    r"""The state over the union of disjoint key sets, from the states over each set.

    With :math:`m = \max_t \operatorname{lse}^{(t)}` and
    :math:`w_t = e^{\operatorname{lse}^{(t)} - m}`:

    .. math::

        \operatorname{lse} = m + \log \sum_t w_t, \qquad
        o = \frac{\sum_t w_t\, o^{(t)}}{\sum_t w_t}.

    It is exact: :math:`e^{\operatorname{lse}^{(t)}} o^{(t)}` is the unnormalised output of set
    :math:`t`, and sums of those over disjoint sets are the unnormalised output of the union.
    Hence the merge is commutative and associative (any order, any tree of merges), which is
    what flash-decoding (split-K), paged attention and ring attention rely on.

    Parameters
    ----------
    states : sequence of AttentionState
        At least one; all ``out`` of one shape ``(..., L, D_v)``, each ``lse`` of shape
        ``(..., L)``; ``lse = -inf`` marks a row that saw no key of that set (its ``out`` is
        ignored).

    Returns
    -------
    AttentionState
        In the common dtype of the outputs; a row that saw no key in any set gets ``out = 0``
        and ``lse = -inf`` (the convention of :func:`flash_attention_forward`).
    """
    if isinstance(states, AttentionState) or not isinstance(states, Sequence) \
            or isinstance(states, (str, bytes)):
        raise TypeError("states must be a sequence (list or tuple) of AttentionState, "
                        f"got {type(states).__name__}")
    if len(states) == 0:
        raise ValueError("states must hold at least one AttentionState, got none")
    pairs = [_check_state(state, i) for i, state in enumerate(states)]
    shape = pairs[0][0].shape
    for i, (out, _) in enumerate(pairs):
        if out.shape != shape:
            raise ValueError(f"states[{i}].out has shape {out.shape}, states[0].out {shape}: "
                             "the states must be of the same queries")
    dtype = np.result_type(*(out for out, _ in pairs), *(lse for _, lse in pairs))
    m = np.max(np.stack([lse for _, lse in pairs]), axis=0).astype(dtype)  # (..., L)
    shift = np.where(np.isneginf(m), 0.0, m)  # finite: a row that saw nothing stays at -inf
    total = np.zeros(shape[:-1], dtype=dtype)  # (..., L): sum_t w_t
    acc = np.zeros(shape, dtype=dtype)  # (..., L, D_v): sum_t w_t o_t
    for out, lse in pairs:
        w = np.exp(lse - shift)  # (..., L), in [0, 1]; 0 where the set saw nothing
        total += w
        acc += w[..., None] * out
    seen = total > 0.0
    out = acc / np.where(seen, total, 1.0)[..., None]
    with np.errstate(divide="ignore"):
        lse = np.where(seen, shift + np.log(np.where(seen, total, 1.0)), -np.inf)
    return AttentionState(out, lse.astype(dtype, copy=False))


# --------------------------------------------------------------------------- IO complexity


class IOCount(NamedTuple):
    """Slow-memory traffic of one attention schedule, counted in elements (not bytes).

    ``reads`` and ``writes`` are the elements moved from and to slow memory (HBM); ``peak`` is
    the largest number of elements the fast memory (SRAM) held at once during the schedule.
    """

    #: Elements read from slow memory (HBM).
    reads: int
    #: Elements written to slow memory (HBM).
    writes: int
    #: Largest number of elements held in fast memory (SRAM) at once.
    peak: int

    @property
    def total(self) -> int:
        """All slow-memory accesses, ``reads + writes`` (the count of Theorem 2 of the paper)."""
        return self.reads + self.writes


class FastMemory:
    r"""A fast memory of ``M`` elements that charges every transfer to and from slow memory.

    :func:`standard_attention_io`, :func:`flash_attention_io` and
    :func:`flash_attention_2_io` drive it: ``load`` brings a block in from slow memory (its
    elements are *read*), ``hold`` makes room for a block computed on chip (no traffic),
    ``store`` writes a block that is held out to slow memory (its elements are
    *written*, and it stays held), ``free`` releases a block. Every call that adds a
    block checks that the blocks held together fit in ``M`` elements and raises
    ``ValueError`` otherwise, so a schedule that runs through has never held more than ``M``.

    Parameters
    ----------
    M : int
        Size of the fast memory in elements, ``>= 1``.

    Notes
    -----
    This is the two-level memory model of the IO-complexity analysis of FlashAttention
    (Dao et al., 2022, Section 3.2): a small fast memory, a large slow memory, and a cost
    that is the number of elements moved between them. Arithmetic is free in this model, and
    the model knows nothing about bandwidth, latency or parallelism across streaming
    multiprocessors.
    """

    def __init__(self, M: int) -> None:
        self.M = check_positive_int(M, "M")
        self.held = 0
        self.peak = 0
        self.reads = 0
        self.writes = 0

    def _take(self, n: int) -> int:
        n = check_positive_int(n, "n", allow_zero=True)
        if self.held + n > self.M:
            raise ValueError(
                f"fast memory overflow: a block of n = {n} elements on top of the {self.held} held "
                f"needs {self.held + n} > M = {self.M} elements; use smaller blocks "
                f"(block_r, block_c) or a larger M"
            )
        self.held += n
        self.peak = max(self.peak, self.held)
        return n

    def load(self, n: int) -> int:
        """Read ``n`` elements from slow memory into fast memory; returns ``n``."""
        self.reads += self._take(n)
        return n

    def hold(self, n: int) -> int:
        """Make room for ``n`` elements computed on chip (no slow-memory traffic); returns ``n``."""
        return self._take(n)

    def store(self, n: int) -> None:
        """Write ``n`` of the held elements to slow memory (they stay held until freed)."""
        n = check_positive_int(n, "n", allow_zero=True)
        if n > self.held:
            raise ValueError(f"cannot store n = {n} elements: only {self.held} are held")
        self.writes += n

    def free(self, n: int) -> None:
        """Release ``n`` held elements."""
        n = check_positive_int(n, "n", allow_zero=True)
        if n > self.held:
            raise ValueError(f"cannot free n = {n} elements: only {self.held} are held")
        self.held -= n

    def count(self) -> IOCount:
        """The traffic charged so far and the peak occupancy."""
        return IOCount(self.reads, self.writes, self.peak)


def _check_io_sizes(N: object, d: object, M: object) -> tuple[int, int, int]:
    return (check_positive_int(N, "N"), check_positive_int(d, "d"), check_positive_int(M, "M"))


def _flash_live(block_r: int, block_c: int, d: int) -> int:
    """Elements a flash inner step holds: two blocks of rows each side, the tile, 4 statistics."""
    return 2 * (block_r + block_c) * d + block_r * block_c + 4 * max(block_r, block_c)


def flash_block_sizes(d: int, M: int) -> tuple[int, int]:
    r"""Block sizes ``(B_r, B_c)`` of FlashAttention's Algorithm 1 for a fast memory of ``M``.

    .. math::

        B_c = \min\Bigl(\Bigl\lceil \frac{M}{4d} \Bigr\rceil,\ B_{\text{fit}}\Bigr), \qquad
        B_r = \min(B_c, d),

    where :math:`B_{\text{fit}}` is the largest :math:`B` whose inner step fits:
    :math:`2(b + B)d + bB + 4B \le M` with :math:`b = \min(B, d)` (two blocks of rows of
    :math:`Q, O` and of :math:`K, V`, the :math:`b \times B` score tile and four row
    statistics).

    Parameters
    ----------
    d : int
        Head dimension.
    M : int
        Fast-memory size in elements; at least ``4 d + 5`` (one row of each block).

    Returns
    -------
    (int, int)
        ``(B_r, B_c)``: query rows and key rows per block for Algorithm 1
        (:func:`flash_attention_io`); FlashAttention-2's order uses them the other way round
        (:func:`flash_attention_2_io`).

    Notes
    -----
    The paper (Dao et al., 2022, Algorithm 1) takes :math:`B_c = \lceil M/4d \rceil` so that
    each of :math:`K_j, V_j, Q_i, O_i` takes about a quarter of the fast memory. The score
    tile and the statistics need room too: for :math:`M < 8d^2 + 16d` or so the paper's blocks
    hold more than ``M`` elements, and they are lowered here until they fit. The constants
    change, the :math:`\Theta` of Theorem 2 does not.
    """
    d = check_positive_int(d, "d")
    M = check_positive_int(M, "M")
    if _flash_live(1, 1, d) > M:
        raise ValueError(f"M = {M} is too small for d = {d}: one row of each of Q, K, V, O and "
                         f"its statistics need {_flash_live(1, 1, d)} elements")
    linear = (M - 2 * d * d) // (3 * d + 4)  # B >= d: 2(d + B)d + dB + 4B <= M
    if linear >= d:
        fit = linear
    else:  # B < d: B^2 + (4d + 4)B <= M
        fit = (math.isqrt((4 * d + 4) ** 2 + 4 * M) - (4 * d + 4)) // 2
        while _flash_live(fit + 1, fit + 1, d) <= M:
            fit += 1
        while _flash_live(fit, fit, d) > M:
            fit -= 1
    block_c = min(-(-M // (4 * d)), fit)
    return min(block_c, d), block_c


def _flash_blocks(d: int, M: int, block_r: object, block_c: object,
                  swap: bool) -> tuple[int, int]:
    if block_r is None and block_c is None:
        small, big = flash_block_sizes(d, M)
        return (big, small) if swap else (small, big)
    if block_r is None or block_c is None:
        raise ValueError("give both block_r and block_c, or neither (then flash_block_sizes)")
    return check_positive_int(block_r, "block_r"), check_positive_int(block_c, "block_c")


def standard_attention_io(N: int, d: int, M: int) -> IOCount:
    r"""Simulated slow-memory traffic of standard attention with a fast memory of ``M`` elements.

    The three kernels of the paper's Algorithm 0, each tiled to fit ``M``:
    :math:`S = QK^\top` in :math:`b \times b` tiles written out, a row-wise softmax that reads
    :math:`S` and writes :math:`P`, and :math:`O = PV` in tiles. The count equals

    .. math::

        \text{reads} = Nd + 2TNd + (r + 1)N^2, \qquad \text{writes} = 2N^2 + Nd,

    with :math:`b` the largest tile with :math:`2bd + b^2 \le M`, :math:`T = \lceil N/b
    \rceil`, and :math:`r = 1` when a row of :math:`S` fits (:math:`N + 2 \le M`), else 2.

    Parameters
    ----------
    N : int
        Sequence length (``L = S = N``).
    d : int
        Head dimension (``D = D_v = d``).
    M : int
        Fast-memory size in elements, at least ``2 d + 1``.

    Returns
    -------
    IOCount
        Reads, writes and the peak fast-memory occupancy, in elements, for one head.

    Notes
    -----
    The count is made by running the loops against a :class:`FastMemory`, not by the
    formula above, which the tests compare with it. Theorem 2 of Dao et al. (2022) states
    :math:`\Theta(Nd + N^2)`; the re-reads :math:`2TNd` of the two tiled products are
    :math:`O(N^2)` when :math:`b \ge d` (:math:`M \ge 3d^2`), and grow to :math:`\approx
    N^2 d / b` below.
    """
    N, d, M = _check_io_sizes(N, d, M)
    b = math.isqrt(d * d + M) - d  # the largest b with 2bd + b^2 <= M
    if b < 1:
        raise ValueError(f"M = {M} is too small for d = {d}: a tile of S = QK^T needs "
                         f"{2 * d + 1} elements")
    fast = FastMemory(M)
    blocks = [(j0, min(N, j0 + b)) for j0 in range(0, N, b)]
    _io_scores(fast, blocks, d)
    _io_softmax(fast, N, M)
    _io_output(fast, blocks, d)
    return fast.count()


def _io_scores(fast: FastMemory, blocks: list[tuple[int, int]], d: int) -> None:
    r"""Algorithm 0's first kernel: :math:`S = QK^\top` tile by tile, each tile written out."""
    for i0, i1 in blocks:
        q_i = fast.load((i1 - i0) * d)
        for j0, j1 in blocks:
            k_j = fast.load((j1 - j0) * d)
            s_ij = fast.hold((i1 - i0) * (j1 - j0))
            fast.store(s_ij)
            fast.free(s_ij + k_j)
        fast.free(q_i)


def _io_softmax(fast: FastMemory, N: int, M: int) -> None:
    r"""The second kernel: :math:`P = \operatorname{softmax}(S)` row by row, with a running max
    and sum; a row that fits is read once, else twice (the statistics, then ``P``)."""
    chunk = min(N, M - 2)
    for _ in range(N):
        stats = fast.hold(2)
        if chunk == N:  # the row fits: read it once, write P in its place
            fast.store(fast.load(N))
            fast.free(N)
        else:  # two passes: the online max and sum, then normalise and write P
            for c0 in range(0, N, chunk):
                fast.free(fast.load(min(chunk, N - c0)))
            for c0 in range(0, N, chunk):
                part = fast.load(min(chunk, N - c0))
                fast.store(part)
                fast.free(part)
        fast.free(stats)


def _io_output(fast: FastMemory, blocks: list[tuple[int, int]], d: int) -> None:
    r"""The third kernel: :math:`O = PV` tile by tile, accumulated on chip."""
    for i0, i1 in blocks:
        o_i = fast.hold((i1 - i0) * d)
        for j0, j1 in blocks:
            p_ij = fast.load((i1 - i0) * (j1 - j0))
            v_j = fast.load((j1 - j0) * d)
            fast.free(p_ij + v_j)
        fast.store(o_i)
        fast.free(o_i)


def flash_attention_io(N: int, d: int, M: int, *, block_r: int | None = None,
                       block_c: int | None = None) -> IOCount:
    r"""Simulated slow-memory traffic of FlashAttention's Algorithm 1 (Dao et al., 2022).

    Outer loop over the :math:`T_c = \lceil N/B_c \rceil` blocks :math:`K_j, V_j`, inner loop
    over the blocks :math:`Q_i` with :math:`O_i, \ell_i, m_i` read and written back at every
    inner step; :math:`O, \ell, m` are initialised in slow memory first. The count equals

    .. math::

        \text{reads} = 2Nd + T_c\,(2Nd + 2N), \qquad
        \text{writes} = (T_c + 1)(Nd + 2N).

    Parameters
    ----------
    N : int
        Sequence length (``L = S = N``).
    d : int
        Head dimension (``D = D_v = d``).
    M : int
        Fast-memory size in elements.
    block_r, block_c : int, optional
        Query rows and key rows per block; both or neither (default:
        :func:`flash_block_sizes`). Blocks that do not fit in ``M`` raise ``ValueError``.

    Returns
    -------
    IOCount
        Reads, writes and the peak fast-memory occupancy, in elements, for one head.

    Notes
    -----
    Counted by running the loops against a :class:`FastMemory`; the formula is what the
    tests compare with. With :math:`B_c \approx M/4d`, :math:`T_c \approx 4Nd/M` and the
    total is :math:`\approx 12N^2d^2/M`: Theorem 2's :math:`\Theta(N^2d^2/M)` for
    :math:`d \le M \le Nd`.
    """
    N, d, M = _check_io_sizes(N, d, M)
    block_r, block_c = _flash_blocks(d, M, block_r, block_c, swap=False)
    fast = FastMemory(M)
    for i0 in range(0, N, block_r):  # initialise O = 0, l = 0, m = -inf in slow memory
        rows = min(block_r, N - i0)
        init = fast.hold(rows * (d + 2))
        fast.store(init)
        fast.free(init)
    for j0 in range(0, N, block_c):
        kv_j = fast.load(2 * min(block_c, N - j0) * d)  # K_j, V_j
        for i0 in range(0, N, block_r):
            rows = min(block_r, N - i0)
            q_i = fast.load(rows * d)
            o_i = fast.load(rows * (d + 2))  # O_i, l_i, m_i
            s_ij = fast.hold(rows * min(block_c, N - j0) + 2 * rows)  # S_ij, 2 row stats
            fast.store(o_i)  # O_i, l_i, m_i written back
            fast.free(q_i + o_i + s_ij)
        fast.free(kv_j)
    return fast.count()


def flash_attention_2_io(N: int, d: int, M: int, *, block_r: int | None = None,
                         block_c: int | None = None) -> IOCount:
    r"""Simulated slow-memory traffic of FlashAttention-2's loop order (Dao, 2024).

    Outer loop over the :math:`T_r = \lceil N/B_r \rceil` blocks :math:`Q_i`, whose
    output accumulator and statistics stay on chip; inner loop over the blocks
    :math:`K_j, V_j`;
    :math:`O_i` and :math:`\operatorname{lse}_i` are written once. The count equals

    .. math::

        \text{reads} = Nd + 2T_r\,Nd, \qquad \text{writes} = Nd + N.

    Parameters
    ----------
    N : int
        Sequence length (``L = S = N``).
    d : int
        Head dimension (``D = D_v = d``).
    M : int
        Fast-memory size in elements.
    block_r, block_c : int, optional
        Query rows and key rows per block; both or neither. The default is
        :func:`flash_block_sizes` the other way round: the large block on the queries,
        whose loop is now the outer one, ``B_c = min(B_r, d)``.

    Returns
    -------
    IOCount
        Reads, writes and the peak fast-memory occupancy, in elements, for one head.

    Notes
    -----
    Counted by running the loops against a :class:`FastMemory`. With
    :math:`B_r \approx M/4d` the total is :math:`\approx 8N^2d^2/M`: the same
    :math:`\Theta(N^2d^2/M)` as Algorithm 1 with a smaller constant, since the output
    never makes a round trip through slow memory.
    """
    N, d, M = _check_io_sizes(N, d, M)
    block_r, block_c = _flash_blocks(d, M, block_r, block_c, swap=True)
    fast = FastMemory(M)
    for i0 in range(0, N, block_r):
        rows = min(block_r, N - i0)
        q_i = fast.load(rows * d)
        o_i = fast.hold(rows * (d + 2))  # the output accumulator, m and l
        for j0 in range(0, N, block_c):
            kv_j = fast.load(2 * min(block_c, N - j0) * d)  # K_j, V_j
            s_ij = fast.hold(rows * min(block_c, N - j0) + 2 * rows)  # S_ij, 2 row stats
            fast.free(kv_j + s_ij)
        fast.store(rows * (d + 1))  # O_i and lse_i
        fast.free(q_i + o_i)
    return fast.count()
