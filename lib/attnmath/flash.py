r"""Flash-tiled attention in NumPy: the FlashAttention-2 algorithm, forward and backward.

The forward pass walks over query tiles and, inside each, over key tiles, and never forms the
``(L, S)`` score matrix. Per query row it keeps the running maximum :math:`m`, the running
normaliser :math:`\ell` and the unnormalised output :math:`\tilde o`; for a key tile :math:`j`
with scores :math:`S^{(j)} = s\,Q_i K_j^\top`:

.. math::

    m' = \max\bigl(m, \operatorname{rowmax} S^{(j)}\bigr), \quad
    \tilde P = e^{S^{(j)} - m'}, \quad
    \ell' = e^{m - m'}\ell + \operatorname{rowsum}\tilde P, \quad
    \tilde o' = e^{m - m'}\tilde o + \tilde P V_j,

and after the last tile :math:`o = \tilde o / \ell` and :math:`\operatorname{lse} = m + \log\ell`.
The only state kept for the backward pass beyond the inputs and the output is ``lse (B, H, L)``.

The backward pass recomputes each probability tile from ``lse`` as
:math:`P = e^{S - \operatorname{lse}}` and uses :math:`D_i = \sum_d dO_{id} O_{id}`, which
equals :math:`\sum_j P_{ij}\, dP_{ij}` because :math:`O = PV` and :math:`dP = dO\,V^\top`:

.. math::

    dV_j \mathrel{+}= P^\top dO_i, \quad dP = dO_i V_j^\top, \quad
    dS = P \odot (dP - D_i), \quad dQ_i \mathrel{+}= s\, dS\, K_j, \quad dK_j \mathrel{+}= s\, dS^\top Q_i .

References: Dao et al., "FlashAttention" (2022); Dao, "FlashAttention-2" (2023).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._validate import as_array, check_positive_int, check_qkv, check_scale
from .chunked import _grouped, _tile, _work_dtype
from .masking import broadcast_mask

__all__ = [
    "FlashCache",
    "FlashGrads",
    "flash_attention_forward",
    "flash_attention_backward",
    "attention_matrix_bytes",
]

_ALIGNMENTS = ("top_left", "bottom_right")


class FlashCache(NamedTuple):
    """What the flash forward keeps: inputs, output and ``lse (B, H, L)``; no ``(L, S)`` array.

    ``mask`` is the caller's mask as given (not broadcast), ``None`` without one.
    """

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    out: np.ndarray
    lse: np.ndarray
    scale: float
    causal: bool
    causal_alignment: str
    mask: np.ndarray | None
    block_q: int
    block_k: int


class FlashGrads(NamedTuple):
    """Gradients with respect to ``q (B, H, L, D)``, ``k (B, H_kv, S, D)``, ``v (B, H_kv, S, D_v)``."""

    dq: np.ndarray
    dk: np.ndarray
    dv: np.ndarray


def _check_causal(causal, causal_alignment) -> tuple[bool, str]:
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    if causal_alignment not in _ALIGNMENTS:
        raise ValueError(f"causal_alignment must be one of {_ALIGNMENTS}, got {causal_alignment!r}")
    return bool(causal), causal_alignment


def _tile_allowed(i0: int, i1: int, j0: int, j1: int, shape, *, causal: bool, offset: int, full_mask):
    """Boolean tile ``(..., l, s)`` of the causal mask AND the user mask; ``None`` if all True."""
    allowed = None
    if causal and j1 - 1 > i0 + offset:  # the tile reaches above the diagonal
        allowed = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None] + offset  # (l, s)
    if full_mask is not None:
        tile = _tile(full_mask, slice(i0, i1), slice(j0, j1), shape)  # (B, H_kv, g, l, s)
        allowed = tile if allowed is None else (tile & allowed)
    return allowed


def flash_attention_forward(q, k, v, *, block_q: int = 64, block_k: int = 64, mask=None,
                            causal: bool = False, causal_alignment: str = "top_left", scale=None):
    r"""Exact attention by tiles with an online softmax; keeps only ``lse`` for the backward.

    .. math::

        O = \operatorname{softmax}\!\left(s\, Q K^\top\right)_{\text{masked}} V, \qquad
        \operatorname{lse}_i = \log \sum_{j \text{ allowed}} e^{s\, q_i \cdot k_j},

    computed tile by tile: see the module docstring for the recurrence.

    Parameters
    ----------
    q : ndarray, shape (B, H, L, D)
        Queries (any leading axes; plain ``(L, D)`` works).
    k : ndarray, shape (B, H_kv, S, D)
        Keys; ``H % H_kv == 0`` (grouped-query attention, torch's ``enable_gqa``).
    v : ndarray, shape (B, H_kv, S, D_v)
        Values.
    block_q, block_k : int
        Tile sizes along the queries and the keys, ``>= 1``; they need not divide ``L``, ``S``
        and may exceed them.
    mask : ndarray of bool, optional
        ``True`` = may attend; broadcasts to ``(B, H, L, S)``; sliced per tile.
    causal : bool
        Apply a causal mask (combined with ``mask`` by AND).
    causal_alignment : {"top_left", "bottom_right"}
        With ``L != S``: ``"top_left"`` lets query ``i`` see keys ``j <= i`` (torch's
        ``is_causal``); ``"bottom_right"`` lets it see ``j <= i + S - L`` (KV-cache decoding).
    scale : float, optional
        Score scale :math:`s`, ``1/sqrt(D)`` by default.

    Returns
    -------
    out : ndarray, shape (B, H, L, D_v)
    cache : FlashCache
        Inputs, ``out`` and ``lse (B, H, L)``: :math:`O(BHL)` numbers besides inputs and output.

    Notes
    -----
    Working memory is one tile, :math:`O(B\,H\,(\text{block\_q}\cdot\text{block\_k} +
    \text{block\_q}\cdot D_v))`, independent of the sequence lengths; nothing of size
    :math:`L \times S` is allocated, the mask included (it is a broadcast view sliced per tile).
    Together with the :math:`O(nD)` inputs and output the total is :math:`O(nD)`; the extra
    state is :math:`O(n)`. The arithmetic is the same :math:`O(LSD)` as plain attention; in the
    causal case, key tiles entirely above the diagonal are skipped (about half the work for
    ``L = S``). A fully masked row gives ``out = 0`` and ``lse = -inf``. This NumPy version
    shows the algorithm and its memory; the speed of the paper comes from keeping tiles in GPU
    on-chip memory, which NumPy cannot express. Oracle:
    :func:`attnmath.attention.scaled_dot_product_attention`,
    ``torch.nn.functional.scaled_dot_product_attention`` (``attn_mask``, ``is_causal``,
    ``enable_gqa``) and ``torch.logsumexp`` for ``lse``, in float64.
    """
    q, k, v = check_qkv(q, k, v)
    block_q = check_positive_int(block_q, "block_q")
    block_k = check_positive_int(block_k, "block_k")
    causal, causal_alignment = _check_causal(causal, causal_alignment)
    scale = check_scale(scale, q.shape[-1])
    L, S, D_v = q.shape[-2], k.shape[-2], v.shape[-1]
    full_mask = None if mask is None else broadcast_mask(mask, q.shape[:-1] + (S,))  # view
    offset = 0 if causal_alignment == "top_left" else S - L  # query i sits on key i + offset
    dtype = _work_dtype(q, k, v)

    q5, k5, v5 = _grouped(q, k, v)  # (B, H_kv, g, L, D), (B, H_kv, 1, S, D), (B, H_kv, 1, S, D_v)
    lead = q5.shape[:-2]  # (B, H_kv, g)
    out5 = np.empty(lead + (L, D_v), dtype=dtype)  # (B, H_kv, g, L, D_v)
    lse5 = np.empty(lead + (L,), dtype=dtype)  # (B, H_kv, g, L)
    for i0 in range(0, L, block_q):
        i1 = min(L, i0 + block_q)
        q_i = q5[..., i0:i1, :]  # (B, H_kv, g, l, D)
        m = np.full(lead + (i1 - i0,), -np.inf, dtype=dtype)  # (B, H_kv, g, l) running max
        ell = np.zeros(lead + (i1 - i0,), dtype=dtype)  # (B, H_kv, g, l) running sum
        acc = np.zeros(lead + (i1 - i0, D_v), dtype=dtype)  # (B, H_kv, g, l, D_v) unnormalised out
        # Causal: the last key row i1 - 1 can see is i1 - 1 + offset; later tiles are all masked.
        j_stop = min(S, max(0, i1 + offset)) if causal else S
        for j0 in range(0, j_stop, block_k):
            j1 = min(S, j0 + block_k)
            # One (l, s) tile is alive at a time: the score tile is turned into P~ in place.
            tile = q_i @ np.swapaxes(k5[..., j0:j1, :], -1, -2)  # (B, H_kv, g, l, s)
            tile *= scale
            allowed = _tile_allowed(i0, i1, j0, j1, tile.shape, causal=causal, offset=offset,
                                    full_mask=full_mask)
            if allowed is not None:
                np.copyto(tile, -np.inf, where=~allowed)  # masked scores are -inf
            m_new = np.maximum(m, np.max(tile, axis=-1))  # (B, H_kv, g, l)
            shift = np.where(np.isneginf(m_new), 0.0, m_new)  # finite: e^{-inf - (-inf)} is NaN
            alpha = np.exp(m - shift)  # (B, H_kv, g, l), <= 1: rescales the old sums
            tile -= shift[..., None]
            np.exp(tile, out=tile)  # P~ = e^{S - m_new}, (B, H_kv, g, l, s)
            ell = ell * alpha + np.sum(tile, axis=-1)  # (B, H_kv, g, l)
            acc *= alpha[..., None]
            acc += tile @ v5[..., j0:j1, :]  # (B, H_kv, g, l, D_v)
            m = m_new
            del tile
        seen = ell > 0.0  # False only for a fully masked row
        out5[..., i0:i1, :] = acc / np.where(seen, ell, 1.0)[..., None]  # (B, H_kv, g, l, D_v)
        shift = np.where(np.isneginf(m), 0.0, m)
        with np.errstate(divide="ignore"):
            lse5[..., i0:i1] = shift + np.log(ell)  # (B, H_kv, g, l); -inf where nothing is seen
    out = out5.reshape(q.shape[:-1] + (D_v,))  # (B, H, L, D_v)
    lse = lse5.reshape(q.shape[:-1])  # (B, H, L)
    return out, FlashCache(q, k, v, out, lse, scale, causal, causal_alignment, mask, block_q, block_k)


def flash_attention_backward(dout, cache: FlashCache) -> FlashGrads:
    r"""Backward pass of :func:`flash_attention_forward`, recomputing probabilities tile by tile.

    .. math::

        P_{ij} = e^{s\, q_i \cdot k_j - \operatorname{lse}_i}, \quad
        D_i = \sum_d dO_{id}\, O_{id}, \quad
        dS_{ij} = P_{ij}\bigl(dP_{ij} - D_i\bigr), \quad dP = dO\,V^\top,

    .. math::

        dQ = s\, dS\, K, \qquad dK = s\, dS^\top Q, \qquad dV = P^\top dO .

    Parameters
    ----------
    dout : ndarray, shape (B, H, L, D_v)
        Gradient of the loss with respect to the output.
    cache : FlashCache
        From the forward pass.

    Returns
    -------
    FlashGrads
        ``dq (B, H, L, D)``, ``dk (B, H_kv, S, D)``, ``dv (B, H_kv, S, D_v)``; for grouped
        heads the key/value gradients are summed over the query heads of each group.

    Notes
    -----
    :math:`D_i = \operatorname{rowsum}(dO \odot O)` replaces
    :math:`\operatorname{rowsum}(P \odot dP)` of the softmax backward (they are equal since
    :math:`\sum_j P_{ij}\, dP_{ij} = \sum_j P_{ij}\, dO_i \cdot v_j = dO_i \cdot o_i`); it costs
    :math:`O(L D_v)` and needs no row of :math:`P` in full. The loop runs over key tiles
    outside and query tiles inside (FlashAttention-2's order: ``dK_j``, ``dV_j`` finish in
    one sweep), skipping tiles entirely above the causal diagonal. Memory: one tile plus
    ``D (B, H, L)``; no ``(L, S)`` array, so the gradients too cost :math:`O(n)` beyond the
    :math:`O(nD)` inputs and outputs. Masked entries have :math:`P = 0` and a fully masked
    row (``lse = -inf``) gets zero gradient. Oracle: ``torch.autograd`` through
    ``torch.nn.functional.scaled_dot_product_attention``,
    :func:`attnmath.attention.attention_backward`, and central differences.
    """
    if not isinstance(cache, FlashCache):
        raise TypeError(f"cache must be a FlashCache, got {type(cache).__name__}")
    q, k, v, out, lse, scale, causal, causal_alignment, mask, block_q, block_k = cache
    dout = as_array(dout, "dout")
    if dout.shape != out.shape:
        raise ValueError(f"dout must have the output's shape {out.shape}, got {dout.shape}")
    L, S, D_v = q.shape[-2], k.shape[-2], v.shape[-1]
    full_mask = None if mask is None else broadcast_mask(mask, q.shape[:-1] + (S,))  # view
    offset = 0 if causal_alignment == "top_left" else S - L
    dtype = _work_dtype(q, k, v, dout)

    q5, k5, v5 = _grouped(q, k, v)  # (B, H_kv, g, L, D), (B, H_kv, 1, S, D), (B, H_kv, 1, S, D_v)
    lead = q5.shape[:-2]  # (B, H_kv, g)
    dout5 = dout.reshape(lead + (L, D_v))  # (B, H_kv, g, L, D_v)
    out5 = out.reshape(lead + (L, D_v))  # (B, H_kv, g, L, D_v)
    lse5 = lse.reshape(lead + (L,))  # (B, H_kv, g, L)
    lse_shift = np.where(np.isneginf(lse5), 0.0, lse5)  # such rows have every score -inf: P = 0
    delta = np.sum(dout5 * out5, axis=-1)  # (B, H_kv, g, L): D_i = rowsum(dO * O)

    dq5 = np.zeros(q5.shape, dtype=dtype)  # (B, H_kv, g, L, D)
    dk5 = np.zeros(k5.shape, dtype=dtype)  # (B, H_kv, 1, S, D)
    dv5 = np.zeros(v5.shape, dtype=dtype)  # (B, H_kv, 1, S, D_v)
    for j0 in range(0, S, block_k):
        j1 = min(S, j0 + block_k)
        k_j = k5[..., j0:j1, :]  # (B, H_kv, 1, s, D)
        v_j = v5[..., j0:j1, :]  # (B, H_kv, 1, s, D_v)
        i_start = 0
        if causal:
            first = max(0, j0 - offset)  # the first query row that sees key j0
            if first >= L:
                continue  # no query sees these keys: their gradients stay zero
            i_start = (first // block_q) * block_q
        for i0 in range(i_start, L, block_q):
            i1 = min(L, i0 + block_q)
            q_i = q5[..., i0:i1, :]  # (B, H_kv, g, l, D)
            do_i = dout5[..., i0:i1, :]  # (B, H_kv, g, l, D_v)
            probs = q_i @ np.swapaxes(k_j, -1, -2)  # (B, H_kv, g, l, s): scores, then P in place
            probs *= scale
            allowed = _tile_allowed(i0, i1, j0, j1, probs.shape, causal=causal, offset=offset,
                                    full_mask=full_mask)
            if allowed is not None:
                np.copyto(probs, -np.inf, where=~allowed)
            probs -= lse_shift[..., i0:i1, None]
            np.exp(probs, out=probs)  # P = e^{S - lse}, (B, H_kv, g, l, s)
            dv5[..., j0:j1, :] += np.sum(np.swapaxes(probs, -1, -2) @ do_i, axis=-3, keepdims=True)
            dscores = do_i @ np.swapaxes(v_j, -1, -2)  # dP, (B, H_kv, g, l, s)
            dscores -= delta[..., i0:i1, None]
            dscores *= probs  # dS = P * (dP - D_i), (B, H_kv, g, l, s)
            del probs
            dq5[..., i0:i1, :] += (dscores @ k_j) * scale  # (B, H_kv, g, l, D)
            dk5[..., j0:j1, :] += np.sum(np.swapaxes(dscores, -1, -2) @ q_i, axis=-3,
                                         keepdims=True) * scale  # (B, H_kv, 1, s, D)
            del dscores
    return FlashGrads(dq5.reshape(q.shape), dk5.reshape(k.shape), dv5.reshape(v.shape))


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
