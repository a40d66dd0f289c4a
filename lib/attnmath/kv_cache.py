r"""The key-value cache of autoregressive decoding, as a pure data structure.

At step :math:`t` a decoder needs the keys and values of every earlier token. They do not change
(a token's key depends only on the tokens before it), so they are computed once and stored:

.. math::

    \begin{aligned}
    &K_{1:t} = [K_{1:t-1};\, k_t], \qquad V_{1:t} = [V_{1:t-1};\, v_t], \\
    &o_t = \operatorname{softmax}\!\bigl(s\, q_t K_{1:t}^\top\bigr) V_{1:t}.
    \end{aligned}

One step then costs :math:`O(t D)` per head instead of recomputing all :math:`t` rows, and the
cache holds :math:`2\,t\,H_{kv} D` numbers per layer and sequence.

The cache is a NamedTuple of preallocated arrays ``(B, H_kv, S_max, D)`` and a length; the
functions return a new cache instead of modifying the old one. The attention follows the rules of
:mod:`attnmath.core`: NaN or :math:`\pm\infty` in a query, key or value raises ``ValueError``,
float16 buffers are computed in float32 and returned as float16.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._validate import as_array, check_float_dtype, check_int, check_positive_int
from .attention import scaled_dot_product_attention
from .core import check_finite

__all__ = [
    "KVCache",
    "kv_cache_init",
    "kv_cache_append",
    "decode_step",
    "prefill",
    "kv_cache_bytes",
]


class KVCache(NamedTuple):
    """Keys and values of the first ``length`` tokens, in buffers of capacity ``S_max``."""

    #: Key buffer ``(B, H_kv, S_max, D)``; positions from ``length`` on are zeros.
    k: np.ndarray
    #: Value buffer ``(B, H_kv, S_max, D_v)``; positions from ``length`` on are zeros.
    v: np.ndarray
    #: Number of valid positions, one for the whole batch.
    length: int


def kv_cache_init(B: int, H_kv: int, S_max: int, D: int, D_v: int | None = None, *,
                  dtype=np.float64) -> KVCache:
    """An empty cache: zero buffers ``k (B, H_kv, S_max, D)``, ``v (B, H_kv, S_max, D_v)``, length 0.

    ``D_v`` defaults to ``D``. ``dtype`` must be a floating dtype (float64 by default).
    """
    B, H_kv, S_max, D = (check_positive_int(x, n)
                         for x, n in ((B, "B"), (H_kv, "H_kv"), (S_max, "S_max"), (D, "D")))
    D_v = D if D_v is None else check_positive_int(D_v, "D_v")
    dtype = check_float_dtype(dtype)
    k = np.zeros((B, H_kv, S_max, D), dtype=dtype)  # (B, H_kv, S_max, D)
    v = np.zeros((B, H_kv, S_max, D_v), dtype=dtype)  # (B, H_kv, S_max, D_v)
    return KVCache(k, v, 0)


def _check_cache(cache) -> KVCache:
    """A :class:`KVCache` whose buffers and length agree, or a clear error naming the field."""
    if not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a KVCache (from kv_cache_init), got {type(cache).__name__}")
    k = as_array(cache.k, "cache.k", ndim=4)
    v = as_array(cache.v, "cache.v", ndim=4)
    if k.shape[:3] != v.shape[:3]:
        raise ValueError(
            f"cache.k and cache.v must share (B, H_kv, S_max), got {k.shape} and {v.shape}"
        )
    length = check_int(cache.length, "cache.length", minimum=0)
    if length > k.shape[2]:
        raise ValueError(f"cache.length={length} exceeds the capacity S_max={k.shape[2]}")
    return KVCache(k, v, length)


def kv_cache_append(cache: KVCache, k_new, v_new) -> KVCache:
    r"""Return a new cache with ``T`` more positions written after the current ``length``.

    .. math:: K \leftarrow [K_{1:t};\, K_{\text{new}}], \qquad V \leftarrow [V_{1:t};\, V_{\text{new}}]

    Parameters
    ----------
    cache : KVCache
        Buffers ``(B, H_kv, S_max, D)`` / ``(B, H_kv, S_max, D_v)`` holding ``t = length`` tokens.
    k_new : ndarray, shape (B, H_kv, T, D)
    v_new : ndarray, shape (B, H_kv, T, D_v)

    Returns
    -------
    KVCache
        ``length = t + T``; the input cache is left unchanged.

    Raises
    ------
    ValueError
        If ``t + T > S_max`` (the cache is full), a shape does not match the buffers, the
        cache's length is negative or beyond its capacity, or ``k_new``, ``v_new`` hold NaN or
        an infinity. ``T = 0`` is allowed and returns an equal cache.

    Notes
    -----
    Purity has a price: the buffers are copied (:math:`O(S_{max})` per call) so that the old
    cache stays valid. An inference engine writes in place, which costs :math:`O(T)`; the values
    are the same, only the bookkeeping differs.
    """
    cache = _check_cache(cache)
    k_new = as_array(k_new, "k_new", ndim=4)
    v_new = as_array(v_new, "v_new", ndim=4)
    B, H_kv, S_max, D = cache.k.shape
    D_v = cache.v.shape[-1]
    T = k_new.shape[2]
    if k_new.shape != (B, H_kv, T, D):
        raise ValueError(f"k_new must have shape (B={B}, H_kv={H_kv}, T, D={D}), got {k_new.shape}")
    if v_new.shape != (B, H_kv, T, D_v):
        raise ValueError(f"v_new must have shape (B={B}, H_kv={H_kv}, T={T}, D_v={D_v}), got {v_new.shape}")
    check_finite(k_new, "k_new")
    check_finite(v_new, "v_new")
    if cache.length + T > S_max:
        raise ValueError(
            f"the cache is full: it holds {cache.length} of S_max={S_max} positions and cannot "
            f"take {T} more"
        )
    k = cache.k.copy()  # (B, H_kv, S_max, D)
    v = cache.v.copy()  # (B, H_kv, S_max, D_v)
    k[:, :, cache.length:cache.length + T, :] = k_new
    v[:, :, cache.length:cache.length + T, :] = v_new
    return KVCache(k, v, cache.length + T)


def _check_queries(q, cache: KVCache, name: str) -> np.ndarray:
    q = as_array(q, name, ndim=4)
    B, H_kv, _, D = cache.k.shape
    if q.shape[0] != B or q.shape[-1] != D:
        raise ValueError(f"{name} must have shape (B={B}, H, L, D={D}), got {q.shape}")
    if q.shape[1] % H_kv != 0:
        raise ValueError(
            f"the number of query heads H={q.shape[1]} must be a multiple of the cache's H_kv={H_kv}"
        )
    return q


def decode_step(q_t, cache: KVCache, *, scale=None) -> np.ndarray:
    r"""Attention of one new query over every cached position.

    .. math:: o_t = \operatorname{softmax}\!\bigl(s\, q_t K_{1:t}^\top\bigr) V_{1:t}

    Parameters
    ----------
    q_t : ndarray, shape (B, H, 1, D)
        The query of the newest token; ``H_kv`` (the cache's) divides ``H``.
    cache : KVCache
        Must already contain the newest token's key and value (append first, then attend), and
        at least one position.
    scale : float, optional
        Default ``1/sqrt(D)``.

    Returns
    -------
    ndarray, shape (B, H, 1, D_v)

    Notes
    -----
    No mask is needed: the newest query sits at the last cached position and may see all of
    them, which is the bottom-right causal alignment with ``L = 1``. Cost :math:`O(t D)` per head
    (:math:`O(t(D + D_v))` with the value product). Oracle: row ``t`` of full causal attention
    (:func:`attnmath.attention.scaled_dot_product_attention` with :func:`attnmath.masking.causal_mask`,
    and torch with ``is_causal=True``).
    """
    cache = _check_cache(cache)
    q_t = _check_queries(q_t, cache, "q_t")
    check_finite(q_t, "q_t")
    if q_t.shape[2] != 1:
        raise ValueError(f"q_t must hold one query, shape (B, H, 1, D), got {q_t.shape}; use prefill for more")
    if cache.length == 0:
        raise ValueError("the cache is empty: append the token's key and value before decode_step")
    t = cache.length
    out, _ = scaled_dot_product_attention(
        q_t, cache.k[:, :, :t, :], cache.v[:, :, :t, :], scale=scale
    )  # (B, H, 1, D_v)
    return out


def prefill(q, k_new, v_new, cache: KVCache, *, scale=None):
    r"""Append ``L`` tokens and attend their queries causally over the whole cache.

    .. math::

        \begin{aligned}
        O &= \operatorname{softmax}\!\bigl(s\, Q K_{1:t+L}^\top + \mathrm{bias}_M\bigr) V_{1:t+L}, \\
        (\mathrm{bias}_M)_{ij} &= 0 \text{ if } j \le t + i \text{ else } -\infty
        \end{aligned}

    Parameters
    ----------
    q : ndarray, shape (B, H, L, D)
        Queries of the new tokens.
    k_new : ndarray, shape (B, H_kv, L, D)
    v_new : ndarray, shape (B, H_kv, L, D_v)
    cache : KVCache
        Holding ``t`` earlier tokens (possibly none).
    scale : float, optional
        Default ``1/sqrt(D)``.

    Returns
    -------
    out : ndarray, shape (B, H, L, D_v)
    cache : KVCache
        The new cache, with ``length = t + L`` (a KV cache, not a backward cache).

    Notes
    -----
    The mask is the causal mask in the bottom-right alignment (``causal=True,
    causal_alignment="bottom_right"`` of :func:`attnmath.attention.scaled_dot_product_attention`,
    i.e. :func:`attnmath.masking.causal_mask` ``(L, t + L, alignment="bottom_right")``): the last
    new query aligns with the last key. The top-left alignment (torch's ``is_causal``)
    would be wrong here whenever :math:`t > 0`. Processing a prompt with one ``prefill`` or
    token by token with :func:`decode_step` gives the same outputs. Oracle: the matching rows of
    full causal attention over all ``t + L`` tokens.
    """
    cache = _check_cache(cache)
    q = _check_queries(q, cache, "q")
    k_new = as_array(k_new, "k_new", ndim=4)
    if k_new.shape[2] != q.shape[2]:
        raise ValueError(
            f"k_new must hold one key per query, L={q.shape[2]} (q {q.shape}), got {k_new.shape}"
        )
    cache = kv_cache_append(cache, k_new, v_new)
    S = cache.length
    out, _ = scaled_dot_product_attention(
        q, cache.k[:, :, :S, :], cache.v[:, :, :S, :], scale=scale, causal=True,
        causal_alignment="bottom_right",
    )  # (B, H, L, D_v)
    return out, cache


def kv_cache_bytes(B: int, H_kv: int, S: int, D: int, D_v: int | None = None, *,
                   n_layers: int = 1, itemsize: int = 8) -> int:
    r"""Memory of the keys and values of ``S`` tokens.

    .. math:: \text{bytes} = n_{\text{layers}} \cdot B \cdot H_{kv} \cdot S \cdot (D + D_v) \cdot \text{itemsize}

    Parameters
    ----------
    B, H_kv, S, D : int
        Batch, key/value heads, cached tokens, head dim.
    D_v : int, optional
        Value dim, default ``D``.
    n_layers : int
        Every layer keeps its own cache.
    itemsize : int
        Bytes per number: 8 (float64), 4 (float32), 2 (float16 / bfloat16).

    Returns
    -------
    int

    Notes
    -----
    With :math:`H_{kv} = H` and :math:`H D = C` this is :math:`2\,S\,C\,n_{\text{layers}}`
    numbers per sequence, the :math:`O(t \cdot d \cdot \text{layers})` of the usual statement
    (whose constant 2, keys and values, the O hides). Grouped-query attention divides it by
    :math:`H / H_{kv}`. Oracle: ``nbytes`` of the arrays of :func:`kv_cache_init`.
    """
    B, H_kv, S, D = (check_positive_int(x, n) for x, n in ((B, "B"), (H_kv, "H_kv"), (S, "S"), (D, "D")))
    D_v = D if D_v is None else check_positive_int(D_v, "D_v")
    n_layers = check_positive_int(n_layers, "n_layers")
    itemsize = check_positive_int(itemsize, "itemsize")
    return n_layers * B * H_kv * S * (D + D_v) * itemsize
