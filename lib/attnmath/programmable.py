r"""Programmable and learned-sparse attention: score and mask functions, block sparsity, NSA,
MoBA, DeepSeek sparse attention, gated and differential attention, and FP8 attention.

**Programmable attention** (FlexAttention, Dong et al. 2024). A variant of attention is two
small functions of indices, in FlexAttention's signatures:

.. math::

    \begin{aligned}
    z_{bhij} &= \operatorname{score\_mod}\bigl(s\,q_{bhi}\cdot k_{bhj},\, b, h, i, j\bigr), \\
    M_{bhij} &= \operatorname{mask\_mod}(b, h, i, j),
    \end{aligned}

then :math:`O = \operatorname{softmax}(z \text{ masked by } M)\,V`. Here the functions receive
integer *index grids* that broadcast to ``(B, H, L, S)`` and return an array of that shape; a
function written with operators only (``+``, ``<=``, ``&``, ``|``) and :func:`take` for a table
lookup runs unchanged on torch tensors, inside ``torch.nn.attention.flex_attention``.

**Block sparsity.** A :class:`BlockMask` records, for every tile of ``block_q`` queries and
``block_k`` keys, whether the mask hides it entirely (skipped), allows it entirely (computed
without calling ``mask_mod``) or partly; :func:`block_sparse_attention` computes only the
tiles that are not empty and counts the work.

**Learned sparsity.** NSA (Yuan et al. 2025): compressed, selected and sliding-window branches
mixed by gates. MoBA (Lu et al. 2025): top-k blocks chosen by the query's affinity to each
block's mean key. DeepSeek sparse attention (DeepSeek-AI 2025): a lightning indexer scores every
earlier token and the top-k of them are attended.

**Gates.** Gated attention (Qiu et al. 2025) multiplies the output of each head by a sigmoid of
the token; differential attention (Ye et al. 2025) subtracts two softmax maps.

**Low precision.** FP8 (Micikevicius et al. 2022) emulated in float64: round-to-nearest-even onto
the E4M3 and E5M2 grids with saturation, per-tensor or per-block scaling and the Hadamard
rotation of FlashAttention-3 (Shah et al. 2024), with a bound on the error that is checked.

Shapes: ``q (B, H, L, D)``, ``k (B, H_kv, S, D)``, ``v (B, H_kv, S, D_v)``; the NumPy functions
compute in float64 (float32 stays float32, float16 is computed in float32) as every exact
variant of :mod:`attnmath.core`.
"""

from __future__ import annotations

import argparse
import json
import numbers
from dataclasses import asdict, dataclass
from typing import Any, Callable, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ._validate import (FloatArray, as_array, check_int, check_int_array, check_positive_int, check_real)
from .core import prepare

__all__ = [
    "take",
    "flex_attention",
    "create_mask",
    "and_masks",
    "or_masks",
    "causal_mask_mod",
    "sliding_window_mask_mod",
    "sink_window_mask_mod",
    "padding_mask_mod",
    "document_mask_mod",
    "prefix_lm_mask_mod",
    "alibi_score_mod",
    "softcap_score_mod",
    "BlockMask",
    "create_block_mask",
    "BlockWork",
    "block_sparse_attention",
    "nsa_compress",
    "NSAOutput",
    "nsa_attention",
    "NSATokens",
    "nsa_tokens_per_query",
    "BlockSelection",
    "moba_attention",
    "moba_keys_per_query",
    "dsa_index_scores",
    "dsa_attention",
    "SparseCost",
    "dsa_cost",
    "gated_attention",
    "differential_lambda_init",
    "differential_attention",
    "FP8Format",
    "FP8_FORMATS",
    "fp8_round",
    "fp8_quantize",
    "hadamard_rotation",
    "FP8Attention",
    "fp8_attention",
    "fp8_attention_error_bound",
    "FP8_OUTLIER_METHODS",
    "FP8OutlierConfig",
    "fp8_outlier_inputs",
    "fp8_outlier_experiment",
    "GatedSinkConfig",
    "sink_batch",
    "gated_sink_experiment",
]

ScoreMod = Callable[..., Any]
MaskMod = Callable[..., Any]


# ----------------------------------------------------------------------------------------------
# score_mod and mask_mod
# ----------------------------------------------------------------------------------------------


def take(table: np.ndarray, index: Any) -> Any:
    """``table[index]`` for a NumPy index grid or a torch index tensor (FlexAttention's vmap).

    The one table lookup a score or mask function needs: with a NumPy ``index`` it is plain
    indexing; with a torch tensor the table is first made a tensor on the index's device, so
    that the same function runs inside ``torch.nn.attention.flex_attention`` (whose tracing
    cannot read NumPy attributes: the torch path touches the table only through
    ``torch.as_tensor``). ``table`` is a finite integer or floating NumPy array; ``index`` an
    integer array, an integer, or a torch integer tensor.
    """
    if isinstance(index, np.ndarray) or isinstance(index, numbers.Integral):
        if not isinstance(table, np.ndarray) or table.dtype.kind not in "iuf":
            raise TypeError(f"table must be an integer or floating NumPy array, got "
                            f"{type(table).__name__} {getattr(table, 'dtype', '')}".rstrip())
        if table.ndim == 0:
            raise ValueError("table must have at least one axis to index (got a 0-d array)")
        if table.dtype.kind == "f" and not np.isfinite(table).all():
            raise ValueError("table must be finite (NaN or inf found)")
        if isinstance(index, (bool, np.bool_)) or (isinstance(index, np.ndarray) and index.dtype.kind not in "iu"):
            raise TypeError(f"index must be an integer array, got {getattr(index, 'dtype', type(index).__name__)}")
        return table[index]
    if type(index).__module__.partition(".")[0] == "torch":
        import torch  # a torch index tensor: FlexAttention calls the function under vmap

        return torch.as_tensor(table, device=index.device)[index]
    raise TypeError(f"index must be an integer array or a torch integer tensor, got {type(index).__name__}")


def _check_mod(mod: object, name: str) -> Callable[..., Any] | None:
    if mod is not None and not callable(mod):
        raise TypeError(f"{name} must be a function (or None), got {type(mod).__name__}")
    return mod


def _grids(B: int, H: int, L: int, S: int) -> tuple[np.ndarray, ...]:
    """Index grids ``b (B,1,1,1)``, ``h (1,H,1,1)``, ``q_idx (1,1,L,1)``, ``kv_idx (1,1,1,S)``."""
    return (np.arange(B).reshape(B, 1, 1, 1), np.arange(H).reshape(1, H, 1, 1),
            np.arange(L).reshape(1, 1, L, 1), np.arange(S).reshape(1, 1, 1, S))


def _call_mod(mod: Callable[..., Any], name: str, shape: tuple, *args: Any) -> np.ndarray:
    """Call a score or mask function on index grids; its result broadcast to ``shape``."""
    try:
        out = mod(*args)
    except (IndexError, ValueError) as exc:
        raise ValueError(f"{name} failed on index grids of shape {shape}: {exc}") from None
    out = np.asarray(out)
    try:
        return np.broadcast_to(out, shape)
    except ValueError:
        raise ValueError(f"{name} returned shape {out.shape}, which does not broadcast to "
                         f"{shape} (B, H, L, S)") from None


def _modded_scores(z: np.ndarray, score_mod, mask_mod, grids) -> np.ndarray:
    """Scores ``z (B, H, l, s)`` after ``score_mod``, with ``-inf`` where ``mask_mod`` is False."""
    if score_mod is not None:
        z = _call_mod(score_mod, "score_mod", z.shape, z, *grids)
        if z.dtype.kind != "f":
            raise TypeError(f"score_mod must return floating scores, got dtype {z.dtype}")
        if np.isnan(z).any() or np.isposinf(z).any():
            raise ValueError("score_mod returned NaN or +inf (-inf masks a score)")
    if mask_mod is not None:
        allowed = _call_mod(mask_mod, "mask_mod", z.shape, *grids)
        if allowed.dtype != np.bool_:
            raise TypeError(f"mask_mod must return booleans (True = may attend), got {allowed.dtype}")
        z = np.where(allowed, z, -np.inf)
    return np.array(z, dtype=z.dtype)  # writeable, own memory


