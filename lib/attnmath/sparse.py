r"""Sparse attention patterns as boolean masks, and a sliding-window attention that skips the rest.

A pattern is a boolean matrix ``(L, S)`` with ``True`` = *may attend*; it can be passed as
``mask`` to :func:`attnmath.attention.scaled_dot_product_attention`. Doing so still costs
:math:`O(LS)`: the saving of a sparse pattern comes only from an implementation that never
computes the masked scores, such as :func:`sliding_window_attention`, whose cost is
:math:`O(L\,w\,D)`. The number of ``True`` entries (:func:`mask_density` times :math:`LS`) is the
number of scores such an implementation computes, so counting them checks complexity claims.

Patterns: the symmetric band of local attention, the two factorised heads of the Sparse
Transformer (Child et al., 2019), global tokens as in Longformer and BigBird, and BigBird's
random connections.
"""

from __future__ import annotations

import numpy as np

from ._validate import check_positive_int, check_seed
from .core import prepare

__all__ = [
    "local_mask",
    "strided_local_mask",
    "strided_column_mask",
    "strided_mask",
    "global_local_mask",
    "random_mask",
    "bigbird_mask",
    "mask_density",
    "sliding_window_attention",
]


def _grid(L: int, S: int):
    """Query indices ``(L, 1)`` and key indices ``(1, S)``."""
    return np.arange(L)[:, None], np.arange(S)[None, :]


def local_mask(L: int, S: int | None = None, *, radius: int) -> np.ndarray:
    r"""Symmetric band: query ``i`` may attend to key ``j`` iff :math:`|i - j| \le r`.

    .. math:: M_{ij} = [\, |i - j| \le r \,]

    Parameters
    ----------
    L : int
        Query length.
    S : int, optional
        Key length, default ``L``.
    radius : int
        :math:`r \ge 0`; each query sees up to :math:`2r + 1` keys (a window of width
        :math:`w = 2r + 1`).

    Returns
    -------
    ndarray of bool, shape (L, S)

    Notes
    -----
    Bidirectional local attention (encoders, Longformer's window). For ``L == S = n`` the number
    of allowed pairs is :math:`n(2r + 1) - r(r + 1)` when :math:`r < n`: :math:`O(n w)` scores,
    hence :math:`O(n w D)` time. The causal window of decoders is
    :func:`attnmath.masking.sliding_window_mask`.
    """
    L = check_positive_int(L, "L")
    S = L if S is None else check_positive_int(S, "S")
    radius = check_positive_int(radius, "radius", allow_zero=True)
    i, j = _grid(L, S)
    return np.abs(i - j) <= radius  # (L, S)


def strided_local_mask(L: int, *, stride: int) -> np.ndarray:
    r"""First head of the Sparse Transformer's strided pattern: the previous ``stride`` positions.

    .. math:: M_{ij} = [\, 0 \le i - j < \ell \,]

    Parameters
    ----------
    L : int
        Sequence length (self-attention, ``S == L``).
    stride : int
        :math:`\ell \ge 1`.

    Returns
    -------
    ndarray of bool, shape (L, L)

    Notes
    -----
    Child et al. (2019) write this head as :math:`A^{(1)}_i = \{t, \dots, i\}` with
    :math:`t = \max(0, i - \ell)`, which is :math:`\ell + 1` positions; here the window holds
    exactly :math:`\ell` positions (itself and the :math:`\ell - 1` before), the same as
    ``sliding_window_mask(L, stride)``. With :math:`\ell` positions the two heads still connect
    every :math:`j \le i` in two steps (:func:`strided_column_mask` then this head), which is the
    property the factorisation needs and the one the tests check.
    """
    L = check_positive_int(L, "L")
    stride = check_positive_int(stride, "stride")
    i, j = _grid(L, L)
    return (i - j >= 0) & (i - j < stride)  # (L, L)


def strided_column_mask(L: int, *, stride: int) -> np.ndarray:
    r"""Second head of the Sparse Transformer's strided pattern: every ``stride``-th position back.

    .. math:: M_{ij} = [\, j \le i \ \wedge\ (i - j) \bmod \ell = 0 \,]

    Parameters
    ----------
    L : int
        Sequence length.
    stride : int
        :math:`\ell \ge 1`.

    Returns
    -------
    ndarray of bool, shape (L, L)

    Notes
    -----
    Causal, as in the paper's autoregressive models. Query :math:`i` sees
    :math:`\lfloor i/\ell \rfloor + 1` keys, so the pattern has
    :math:`\sum_{i<n} (\lfloor i/\ell \rfloor + 1) \approx n^2 / (2\ell)` entries: the
    :math:`O(n^2 d / \ell)` of the strided pattern alone. The Sparse Transformer takes
    :math:`\ell \approx \sqrt n`, which makes both heads :math:`O(n \sqrt n)`.
    """
    L = check_positive_int(L, "L")
    stride = check_positive_int(stride, "stride")
    i, j = _grid(L, L)
    return (j <= i) & ((i - j) % stride == 0)  # (L, L)


