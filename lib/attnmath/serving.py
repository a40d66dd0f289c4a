r"""Serving attention: the data structures and counts of a decoding server.

Five mechanisms, each a handful of pure functions over NumPy arrays:

* **Paged KV cache** (vLLM's PagedAttention): keys and values live in a pool of fixed-size
  blocks ``(num_blocks, H_kv, block_size, D)``; a sequence owns a *block table*, the list of
  its blocks in order, and takes a new block from a free list only when its last one is full.
  Attention over the scattered blocks equals attention over the contiguous cache.
* **Flash-decoding** (split-K): the keys of one decode step are cut into ``num_splits``
  chunks, each chunk's :class:`~attnmath.flash.AttentionState` is computed independently and
  the states are merged exactly by :func:`attnmath.flash.merge_attention_states`.
* **Multi-head latent attention** (DeepSeek-V2): every token caches one latent
  :math:`c^{KV} = x W^{DKV} \in \mathbb R^{d_c}` and one shared RoPE key of size
  :math:`d_R`; the per-head keys and values are up-projections of the latent, and the
  up-projections can be *absorbed* into the query and output projections.
* **KV-cache quantisation**: symmetric integer codes with one scale per token or per channel
  (KIVI: keys per channel, values per token) and a bound on the attention error they cause.
* **Arithmetic intensity**: the FLOPs and bytes of a decode or prefill step of a real model
  shape, against the roofline of a GPU.

Shape legend as everywhere: ``H`` query heads, ``H_kv`` key/value heads, ``L`` queries,
``S`` keys, ``D`` head dim, ``D_v`` value dim, ``C`` model width; here also ``d_c`` the
latent width and ``d_rope`` the width of MLA's decoupled RoPE key.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import (FloatArray, as_array, as_rng, check_float_dtype, check_int,
                        check_int_array, check_positive_int, check_real)
from .attention import scaled_dot_product_attention
from .core import check_finite
from .flash import AttentionState, attention_state, merge_attention_states
from .kv_cache import kv_cache_bytes
from .masking import broadcast_mask, causal_mask
from .positional import apply_rope

__all__ = [
    "PagedKVCache",
    "paged_cache_init",
    "paged_append",
    "paged_free",
    "gather_blocks",
    "paged_gather",
    "paged_attention",
    "paged_unused_slots",
    "flash_decoding",
    "MLAParams",
    "init_mla_params",
    "mla_latent",
    "mla_attention",
    "mla_attention_absorbed",
    "QuantizedTensor",
    "quantize_symmetric",
    "dequantize",
    "quantized_attention_error_bound",
    "ModelShape",
    "PUBLISHED_MODELS",
    "kv_bytes_per_token",
    "DecoderParams",
    "decoder_param_count",
    "StepCost",
    "attention_step_cost",
    "step_cost",
    "roofline",
    "H100_SXM_BF16_FLOPS",
    "H100_SXM_HBM_BYTES_PER_S",
]


# ---------------------------------------------------------------------------------------------
# Paged KV cache
# ---------------------------------------------------------------------------------------------


class PagedKVCache(NamedTuple):
    """A pool of KV blocks shared by many sequences, with their block tables."""

    #: Key blocks ``(num_blocks, H_kv, block_size, D)``.
    k_pool: FloatArray
    #: Value blocks ``(num_blocks, H_kv, block_size, D_v)``.
    v_pool: FloatArray
    #: Sequence id -> its block ids in token order; token ``t`` is slot ``t % block_size`` of block
    #: ``tables[seq][t // block_size]``.
    tables: dict[int, tuple[int, ...]]
    #: Sequence id -> number of tokens stored.
    lengths: dict[int, int]
    #: Ids of the unused blocks; new blocks are taken from the front.
    free: tuple[int, ...]


def paged_cache_init(num_blocks: int, H_kv: int, block_size: int, D: int,
                     D_v: int | None = None, *, dtype: object = np.float64) -> PagedKVCache:
    """An empty paged cache: zero pools, no sequences, every block free.

    ``k_pool (num_blocks, H_kv, block_size, D)`` and ``v_pool (num_blocks, H_kv,
    block_size, D_v)``; ``D_v`` defaults to ``D``; ``dtype`` a floating dtype.
    """
    num_blocks = check_positive_int(num_blocks, "num_blocks")
    H_kv = check_positive_int(H_kv, "H_kv")
    block_size = check_positive_int(block_size, "block_size")
    D = check_positive_int(D, "D")
    D_v = D if D_v is None else check_positive_int(D_v, "D_v")
    dtype = check_float_dtype(dtype)
    k_pool = np.zeros((num_blocks, H_kv, block_size, D), dtype=dtype)  # (N, H_kv, bs, D)
    v_pool = np.zeros((num_blocks, H_kv, block_size, D_v), dtype=dtype)  # (N, H_kv, bs, D_v)
    return PagedKVCache(k_pool, v_pool, {}, {}, tuple(range(num_blocks)))


def _check_paged(cache: object) -> PagedKVCache:
    """A consistent :class:`PagedKVCache`, or a ``ValueError`` naming what is wrong."""
    if not isinstance(cache, PagedKVCache):
        raise TypeError("cache must be a PagedKVCache (from paged_cache_init), got "
                        f"{type(cache).__name__}")
    k_pool = as_array(cache.k_pool, "cache.k_pool", ndim=4)
    v_pool = as_array(cache.v_pool, "cache.v_pool", ndim=4)
    if k_pool.shape[:3] != v_pool.shape[:3]:
        raise ValueError("cache.k_pool and cache.v_pool must share (num_blocks, H_kv, "
                         f"block_size), got {k_pool.shape} and {v_pool.shape}")
    if not isinstance(cache.tables, dict) or not isinstance(cache.lengths, dict):
        raise TypeError("cache.tables and cache.lengths must be dicts keyed by sequence id")
    if set(cache.tables) != set(cache.lengths):
        raise ValueError("cache.tables and cache.lengths must name the same sequences, got "
                         f"{sorted(cache.tables)} and {sorted(cache.lengths)}")
    num_blocks, _, block_size, _ = k_pool.shape
    owner: dict[int, str] = {}
    for seq, table in cache.tables.items():
        length = check_int(cache.lengths[seq], f"cache.lengths[{seq}]", minimum=0)
        where = f"block table of sequence {seq}"
        if len(table) != -(-length // block_size):
            raise ValueError(f"the {where} has {len(table)} blocks for {length} tokens; "
                             f"block_size={block_size} needs {-(-length // block_size)}")
        for b in table:
            b = check_int(b, where)
            if not 0 <= b < num_blocks:
                raise ValueError(f"the {where} names block {b}, outside the pool of "
                                 f"{num_blocks} blocks")
            if b in owner:
                raise ValueError(f"block {b} is in the {where} and in the {owner[b]}")
            owner[b] = where
    for b in cache.free:
        b = check_int(b, "cache.free")
        if not 0 <= b < num_blocks:
            raise ValueError(f"cache.free names block {b}, outside the pool of {num_blocks}")
        if b in owner:
            raise ValueError(f"block {b} is both free and in the {owner[b]}")
        owner[b] = "free list"
    return PagedKVCache(k_pool, v_pool, cache.tables, cache.lengths, tuple(cache.free))


def _check_seq(seq: object, cache: PagedKVCache, *, known: bool) -> int:
    seq = check_int(seq, "seq", minimum=0)
    if known and seq not in cache.tables:
        raise ValueError(f"seq={seq} is not in the cache (sequences: {sorted(cache.tables)})")
    return seq


def _check_new_tokens(cache: PagedKVCache, k_new: ArrayLike, v_new: ArrayLike
                      ) -> tuple[FloatArray, FloatArray]:
    """``k_new (H_kv, T, D)`` and ``v_new (H_kv, T, D_v)`` checked against the pools."""
    _, H_kv, _, D = cache.k_pool.shape
    D_v = cache.v_pool.shape[-1]
    k = as_array(k_new, "k_new", ndim=3)
    v = as_array(v_new, "v_new", ndim=3)
    T = k.shape[1]
    if k.shape != (H_kv, T, D):
        raise ValueError(f"k_new must have shape (H_kv={H_kv}, T, D={D}), got {k.shape}")
    if v.shape != (H_kv, T, D_v):
        raise ValueError(f"v_new must have shape (H_kv={H_kv}, T={T}, D_v={D_v}), got {v.shape}")
    check_finite(k, "k_new")
    check_finite(v, "v_new")
    return k, v


def paged_append(cache: PagedKVCache, seq: int, k_new: ArrayLike,
                 v_new: ArrayLike) -> PagedKVCache:
    r"""Return a new cache with ``T`` tokens appended to sequence ``seq``.

    Token ``t`` goes to slot ``t % block_size`` of block ``table[t // block_size]``; a new
    block is taken from the front of the free list whenever the last one is full (or the
    sequence is new), so a sequence of ``n`` tokens holds
    :math:`\lceil n / \text{block\_size} \rceil` blocks.

    Parameters
    ----------
    cache : PagedKVCache
    seq : int
        Sequence id, ``>= 0``; a new id starts a new sequence.
    k_new : ndarray, shape (H_kv, T, D)
    v_new : ndarray, shape (H_kv, T, D_v)

    Returns
    -------
    PagedKVCache
        The input cache is left unchanged (the pools are copied, as in
        :func:`attnmath.kv_cache.kv_cache_append`).

    Raises
    ------
    ValueError
        If the pool has too few free blocks (the message says how many are needed), a shape
        does not match the pool, or ``k_new``, ``v_new`` hold NaN or an infinity.
    """
    cache = _check_paged(cache)
    seq = _check_seq(seq, cache, known=False)
    k_new, v_new = _check_new_tokens(cache, k_new, v_new)
    block_size, T = cache.k_pool.shape[2], k_new.shape[1]
    table = list(cache.tables.get(seq, ()))
    length = cache.lengths.get(seq, 0)
    need = -(-(length + T) // block_size) - len(table)
    if need > len(cache.free):
        raise ValueError(f"the block pool is exhausted: sequence {seq} needs {need} "
                         f"more blocks, {len(cache.free)} are free; free a sequence")
    table += cache.free[:need]
    k_pool, v_pool = cache.k_pool.copy(), cache.v_pool.copy()
    t = np.arange(length, length + T)  # (T,) positions in the sequence
    blocks = np.asarray(table, dtype=np.intp)[t // block_size]  # (T,) token's block
    slots = t % block_size  # (T,)
    k_pool[blocks, :, slots, :] = np.swapaxes(k_new, 0, 1)  # (T, H_kv, D) scattered
    v_pool[blocks, :, slots, :] = np.swapaxes(v_new, 0, 1)  # (T, H_kv, D_v)
    tables = dict(cache.tables)
    lengths = dict(cache.lengths)
    tables[seq], lengths[seq] = tuple(table), length + T
    return PagedKVCache(k_pool, v_pool, tables, lengths, cache.free[need:])


def paged_free(cache: PagedKVCache, seq: int) -> PagedKVCache:
    """Return a new cache without sequence ``seq``; its blocks go back to the free list.

    The blocks' contents are left as they are: a block is only read through a block table,
    and the next owner overwrites what it uses.
    """
    cache = _check_paged(cache)
    seq = _check_seq(seq, cache, known=True)
    tables = {s: t for s, t in cache.tables.items() if s != seq}
    lengths = {s: n for s, n in cache.lengths.items() if s != seq}
    return PagedKVCache(cache.k_pool, cache.v_pool, tables, lengths,
                        cache.free + cache.tables[seq])


def gather_blocks(pool: ArrayLike, block_table: ArrayLike, length: int) -> FloatArray:
    r"""The first ``length`` tokens of a sequence, gathered from a block pool in order.

    .. math:: X_{:, t, :} = \text{pool}\bigl[\text{table}[\lfloor t / b \rfloor],\, :,\,
              t \bmod b,\, :\bigr], \qquad t = 0, \dots, \text{length} - 1,

    with :math:`b` the block size.

    Parameters
    ----------
    pool : ndarray, shape (num_blocks, H_kv, block_size, D)
    block_table : array_like of int, shape (n_blocks,)
        Block ids in token order; ``n_blocks * block_size >= length``.
    length : int
        Number of tokens, ``>= 0``.

    Returns
    -------
    ndarray, shape (H_kv, length, D)
        A copy (fancy indexing), contiguous in token order. Values are moved as they are: NaN
        and infinities pass through (:func:`paged_append` refuses them on the way in).
    """
    pool = as_array(pool, "pool", ndim=4)
    num_blocks, H_kv, block_size, D = pool.shape
    table = check_int_array(block_table, "block_table")
    if table.ndim != 1:
        raise ValueError(f"block_table must be one-dimensional, got shape {table.shape}")
    length = check_int(length, "length", minimum=0)
    if table.size * block_size < length:
        raise ValueError(f"block_table holds {table.size} blocks of {block_size} slots, too "
                         f"few for length={length}")
    if table.size and (table.min() < 0 or table.max() >= num_blocks):
        raise ValueError(f"block_table names blocks outside the pool of {num_blocks}: "
                         f"{table.tolist()}")
    blocks = pool[table]  # (n_blocks, H_kv, bs, D)
    x = np.swapaxes(blocks, 0, 1).reshape(H_kv, table.size * block_size, D)  # (H_kv, n_blocks * bs, D)
    return x[:, :length, :]  # (H_kv, length, D)


def paged_gather(cache: PagedKVCache, seq: int) -> tuple[FloatArray, FloatArray]:
    """The contiguous keys ``(H_kv, S, D)`` and values ``(H_kv, S, D_v)`` of sequence ``seq``."""
    cache = _check_paged(cache)
    seq = _check_seq(seq, cache, known=True)
    table, length = cache.tables[seq], cache.lengths[seq]
    return (gather_blocks(cache.k_pool, table, length),
            gather_blocks(cache.v_pool, table, length))


def paged_attention(q: ArrayLike, cache: PagedKVCache, seq: int, *,
                    scale: float | None = None) -> FloatArray:
    r"""Attention of the newest ``L`` queries of sequence ``seq``, block by block.

    Each block :math:`b` of the sequence gives an :class:`~attnmath.flash.AttentionState`
    over its valid slots, and the states are merged exactly
    (:func:`attnmath.flash.merge_attention_states`); no contiguous copy of the cache is
    made. The queries are those of the last ``L`` cached tokens, so the causal mask is
    bottom-right: query ``i`` sees keys ``j <= S - L + i``.

    Parameters
    ----------
    q : ndarray, shape (H, L, D)
        ``L = 1`` for a decode step; ``H`` a multiple of ``H_kv``; ``1 <= L <= S``.
    cache : PagedKVCache
    seq : int
    scale : float, optional
        ``1/sqrt(D)`` by default.

    Returns
    -------
    ndarray, shape (H, L, D_v)

    Notes
    -----
    A GPU kernel does the same in one launch: a thread block walks the block table and
    keeps the running state in registers. Oracle: attention over the contiguous cache
    (:func:`paged_gather`, then ``torch.nn.functional.scaled_dot_product_attention`` with the
    bottom-right causal mask), in float64.
    """
    cache = _check_paged(cache)
    seq = _check_seq(seq, cache, known=True)
    q = as_array(q, "q", ndim=3)
    block_size = cache.k_pool.shape[2]
    S = cache.lengths[seq]
    L = q.shape[1]
    if not 1 <= L <= S:
        raise ValueError(f"q must hold 1 <= L <= S={S} queries (the newest tokens of "
                         f"sequence {seq}), got shape {q.shape}")
    allowed = causal_mask(L, S, alignment="bottom_right")  # (L, S)
    states = []
    for i, b in enumerate(cache.tables[seq]):
        j0, j1 = i * block_size, min(S, (i + 1) * block_size)
        k = cache.k_pool[b, :, : j1 - j0, :]  # (H_kv, s, D): the block's valid slots
        v = cache.v_pool[b, :, : j1 - j0, :]  # (H_kv, s, D_v)
        states.append(attention_state(q, k, v, mask=allowed[:, j0:j1], scale=scale))
    out = merge_attention_states(states).out  # (H, L, D_v)
    return out.astype(np.result_type(q, cache.v_pool), copy=False)


def paged_unused_slots(cache: PagedKVCache) -> dict[int, int]:
    """Per sequence, the slots allocated but not used: ``len(table) * block_size - length``.

    Each is at most ``block_size - 1`` (only the last block of a sequence is partly empty):
    the internal fragmentation of paging, against the ``S_max - length`` slots that a
    contiguous cache reserved for the longest possible sequence wastes.
    """
    cache = _check_paged(cache)
    block_size = cache.k_pool.shape[2]
    return {s: len(t) * block_size - cache.lengths[s] for s, t in cache.tables.items()}


# ---------------------------------------------------------------------------------------------
# Flash-decoding
# ---------------------------------------------------------------------------------------------


def flash_decoding(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, num_splits: int,
                   mask: ArrayLike | None = None,
                   scale: float | None = None) -> AttentionState:
    r"""Split-K attention: one state per chunk of keys, merged exactly.

    The keys are cut into ``num_splits`` contiguous chunks :math:`J_1, \dots, J_n` of
    sizes differing by at most one (empty chunks when ``num_splits > S``); each chunk gives
    :math:`(o^{(t)}, \operatorname{lse}^{(t)})` and

    .. math::

        \operatorname{lse} = \log \sum_t e^{\operatorname{lse}^{(t)}}, \qquad
        o = \sum_t e^{\operatorname{lse}^{(t)} - \operatorname{lse}}\, o^{(t)} .

    Parameters
    ----------
    q : ndarray, shape (B, H, L, D)
        Usually ``L = 1`` (a decode step); any leading axes.
    k : ndarray, shape (B, H_kv, S, D)
    v : ndarray, shape (B, H_kv, S, D_v)
    num_splits : int
        Number of chunks, ``>= 1``.
    mask : ndarray of bool, optional
        ``True`` = may attend, broadcasting to ``(B, H, L, S)``; sliced per chunk.
    scale : float, optional
        ``1/sqrt(D)`` by default.

    Returns
    -------
    AttentionState
        ``out (B, H, L, D_v)`` and ``lse (B, H, L)``, equal to plain attention up to
        rounding for any ``num_splits``.

    Notes
    -----
    The chunks are independent: on a GPU each is one thread block, so a decode step with
    few ``B * H_kv`` (batch times heads) still fills every streaming multiprocessor. The
    merge is a second, small kernel. Oracle:
    ``torch.nn.functional.scaled_dot_product_attention`` and ``torch.logsumexp``.
    """
    num_splits = check_positive_int(num_splits, "num_splits")
    k = as_array(k, "k")
    if k.ndim < 2:
        raise ValueError(f"k must have shape (..., S, D), got {k.shape}")
    S = k.shape[-2]
    q = as_array(q, "q")
    v = as_array(v, "v")
    if mask is not None:
        mask = broadcast_mask(mask, q.shape[:-1] + (S,))  # (B, H, L, S), a view
    bounds = [S * t // num_splits for t in range(num_splits + 1)]  # chunk t: [b_t, b_t+1)
    states = []
    for j0, j1 in zip(bounds[:-1], bounds[1:]):
        chunk_mask = None if mask is None else mask[..., j0:j1]
        states.append(attention_state(q, k[..., j0:j1, :], v[..., j0:j1, :],
                                      mask=chunk_mask, scale=scale))
    merged = merge_attention_states(states)  # in the working dtype (float32 for float16)
    dtype = np.result_type(q, k, v)
    return AttentionState(merged.out.astype(dtype, copy=False), merged.lse.astype(dtype, copy=False))


# ---------------------------------------------------------------------------------------------
# Multi-head latent attention
# ---------------------------------------------------------------------------------------------


class MLAParams(NamedTuple):
    r"""Weights of multi-head latent attention (DeepSeek-V2, without query compression)."""

    #: Down-projection ``(C, d_c)`` to the cached latent :math:`c^{KV} = x W^{DKV}`.
    w_dkv: FloatArray
    #: Per-head key up-projection ``(H, d_c, D)``; :math:`k^C_h = c^{KV} W^{UK}_h`.
    w_uk: FloatArray
    #: Per-head value up-projection ``(H, d_c, D_v)``; :math:`v_h = c^{KV} W^{UV}_h`.
    w_uv: FloatArray
    #: Per-head content query ``(H, C, D)``; :math:`q^C_h = x W^{Q}_h`.
    w_q: FloatArray
    #: Per-head RoPE query ``(H, C, d_rope)``; :math:`q^R_h = \operatorname{RoPE}(x W^{QR}_h)`.
    w_qr: FloatArray
    #: RoPE key ``(C, d_rope)`` shared by all heads; :math:`k^R = \operatorname{RoPE}(x W^{KR})`.
    w_kr: FloatArray
    #: Output projection ``(H, D_v, C)``, one ``(D_v, C)`` slice per head.
    w_o: FloatArray


def init_mla_params(C: int, H: int, D: int, d_c: int, d_rope: int, *,
                    D_v: int | None = None, seed: int = 0) -> MLAParams:
    """Random MLA weights, entries normal with variance ``1 / fan_in``.

    ``d_rope`` must be even (RoPE rotates pairs); ``d_rope = 0`` leaves the RoPE part out.
    ``D_v`` defaults to ``D``.
    """
    C, H, D, d_c = (check_positive_int(x, n) for x, n in ((C, "C"), (H, "H"), (D, "D"),
                                                           (d_c, "d_c")))
    d_rope = check_positive_int(d_rope, "d_rope", allow_zero=True)
    if d_rope % 2:
        raise ValueError(f"d_rope must be even (RoPE rotates pairs), got {d_rope}")
    D_v = D if D_v is None else check_positive_int(D_v, "D_v")
    rng = as_rng(seed)

    def w(*shape: int) -> FloatArray:
        return rng.standard_normal(shape) / math.sqrt(shape[-2])

    return MLAParams(w(C, d_c), w(H, d_c, D), w(H, d_c, D_v), w(H, C, D), w(H, C, d_rope),
                     w(C, d_rope), w(H, D_v, C))


def _check_mla(params: object) -> tuple[MLAParams, int, int, int, int, int, int]:
    """Checked params and their sizes ``(C, H, D, D_v, d_c, d_rope)``."""
    if not isinstance(params, MLAParams):
        raise TypeError("params must be MLAParams (from init_mla_params), got "
                        f"{type(params).__name__}")
    p = MLAParams(*(as_array(x, f"params.{n}") for x, n in zip(params, MLAParams._fields)))
    if p.w_dkv.ndim != 2 or p.w_uk.ndim != 3:
        raise ValueError("params.w_dkv must be (C, d_c) and params.w_uk (H, d_c, D), got "
                         f"{p.w_dkv.shape} and {p.w_uk.shape}")
    (C, d_c), (H, _, D) = p.w_dkv.shape, p.w_uk.shape
    D_v, d_rope = p.w_uv.shape[-1], p.w_kr.shape[-1]
    expected = {"w_uk": (H, d_c, D), "w_uv": (H, d_c, D_v), "w_q": (H, C, D),
                "w_qr": (H, C, d_rope), "w_kr": (C, d_rope), "w_o": (H, D_v, C)}
    for name, shape in expected.items():
        if getattr(p, name).shape != shape:
            raise ValueError(f"params.{name} must have shape {shape}, got "
                             f"{getattr(p, name).shape}")
    for name, x in zip(MLAParams._fields, p):
        check_finite(x, f"params.{name}")
    return p, C, H, D, D_v, d_c, d_rope


def _rope(x: FloatArray, positions: NDArray[np.integer]) -> FloatArray:
    return x if x.shape[-1] == 0 else apply_rope(x, positions)


def _check_positions(positions: object, n: int, name: str) -> NDArray[np.integer]:
    pos = check_int_array(positions, name)
    if pos.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), one position per row, got {pos.shape}")
    return pos


def mla_latent(x: ArrayLike, params: MLAParams, positions: ArrayLike
               ) -> tuple[FloatArray, FloatArray]:
    r"""What MLA caches per token: the latent and the shared RoPE key.

    .. math:: c^{KV}_t = x_t W^{DKV} \in \mathbb R^{d_c}, \qquad
              k^R_t = \operatorname{RoPE}_t(x_t W^{KR}) \in \mathbb R^{d_R}

    Parameters
    ----------
    x : ndarray, shape (S, C)
        Hidden states of the tokens.
    params : MLAParams
    positions : array_like of int, shape (S,)

    Returns
    -------
    c_kv : ndarray, shape (S, d_c)
    k_rope : ndarray, shape (S, d_rope)
    """
    p, C, *_ = _check_mla(params)
    x = as_array(x, "x", ndim=2)
    if x.shape[1] != C:
        raise ValueError(f"x must have shape (S, C={C}), got {x.shape}")
    check_finite(x, "x")
    pos = _check_positions(positions, x.shape[0], "positions")
    return x @ p.w_dkv, _rope(x @ p.w_kr, pos)  # (S, d_c), (S, d_rope)


class _MLAInputs(NamedTuple):
    p: MLAParams
    x_q: FloatArray
    c_kv: FloatArray
    k_rope: FloatArray
    q_rope: FloatArray
    scale: float


def _mla_inputs(x_q_in: ArrayLike, c_kv_in: ArrayLike, k_rope_in: ArrayLike,
                params: MLAParams, q_positions: ArrayLike) -> _MLAInputs:
    p, C, H, D, D_v, d_c, d_rope = _check_mla(params)
    x_q = as_array(x_q_in, "x_q", ndim=2)
    c_kv = as_array(c_kv_in, "c_kv", ndim=2)
    k_rope = as_array(k_rope_in, "k_rope", ndim=2)
    if x_q.shape[1] != C:
        raise ValueError(f"x_q must have shape (L, C={C}), got {x_q.shape}")
    if c_kv.shape[1] != d_c:
        raise ValueError(f"c_kv must have shape (S, d_c={d_c}), got {c_kv.shape}")
    if k_rope.shape != (c_kv.shape[0], d_rope):
        raise ValueError(f"k_rope must have shape (S={c_kv.shape[0]}, d_rope={d_rope}), got "
                         f"{k_rope.shape}")
    for name, a in (("x_q", x_q), ("c_kv", c_kv), ("k_rope", k_rope)):
        check_finite(a, name)
    L, S = x_q.shape[0], c_kv.shape[0]
    if L > S:
        raise ValueError(f"x_q holds L={L} queries but the cache only S={S} tokens: the "
                         "queries are the newest cached tokens, L <= S")
    pos = _check_positions(q_positions, L, "q_positions")
    q_rope = _rope(np.einsum("lc,hcr->hlr", x_q, p.w_qr), pos)  # (H, L, d_rope)
    return _MLAInputs(p, x_q, c_kv, k_rope, q_rope, 1.0 / math.sqrt(D + d_rope))


def mla_attention(x_q: ArrayLike, c_kv: ArrayLike, k_rope: ArrayLike, params: MLAParams, *,
                  q_positions: ArrayLike) -> FloatArray:
    r"""MLA as written in the paper: up-project keys and values per head, then attend.

    .. math::

        k_{t,h} = [c^{KV}_t W^{UK}_h;\, k^R_t], \quad v_{t,h} = c^{KV}_t W^{UV}_h, \quad
        q_{h} = [x W^Q_h;\, \operatorname{RoPE}(x W^{QR}_h)],

    .. math::

        o = \sum_h \operatorname{softmax}\!\Bigl(\frac{q_h k_h^\top}{\sqrt{D + d_R}}
        + \mathrm{bias}_M\Bigr) v_h\, W^O_h .

    Parameters
    ----------
    x_q : ndarray, shape (L, C)
        Hidden states of the newest ``L`` tokens (the queries).
    c_kv : ndarray, shape (S, d_c)
    k_rope : ndarray, shape (S, d_rope)
        The cache of :func:`mla_latent`; its last ``L`` rows are the query tokens'.
    params : MLAParams
    q_positions : array_like of int, shape (L,)

    Returns
    -------
    ndarray, shape (L, C)

    Notes
    -----
    ``M`` is the bottom-right causal mask (query ``i`` sees keys ``j <= S - L + i``). The
    paper also compresses the queries through a latent of width :math:`d_c'`; that saves
    activation memory in training, not cache, and is left out. Oracle: the same formula in
    torch, and :func:`mla_attention_absorbed`.
    """
    p, xq, c, kr, q_rope, s = _mla_inputs(x_q, c_kv, k_rope, params, q_positions)
    H, S = p.w_uk.shape[0], c.shape[0]
    q_c = np.einsum("lc,hcd->hld", xq, p.w_q)  # (H, L, D)
    k_c = np.einsum("sc,hcd->hsd", c, p.w_uk)  # (H, S, D)
    v = np.einsum("sc,hcd->hsd", c, p.w_uv)  # (H, S, D_v)
    q = np.concatenate([q_c, q_rope], axis=-1)  # (H, L, D + d_rope)
    k = np.concatenate([k_c, np.broadcast_to(kr, (H, S, kr.shape[1]))], axis=-1)
    heads, _ = scaled_dot_product_attention(q, k, v, scale=s, causal=True,
                                            causal_alignment="bottom_right")  # (H, L, D_v)
    return np.einsum("hld,hdc->lc", heads, p.w_o)  # (L, C)


def mla_attention_absorbed(x_q: ArrayLike, c_kv: ArrayLike, k_rope: ArrayLike,
                           params: MLAParams, *, q_positions: ArrayLike) -> FloatArray:
    r"""MLA with :math:`W^{UK}` folded into the query and :math:`W^{UV}` into the output.

    .. math::

        \begin{aligned}
        &q_h k_{t,h}^\top = \underbrace{(x W^Q_h W^{UK\top}_h)}_{\tilde q_h \in \mathbb R^{d_c}} c^{KV\top}_t
          + q^R_h k^{R\top}_t, \\
        &\sum_t p_{ht}\, v_{t,h} W^O_h = \Bigl(\sum_t p_{ht}\, c^{KV}_t\Bigr) \underbrace{W^{UV}_h
          W^O_h}_{\tilde W^O_h} .
        \end{aligned}

    This is multi-query attention over the cache: one key :math:`[c^{KV}_t; k^R_t]` and one
    value :math:`c^{KV}_t` shared by all ``H`` heads, with queries of width
    :math:`d_c + d_R`. Arguments and result as :func:`mla_attention`.

    Notes
    -----
    The score scale stays :math:`1/\sqrt{D + d_R}` (the heads' dimension before absorbing).
    The RoPE part cannot be absorbed: a rotation :math:`R_t` between :math:`W^{UK}` and the
    key would make the folded query depend on the key's position, which is why the RoPE key
    is a separate, decoupled vector. Absorbing trades the ``(H, S, D)`` up-projected keys for
    queries of width :math:`d_c`, worth it when decoding (``L = 1``). Oracle:
    :func:`mla_attention`.
    """
    p, xq, c, kr, q_rope, s = _mla_inputs(x_q, c_kv, k_rope, params, q_positions)
    w_q_absorbed = np.einsum("hcd,hed->hce", p.w_q, p.w_uk)  # (H, C, d_c)
    w_o_absorbed = np.einsum("hed,hdc->hec", p.w_uv, p.w_o)  # (H, d_c, C)
    q_lat = np.einsum("lc,hce->hle", xq, w_q_absorbed)  # (H, L, d_c)
    q = np.concatenate([q_lat, q_rope], axis=-1)[None]  # (1, H, L, d_c + d_rope)
    k = np.concatenate([c, kr], axis=-1)[None, None]  # (1, 1, S, d_c + d_rope)
    latent_out, _ = scaled_dot_product_attention(
        q, k, c[None, None], scale=s, causal=True, causal_alignment="bottom_right"
    )  # (1, H, L, d_c): multi-query attention, H_kv = 1
    return np.einsum("hle,hec->lc", latent_out[0], w_o_absorbed)  # (L, C)


# ---------------------------------------------------------------------------------------------
# KV-cache quantisation
# ---------------------------------------------------------------------------------------------


class QuantizedTensor(NamedTuple):
    """Integer codes and the scales that turn them back into numbers: ``x ~ codes * scale``.

    ``codes`` (int8, values in ``[-qmax, qmax]``, ``qmax = 2**(bits-1) - 1``) has the
    tensor's shape; ``scale`` (the input's dtype, rounded up) broadcasts against it: ``(..., S, 1)`` per token,
    ``(..., 1, D)`` per channel.
    """

    #: Int8 codes in ``[-qmax, qmax]``, ``qmax = 2**(bits-1) - 1``, in the tensor's own shape, for
    #: a KV cache ``(..., S, D)``.
    codes: NDArray[np.int8]
    #: Scales broadcasting against ``codes``; ``(..., S, 1)`` per token, ``(..., 1, D)`` per channel.
    scale: FloatArray
    #: Bits per code.
    bits: int


def quantize_symmetric(x: ArrayLike, *, bits: int, per: str) -> QuantizedTensor:
    r"""Symmetric integer quantisation with one scale per token or per channel.

    .. math::

        \begin{aligned}
        &q_{\max} = 2^{\text{bits}-1} - 1, \qquad \Delta = \frac{\max_{\text{group}} |x|}{q_{\max}}, \\
        &\text{codes} = \operatorname{round}(x / \Delta) \in [-q_{\max}, q_{\max}] .
        \end{aligned}

    Parameters
    ----------
    x : ndarray, shape (..., S, D)
        Keys or values of a cache: tokens along ``-2``, channels along ``-1``.
    bits : int
        2 to 8 (int8: 8, int4: 4). int4 codes are stored one per byte here; packed two per
        byte they take half.
    per : {"token", "channel"}
        ``"token"``: one scale per token (the max over its channels); ``"channel"``: one
        scale per channel (the max over the tokens).

    Returns
    -------
    QuantizedTensor

    Notes
    -----
    No code is clipped: :math:`|x| \le \max|x| = q_{\max}\Delta`. Rounding to the nearest
    integer then gives :math:`|x - \Delta\,\text{codes}| \le \Delta/2` for every entry. A
    group of zeros gets :math:`\Delta = 1` (codes 0, no error). KIVI quantises keys per
    channel (a few channels carry large values in every token) and values per token.
    Oracle: the bound itself, and ``torch.round`` (half to even, as ``np.rint``).
    """
    x = as_array(x, "x")
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., S, D), got {x.shape}")
    check_finite(x, "x")
    bits = check_int(bits, "bits", minimum=2)
    if bits > 8:
        raise ValueError(f"bits must be between 2 and 8 (int8 codes), got {bits}")
    if per not in ("token", "channel"):
        raise ValueError(f'per must be "token" or "channel", got {per!r}')
    qmax = 2 ** (bits - 1) - 1
    dtype = x.dtype  # the scales are stored in the input's dtype
    x = x.astype(np.float64)
    axis = -1 if per == "token" else -2  # the axis a scale is shared along
    # (..., S, 1) per token or (..., 1, D) per channel:
    amax = np.max(np.abs(x), axis=axis, keepdims=True, initial=0.0)
    exact = np.where(amax > 0.0, amax / qmax, 1.0)
    # Rounded to the stored dtype upwards, so that |x| / scale <= qmax: no code is clipped.
    scale = exact.astype(dtype)
    low = scale.astype(np.float64) < exact
    scale[low] = np.nextafter(scale[low], np.asarray(np.inf, dtype=dtype))
    codes = np.clip(np.rint(x / scale.astype(np.float64)), -qmax, qmax).astype(np.int8)
    return QuantizedTensor(codes, scale, bits)


def dequantize(qt: QuantizedTensor) -> FloatArray:
    """The numbers ``codes * scale`` (in the scales' dtype) that a quantised tensor stands for."""
    if not isinstance(qt, QuantizedTensor):
        raise TypeError(f"qt must be a QuantizedTensor (from quantize_symmetric), got "
                        f"{type(qt).__name__}")
    codes = np.asarray(qt.codes)
    if not np.issubdtype(codes.dtype, np.integer):
        raise TypeError(f"qt.codes must be integers, got {codes.dtype}")
    scale = as_array(qt.scale, "qt.scale")
    try:
        return codes.astype(scale.dtype) * scale  # in the scales' dtype
    except ValueError:
        raise ValueError(f"qt.scale of shape {scale.shape} does not broadcast to qt.codes "
                         f"{codes.shape}") from None


def _check_error_bound(err: ArrayLike, name: str, shape: tuple[int, ...]) -> FloatArray:
    """A finite, non-negative entrywise error bound broadcast to ``shape``."""
    e = as_array(err, name)
    if not np.isfinite(e).all() or (e < 0).any():
        raise ValueError(f"{name} must be finite and >= 0")
    try:
        return np.broadcast_to(e, shape)
    except ValueError:
        raise ValueError(f"{name} of shape {e.shape} does not broadcast to {shape}") from None


def quantized_attention_error_bound(q: ArrayLike, v: ArrayLike, k_error: ArrayLike,
                                    v_error: ArrayLike, *,
                                    scale: float | None = None) -> FloatArray:
    r"""A bound on :math:`|o' - o|` when keys and values move by at most ``k_error``, ``v_error``.

    With :math:`|k'_{jc} - k_{jc}| \le \kappa_{jc}` and :math:`|v'_{jd} - v_{jd}| \le
    \nu_{jd}`, every score moves by at most
    :math:`\varepsilon_i = s \max_j \sum_c |q_{ic}|\, \kappa_{jc}`, and

    .. math::

        |o'_{id} - o_{id}| \le \bigl(e^{2\varepsilon_i} - 1\bigr)\,
        \frac{\max_j v_{jd} - \min_j v_{jd}}{2} + \max_j \nu_{jd} .

    Parameters
    ----------
    q : ndarray, shape (..., L, D)
    v : ndarray, shape (..., S, D_v)
        The exact values.
    k_error : ndarray, broadcasting to (..., S, D)
        Entrywise bound on the key error: ``scale / 2`` of :func:`quantize_symmetric`.
    v_error : ndarray, broadcasting to (..., S, D_v)
        Entrywise bound on the value error.
    scale : float, optional
        Score scale, ``1/sqrt(D)`` by default.

    Returns
    -------
    ndarray, shape (..., L, D_v)

    Notes
    -----
    No mask (every key visible); ``q`` and ``v`` share their leading axes (no grouped heads:
    repeat the key/value heads first). Proof in ``book/13_serving.md``. Oracle: the measured
    error of attention with dequantised keys and values, which must stay below.
    """
    q = as_array(q, "q")
    v = as_array(v, "v")
    if q.ndim < 2 or v.ndim != q.ndim or v.shape[:-2] != q.shape[:-2]:
        raise ValueError(f"q (..., L, D) and v (..., S, D_v) must share their leading axes, "
                         f"got {q.shape} and {v.shape}")
    check_finite(q, "q")
    check_finite(v, "v")
    S, D = v.shape[-2], q.shape[-1]
    s = 1.0 / math.sqrt(D) if scale is None else check_real(scale, "scale", positive=True)
    kappa = _check_error_bound(k_error, "k_error", v.shape[:-2] + (S, D))  # (..., S, D)
    nu = _check_error_bound(v_error, "v_error", v.shape)  # (..., S, D_v)
    if S == 0:
        return np.zeros(q.shape[:-1] + (v.shape[-1],))
    eps = s * np.max(np.abs(q) @ np.swapaxes(kappa, -1, -2), axis=-1)  # (..., L)
    half_range = (np.max(v, axis=-2) - np.min(v, axis=-2)) / 2  # (..., D_v)
    return (np.expm1(2 * eps)[..., None] * half_range[..., None, :]
            + np.max(nu, axis=-2)[..., None, :])  # (..., L, D_v)


# ---------------------------------------------------------------------------------------------
# Real model shapes, cache bytes and arithmetic intensity
# ---------------------------------------------------------------------------------------------


class ModelShape(NamedTuple):
    """The attention-relevant shape of a published decoder (its config file's numbers).

    ``H_kv`` key/value heads of dim ``D`` for MHA (``H_kv = H``), GQA and MQA (``H_kv = 1``);
    for MLA ``d_c`` and ``d_rope`` (0 otherwise) and ``H_kv = 0`` (nothing per head is
    cached). ``F`` (SwiGLU hidden width) and ``vocab`` are given for the dense models whose
    parameters :func:`decoder_param_count` counts, ``0`` otherwise.
    """

    #: The model's published name.
    name: str
    #: The attention kind, one of ``"MHA"``, ``"GQA"``, ``"MQA"`` or ``"MLA"``.
    attention: str
    #: Number of decoder layers.
    n_layers: int
    #: Model width.
    C: int
    #: Number of query heads.
    H: int
    #: Number of key/value heads (``H`` for MHA, 1 for MQA, 0 for MLA).
    H_kv: int
    #: Head dim.
    D: int
    #: MLA latent width (0 for other kinds).
    d_c: int = 0
    #: MLA RoPE key width (0 for other kinds).
    d_rope: int = 0
    #: SwiGLU hidden width of a dense model (0 when not given).
    F: int = 0
    #: Vocabulary size of a dense model (0 when not given).
    vocab: int = 0


#: Published shapes, from each model's ``config.json`` and paper (sources in the chapter).
PUBLISHED_MODELS: dict[str, ModelShape] = {m.name: m for m in (
    ModelShape("Llama-2-7B", "MHA", 32, 4096, 32, 32, 128, F=11008, vocab=32000),
    ModelShape("Llama-2-70B", "GQA", 80, 8192, 64, 8, 128, F=28672, vocab=32000),
    ModelShape("Llama-3-8B", "GQA", 32, 4096, 32, 8, 128, F=14336, vocab=128256),
    ModelShape("Mistral-7B", "GQA", 32, 4096, 32, 8, 128, F=14336, vocab=32000),
    ModelShape("Falcon-7B", "MQA", 32, 4544, 71, 1, 64),
    ModelShape("DeepSeek-V2", "MLA", 60, 5120, 128, 0, 128, d_c=512, d_rope=64),
    ModelShape("DeepSeek-V3", "MLA", 61, 7168, 128, 0, 128, d_c=512, d_rope=64),
)}


def _check_shape(shape: object) -> ModelShape:
    if not isinstance(shape, ModelShape):
        raise TypeError(f"shape must be a ModelShape, got {type(shape).__name__}")
    if shape.attention not in ("MHA", "GQA", "MQA", "MLA"):
        raise ValueError(f"shape.attention must be MHA, GQA, MQA or MLA, got "
                         f"{shape.attention!r}")
    for name in ("n_layers", "C", "H", "D"):
        check_positive_int(getattr(shape, name), f"shape.{name}")
    for name in ("H_kv", "d_c", "d_rope", "F", "vocab"):
        check_positive_int(getattr(shape, name), f"shape.{name}", allow_zero=True)
    if shape.attention == "MLA":
        if shape.d_c < 1:
            raise ValueError(f"shape.d_c must be >= 1 for MLA, got {shape.d_c}")
    elif shape.H_kv < 1 or shape.H % shape.H_kv:
        raise ValueError(f"shape.H_kv must divide shape.H={shape.H}, got {shape.H_kv}")
    return shape


def kv_bytes_per_token(shape: ModelShape, *, itemsize: int = 2) -> int:
    r"""Bytes that one token adds to the KV cache of one sequence, all layers.

    .. math::

        \begin{aligned}
        &\text{MHA/GQA/MQA: } 2\, n_{\text{layers}} H_{kv} D \cdot \text{itemsize}, \\
        &\text{MLA: } n_{\text{layers}} (d_c + d_R) \cdot \text{itemsize} .
        \end{aligned}

    ``itemsize`` 2 for float16/bfloat16, 1 for an int8 cache. The first formula is
    :func:`attnmath.kv_cache.kv_cache_bytes` with ``B = S = 1``.
    """
    shape = _check_shape(shape)
    itemsize = check_positive_int(itemsize, "itemsize")
    if shape.attention == "MLA":
        return shape.n_layers * (shape.d_c + shape.d_rope) * itemsize
    return kv_cache_bytes(1, shape.H_kv, 1, shape.D, n_layers=shape.n_layers,
                          itemsize=itemsize)


class DecoderParams(NamedTuple):
    """Parameters of a dense Llama-style decoder, by part."""

    #: Parameters of all attention projections.
    attention: int
    #: Parameters of all MLPs.
    mlp: int
    #: Parameters of all norms.
    norms: int
    #: Parameters of the token embedding.
    embedding: int
    #: Parameters of the output head, ``vocab * C`` (untied).
    lm_head: int

    @property
    def matmul(self) -> int:
        """Weights used in a matrix product for every token (attention, MLP, LM head)."""
        return self.attention + self.mlp + self.lm_head

    @property
    def total(self) -> int:
        """Every parameter, the number a model card reports."""
        return self.matmul + self.norms + self.embedding


def _attention_weights(shape: ModelShape) -> int:
    """Weights of one layer's attention projections (for MLA the :class:`MLAParams`)."""
    C, H, D = shape.C, shape.H, shape.D
    if shape.attention == "MLA":
        d_c, d_rope = shape.d_c, shape.d_rope
        return (C * d_c + C * d_rope  # W^DKV, W^KR: the new token's latent and RoPE key
                + H * C * D + H * C * d_rope  # W^Q, W^QR: the query
                + 2 * H * d_c * D  # W^UK, W^UV: applied to the query and the output
                + H * D * C)  # W^O
    return 2 * C * H * D + 2 * C * shape.H_kv * D  # W^Q and W^O, W^K and W^V


def _key_flops(shape: ModelShape) -> int:
    """FLOPs of one head for one query against one cached token: score and weighted value."""
    if shape.attention == "MLA":
        return 2 * (shape.d_c + shape.d_rope) + 2 * shape.d_c  # against [c; k^R], then c
    return 4 * shape.D  # q . k_j, then p_j v_j


def decoder_param_count(shape: ModelShape) -> DecoderParams:
    r"""Parameters of a dense Llama-style decoder (no biases, SwiGLU MLP, RMSNorm, untied head).

    .. math::

        n_{\text{layers}}\bigl(\underbrace{P_{\text{attn}}}_{\text{attention}}
        + \underbrace{3 C F}_{\text{MLP}} + \underbrace{2C}_{\text{norms}}\bigr)
        + \underbrace{C}_{\text{final norm}} + \underbrace{2 V C}_{\text{embedding, head}}

    with :math:`P_{\text{attn}} = 2 C H D + 2 C H_{kv} D` (MHA, GQA, MQA) or, for MLA, the
    weights of :class:`MLAParams`:
    :math:`C (d_c + d_R) + H C (D + d_R) + 2 H d_c D + H D C`.

    Notes
    -----
    Fits Llama 2, Llama 3 and Mistral; models without ``F`` and ``vocab`` in
    :data:`PUBLISHED_MODELS` (Falcon's other layout, DeepSeek's mixture of experts) raise.
    An MLA shape with ``F`` and ``vocab`` is a dense decoder whose attention is MLA.
    Oracle: the parameter counts the models' releases report (Llama-2-7B 6,738,415,616).
    """
    shape = _check_shape(shape)
    if shape.F < 1 or shape.vocab < 1:
        raise ValueError(f"shape {shape.name!r} is not a dense Llama-style decoder with F and "
                         "vocab given")
    C, n = shape.C, shape.n_layers
    return DecoderParams(attention=n * _attention_weights(shape),
                         mlp=n * 3 * C * shape.F, norms=n * 2 * C + C,
                         embedding=shape.vocab * C, lm_head=shape.vocab * C)


class StepCost(NamedTuple):
    """FLOPs and bytes of one forward step of a decoder, and their ratio."""

    #: FLOPs of the step.
    flops: int
    #: Bytes moved from memory in the step.
    bytes: int

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOPs per byte moved."""
        return self.flops / self.bytes


def _check_step(B: object, L: object, S: object, itemsize: object) -> tuple[int, int, int, int]:
    return (check_positive_int(B, "B"), check_positive_int(L, "L"),
            check_positive_int(S, "S", allow_zero=True), check_positive_int(itemsize, "itemsize"))


def attention_step_cost(shape: ModelShape, *, B: int, L: int, S: int,
                        itemsize: int = 2) -> StepCost:
    r"""FLOPs and memory traffic of the attention layers alone in one step (any attention kind).

    .. math::

        \begin{aligned}
        &\text{FLOPs} = 2 n_{\text{layers}} P_{\text{attn}} B L
          + B\, n_{\text{layers}} H f_{\text{key}} \Bigl(L S + \tfrac{L(L+1)}{2}\Bigr), \\
        &\text{bytes} = n_{\text{layers}} P_{\text{attn}} \cdot \text{itemsize}
          + B (S + L)\, b_{\text{tok}},
        \end{aligned}

    with :math:`P_{\text{attn}}` a layer's projection weights (:func:`decoder_param_count`),
    :math:`b_{\text{tok}}` :func:`kv_bytes_per_token`, and :math:`f_{\text{key}}` the FLOPs of
    one head for one query and one key: :math:`4D` for MHA, GQA and MQA (the score
    :math:`q \cdot k_j` and the product :math:`p_j v_j`), and for MLA
    :math:`2(d_c + d_R) + 2 d_c`.

    Parameters
    ----------
    shape : ModelShape
        Any attention kind, DeepSeek-V2's published MLA shape too (``d_c = 512``,
        ``d_R = 64``, 128 heads of dim 128; DeepSeek-AI 2024).
    B, L, S, itemsize : int
        Sequences, new tokens per sequence (``L = 1``: a decode step), cached tokens, bytes
        per stored number (2 for bfloat16, 1 for int8). Returns a :class:`StepCost`.

    Notes
    -----
    MLA is counted in its *absorbed* form, the one decoding uses (:func:`mla_attention_absorbed`,
    with the products applied in sequence rather than pre-multiplied): each new token computes
    its latent :math:`c^{KV} = x W^{DKV}` and RoPE key :math:`x W^{KR}`, its queries
    :math:`x W^Q_h` and :math:`x W^{QR}_h`, folds the content query into the latent space
    (:math:`(x W^Q_h) W^{UK\top}_h`, width :math:`d_c`), scores it against every cached latent and
    RoPE key, sums the latents weighted by the probabilities (width :math:`d_c`, shared by the
    heads as the value), and maps the result through :math:`W^{UV}_h` and :math:`W^O_h`. Every
    weight is thus used once per new token, and no per-head key or value is ever formed: the
    cache read is :math:`d_c + d_R` numbers per token and layer, shared by all ``H`` heads, so
    one more cached token costs :math:`H f_{\text{key}}` FLOPs against :math:`(d_c + d_R)`
    numbers, against :math:`H/H_{kv}` FLOPs per number for MHA, GQA and MQA. Assumed: the
    weights are read once per step (shared by the batch), the cache is read once and the new
    tokens' entries written once, 2 FLOPs per multiply-add, query ``i`` of the step sees
    ``S + i + 1`` tokens. Not counted: activations, softmax, RoPE rotations, norms. For a long
    prefill the naive form (up-projecting keys and values once) is cheaper than the absorbed
    one counted here. DeepSeek-V2's query compression (a latent of width :math:`d_c'` for the
    queries) is left out, as in :class:`MLAParams`. Oracle: ``torch.utils.flop_counter.
    FlopCounterMode`` and the sizes of the tensors of a torch decode step that equals
    :func:`mla_attention` (tests/attnmath/test_serving.py), for random shapes and for
    DeepSeek-V2's.
    """
    shape = _check_shape(shape)
    B, L, S, itemsize = _check_step(B, L, S, itemsize)
    keys_seen = L * S + L * (L + 1) // 2  # sum over the L queries of the tokens each sees
    weights = shape.n_layers * _attention_weights(shape)
    flops = 2 * weights * B * L + B * shape.n_layers * shape.H * _key_flops(shape) * keys_seen
    moved = weights * itemsize + B * (S + L) * kv_bytes_per_token(shape, itemsize=itemsize)
    return StepCost(int(flops), int(moved))


def step_cost(shape: ModelShape, *, B: int, L: int, S: int,
              itemsize: int = 2) -> StepCost:
    r"""FLOPs and memory traffic of one step: ``B`` sequences, ``L`` new tokens each, ``S`` cached.

    .. math::

        \begin{aligned}
        &\text{FLOPs} = 2 P_{\text{mm}} B L + B\, n_{\text{layers}} H f_{\text{key}}
          \Bigl(L S + \tfrac{L(L+1)}{2}\Bigr), \\
        &\text{bytes} = P_{\text{mm}} \cdot \text{itemsize} + B (S + L)\, b_{\text{tok}},
        \end{aligned}

    with :math:`P_{\text{mm}}` the matmul weights (:attr:`DecoderParams.matmul`),
    :math:`b_{\text{tok}}` :func:`kv_bytes_per_token` and :math:`f_{\text{key}}` as in
    :func:`attention_step_cost` (:math:`4D` for MHA, GQA and MQA). ``L = 1`` is a decode step,
    ``S = 0`` a prefill of ``L`` tokens.

    Notes
    -----
    The attention layers as :func:`attention_step_cost` counts them (MLA in its absorbed form),
    plus the MLP and the LM head, whose weights are read once per step and used once per new
    token. Counted: every weight read once per step (shared by the batch), the cache read once
    (``B S`` tokens) and written once (``B L`` new tokens), the matrix products at 2 FLOPs
    per multiply-add (query ``i`` of the step sees ``S + i + 1`` keys). Not counted:
    activations (a few ``C``-vectors per token), softmax and norms, so the intensity is a
    slight overestimate for decoding. Dense Llama-style shapes only
    (:func:`decoder_param_count`). Oracle: ``torch.utils.flop_counter.FlopCounterMode`` and
    the ``nbytes`` of the tensors of a small decoder step in the tests.
    """
    params = decoder_param_count(shape)
    attention = attention_step_cost(shape, B=B, L=L, S=S, itemsize=itemsize)
    rest = params.matmul - params.attention  # MLP and LM head
    return StepCost(attention.flops + 2 * rest * B * L, attention.bytes + rest * itemsize)


#: Peak dense BF16 tensor-core throughput of an H100 SXM5, FLOP/s (NVIDIA datasheet).
H100_SXM_BF16_FLOPS = 989e12
#: HBM3 bandwidth of an H100 SXM5, bytes/s (NVIDIA datasheet).
H100_SXM_HBM_BYTES_PER_S = 3.35e12


def roofline(intensity: ArrayLike, *, peak_flops: float = H100_SXM_BF16_FLOPS,
             bandwidth: float = H100_SXM_HBM_BYTES_PER_S) -> FloatArray:
    r"""Attainable FLOP/s at an arithmetic intensity: :math:`\min(\pi,\ \beta I)`.

    Parameters
    ----------
    intensity : array_like
        FLOPs per byte, ``>= 0``.
    peak_flops : float
        :math:`\pi`, the compute roof (default: H100 SXM dense BF16).
    bandwidth : float
        :math:`\beta`, bytes per second (default: H100 SXM HBM3).

    Returns
    -------
    ndarray
        Same shape as ``intensity``, float64 (FLOP/s overflow float16). The ridge point :math:`\pi / \beta` (295 FLOP/byte for
        the defaults) separates memory-bound from compute-bound steps (Williams et al. 2009).
    """
    intensity = as_array(intensity, "intensity", allow_int=True)
    if not np.isfinite(intensity).all() or (intensity < 0).any():
        raise ValueError("intensity must be finite and >= 0")
    peak_flops = check_real(peak_flops, "peak_flops", positive=True)
    bandwidth = check_real(bandwidth, "bandwidth", positive=True)
    # float64 whatever the input: FLOP/s (about 1e15) overflow float16.
    return np.minimum(peak_flops, bandwidth * intensity.astype(np.float64))