def _softmax_lse(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row softmax of ``z (..., S)`` with ``-inf`` masked, and its log-sum-exp (``-inf``: empty)."""
    m = np.max(z, axis=-1, keepdims=True) if z.shape[-1] else np.full(z.shape[:-1] + (1,), -np.inf)
    m = np.where(np.isneginf(m), 0.0, m)
    e = np.exp(z - m)
    total = e.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        lse = np.where(total > 0, np.log(np.where(total > 0, total, 1.0)) + m, -np.inf)[..., 0]
    return e / np.where(total > 0, total, 1.0), lse


def flex_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, score_mod: ScoreMod | None = None,
                   mask_mod: MaskMod | None = None, scale: float | None = None
                   ) -> tuple[FloatArray, FloatArray]:
    r"""Attention whose scores and mask are functions of indices (FlexAttention's semantics).

    .. math::

        \begin{aligned}
        z_{bhij} &= \operatorname{score\_mod}(s\, q_{bhi} \cdot k_{bh'j}, b, h, i, j), \\
        o_{bhi} &= \sum_{j:\ \operatorname{mask\_mod}(b, h, i, j)}
        \frac{e^{z_{bhij}}}{\sum_{j'} e^{z_{bhij'}}}\, v_{bh'j},
        \end{aligned}

    with :math:`h' = h \,/\!/\, (H / H_{kv})` (grouped heads).

    Parameters
    ----------
    q, k, v : ndarray, shapes (B, H, L, D), (B, H_kv, S, D), (B, H_kv, S, D_v)
    score_mod : callable, optional
        ``score_mod(score, b, h, q_idx, kv_idx)``: ``score (B, H, L, S)`` already scaled, and
        integer grids broadcasting to it; returns new scores (``-inf`` masks one).
    mask_mod : callable, optional
        ``mask_mod(b, h, q_idx, kv_idx)`` returning booleans (True = may attend).
    scale : float, optional
        ``1/sqrt(D)`` by default.

    Returns
    -------
    out : ndarray, shape (B, H, L, D_v)
    lse : ndarray, shape (B, H, L)
        Log-sum-exp of the modified scores; ``-inf`` and a zero output for a fully masked row,
        as torch's ``flex_attention``.

    Notes
    -----
    The score function sees the *scaled* score, as in FlexAttention. Validation, dtypes and
    grouped heads are those of :mod:`attnmath.core`. Oracle:
    ``torch.nn.attention.flex_attention.flex_attention`` on the CPU with the same functions.
    """
    score_mod, mask_mod = _check_mod(score_mod, "score_mod"), _check_mod(mask_mod, "mask_mod")
    prob = prepare(q, k, v, scale=scale)
    if len(prob.out_shape) != 4:
        raise ValueError(f"q must have shape (B, H, L, D) (score and mask functions take b and h), "
                         f"got shape {prob.inputs[0].shape}")
    B, H, L, D_v = prob.out_shape
    z = (prob.q5 @ np.swapaxes(prob.k5, -1, -2)).reshape(B, H, L, prob.S) * prob.scale  # (B,H,L,S)
    z = _modded_scores(z, score_mod, mask_mod, _grids(B, H, L, prob.S))
    p, lse = _softmax_lse(z)  # (B, H, L, S), (B, H, L)
    out = p.reshape(prob.q5.shape[:-1] + (prob.S,)) @ prob.v5  # (B, H_kv, g, L, D_v)
    return prob.finish(out), lse.astype(prob.out_dtype, copy=False)


def _check_sizes(B: object, H: object, L: object, S: object) -> tuple[int, int, int, int]:
    return (check_positive_int(B, "B"), check_positive_int(H, "H"),
            check_positive_int(L, "L", allow_zero=True), check_positive_int(S, "S", allow_zero=True))


def create_mask(mask_mod: MaskMod, B: int, H: int, L: int, S: int) -> np.ndarray:
    """The dense boolean mask ``(B, H, L, S)`` of ``mask_mod`` (torch's ``create_mask``).

    ``mask_mod(b, h, q_idx, kv_idx)`` is called once on index grids; its booleans are
    broadcast to the full shape. ``L`` and ``S`` may be 0.
    """
    if not callable(mask_mod):
        raise TypeError(f"mask_mod must be a function, got {type(mask_mod).__name__}")
    shape = _check_sizes(B, H, L, S)
    mask = _call_mod(mask_mod, "mask_mod", shape, *_grids(*shape))
    if mask.dtype != np.bool_:
        raise TypeError(f"mask_mod must return booleans (True = may attend), got dtype {mask.dtype}")
    return np.array(mask)


def _check_mods(mods: tuple, name: str) -> tuple:
    if not mods:
        raise ValueError(f"{name} needs at least one mask function")
    for n, mod in enumerate(mods):
        if not callable(mod):
            raise TypeError(f"mask function {n} of {name} must be callable, got {type(mod).__name__}")
    return mods


def and_masks(*mask_mods: MaskMod) -> MaskMod:
    """The mask function allowing a pair iff every one of ``mask_mods`` allows it (logical AND)."""
    mods = _check_mods(mask_mods, "and_masks")

    def mask_mod(b, h, q_idx, kv_idx):
        result = mods[0](b, h, q_idx, kv_idx)
        for mod in mods[1:]:
            result = result & mod(b, h, q_idx, kv_idx)
        return result

    return mask_mod


def or_masks(*mask_mods: MaskMod) -> MaskMod:
    """The mask function allowing a pair iff any one of ``mask_mods`` allows it (logical OR)."""
    mods = _check_mods(mask_mods, "or_masks")

    def mask_mod(b, h, q_idx, kv_idx):
        result = mods[0](b, h, q_idx, kv_idx)
        for mod in mods[1:]:
            result = result | mod(b, h, q_idx, kv_idx)
        return result

    return mask_mod


def _check_offset(offset: object) -> int:
    if isinstance(offset, bool) or not isinstance(offset, numbers.Integral):
        raise TypeError(f"offset must be an integer, got {type(offset).__name__}")
    return int(offset)


def causal_mask_mod(offset: int = 0) -> MaskMod:
    r"""Causal mask function: query ``i`` sees key ``j`` iff :math:`j \le i + \delta`.

    ``offset`` :math:`\delta` is ``0`` for torch's top-left alignment and ``S - L`` for the
    bottom-right alignment of decoding (:func:`attnmath.masking.causal_offset`). Oracle:
    :func:`attnmath.masking.causal_mask`.
    """
    offset = _check_offset(offset)

    def causal(b, h, q_idx, kv_idx):
        return kv_idx <= q_idx + offset

    return causal


def sliding_window_mask_mod(window: int, offset: int = 0) -> MaskMod:
    r"""Causal sliding window: :math:`0 \le (i + \delta) - j < w`.

    Oracle: :func:`attnmath.masking.sliding_window_mask` (Mistral's window, itself included).
    """
    window, offset = check_positive_int(window, "window"), _check_offset(offset)

    def sliding_window(b, h, q_idx, kv_idx):
        distance = q_idx + offset - kv_idx
        return (distance >= 0) & (distance < window)

    return sliding_window


def sink_window_mask_mod(n_sink: int, window: int, offset: int = 0) -> MaskMod:
    r"""StreamingLLM's mask: the first ``n_sink`` keys and a window of ``window``, causal.

    :math:`M_{ij} = [j \le i'] \wedge ([j < n_{\text{sink}}] \vee [j > i' - w])`,
    :math:`i' = i + \delta`. Oracle: :func:`attnmath.long_context.sink_window_mask`.
    """
    n_sink = check_positive_int(n_sink, "n_sink", allow_zero=True)
    window, offset = check_positive_int(window, "window"), _check_offset(offset)

    def sink_window(b, h, q_idx, kv_idx):
        position = q_idx + offset
        return (kv_idx <= position) & ((kv_idx < n_sink) | (kv_idx > position - window))

    return sink_window


def _lengths(lengths: object, name: str) -> np.ndarray:
    return check_int_array(lengths, name, ndim=1, minimum=0)


def padding_mask_mod(lengths: ArrayLike) -> MaskMod:
    r"""Key padding: in sequence ``b`` only the first ``lengths[b]`` keys exist,
    :math:`M_{bj} = [j < \ell_b]`. Oracle: :func:`attnmath.masking.padding_mask`."""
    lengths = _lengths(lengths, "lengths")  # (B,)

    def padding(b, h, q_idx, kv_idx):
        return kv_idx < take(lengths, b)

    return padding


def document_mask_mod(document_ids: ArrayLike) -> MaskMod:
    r"""Packed documents: token ``i`` sees token ``j`` iff both belong to one document,
    :math:`M_{ij} = [d_i = d_j]`; combine with :func:`causal_mask_mod` by :func:`and_masks`.

    ``document_ids`` has one entry per position of the packed sequence (self-attention:
    ``L, S <= len(document_ids)``). Oracle: attention run on each document separately.
    """
    ids = check_int_array(document_ids, "document_ids", ndim=1)  # (n,)

    def same_document(b, h, q_idx, kv_idx):
        return take(ids, q_idx) == take(ids, kv_idx)

    return same_document


def prefix_lm_mask_mod(prefix_lengths: ArrayLike) -> MaskMod:
    r"""Prefix-LM: bidirectional over the first :math:`p_b` tokens (the prefix), causal after,
    :math:`M_{bij} = [j \le i] \vee [j < p_b]`.

    ``prefix_lengths (B,)``, one per sequence. Oracle: non-causal attention over the prefix
    alone for the prefix's queries, causal attention for the rest.
    """
    prefix = _lengths(prefix_lengths, "prefix_lengths")  # (B,)

    def prefix_lm(b, h, q_idx, kv_idx):
        return (kv_idx <= q_idx) | (kv_idx < take(prefix, b))

    return prefix_lm


def alibi_score_mod(slopes: ArrayLike, offset: int = 0) -> ScoreMod:
    r"""ALiBi as a score function: :math:`z_{hij} = s\,q_i \cdot k_j - m_h\,(i + \delta - j)`.

    ``slopes (H,)``, e.g. :func:`attnmath.positional.alibi_slopes`. Keys after the query get a
    positive bias here; with the causal mask they are masked. Oracle:
    :func:`attnmath.positional.alibi_bias` as an additive bias.
    """
    slopes = as_array(slopes, "slopes", ndim=1, finite=True)  # (H,)
    offset = _check_offset(offset)

    def alibi(score, b, h, q_idx, kv_idx):
        return score - take(slopes, h) * (q_idx + offset - kv_idx)

    return alibi


def softcap_score_mod(cap: float) -> ScoreMod:
    r"""Soft-capping (Gemma 2): :math:`z = c \tanh(z / c)`, every score in :math:`(-c, c)`."""
    cap = check_real(cap, "cap", positive=True)

    def softcap(score, b, h, q_idx, kv_idx):
        x = score / cap
        return cap * (x.tanh() if hasattr(x, "tanh") else np.tanh(x))  # torch tensors have .tanh()

    return softcap


# ----------------------------------------------------------------------------------------------
# block masks and block sparsity
# ----------------------------------------------------------------------------------------------

#: Kinds of tile in a :class:`BlockMask`.
EMPTY, PARTIAL, FULL = 0, 1, 2


class BlockMask(NamedTuple):
    """Which tiles of the ``(L, S)`` score matrix a mask hides, allows, or allows in part."""

    #: Int8 ``(B, H, n_q, n_k)``; 0 every pair masked (skipped), 1 partly masked (computed, and
    #: ``mask_mod`` evaluated), 2 every pair allowed (computed, ``mask_mod`` not evaluated).
    kinds: np.ndarray
    #: The mask function the tiles were classified by.
    mask_mod: Any
    #: Queries per tile.
    block_q: int
    #: Keys per tile.
    block_k: int
    #: Query length.
    L: int
    #: Key length.
    S: int


def _tile_bounds(n: int, block: int) -> list[tuple[int, int]]:
    return [(start, min(start + block, n)) for start in range(0, n, block)]


def create_block_mask(mask_mod: MaskMod, B: int, H: int, L: int, S: int, *, block_q: int = 128,
                      block_k: int = 128) -> BlockMask:
    r"""Classify every ``block_q x block_k`` tile by ``mask_mod`` (torch's ``create_block_mask``).

    .. math::

        \text{kind}(T) = \begin{cases} \text{empty} & \text{no } (i, j) \in T \text{ allowed} \\
        \text{full} & \text{every } (i, j) \in T \text{ allowed} \\
        \text{partial} & \text{otherwise} \end{cases}

    Parameters
    ----------
    mask_mod : callable
        ``mask_mod(b, h, q_idx, kv_idx)`` returning booleans.
    B, H, L, S : int
        Batch, heads, query and key lengths (``L, S >= 0``; an empty length has no tiles).
    block_q, block_k : int
        Tile sizes (128 in FlexAttention); the last tile of a length may be shorter.

    Returns
    -------
    BlockMask
        ``kinds (B, H, ceil(L / block_q), ceil(S / block_k))``.

    Notes
    -----
    FlexAttention stores, per query tile, the indices of its partial and of its full key tiles
    (``kv_indices``, ``full_kv_indices``); ``kinds`` is the same information as one array. The
    mask is evaluated densely once, as torch's ``create_block_mask`` does.
    """
    block_q, block_k = check_positive_int(block_q, "block_q"), check_positive_int(block_k, "block_k")
    mask = create_mask(mask_mod, B, H, L, S)  # (B, H, L, S)
    rows, cols = _tile_bounds(L, block_q), _tile_bounds(S, block_k)
    kinds = np.zeros(mask.shape[:2] + (len(rows), len(cols)), dtype=np.int8)
    for a, (i0, i1) in enumerate(rows):
        for c, (j0, j1) in enumerate(cols):
            tile = mask[:, :, i0:i1, j0:j1]  # (B, H, l, s)
            kinds[:, :, a, c] = np.where(tile.all(axis=(-2, -1)), FULL,
                                         np.where(tile.any(axis=(-2, -1)), PARTIAL, EMPTY))
    return BlockMask(kinds, mask_mod, block_q, block_k, L, S)


class BlockWork(NamedTuple):
    """The work :func:`block_sparse_attention` did, counted."""

    #: Tiles in the ``(L, S)`` score matrix, over all batch entries and heads.
    tiles: int
    #: Tiles computed (not empty).
    tiles_computed: int
    #: Of those, tiles where ``mask_mod`` was evaluated (partial).
    tiles_masked: int
    #: Scores computed (``q . k`` products), the sum of the computed tiles' sizes.
    scores: int
    #: Scores of dense attention, ``B H L S``.
    scores_dense: int
    #: Calls of ``mask_mod`` per pair; the sizes of the partial tiles.
    mask_evaluations: int


def _check_block_mask(block_mask: object, B: int, H: int, L: int, S: int) -> BlockMask:
    if not isinstance(block_mask, BlockMask):
        raise TypeError(f"block_mask must be a BlockMask (create_block_mask), got {type(block_mask).__name__}")
    want = (B, H, -(-L // block_mask.block_q), -(-S // block_mask.block_k))
    if (block_mask.L, block_mask.S) != (L, S) or block_mask.kinds.shape != want:
        raise ValueError(f"block_mask was made for (B, H, L, S) = {block_mask.kinds.shape[:2]} + "
                         f"{(block_mask.L, block_mask.S)}, not for {(B, H, L, S)}")
    return block_mask


def _tile_state(prob, b: int, h: int, rows, cols, kind: int, score_mod, mask_mod):
    """Scores of one tile after the functions, ``-inf`` where masked: ``(l, s)``."""
    g = prob.q5.shape[-3]
    q = prob.q5[b, h // g, h % g, rows[0]:rows[1]]  # (l, D)
    k = prob.k5[b, h // g, 0, cols[0]:cols[1]]  # (s, D)
    z = (q @ k.T * prob.scale)[None, None]  # (1, 1, l, s)
    grids = (np.array(b).reshape(1, 1, 1, 1), np.array(h).reshape(1, 1, 1, 1),
             np.arange(*rows).reshape(1, 1, -1, 1), np.arange(*cols).reshape(1, 1, 1, -1))
    return _modded_scores(z, score_mod, mask_mod if kind == PARTIAL else None, grids)[0, 0]


def block_sparse_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, block_mask: BlockMask, *,
                           score_mod: ScoreMod | None = None, scale: float | None = None
                           ) -> tuple[FloatArray, BlockWork]:
    r"""FlexAttention's schedule: only non-empty tiles, merged by the online softmax.

    For each query tile the running maximum :math:`m`, sum :math:`\ell` and output
    accumulator are updated tile by tile (flash attention, :mod:`attnmath.flash`); empty tiles
    are skipped, full tiles are computed without ``block_mask.mask_mod``.

    Parameters
    ----------
    q, k, v : ndarray, shapes (B, H, L, D), (B, H_kv, S, D), (B, H_kv, S, D_v)
    block_mask : BlockMask
        From :func:`create_block_mask` for these ``B, H, L, S``.
    score_mod : callable, optional
        As in :func:`flex_attention`.
    scale : float, optional

    Returns
    -------
    out : ndarray, shape (B, H, L, D_v)
        Equal to :func:`flex_attention` with ``mask_mod=block_mask.mask_mod``.
    work : BlockWork
        Tiles and scores computed, and ``mask_mod`` evaluations.
    """
    score_mod = _check_mod(score_mod, "score_mod")
    prob = prepare(q, k, v, scale=scale)
    if len(prob.out_shape) != 4:
        raise ValueError(f"q must have shape (B, H, L, D), got shape {prob.inputs[0].shape}")
    B, H, L, D_v = prob.out_shape
    bm = _check_block_mask(block_mask, B, H, L, prob.S)
    out = np.zeros((B, H, L, D_v), dtype=prob.dtype)
    rows_all, cols_all = _tile_bounds(L, bm.block_q), _tile_bounds(prob.S, bm.block_k)
    counts = np.zeros(4, dtype=np.int64)  # tiles computed, masked, scores, mask evaluations
    g = prob.q5.shape[-3]
    for b, h, a in np.ndindex(B, H, len(rows_all)):
        rows = rows_all[a]
        m = np.full(rows[1] - rows[0], -np.inf)
        ell, acc = np.zeros_like(m), np.zeros((rows[1] - rows[0], D_v))
        for c, cols in enumerate(cols_all):
            kind = int(bm.kinds[b, h, a, c])
            if kind == EMPTY:
                continue
            z = _tile_state(prob, b, h, rows, cols, kind, score_mod, bm.mask_mod)  # (l, s)
            size = z.size
            counts += (1, kind == PARTIAL, size, size * (kind == PARTIAL))
            m_new = np.maximum(m, z.max(axis=-1))
            shift = np.where(np.isneginf(m_new), 0.0, m_new)
            p = np.exp(z - shift[:, None])  # (l, s)
            alpha = np.exp(m - shift)
            ell = alpha * ell + p.sum(axis=-1)
            acc = alpha[:, None] * acc + p @ prob.v5[b, h // g, 0, cols[0]:cols[1]]
            m = m_new
        out[b, h, rows[0]:rows[1]] = acc / np.where(ell > 0, ell, 1.0)[:, None]
    work = BlockWork(int(bm.kinds.size), int(counts[0]), int(counts[1]), int(counts[2]),
                     B * H * L * prob.S, int(counts[3]))
    return out.astype(prob.out_dtype, copy=False), work


# ----------------------------------------------------------------------------------------------
# learned sparsity: NSA, MoBA, DeepSeek sparse attention
# ----------------------------------------------------------------------------------------------


def _self_attention(q, k, v, scale):
    """``prepare`` for self-attention ``(B, H, L, D)`` with ``S == L``."""
    prob = prepare(q, k, v, scale=scale)
    if len(prob.out_shape) != 4:
        raise ValueError(f"q must have shape (B, H, L, D), got shape {prob.inputs[0].shape}")
    if prob.S != prob.L:
        raise ValueError(f"q and k must have one length (self-attention), got L={prob.L}, S={prob.S}")
    return prob


def _masked_attention(prob, allowed: np.ndarray) -> np.ndarray:
    """Output ``(B, H_kv, g, L, D_v)`` of ``prob`` under ``allowed (B, H_kv, g or 1, L, S)``."""
    z = prob.q5 @ np.swapaxes(prob.k5, -1, -2) * prob.scale  # (B, H_kv, g, L, S)
    p, _ = _softmax_lse(np.where(allowed, z, -np.inf))
    return p @ prob.v5


def nsa_compress(k: ArrayLike, v: ArrayLike, *, block: int, stride: int | None = None
                 ) -> tuple[FloatArray, FloatArray]:
    r"""NSA's compressed keys and values: the mean of each window of ``block`` tokens.

    .. math:: \tilde k_c = \frac1l \sum_{j = cd}^{cd + l - 1} k_j, \qquad
              c = 0, \dots, \lfloor (S - l)/d \rfloor

    Parameters
    ----------
    k, v : ndarray, shapes (B, H_kv, S, D), (B, H_kv, S, D_v)
    block : int
        :math:`l`, the tokens per compressed key (32 in the paper).
    stride : int, optional
        :math:`d`, the step between windows (16 in the paper); default ``block``.

    Returns
    -------
    k_cmp, v_cmp : ndarray, shapes (B, H_kv, n, D), (B, H_kv, n, D_v)
        ``n = (S - l) // d + 1`` windows (0 when ``S < l``).

    Notes
    -----
    The paper's :math:`\varphi` is a learned MLP with a position encoding inside the block;
    the mean is the parameter-free :math:`\varphi` of fla's reference (``fla.ops.nsa``).
    """
    k, v = as_array(k, "k", ndim=4, finite=True), as_array(v, "v", ndim=4, finite=True)
    if k.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"k and v must agree on (B, H_kv, S), got {k.shape} and {v.shape}")
    block = check_positive_int(block, "block")
    stride = block if stride is None else check_positive_int(stride, "stride")
    S = k.shape[-2]
    n = (S - block) // stride + 1 if S >= block else 0
    starts = np.arange(n) * stride
    take_rows = starts[:, None] + np.arange(block)[None, :]  # (n, l)
    return k[..., take_rows, :].mean(axis=-2), v[..., take_rows, :].mean(axis=-2)


class NSAOutput(NamedTuple):
    """The three branches of NSA, their gated sum, and the blocks selected."""

    #: Gated sum ``(B, H, L, D_v)``.
    out: np.ndarray
    #: Compressed branch ``(B, H, L, D_v)``; attention over the compressed keys seen so far.
    compressed: np.ndarray
    #: Selected branch ``(B, H, L, D_v)``; attention over the tokens of the selected blocks.
    selected: np.ndarray
    #: Sliding-window branch ``(B, H, L, D_v)``.
    window: np.ndarray
    #: Boolean ``(B, H_kv, L, n_blocks)``; the blocks each query (and its group) selected.
    blocks: np.ndarray


def _nsa_blocks(prob, block: int, n_select: int, p_cmp: np.ndarray) -> np.ndarray:
    """Selected blocks ``(B, H_kv, L, ceil(L / block))``: the top ``n_select`` by importance."""
    L = prob.L
    n_blocks = -(-L // block)
    importance = np.zeros(p_cmp.shape[:2] + (L, n_blocks))  # (B, H_kv, L, n_blocks)
    importance[..., :p_cmp.shape[-1]] = p_cmp.sum(axis=2)  # summed over the group's heads
    t, c = np.arange(L)[:, None], np.arange(n_blocks)[None, :]
    forced = (c == 0) | (c == t // block) | (c == t // block - 1)  # (L, n): 1 initial, 2 local
    visible = (c + 1) * block - 1 <= t
    rank = np.where(forced, np.inf, np.where(visible, importance, -np.inf))
    order = np.argsort(-rank, axis=-1, kind="stable")[..., :n_select]  # (B, H_kv, L, n)
    chosen = np.zeros(rank.shape, dtype=bool)
    np.put_along_axis(chosen, order, True, axis=-1)
    return chosen & (forced | visible)


def nsa_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, gates: ArrayLike, *, block: int,
                  n_select: int, window: int, scale: float | None = None) -> NSAOutput:
    r"""Native sparse attention: compressed, selected and sliding-window branches, gated.

    .. math::

        \begin{aligned}
        o_t = {} & g^{\text{cmp}}_t\, \operatorname{Attn}(q_t, \tilde K_t, \tilde V_t) \\
            & + g^{\text{slc}}_t\, \operatorname{Attn}(q_t, K_{\text{sel}(t)}, V_{\text{sel}(t)}) \\
            & + g^{\text{win}}_t\, \operatorname{Attn}(q_t, K_{t-w+1:t}, V_{t-w+1:t})
        \end{aligned}

    Parameters
    ----------
    q, k, v : ndarray, shapes (B, H, L, D), (B, H_kv, L, D), (B, H_kv, L, D_v)
    gates : ndarray, shape (B, H, L, 3)
        :math:`g^{\text{cmp}}, g^{\text{slc}}, g^{\text{win}} \in [0, 1]` (sigmoids in the paper).
    block : int
        Compression block = stride = selection block (:math:`l = d = l'`, as fla's reference).
    n_select : int
        :math:`n` blocks per query, the first block and the two most recent among them.
    window : int
        :math:`w` tokens of the sliding window, the query's own included.
    scale : float, optional

    Returns
    -------
    NSAOutput

    Notes
    -----
    A compressed key is visible once its block is complete, :math:`(c + 1)l - 1 \le t`. A
    block's importance is its compressed attention probability summed over the query heads of
    its group (the paper's eq. 10), so a group shares its blocks. The branches are computed
    densely with masks (a reference; the counts of :func:`nsa_tokens_per_query` are what a
    sparse kernel reads). Oracle: ``fla.ops.nsa.naive``.
    """
    prob = _self_attention(q, k, v, scale)
    B, H, L, D_v = prob.out_shape
    block, window = check_positive_int(block, "block"), check_positive_int(window, "window")
    n_select = check_positive_int(n_select, "n_select")
    gates = as_array(gates, "gates", ndim=4, finite=True)
    if gates.shape != (B, H, L, 3) or gates.min(initial=0.0) < 0 or gates.max(initial=0.0) > 1:
        raise ValueError(f"gates must have shape (B, H, L, 3) = {(B, H, L, 3)} with entries in [0, 1], "
                         f"got shape {gates.shape}")
    k_cmp, v_cmp = nsa_compress(prob.k5[:, :, 0], prob.v5[:, :, 0], block=block)  # (B, H_kv, n, .)
    t, c = np.arange(L)[:, None], np.arange(k_cmp.shape[-2])[None, :]
    z = prob.q5 @ np.swapaxes(k_cmp[:, :, None], -1, -2) * prob.scale  # (B, H_kv, g, L, n)
    p_cmp, _ = _softmax_lse(np.where((c + 1) * block - 1 <= t, z, -np.inf))
    o_cmp = p_cmp @ v_cmp[:, :, None]  # (B, H_kv, g, L, D_v)
    chosen = _nsa_blocks(prob, block, n_select, p_cmp)  # (B, H_kv, L, n_blocks)
    j = np.arange(L)[None, :]
    tokens = np.take(chosen, j[0] // block, axis=-1) & (j <= t)  # (B, H_kv, L, L)
    o_slc = _masked_attention(prob, tokens[:, :, None])
    o_win = _masked_attention(prob, (t - j >= 0) & (t - j < window))
    parts = [prob.finish(o).astype(np.float64) for o in (o_cmp, o_slc, o_win)]
    out = sum(gates[..., n, None] * parts[n] for n in range(3))
    dtype = prob.out_dtype
    compressed, selected, window_out = (x.astype(dtype) for x in parts)
    return NSAOutput(out.astype(dtype), compressed, selected, window_out, chosen)


class NSATokens(NamedTuple):
    """Key-value tokens one NSA decoding step reads, by branch, and full attention's."""

    #: Compressed tokens, :math:`\lfloor (t - l)/d \rfloor + 1` (0 while :math:`t < l`).
    compressed: int
    #: Tokens of the selected blocks, :math:`\min(n l', t)`.
    selected: int
    #: Tokens of the window, :math:`\min(w, t)`.
    window: int
    #: The sum of the three.
    total: int
    #: Full attention reads all :math:`t` tokens.
    full: int


def nsa_tokens_per_query(t: int, *, block: int = 32, stride: int = 16, select_block: int = 64,
                         n_select: int = 16, window: int = 512) -> NSATokens:
    r"""Tokens an NSA query reads after ``t`` tokens, counted branch by branch as in the paper.

    .. math:: N_t = \Bigl\lfloor \frac{t - l}{d} \Bigr\rfloor + 1 + \min(n l', t) + \min(w, t)

    The defaults are the paper's (:math:`l = 32, d = 16, l' = 64, n = 16, w = 512`). Tokens
    that two branches share are counted twice, as the paper counts them.
    """
    t = check_positive_int(t, "t")
    block, stride = check_positive_int(block, "block"), check_positive_int(stride, "stride")
    select_block = check_positive_int(select_block, "select_block")
    n_select, window = check_positive_int(n_select, "n_select"), check_positive_int(window, "window")
    compressed = (t - block) // stride + 1 if t >= block else 0
    selected, win = min(n_select * select_block, t), min(window, t)
    return NSATokens(compressed, selected, win, compressed + selected + win, t)


class BlockSelection(NamedTuple):
    """An attention output with the keys its queries selected (MoBA, DeepSeek sparse attention)."""

    #: Output ``(B, H, L, D_v)``.
    out: np.ndarray
    #: Boolean ``(B, H or 1, L, S)``; the keys each query attends (shared by the heads when 1).
    keys: np.ndarray
    #: The gate or index scores the selection ranked; ``(B, H, L, n_blocks)`` for MoBA,
    #: ``(B, L, S)`` for DeepSeek sparse attention; ``-inf`` where a key may not be chosen.
    scores: np.ndarray


def moba_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, block: int, top_k: int,
                   scale: float | None = None) -> BlockSelection:
    r"""MoBA: each query attends to its own block and the top-k earlier blocks by affinity.

    .. math::

        s_{ti} = \Bigl\langle q_t,\ \frac{1}{|I_i|} \sum_{j \in I_i} k_j \Bigr\rangle, \qquad
        g_{ti} = [\, s_{ti} \in \operatorname{Topk}(\{s_{tj}\}, k) \,]

    over the blocks :math:`I_i` of ``block`` keys that lie wholly before the query's block;
    the query's own block is always chosen (it takes one of the :math:`k` places) and masked
    causally.

    Parameters
    ----------
    q, k, v : ndarray, shapes (B, H, L, D), (B, H_kv, L, D), (B, H_kv, L, D_v)
    block : int
        Keys per block (512 to 4096 in the paper).
    top_k : int
        Blocks per query, the current one included (3 or 12 in the paper).
    scale : float, optional

    Returns
    -------
    BlockSelection
        ``keys (B, H, L, L)``, ``scores (B, H, L, n_blocks)`` (``+inf`` the own block,
        ``-inf`` a later one).

    Notes
    -----
    The gate is parameter-free and per head (grouped heads share keys, not gates). Ties among
    blocks go to the earlier block. Oracle: the authors' ``moba_attn_varlen_naive`` (same
    rule, written out in the tests) and ``flex_attention`` with the selected keys as the mask.
    """
    prob = _self_attention(q, k, v, scale)
    block, top_k = check_positive_int(block, "block"), check_positive_int(top_k, "top_k")
    B, H, L, _ = prob.out_shape
    n = -(-L // block)
    starts = np.arange(n) * block
    means = np.stack([prob.k5[..., s:s + block, :].mean(axis=-2) for s in starts], axis=-2)
    gate = prob.q5 @ np.swapaxes(means, -1, -2)  # (B, H_kv, g, L, n)
    t, i = np.arange(L)[:, None], np.arange(n)[None, :]
    gate = np.where(i == t // block, np.inf, np.where(i < t // block, gate, -np.inf))
    order = np.argsort(-gate, axis=-1, kind="stable")[..., :top_k]
    chosen = np.zeros(gate.shape, dtype=bool)
    np.put_along_axis(chosen, order, True, axis=-1)
    chosen &= ~np.isneginf(gate)
    j = np.arange(L)
    keys = np.take(chosen, j // block, axis=-1) & (j[None, :] <= t)  # (B, H_kv, g, L, L)
    out = prob.finish(_masked_attention(prob, keys))
    return BlockSelection(out, keys.reshape(B, H, L, L), gate.reshape(B, H, L, n).astype(out.dtype, copy=False))


def moba_keys_per_query(L: int, *, block: int, top_k: int) -> np.ndarray:
    r"""Keys each query of a length-``L`` sequence attends under MoBA (data-independent).

    .. math:: n_t = (t \bmod B + 1) + B \min\bigl(k - 1, \lfloor t / B \rfloor\bigr)

    Returns an int64 array ``(L,)``; full causal attention attends :math:`t + 1`. The last
    query of a sequence of whole blocks attends :math:`kB` keys, the paper's count.
    """
    L = check_positive_int(L, "L")
    block, top_k = check_positive_int(block, "block"), check_positive_int(top_k, "top_k")
    t = np.arange(L, dtype=np.int64)
    return t % block + 1 + block * np.minimum(top_k - 1, t // block)


def dsa_index_scores(q_index: ArrayLike, k_index: ArrayLike, w_index: ArrayLike) -> FloatArray:
    r"""DeepSeek's lightning indexer, causal: :math:`I_{ts} = \sum_j w_{tj}\,
    \operatorname{ReLU}(q^I_{tj} \cdot k^I_s)` for :math:`s \le t`, :math:`-\infty` after.

    Parameters
    ----------
    q_index : ndarray, shape (B, H_I, L, D_I)
        Index queries, :math:`H_I` indexer heads.
    k_index : ndarray, shape (B, L, D_I)
        One index key per token, shared by the indexer heads.
    w_index : ndarray, shape (B, H_I, L)
        Per-head weights derived from the query token.

    Returns
    -------
    ndarray, shape (B, L, L)

    Notes
    -----
    No scale inside the ReLU, as in the formula of DeepSeek-V3.2-Exp; fla's reference
    multiplies by :math:`1/\sqrt{D_I}`, which leaves the ranking, and so the selection, alone.
    """
    qi = as_array(q_index, "q_index", ndim=4, finite=True)
    ki = as_array(k_index, "k_index", ndim=3, finite=True)
    wi = as_array(w_index, "w_index", ndim=3, finite=True)
    B, H_I, L, D_I = qi.shape
    if ki.shape != (B, L, D_I):
        raise ValueError(f"k_index must have shape (B, L, D_I) = {(B, L, D_I)}, got {ki.shape}")
    if wi.shape != (B, H_I, L):
        raise ValueError(f"w_index must have shape (B, H_I, L) = {(B, H_I, L)}, got {wi.shape}")
    relu = np.maximum(qi @ np.swapaxes(ki, -1, -2)[:, None], 0.0)  # (B, H_I, L, L)
    scores = np.einsum("bjt,bjts->bts", wi, relu)  # (B, L, L)
    return np.where(np.tril(np.ones((L, L), dtype=bool)), scores, -np.inf)


def dsa_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, q_index: ArrayLike, k_index: ArrayLike,
                  w_index: ArrayLike, *, top_k: int, scale: float | None = None) -> BlockSelection:
    r"""DeepSeek sparse attention: attend only to the top-k earlier tokens of the indexer.

    .. math:: u_t = \operatorname{Attn}\bigl(q_t, \{(k_s, v_s) : I_{ts} \in
              \operatorname{Top-}k(I_{t,:})\}\bigr)

    Parameters
    ----------
    q, k, v : ndarray, shapes (B, H, L, D), (B, H_kv, L, D), (B, H_kv, L, D_v)
    q_index, k_index, w_index : ndarray
        The indexer's inputs (:func:`dsa_index_scores`).
    top_k : int
        Keys per query (2048 in DeepSeek-V3.2-Exp); a query with fewer earlier tokens sees all.
    scale : float, optional

    Returns
    -------
    BlockSelection
        ``keys (B, 1, L, L)``: one selection shared by every head (the MQA mode of MLA);
        ``scores (B, L, L)`` the index scores.

    Notes
    -----
    Ties go to the earlier token. Oracle: ``fla.ops.dsa.naive``.
    """
    prob = _self_attention(q, k, v, scale)
    top_k = check_positive_int(top_k, "top_k")
    scores = dsa_index_scores(q_index, k_index, w_index)  # (B, L, L)
    B, H, L, _ = prob.out_shape
    if scores.shape != (B, L, L):
        raise ValueError(f"the indexer's inputs must be for (B, L) = {(B, L)}, got scores of shape {scores.shape}")
    order = np.argsort(-scores, axis=-1, kind="stable")[..., :top_k]
    keys = np.zeros(scores.shape, dtype=bool)
    np.put_along_axis(keys, order, True, axis=-1)
    keys &= ~np.isneginf(scores)  # (B, L, L)
    out = prob.finish(_masked_attention(prob, keys[:, None, None]))
    return BlockSelection(out, keys[:, None], scores)


class SparseCost(NamedTuple):
    """Multiply-adds of a causal prefill of ``L`` tokens, dense against sparse."""

    #: Query-key pairs scored by the dense causal attention, :math:`L(L+1)/2`.
    dense_pairs: int
    #: Pairs the sparse attention attends.
    sparse_pairs: int
    #: Pairs the selector scores (the indexer; every causal pair; 0 for a fixed pattern).
    selector_pairs: int
    #: Multiply-adds of dense attention, ``dense_pairs * H (D + D_v)``.
    dense_macs: int
    #: Multiply-adds of the sparse attention plus its selector.
    sparse_macs: int


def dsa_cost(L: int, *, top_k: int, H: int, D: int, D_v: int, H_index: int, D_index: int
             ) -> SparseCost:
    r"""Count the work of DeepSeek sparse attention against dense causal attention.

    .. math::

        \begin{aligned}
        \text{pairs}_{\text{sparse}} &= \sum_{t=0}^{L-1} \min(k, t + 1), \\
        \text{MACs} &= \text{pairs}_{\text{sparse}}\, H (D + D_v)
                      + \tfrac{L(L+1)}{2}\, H_I (D_I + 1)
        \end{aligned}

    The main attention grows as :math:`O(Lk)`; the indexer still scores every causal pair,
    :math:`O(L^2)`, at :math:`H_I (D_I + 1)` multiply-adds per pair.
    """
    L, top_k = check_positive_int(L, "L"), check_positive_int(top_k, "top_k")
    H, D, D_v = check_positive_int(H, "H"), check_positive_int(D, "D"), check_positive_int(D_v, "D_v")
    H_index, D_index = check_positive_int(H_index, "H_index"), check_positive_int(D_index, "D_index")
    dense = L * (L + 1) // 2
    m = min(top_k, L)
    sparse = m * (m + 1) // 2 + (L - m) * top_k
    return SparseCost(dense, sparse, dense, dense * H * (D + D_v),
                      sparse * H * (D + D_v) + dense * H_index * (D_index + 1))


# ----------------------------------------------------------------------------------------------
# gated and differential attention
# ----------------------------------------------------------------------------------------------


def gated_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, gate_logits: ArrayLike, *,
                    mask: ArrayLike | None = None, causal: bool = False,
                    scale: float | None = None) -> tuple[FloatArray, FloatArray]:
    r"""Gated attention (Qiu et al. 2025): the output of each head times a sigmoid gate.

    .. math:: Y' = \operatorname{SDPA}(Q, K, V) \odot \sigma(X W_\theta)

    Parameters
    ----------
    q, k, v : ndarray, shapes (B, H, L, D), (B, H_kv, S, D), (B, H_kv, S, D_v)
    gate_logits : ndarray
        :math:`X W_\theta` per head, broadcasting to ``(B, H, L, D_v)``: ``(B, H, L, D_v)`` for
        the paper's elementwise gate, ``(B, H, L, 1)`` for its headwise gate.
    mask, causal, scale
        As in :func:`attnmath.attention.scaled_dot_product_attention`.

    Returns
    -------
    out : ndarray, shape (B, H, L, D_v)
    gate : ndarray, shape (B, H, L, D_v)
        :math:`\sigma(X W_\theta)` in :math:`(0, 1)`.

    Notes
    -----
    The gate depends on the query token only (the paper's G1 position, after SDPA and before
    the output projection). With it a head can output almost nothing for a token while its
    attention weights still sum to one; without it the only way is to put the weight on keys
    whose values are small, the attention sink.
    """
    from .attention import scaled_dot_product_attention

    out, _ = scaled_dot_product_attention(q, k, v, mask=mask, causal=causal, scale=scale)
    logits = as_array(gate_logits, "gate_logits", finite=True)
    try:
        logits = np.broadcast_to(logits, out.shape)
    except ValueError:
        raise ValueError(f"gate_logits of shape {logits.shape} does not broadcast to the output's "
                         f"shape {out.shape} (B, H, L, D_v)") from None
    gate = 0.5 * (1.0 + np.tanh(0.5 * logits))  # the sigmoid, without overflow
    return (out * gate).astype(out.dtype, copy=False), gate


def differential_lambda_init(layer: int) -> float:
    r"""The initial :math:`\lambda` of differential attention in layer ``layer`` (from 1):
    :math:`\lambda_{\text{init}} = 0.8 - 0.6\, e^{-0.3(l - 1)}`."""
    layer = check_positive_int(layer, "layer")
    return 0.8 - 0.6 * float(np.exp(-0.3 * (layer - 1)))


def differential_attention(q1: ArrayLike, q2: ArrayLike, k1: ArrayLike, k2: ArrayLike,
                           v: ArrayLike, lam: float, *, causal: bool = False,
                           scale: float | None = None) -> tuple[FloatArray, FloatArray]:
    r"""Differential attention (Ye et al. 2025): the difference of two softmax maps.

    .. math:: \operatorname{DiffAttn} = \bigl(\operatorname{softmax}(s\,Q_1 K_1^\top)
              - \lambda\, \operatorname{softmax}(s\,Q_2 K_2^\top)\bigr) V

    Parameters
    ----------
    q1, q2 : ndarray, shape (B, H, L, D)
    k1, k2 : ndarray, shape (B, H_kv, S, D)
    v : ndarray, shape (B, H_kv, S, D_v)
    lam : float
        :math:`\lambda`; the paper re-parameterises it as
        :math:`e^{\lambda_{q1}\cdot\lambda_{k1}} - e^{\lambda_{q2}\cdot\lambda_{k2}}
        + \lambda_{\text{init}}` (:func:`differential_lambda_init`).
    causal, scale
        As in :func:`attnmath.attention.scaled_dot_product_attention`.

    Returns
    -------
    out : ndarray, shape (B, H, L, D_v)
    weights : ndarray, shape (B, H, L, S)
        :math:`P_1 - \lambda P_2`; each row sums to :math:`1 - \lambda` and may be negative.

    Notes
    -----
    The layer then normalises each head (GroupNorm) and multiplies by
    :math:`1 - \lambda_{\text{init}}`; that is outside this function. A component that both
    maps share cancels up to the factor :math:`1 - \lambda`: the paper's noise cancellation.
    """
    from .attention import scaled_dot_product_attention

    lam = check_real(lam, "lam")
    q1, q2, k1, k2 = (as_array(x, name, finite=True) for x, name in ((q1, "q1"), (q2, "q2"), (k1, "k1"), (k2, "k2")))
    for name, x, like in (("q2", q2, q1), ("k2", k2, k1)):
        if x.shape != like.shape:
            raise ValueError(f"{name} must have the shape of {name[0]}1, {like.shape}, got {x.shape}")
    out1, c1 = scaled_dot_product_attention(q1, k1, v, causal=causal, scale=scale)
    _, c2 = scaled_dot_product_attention(q2, k2, v, causal=causal, scale=scale)
    weights = c1.probs - lam * c2.probs  # (B, H, L, S), in the working dtype
    H, H_kv = weights.shape[-3], np.shape(v)[-3]
    v_full = np.repeat(np.asarray(v, dtype=weights.dtype), H // H_kv, axis=-3)  # (B, H, S, D_v)
    dtype = out1.dtype  # the input's: float16 is computed in float32 and returned in float16
    return (weights @ v_full).astype(dtype, copy=False), weights.astype(dtype, copy=False)


# ----------------------------------------------------------------------------------------------
# FP8 attention, emulated
# ----------------------------------------------------------------------------------------------


class FP8Format(NamedTuple):
    """An 8-bit floating-point format (Micikevicius et al. 2022)."""

    #: ``"e4m3"`` or ``"e5m2"``.
    name: str
    #: Exponent bits.
    exponent_bits: int
    #: Mantissa bits :math:`m`; the unit roundoff is :math:`u = 2^{-(m+1)}`.
    mantissa_bits: int
    #: Exponent bias.
    bias: int
    #: Largest finite value (448 for E4M3, whose top code is NaN only; 57344 for E5M2).
    max: float
    #: Smallest normal value, :math:`2^{1 - \text{bias}}`.
    min_normal: float
    #: Smallest subnormal value, the spacing below ``min_normal``, :math:`2^{1 - \text{bias} - m}`.
    min_subnormal: float


#: The two FP8 formats of the paper, by name.
FP8_FORMATS = {
    "e4m3": FP8Format("e4m3", 4, 3, 7, 448.0, 2.0**-6, 2.0**-9),
    "e5m2": FP8Format("e5m2", 5, 2, 15, 57344.0, 2.0**-14, 2.0**-16),
}


def _check_format(fmt: object, name: str = "fmt") -> FP8Format:
    if isinstance(fmt, FP8Format):
        return fmt
    if not isinstance(fmt, str) or fmt not in FP8_FORMATS:
        raise ValueError(f"{name} must be one of {sorted(FP8_FORMATS)}, got {fmt!r}")
    return FP8_FORMATS[fmt]


def fp8_round(x: ArrayLike, fmt: str | FP8Format = "e4m3") -> FloatArray:
    r"""Round to the nearest FP8 value, ties to even, saturating at :math:`\pm` ``max``.

    .. math::

        \begin{aligned}
        \operatorname{fl}(x) &= \operatorname{sign}(x)\, \min\bigl(\text{max},\
              \Delta(x) \operatorname{rne}(|x| / \Delta(x))\bigr), \\
        \Delta(x) &= 2^{\max(e(x),\, 1 - \text{bias}) - m}
        \end{aligned}

    with :math:`e(x) = \lfloor \log_2 |x| \rfloor` and rne rounding half to even.

    Parameters
    ----------
    x : array_like
        Finite real numbers.
    fmt : {"e4m3", "e5m2"}

    Returns
    -------
    ndarray of float64
        Values on the format's grid (every one is exactly representable in float64).

    Notes
    -----
    Below ``min_normal`` the spacing is constant (subnormals), and values under half the
    smallest subnormal become zero. Saturation replaces overflow, as FP8 kernels convert with
    ``satfinite``; torch's ``.to(torch.float8_e4m3fn)`` saturates too, but its
    ``.to(torch.float8_e5m2)`` overflows to infinity, the divergence the peer tests document.
    Oracle: torch's FP8 dtypes.
    """
    f8 = _check_format(fmt)
    x = as_array(x, "x", allow_int=True, finite=True).astype(np.float64)
    a = np.minimum(np.abs(x), f8.max)
    _, e = np.frexp(a)  # a = f 2^e with f in [0.5, 1): floor(log2 a) = e - 1
    spacing = np.ldexp(1.0, np.maximum(e - 1, 1 - f8.bias) - f8.mantissa_bits)
    y = np.minimum(np.round(a / spacing) * spacing, f8.max)
    return np.copysign(y, x)


def _blocks(n: int, block: int | None) -> list[slice]:
    return [slice(0, n)] if block is None else [slice(s, min(s + block, n)) for s in range(0, n, block)]


def fp8_quantize(x: ArrayLike, fmt: str | FP8Format = "e4m3", *, block: int | None = None
                 ) -> tuple[FloatArray, FloatArray]:
    r"""Scale, round to FP8 and scale back, one scale per block of rows (or per tensor).

    .. math:: \sigma_b = \frac{\max_{i \in b} \lVert x_i \rVert_\infty}{\text{max}}, \qquad
              \hat x_i = \sigma_b\, \operatorname{fl}(x_i / \sigma_b)

    Parameters
    ----------
    x : ndarray, shape (..., n, d)
        Rows to quantise (queries, keys or values).
    fmt : {"e4m3", "e5m2"}
    block : int, optional
        Rows per scale (FlashAttention-3 scales each tile of the matmuls); ``None``: one scale
        for the whole tensor.

    Returns
    -------
    x_hat : ndarray, shape (..., n, d)
        The dequantised values.
    scales : ndarray, shape (..., n_blocks)
        :math:`\sigma_b` (1 for an all-zero block); per tensor, shape ``(1,)``.
    """
    f8 = _check_format(fmt)
    x = as_array(x, "x", ndim=None, finite=True).astype(np.float64)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., n, d), got shape {x.shape}")
    if block is not None:
        block = check_positive_int(block, "block")
    x_hat = np.empty_like(x)
    slices = _blocks(x.shape[-2], block)
    lead = x.shape[:-2] if block is not None else ()
    scales = np.ones(lead + (len(slices),))
    for n, rows in enumerate(slices):
        part = x[..., rows, :]
        axes = (-2, -1) if block is not None else tuple(range(x.ndim))
        amax = np.abs(part).max(axis=axes, initial=0.0)
        sigma = np.where(amax > 0, amax / f8.max, 1.0)
        scales[..., n] = sigma
        s = sigma[..., None, None] if block is not None else sigma
        x_hat[..., rows, :] = fp8_round(part / s, f8) * s
    return x_hat, scales


def hadamard_rotation(D: int, seed: int) -> FloatArray:
    r"""A random orthogonal Hadamard rotation :math:`R = H_D\,\operatorname{diag}(\pm 1)/\sqrt D`.

    FlashAttention-3's incoherent processing multiplies queries and keys by one such
    :math:`R`: :math:`(QR)(KR)^\top = QK^\top`, while an outlier coordinate is spread over all
    :math:`D`. ``D`` must be a power of two (Sylvester's construction).
    """
    D = check_positive_int(D, "D")
    if D & (D - 1):
        raise ValueError(f"D must be a power of two, got {D}")
    from ._validate import as_rng

    signs = as_rng(seed).choice([-1.0, 1.0], size=D)
    h = np.ones((1, 1))
    while h.shape[0] < D:
        h = np.block([[h, h], [h, -h]])
    return h * signs[None, :] / np.sqrt(D)  # (D, D)


class FP8Attention(NamedTuple):
    """FP8 attention, emulated: its output and what went into it."""

    #: Output ``(B, H, L, D_v)`` in float64.
    out: np.ndarray
    #: Scores ``(B, H, L, S)`` from the quantised (and rotated) queries and keys.
    scores: np.ndarray
    #: The dequantised queries ``(B, H, L, D)`` (after the rotation, if any).
    q_hat: np.ndarray
    #: The dequantised keys ``(B, H, S, D)`` (after the rotation, if any).
    k_hat: np.ndarray
    #: The dequantised values ``(B, H, S, D_v)``.
    v_hat: np.ndarray


def _fp8_inputs(q, k, v, rotation, scale):
    """Validated float64 ``q (B,H,L,D)``, ``k``, ``v`` repeated to ``H`` heads, rotated, and the scale."""
    prob = prepare(q, k, v, scale=scale)
    if len(prob.out_shape) != 4:
        raise ValueError(f"q must have shape (B, H, L, D), got shape {prob.inputs[0].shape}")
    B, H, L, _ = prob.out_shape
    qf = prob.q5.reshape(B, H, L, -1).astype(np.float64)
    kf, vf = (np.broadcast_to(x, prob.q5.shape[:3] + x.shape[-2:]).reshape(B, H, prob.S, -1)
              .astype(np.float64) for x in (prob.k5, prob.v5))
    if rotation is not None:
        D = qf.shape[-1]
        r = as_array(rotation, "rotation", ndim=2, finite=True)
        if r.shape != (D, D) or not np.allclose(r @ r.T, np.eye(D), atol=1e-10):
            raise ValueError(f"rotation must be an orthogonal (D, D) = {(D, D)} matrix, got shape {r.shape}")
        qf, kf = qf @ r, kf @ r
    return qf, kf, vf, prob.scale


def fp8_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, fmt: str = "e4m3",
                  block_q: int | None = None, block_k: int | None = None,
                  rotation: ArrayLike | None = None, quantize_probs: bool = True,
                  scale: float | None = None) -> FP8Attention:
    r"""Attention with FP8 inputs to both matmuls, emulated in float64 (FlashAttention-3's recipe).

    .. math::

        \hat Z = s\,\hat Q \hat K^\top, \qquad
        \tilde P_{ij} = \operatorname{fl}\bigl(e^{\hat Z_{ij} - \max_{j'} \hat Z_{ij'}}\bigr), \qquad
        \hat O = \frac{\tilde P \hat V}{\sum_j e^{\hat Z_{ij} - \max_{j'} \hat Z_{ij'}}}

    Parameters
    ----------
    q, k, v : ndarray, shapes (B, H, L, D), (B, H_kv, S, D), (B, H_kv, S, D_v)
    fmt : {"e4m3", "e5m2"}
        Format of :math:`Q, K, V` (the probabilities are always E4M3, in :math:`[0, 1]`).
    block_q, block_k : int, optional
        Rows per scale of :math:`Q` and of :math:`K, V` (:func:`fp8_quantize`); ``None``:
        one scale per tensor (per batch entry and head together).
    rotation : ndarray, optional
        An orthogonal ``(D, D)`` matrix applied to ``q`` and ``k`` first (:func:`hadamard_rotation`).
    quantize_probs : bool
        Round the exponentials to E4M3 before the second matmul, as the FP8 kernel does.
    scale : float, optional

    Returns
    -------
    FP8Attention

    Notes
    -----
    Products are accumulated in float64 here (FP32 on the GPU), so the error measured is the
    error of the inputs' rounding; the row sum is taken before the exponentials are rounded, as
    in FlashAttention-3. Oracle: float64 attention, within :func:`fp8_attention_error_bound`.
    """
    from ._validate import check_bool

    fmt_qkv = _check_format(fmt)
    quantize_probs = check_bool(quantize_probs, "quantize_probs")
    qf, kf, vf, s = _fp8_inputs(q, k, v, rotation, scale)
    bq = None if block_q is None else check_positive_int(block_q, "block_q")
    bk = None if block_k is None else check_positive_int(block_k, "block_k")
    q_hat, k_hat, v_hat = (fp8_quantize(x, fmt_qkv, block=b)[0] for x, b in ((qf, bq), (kf, bk), (vf, bk)))
    z = s * q_hat @ np.swapaxes(k_hat, -1, -2)  # (B, H, L, S)
    if z.shape[-1] == 0:
        return FP8Attention(np.zeros(z.shape[:-1] + (vf.shape[-1],)), z, q_hat, k_hat, v_hat)
    e = np.exp(z - z.max(axis=-1, keepdims=True))  # in (0, 1], max 1 per row
    total = e.sum(axis=-1, keepdims=True)
    p_tilde = fp8_round(e, "e4m3") if quantize_probs else e
    return FP8Attention(p_tilde @ v_hat / total, z, q_hat, k_hat, v_hat)


def _rounding_bound(x: np.ndarray, fmt: FP8Format, block: int | None) -> np.ndarray:
    """Per-entry bound on ``|x_hat - x|``: ``max(u |x|, sigma * min_subnormal / 2)``."""
    u = 2.0 ** -(fmt.mantissa_bits + 1)
    _, scales = fp8_quantize(x, fmt, block=block)
    if block is None:
        sigma = np.broadcast_to(scales[0], x.shape[:-1])
    else:
        sigma = np.repeat(scales, block, axis=-1)[..., :x.shape[-2]]  # (..., n)
    return np.maximum(u * np.abs(x), sigma[..., None] * fmt.min_subnormal / 2)


def fp8_attention_error_bound(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, fmt: str = "e4m3",
                              block_q: int | None = None, block_k: int | None = None,
                              rotation: ArrayLike | None = None, scale: float | None = None
                              ) -> FloatArray:
    r"""A bound on :math:`\max_c |\hat O_{ic} - O_{ic}|` per query row of :func:`fp8_attention`.

    With :math:`\varepsilon(x) = \max(u|x|, \sigma\,\delta_{\text{sub}}/2)` the rounding bound of
    one entry (:math:`u = 2^{-(m+1)}`, :math:`\sigma` its block's scale, :math:`\delta_{\text{sub}}`
    the smallest subnormal),

    .. math::

        \begin{aligned}
        \delta_i &= s \max_j \sum_d \bigl(\varepsilon(q_{id})|k_{jd}| + |q_{id}|\varepsilon(k_{jd})
                    + \varepsilon(q_{id})\varepsilon(k_{jd})\bigr), \\
        \text{bound}_i &= \max_{jc}\bigl(|v_{jc}| + \varepsilon(v_{jc})\bigr)
            \bigl(e^{2\delta_i} - 1 + u_{P} + S\,\delta^P_{\text{sub}}/(2\ell_i)\bigr) \\
            &\qquad + \max_{jc} \varepsilon(v_{jc}),
        \end{aligned}

    with :math:`u_P, \delta^P_{\text{sub}}` those of E4M3 for the probabilities and
    :math:`\ell_i = \sum_j e^{\hat z_{ij} - \max_{j'} \hat z_{ij'}} \ge 1` the row sum of the
    rounded inputs' scores ({prf:ref}`thm-fp8-bound` in the chapter proves it). Returns ``(B, H, L)``.
    """
    fmt_qkv = _check_format(fmt)
    qf, kf, vf, s = _fp8_inputs(q, k, v, rotation, scale)
    bq = None if block_q is None else check_positive_int(block_q, "block_q")
    bk = None if block_k is None else check_positive_int(block_k, "block_k")
    eq, ek, ev = (_rounding_bound(x, fmt_qkv, b) for x, b in ((qf, bq), (kf, bk), (vf, bk)))
    dz = s * (eq @ np.swapaxes(np.abs(kf), -1, -2) + np.abs(qf) @ np.swapaxes(ek, -1, -2)
              + eq @ np.swapaxes(ek, -1, -2))  # (B, H, L, S)
    delta = dz.max(axis=-1, initial=0.0)  # (B, H, L)
    e4m3 = FP8_FORMATS["e4m3"]
    vmax = (np.abs(vf) + ev).max(axis=(-2, -1), initial=0.0)[..., None]  # (B, H, 1)
    q_hat, k_hat = fp8_quantize(qf, fmt_qkv, block=bq)[0], fp8_quantize(kf, fmt_qkv, block=bk)[0]
    z = s * q_hat @ np.swapaxes(k_hat, -1, -2)  # the scores fp8_attention computes
    row_sum = np.exp(z - z.max(axis=-1, keepdims=True, initial=-np.inf)).sum(axis=-1) if z.shape[-1] \
        else np.ones(z.shape[:-1])  # l_i >= 1: the largest term is 1
    prob_term = (np.expm1(2 * delta) + 2.0 ** -(e4m3.mantissa_bits + 1)
                 + vf.shape[-2] * e4m3.min_subnormal / (2 * row_sum))
    return vmax * prob_term + ev.max(axis=(-2, -1), initial=0.0)[..., None]


#: The variants of :func:`fp8_outlier_experiment`, as (name, tiles, rotation, probabilities rounded).
FP8_OUTLIER_METHODS = (("per tensor", False, False, True), ("per tile", True, False, True),
                       ("tile + rotation", True, True, True), ("per tensor, exact P", False, False, False),
                       ("tile + rotation, exact P", True, True, False))


@dataclass(frozen=True)
class FP8OutlierConfig:
    """Settings of :func:`fp8_outlier_experiment` (the chapter's FP8 figure and its box)."""

    #: Factors that one entry in ``1/share`` of the queries, keys and values is multiplied by.
    sizes: tuple[float, ...] = (1.0, 3.0, 10.0, 30.0, 100.0)
    seeds: tuple[int, ...] = tuple(range(30))
    L: int = 256
    D: int = 64
    #: Rows per scale in the tiled variants.
    block: int = 64
    share: float = 1e-3


def fp8_outlier_inputs(seed: int, size: float, config: FP8OutlierConfig = FP8OutlierConfig()
                       ) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Standard normal ``(1, 2, L, D)`` queries, keys and values, one entry in ``1/share``
    multiplied by ``size`` (drawn with ``seed + 100``)."""
    from .testing import random_qkv

    if not isinstance(config, FP8OutlierConfig):
        raise TypeError(f"config must be an FP8OutlierConfig, got {type(config).__name__}")
    q, k, v = random_qkv(B=1, H=2, L=config.L, D=config.D, seed=check_int(seed, "seed", minimum=0))
    size = check_real(size, "size", positive=True)
    rng = np.random.default_rng(seed + 100)
    for x in (q, k, v):
        x[rng.random(x.shape) < config.share] *= size
    return q, k, v


def fp8_outlier_experiment(config: FP8OutlierConfig = FP8OutlierConfig()) -> dict[str, Any]:
    r"""RMSE of emulated E4M3 attention against float64 on inputs with outliers, per seed.

    For each outlier size and seed (:func:`fp8_outlier_inputs`), :func:`fp8_attention` with one
    scale per tensor, one per tile of ``block`` rows, tiles after :func:`hadamard_rotation`
    (seeded with the seed), and the first and last again with the probabilities left unrounded
    (:data:`FP8_OUTLIER_METHODS`). Returns ``{"config", "rmse": {method: [[per seed] per
    size]}}``, plain data; deterministic. ``python -m attnmath.programmable --fp8-out
    book/data/fp8_outliers.json`` writes the chapter's record (minutes of CPU).
    """
    from .testing import sdpa_oracle

    if not isinstance(config, FP8OutlierConfig):
        raise TypeError(f"config must be an FP8OutlierConfig, got {type(config).__name__}")
    rmse: dict[str, list[list[float]]] = {name: [] for name, *_ in FP8_OUTLIER_METHODS}
    for size in config.sizes:
        rows: dict[str, list[float]] = {name: [] for name in rmse}
        for seed in config.seeds:
            q, k, v = fp8_outlier_inputs(seed, size, config)
            ref = sdpa_oracle(q, k, v)
            for name, tiles, rotate, round_p in FP8_OUTLIER_METHODS:
                block = config.block if tiles else None
                out = fp8_attention(q, k, v, rotation=hadamard_rotation(config.D, seed) if rotate else None,
                                    quantize_probs=round_p, block_q=block, block_k=block).out
                rows[name].append(float(np.sqrt(np.mean((out - ref) ** 2))))
        for name in rmse:
            rmse[name].append(rows[name])
    return {"config": json.loads(json.dumps(asdict(config))), "rmse": rmse}


# ----------------------------------------------------------------------------------------------
# gated attention and attention sinks, measured on a small trained model
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GatedSinkConfig:
    """Settings of :func:`gated_sink_experiment` (a one-layer model on a task with idle heads).

    Each sequence starts with a BOS token (0); a token is a *trigger* (1) with probability
    ``p_trigger``, otherwise one of ``2 .. V - 1``. The target is the token itself, except at a
    trigger, where it is the first token after BOS: the attention layer has work only at the
    triggers. The model embeds tokens and positions, has one causal attention layer over the
    strictly earlier tokens (BOS sees itself; no head can copy its own token) and reads the
    logits with the embedding matrix (tied), so an idle head that writes anything disturbs the
    answer.
    """

    V: int = 16
    L: int = 24
    C: int = 16
    H: int = 2
    p_trigger: float = 0.15
    steps: int = 500
    batch: int = 64
    lr: float = 3e-3
    seeds: tuple[int, ...] = (0, 1, 2)
    gates: tuple[str, ...] = ("none", "elementwise", "headwise")

    def __post_init__(self) -> None:
        for name in ("V", "L", "C", "H", "steps", "batch"):
            check_positive_int(getattr(self, name), name)
        if self.V < 4 or self.L < 3 or self.C % self.H:
            raise ValueError(f"need V >= 4, L >= 3 and H dividing C, got V={self.V}, L={self.L}, "
                             f"C={self.C}, H={self.H}")
        from ._validate import check_probability

        check_probability(self.p_trigger, "p_trigger")
        check_real(self.lr, "lr", positive=True)
        if not self.seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in self.seeds):
            raise ValueError(f"seeds must be non-negative integers, at least one, got {self.seeds!r}")
        if not self.gates or any(g not in ("none", "elementwise", "headwise") for g in self.gates):
            raise ValueError(f"gates must name 'none', 'elementwise' or 'headwise', got {self.gates!r}")


def sink_batch(B: int, config: GatedSinkConfig, seed: int | np.random.Generator
               ) -> tuple[np.ndarray, np.ndarray]:
    """Tokens ``(B, L)`` and targets ``(B, L)`` of the idle-head task of :class:`GatedSinkConfig`."""
    from ._validate import as_rng

    B = check_positive_int(B, "B")
    if not isinstance(config, GatedSinkConfig):
        raise TypeError(f"config must be a GatedSinkConfig, got {type(config).__name__}")
    rng = as_rng(seed)
    tokens = rng.integers(2, config.V, size=(B, config.L))
    tokens[rng.random((B, config.L)) < config.p_trigger] = 1
    tokens[:, 0] = 0
    tokens[:, 1] = rng.integers(2, config.V, size=B)  # the token every trigger asks for
    targets = np.where(tokens == 1, tokens[:, 1:2], tokens)
    return tokens, targets


def _sink_model(config: GatedSinkConfig, gate: str, seed: int) -> Any:
    import torch
    from torch import nn

    torch.manual_seed(seed)
    C, H = config.C, config.H
    model = nn.ModuleDict({"emb": nn.Embedding(config.V, C), "pos": nn.Embedding(config.L, C),
                           "norm": nn.LayerNorm(C), "qkv": nn.Linear(C, 3 * C), "out": nn.Linear(C, C)})
    if gate != "none":
        model["gate"] = nn.Linear(C, C if gate == "elementwise" else H)
    return model


def _sink_forward(model: Any, tokens: Any, config: GatedSinkConfig) -> tuple[Any, Any, Any]:
    """Logits ``(B, L, V)``, attention weights ``(B, H, L, L)`` and attention output ``(B, L, C)``."""
    import torch

    B, L = tokens.shape
    H, C = config.H, config.C
    x = model["emb"](tokens) + model["pos"](torch.arange(L))  # (B, L, C)
    h = model["norm"](x)
    q, k, v = model["qkv"](h).view(B, L, 3, H, C // H).permute(2, 0, 3, 1, 4)  # (B, H, L, C/H) each
    z = q @ k.transpose(-1, -2) / (C // H) ** 0.5  # (B, H, L, L)
    hidden = torch.ones(L, L, dtype=torch.bool).triu(0)  # strictly earlier keys: no self-copy
    hidden[0, 0] = False  # BOS sees itself
    z = z.masked_fill(hidden, float("-inf"))
    p = z.softmax(-1)
    o = p @ v  # (B, H, L, C/H)
    if "gate" in model:
        g = torch.sigmoid(model["gate"](h)).view(B, L, H, -1).transpose(1, 2)  # (B, H, L, C/H or 1)
        o = o * g
    attn = model["out"](o.transpose(1, 2).reshape(B, L, C))
    return (x + attn) @ model["emb"].weight.T, p, attn  # tied unembedding: (B, L, V)


def _sink_run(config: GatedSinkConfig, gate: str, seed: int) -> dict[str, float]:
    import torch
    import torch.nn.functional as F

    model = _sink_model(config, gate, seed)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    rng = np.random.default_rng(seed)
    for _ in range(config.steps):
        batch, answers = (torch.as_tensor(a) for a in sink_batch(config.batch, config, rng))
        logits, _, _ = _sink_forward(model, batch, config)
        loss = F.cross_entropy(logits.reshape(-1, config.V), answers.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    tokens, targets = sink_batch(512, config, 10_000 + seed)
    with torch.no_grad():
        logits, p, attn = _sink_forward(model, torch.as_tensor(tokens), config)
    p, attn = p.numpy(), attn.numpy()
    idle = (tokens != 1)[:, None, :] & (np.arange(config.L) >= 2)[None, None, :]  # (B, 1, L)
    idle = np.broadcast_to(idle, p.shape[:3])
    correct = logits.argmax(-1).numpy() == targets
    return {"accuracy": float(correct[:, 2:].mean()),
            "trigger_accuracy": float(correct[tokens == 1].mean()),
            "bos_weight_idle": float(p[..., 0][idle].mean()),
            "bos_weight_trigger": float(p[..., 0][np.broadcast_to((tokens == 1)[:, None], p.shape[:3])].mean()),
            "attn_out_idle": float(np.abs(attn[:, 2:][tokens[:, 2:] != 1]).mean()),
            "attn_out_max": float(np.abs(attn).max())}


def gated_sink_experiment(config: GatedSinkConfig = GatedSinkConfig()) -> dict[str, Any]:
    r"""Train the one-layer model with and without an output gate; measure its attention sink.

    For every gate kind in ``config.gates`` (``"none"``, the paper's ``"elementwise"`` and
    ``"headwise"`` gates) and seed, a model is trained by Adam on :func:`sink_batch` and
    evaluated on fresh sequences: its accuracy, the mean attention weight on the BOS token at
    the *idle* positions (not triggers, beyond position 1) and at the triggers, and the mean
    and largest magnitude of the attention layer's output.

    Returns ``{"config": ..., "runs": [{"gate", "seed", <measures>}]}``; deterministic for a
    given configuration on the CPU (one thread).
    """
    import torch

    if not isinstance(config, GatedSinkConfig):
        raise TypeError(f"config must be a GatedSinkConfig, got {type(config).__name__}")
    runs = []
    with torch.random.fork_rng():
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            for gate in config.gates:
                for seed in config.seeds:
                    runs.append({"gate": gate, "seed": seed, **_sink_run(config, gate, seed)})
        finally:
            torch.set_num_threads(threads)
    return {"config": json.loads(json.dumps(asdict(config))), "runs": runs}


def main(argv: list[str] | None = None) -> None:
    """Command line: ``python -m attnmath.programmable --out book/data/gated_sinks.json`` and/or
    ``--fp8-out book/data/fp8_outliers.json``."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--out", help="the gated-sink record (gated_sink_experiment)")
    parser.add_argument("--fp8-out", help="the FP8 outlier record (fp8_outlier_experiment)")
    args = parser.parse_args(argv)
    if not (args.out or args.fp8_out):
        parser.error("give --out, --fp8-out or both")
    for path, experiment in ((args.out, gated_sink_experiment), (args.fp8_out, fp8_outlier_experiment)):
        if path:
            with open(path, "w") as f:
                json.dump(experiment(), f, indent=1, sort_keys=True)
                f.write("\n")


if __name__ == "__main__":
    main()