def strided_mask(L: int, *, stride: int) -> np.ndarray:
    """Union of the two strided heads, the Sparse Transformer's single "merged" head.

    Returns ``strided_local_mask(L, stride=stride) | strided_column_mask(L, stride=stride)``,
    shape ``(L, L)``: a query sees its last ``stride`` positions and every ``stride``-th one
    before them.
    """
    return strided_local_mask(L, stride=stride) | strided_column_mask(L, stride=stride)


def _check_global_tokens(global_tokens, L: int) -> np.ndarray:
    idx = np.asarray(global_tokens)
    if idx.ndim != 1:
        raise ValueError(f"global_tokens must be a 1-D sequence of positions, got shape {idx.shape}")
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise TypeError(f"global_tokens must be integer positions, got dtype {idx.dtype}")
    idx = idx.astype(np.int64)
    if ((idx < 0) | (idx >= L)).any():
        raise ValueError(f"global_tokens must lie in [0, L={L}), got {idx.tolist()}")
    return idx


def global_local_mask(L: int, *, radius: int, global_tokens) -> np.ndarray:
    r"""Local band plus global tokens (Longformer, BigBird's ITC form).

    .. math::

        M_{ij} = [\, |i - j| \le r \,] \ \vee\ [\, i \in G \,] \ \vee\ [\, j \in G \,]

    Parameters
    ----------
    L : int
        Sequence length (self-attention).
    radius : int
        Radius of the local band.
    global_tokens : sequence of int
        Positions :math:`G` (e.g. ``[0]`` for a ``[CLS]`` token). A global token attends to
        every position and every position attends to it.

    Returns
    -------
    ndarray of bool, shape (L, L)

    Notes
    -----
    Bidirectional. Symmetric by construction. With :math:`g` global tokens the count is
    :math:`O(n(w + 2g))`. Repeated positions in ``global_tokens`` count once.
    """
    L = check_positive_int(L, "L")
    idx = _check_global_tokens(global_tokens, L)
    is_global = np.zeros(L, dtype=bool)
    is_global[idx] = True
    return local_mask(L, radius=radius) | is_global[:, None] | is_global[None, :]  # (L, L)


def random_mask(L: int, S: int | None = None, *, n_random: int, seed: int) -> np.ndarray:
    r"""BigBird's random connections: each query attends to ``n_random`` keys drawn at random.

    .. math:: \bigl|\{ j : M_{ij} \}\bigr| = \min(r, S) \text{ for every } i

    Parameters
    ----------
    L : int
        Query length.
    S : int, optional
        Key length, default ``L``.
    n_random : int
        :math:`r \ge 0` keys per query, drawn uniformly without replacement (all ``S`` keys when
        :math:`r \ge S`).
    seed : int
        Seed of the draw: the same arguments give the same mask.

    Returns
    -------
    ndarray of bool, shape (L, S)

    Notes
    -----
    BigBird draws random *blocks* of keys for block-sparse kernels; here single keys are drawn,
    which has the same expected count :math:`L r`. The pattern is not symmetric.
    """
    L = check_positive_int(L, "L")
    S = L if S is None else check_positive_int(S, "S")
    n_random = check_positive_int(n_random, "n_random", allow_zero=True)
    rng = np.random.default_rng(check_seed(seed))
    r = min(n_random, S)
    chosen = np.argsort(rng.random((L, S)), axis=1)[:, :r]  # (L, r), a random r-subset per row
    mask = np.zeros((L, S), dtype=bool)
    np.put_along_axis(mask, chosen, True, axis=1)
    return mask


def bigbird_mask(L: int, *, radius: int, global_tokens, n_random: int, seed: int) -> np.ndarray:
    """BigBird's pattern: ``global_local_mask(...) | random_mask(...)``, shape ``(L, L)``.

    Each query attends to its window, the global tokens and ``n_random`` random keys; global
    tokens attend to everything. Expected count :math:`O(n(w + 2g + r))`, linear in :math:`n`.
    """
    return (global_local_mask(L, radius=radius, global_tokens=global_tokens)
            | random_mask(L, n_random=n_random, seed=seed))


def mask_density(mask) -> float:
    r"""Fraction of ``True`` entries: the share of scores a sparse kernel computes.

    .. math:: \rho(M) = \frac{1}{LS} \sum_{ij} M_{ij}

    Parameters
    ----------
    mask : ndarray of bool, shape (..., L, S)

    Returns
    -------
    float in [0, 1]
        ``density * L * S`` is the number of allowed pairs (averaged over leading axes).
    """
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
    if mask.ndim < 2 or mask.size == 0:
        raise ValueError(f"mask must be a non-empty array of shape (..., L, S), got shape {mask.shape}")
    return float(np.count_nonzero(mask)) / mask.size


def sliding_window_attention(q, k, v, *, window: int, scale=None) -> np.ndarray:
    r"""Causal sliding-window attention in :math:`O(L\,w\,D)`, without an ``(L, S)`` matrix.

    .. math::

        o_i = \sum_{j = \max(0,\, i - w + 1)}^{i} \frac{e^{s\, q_i^\top k_j}}
              {\sum_{j' = \max(0,\, i - w + 1)}^{i} e^{s\, q_i^\top k_{j'}}}\, v_j

    Parameters
    ----------
    q : ndarray, shape (B, H, L, D)
    k : ndarray, shape (B, H_kv, L, D)
        Self-attention: ``S == L``; ``H_kv`` divides ``H``.
    v : ndarray, shape (B, H_kv, L, D_v)
    window : int
        :math:`w \ge 1`: query ``i`` sees keys ``i - w + 1, ..., i`` (itself included), as in
        Mistral (:math:`w = 4096`). ``window >= L`` is full causal attention.
    scale : float, optional
        Score scale :math:`s`, default ``1/sqrt(D)``.

    Returns
    -------
    ndarray, shape (B, H, L, D_v)
        In the inputs' dtype.

    Notes
    -----
    Validation, non-finite inputs (``ValueError``), grouped heads and the working dtype
    (float16 computed in float32) follow :mod:`attnmath.core`, as for every exact variant;
    ``L = 0`` gives an empty output. Scores are kept in a band ``(B, H, L, w)`` whose column ``o`` holds the score of key
    ``i - o``; the loop runs over the :math:`w` offsets, each an :math:`O(L D)` row-wise dot
    product, and offsets before the start of the sequence are :math:`-\infty`. Memory is
    :math:`O(L w)`, time :math:`O(L w (D + D_v))`. No row is ever fully masked (a query always
    sees itself). Oracle: :func:`attnmath.attention.scaled_dot_product_attention` with
    :func:`attnmath.masking.sliding_window_mask` and torch's
    ``scaled_dot_product_attention`` with the same mask.
    """
    window = check_positive_int(window, "window")
    prob = prepare(q, k, v, scale=scale)
    L, S = prob.L, prob.S
    if L != S:
        raise ValueError(f"sliding_window_attention needs q and k of one length (L == S, self-attention), "
                         f"got L={L}, S={S}")
    q5, k5, v5 = prob.q5, prob.k5, prob.v5  # (B, H_kv, g, L, D), (B, H_kv, 1, L, D), (.., D_v)
    out = np.zeros(q5.shape[:-1] + (v5.shape[-1],), dtype=prob.dtype)  # (B, H_kv, g, L, D_v)
    W = min(window, L)
    if W == 0:  # L = 0: nothing to attend
        return prob.finish(out)
    band = np.full(q5.shape[:-1] + (W,), -np.inf, dtype=prob.dtype)  # (B, H_kv, g, L, W)
    for o in range(W):
        # Query i against key i - o, for i = o .. L-1.
        band[..., o:, o] = prob.scale * np.sum(q5[..., o:, :] * k5[..., :L - o, :], axis=-1)
    band -= band.max(axis=-1, keepdims=True)  # column 0 (offset 0) is always finite
    p = np.exp(band)  # (B, H_kv, g, L, W)
    p /= p.sum(axis=-1, keepdims=True)
    for o in range(W):
        out[..., o:, :] += p[..., o:, o, None] * v5[..., :L - o, :]  # (B, H_kv, g, L-o, D_v)
    return prob.finish(out)  # (B, H, L, D_v)
