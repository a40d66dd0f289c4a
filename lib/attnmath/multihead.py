r"""Multi-head attention: projections, heads, the output projection, and what they cost.

.. math::

    \operatorname{MultiHead}(X_q, X_{kv})
    = \operatorname{Concat}(\text{head}_1, \dots, \text{head}_H)\, W_O + b_O, \\
    \text{head}_h = \operatorname{Attention}\bigl(X_q W_Q^{(h)},\;
    X_{kv} W_K^{(g(h))},\; X_{kv} W_V^{(g(h))}\bigr),

with :math:`W_Q^{(h)}` the columns ``h*D:(h+1)*D`` of ``w_q (C, H*D)`` and
:math:`g(h) = \lfloor h / (H/H_{kv}) \rfloor` the key/value head that query head ``h`` reads
(``H_kv = H`` is multi-head attention, ``1 < H_kv < H`` grouped-query attention, ``H_kv = 1``
multi-query attention; one code path serves all three).

Row-vector convention: a projection is ``x @ W`` with ``W (C_in, C_out)``. Torch's ``nn.Linear`` and
``nn.MultiheadAttention`` store ``(C_out, C_in)`` and compute ``x @ W.T``; convert with
:func:`params_from_in_proj` and :func:`params_to_in_proj`.

The module also holds the NumPy reference of a Transformer encoder block
(:func:`layer_norm`, :func:`feed_forward`, :func:`encoder_block_forward`,
:func:`pre_norm_encoder_block_forward`), the oracle of
:class:`attnmath.nn.TransformerEncoderBlock`, and the counting functions
(:func:`multihead_param_count`, :func:`multihead_flops`; the cache size is
:func:`attnmath.kv_cache.kv_cache_bytes`).
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np

from ._validate import as_array, check_positive_int
from .attention import AttentionCache, attention_backward, scaled_dot_product_attention
from .masking import broadcast_mask

__all__ = [
    "split_heads",
    "merge_heads",
    "MultiHeadParams",
    "init_multihead_params",
    "params_from_in_proj",
    "params_to_in_proj",
    "MultiHeadCache",
    "MultiHeadGrads",
    "multihead_attention",
    "multihead_attention_backward",
    "grouped_query_attention",
    "multi_query_attention",
    "SelfAttentionGrads",
    "self_attention",
    "self_attention_backward",
    "output_projection_as_sum",
    "torch_mha_attn_mask",
    "torch_key_padding_mask",
    "multihead_param_count",
    "MultiHeadFlops",
    "multihead_flops",
    "layer_norm",
    "feed_forward",
    "EncoderBlockParams",
    "init_encoder_block_params",
    "encoder_block_forward",
    "pre_norm_encoder_block_forward",
]


# --------------------------------------------------------------------------------------------
# Heads
# --------------------------------------------------------------------------------------------


def split_heads(x, H: int) -> np.ndarray:
    r"""Split the feature axis into ``H`` heads: ``(B, L, C) -> (B, H, L, C // H)``.

    .. math:: \text{out}[b, h, l, d] = x[b, l, h D + d], \qquad D = C / H .

    Parameters
    ----------
    x : ndarray, shape (B, L, C)
        Any number of leading axes works: ``(..., L, C) -> (..., H, L, C // H)``.
    H : int
        Number of heads; must divide ``C``.

    Returns
    -------
    ndarray, shape (B, H, L, D)

    Notes
    -----
    Head ``h`` owns the contiguous feature block ``h*D:(h+1)*D``, the layout of torch's
    ``nn.MultiheadAttention`` (``view(B, L, H, D).transpose(1, 2)``). Inverse:
    :func:`merge_heads`.
    """
    x = as_array(x, "x")
    H = check_positive_int(H, "H")
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., L, C), got shape {x.shape}")
    *batch, L, C = x.shape
    if C % H != 0:
        raise ValueError(f"the width C={C} of x must be divisible by the number of heads H={H}")
    D = C // H
    return np.swapaxes(x.reshape(*batch, L, H, D), -2, -3)  # (B, H, L, D)


def merge_heads(x) -> np.ndarray:
    r"""Concatenate the heads along the feature axis: ``(B, H, L, D) -> (B, L, H * D)``.

    .. math:: \text{out}[b, l, h D + d] = x[b, h, l, d] .

    Parameters
    ----------
    x : ndarray, shape (B, H, L, D)
        Any number of leading axes works: ``(..., H, L, D) -> (..., L, H * D)``.

    Returns
    -------
    ndarray, shape (B, L, H * D)

    Notes
    -----
    ``merge_heads(split_heads(x, H))`` is ``x``. This is the :math:`\operatorname{Concat}` of the
    multi-head formula.
    """
    x = as_array(x, "x")
    if x.ndim < 3:
        raise ValueError(f"x must have shape (..., H, L, D), got shape {x.shape}")
    *batch, H, L, D = x.shape
    return np.swapaxes(x, -2, -3).reshape(*batch, L, H * D)  # (B, L, H*D)


# --------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------


class MultiHeadParams(NamedTuple):
    r"""Weights of multi-head attention in the row-vector convention ``x @ W + b``.

    Fields
    ------
    w_q : ndarray, shape (C, H*D)
    w_k : ndarray, shape (C_kv, H_kv*D)
    w_v : ndarray, shape (C_kv, H_kv*D_v)
    w_o : ndarray, shape (H*D_v, C)
    b_q, b_k, b_v, b_o : ndarray of shape (H*D,), (H_kv*D,), (H_kv*D_v,), (C,), or None

    Notes
    -----
    ``C_kv`` (the width of ``x_kv``) is usually ``C``. Conversion to and from torch's
    ``nn.MultiheadAttention`` (which stores ``in_proj_weight (3C, C)`` applied as ``x @ W.T``):

    * ``w_q = in_proj_weight[:C].T``, ``w_k = in_proj_weight[C:2C].T``,
      ``w_v = in_proj_weight[2C:].T``, ``w_o = out_proj.weight.T``;
    * ``b_q, b_k, b_v = in_proj_bias[:C], in_proj_bias[C:2C], in_proj_bias[2C:]``,
      ``b_o = out_proj.bias``;
    * backwards, ``in_proj_weight = concatenate([w_q, w_k, w_v], axis=1).T``.

    :func:`params_from_in_proj` and :func:`params_to_in_proj` do exactly this.
    """

    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray
    b_q: np.ndarray | None = None
    b_k: np.ndarray | None = None
    b_v: np.ndarray | None = None
    b_o: np.ndarray | None = None


def _check_H_kv(H: int, H_kv) -> int:
    H_kv = H if H_kv is None else check_positive_int(H_kv, "H_kv")
    if H % H_kv != 0:
        raise ValueError(
            f"the number of query heads H={H} must be a multiple of the key/value heads H_kv={H_kv}"
        )
    return H_kv


def init_multihead_params(C: int, H: int, *, H_kv: int | None = None, bias: bool = True,
                          seed: int = 0) -> MultiHeadParams:
    r"""Random multi-head attention weights with ``D = D_v = C // H``.

    .. math::

        W \sim \mathcal{U}\!\left(-\sqrt{6/(C_{in} + C_{out})},\; \sqrt{6/(C_{in} + C_{out})}\right),
        \qquad b \sim \mathcal{U}(-1/\sqrt{C_{in}},\; 1/\sqrt{C_{in}}).

    Parameters
    ----------
    C : int
        Model width; must be divisible by ``H``.
    H : int
        Query heads.
    H_kv : int, optional
        Key/value heads (default ``H``); must divide ``H``.
    bias : bool
        Whether the four projections have biases (otherwise the bias fields are ``None``).
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    MultiHeadParams
        ``w_q (C, C)``, ``w_k (C, H_kv*D)``, ``w_v (C, H_kv*D)``, ``w_o (C, C)`` and biases.

    Notes
    -----
    Xavier-uniform weights as torch's ``in_proj_weight``; torch starts biases at zero, here they
    are small random numbers so that tests exercise the bias gradients.
    """
    C = check_positive_int(C, "C")
    H = check_positive_int(H, "H")
    H_kv = _check_H_kv(H, H_kv)
    if C % H != 0:
        raise ValueError(f"the model width C={C} must be divisible by the number of heads H={H}")
    D = C // H
    rng = np.random.default_rng(seed)

    def weight(c_in, c_out):
        a = math.sqrt(6.0 / (c_in + c_out))
        return rng.uniform(-a, a, size=(c_in, c_out))

    def bias_vec(c_in, c_out):
        a = 1.0 / math.sqrt(c_in)
        return rng.uniform(-a, a, size=(c_out,)) if bias else None

    w_q, w_k, w_v, w_o = weight(C, H * D), weight(C, H_kv * D), weight(C, H_kv * D), weight(H * D, C)
    return MultiHeadParams(w_q, w_k, w_v, w_o,
                           bias_vec(C, H * D), bias_vec(C, H_kv * D), bias_vec(C, H_kv * D),
                           bias_vec(H * D, C))


def params_from_in_proj(in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias) -> MultiHeadParams:
    r"""Convert torch's ``nn.MultiheadAttention`` storage to :class:`MultiHeadParams`.

    .. math:: [W_Q \; W_K \; W_V] = \text{in\_proj\_weight}^\top, \qquad W_O = \text{out\_proj.weight}^\top .

    Parameters
    ----------
    in_proj_weight : ndarray, shape (3C, C)
    in_proj_bias : ndarray of shape (3C,), or None
    out_proj_weight : ndarray, shape (C, C)
    out_proj_bias : ndarray of shape (C,), or None

    Returns
    -------
    MultiHeadParams

    Notes
    -----
    Pass NumPy arrays (``tensor.detach().numpy()``). Oracle: the converted weights make
    :func:`multihead_attention` reproduce ``nn.MultiheadAttention``.
    """
    w_in = as_array(in_proj_weight, "in_proj_weight", ndim=2)
    w_out = as_array(out_proj_weight, "out_proj_weight", ndim=2)
    C = w_in.shape[1]
    if w_in.shape != (3 * C, C):
        raise ValueError(f"in_proj_weight must have shape (3C, C), got {w_in.shape}")
    if w_out.shape != (C, C):
        raise ValueError(f"out_proj_weight must have shape (C, C) = ({C}, {C}), got {w_out.shape}")
    b_q = b_k = b_v = b_o = None
    if in_proj_bias is not None:
        b_in = as_array(in_proj_bias, "in_proj_bias", ndim=1)
        if b_in.shape != (3 * C,):
            raise ValueError(f"in_proj_bias must have shape (3C,) = ({3 * C},), got {b_in.shape}")
        b_q, b_k, b_v = b_in[:C].copy(), b_in[C:2 * C].copy(), b_in[2 * C:].copy()
    if out_proj_bias is not None:
        b_o = as_array(out_proj_bias, "out_proj_bias", ndim=1)
        if b_o.shape != (C,):
            raise ValueError(f"out_proj_bias must have shape (C,) = ({C},), got {b_o.shape}")
        b_o = b_o.copy()
    return MultiHeadParams(w_in[:C].T.copy(), w_in[C:2 * C].T.copy(), w_in[2 * C:].T.copy(),
                           w_out.T.copy(), b_q, b_k, b_v, b_o)


def params_to_in_proj(params: MultiHeadParams):
    r"""Convert :class:`MultiHeadParams` to torch's ``nn.MultiheadAttention`` storage.

    Returns
    -------
    in_proj_weight : ndarray, shape (H*D + 2 H_kv*D, C)
        ``concatenate([w_q, w_k, w_v], axis=1).T``; ``(3C, C)`` for standard multi-head attention.
    in_proj_bias : ndarray of shape (H*D + 2 H_kv*D,), or None
    out_proj_weight : ndarray, shape (C, H*D_v)
    out_proj_bias : ndarray of shape (C,), or None

    Notes
    -----
    Requires ``D_v = D`` and ``C_kv = C`` (one fused input projection). The biases are all
    present or all ``None``. Inverse of :func:`params_from_in_proj`.
    """
    if not isinstance(params, MultiHeadParams):
        raise TypeError(f"params must be a MultiHeadParams, got {type(params).__name__}")
    w_q, w_k, w_v, w_o = (as_array(w, n, ndim=2) for w, n in zip(params[:4], ("w_q", "w_k", "w_v", "w_o")))
    if not (w_q.shape[0] == w_k.shape[0] == w_v.shape[0]):
        raise ValueError(
            f"w_q, w_k and w_v must share their input width C, got {w_q.shape}, {w_k.shape}, {w_v.shape}"
        )
    if w_k.shape != w_v.shape:
        raise ValueError(f"a fused input projection needs D_v = D: w_k {w_k.shape} != w_v {w_v.shape}")
    biases = params[4:7]
    present = [b is not None for b in biases]
    if any(present) and not all(present):
        raise ValueError("b_q, b_k and b_v must be all present or all None for a fused in_proj_bias")
    in_w = np.concatenate([w_q, w_k, w_v], axis=1).T  # (H*D + 2*H_kv*D, C)
    in_b = np.concatenate([np.asarray(b, dtype=np.float64) for b in biases]) if all(present) else None
    out_b = None if params.b_o is None else np.asarray(params.b_o, dtype=np.float64).copy()
    return in_w.copy(), in_b, w_o.T.copy(), out_b


class _Dims(NamedTuple):
    H: int
    H_kv: int
    D: int
    D_v: int
    C_out: int


def _check_params(params, H: int, H_kv, C_q: int, C_kv: int) -> tuple[MultiHeadParams, _Dims]:
    """Validate ``params`` against the heads and input widths; return arrays and dimensions."""
    if not isinstance(params, MultiHeadParams):
        raise TypeError(f"params must be a MultiHeadParams, got {type(params).__name__}")
    H = check_positive_int(H, "H")
    H_kv = _check_H_kv(H, H_kv)
    w_q, w_k, w_v, w_o = (as_array(w, n, ndim=2) for w, n in zip(params[:4], ("w_q", "w_k", "w_v", "w_o")))
    if w_q.shape[0] != C_q:
        raise ValueError(f"w_q must have shape (C, H*D) with C={C_q} (the width of x_q), got {w_q.shape}")
    if w_q.shape[1] % H != 0:
        raise ValueError(
            f"w_q has {w_q.shape[1]} output columns, which is not divisible by the number of heads H={H}"
        )
    D = w_q.shape[1] // H
    if w_k.shape != (C_kv, H_kv * D):
        raise ValueError(
            f"w_k must have shape (C_kv, H_kv*D) = ({C_kv}, {H_kv * D}) for H_kv={H_kv}, D={D}, "
            f"got {w_k.shape}" + ("; pass H_kv for grouped-query weights" if w_k.shape[0] == C_kv else "")
        )
    if w_v.shape[0] != C_kv or w_v.shape[1] % H_kv != 0:
        raise ValueError(
            f"w_v must have shape (C_kv, H_kv*D_v) with C_kv={C_kv}, H_kv={H_kv}, got {w_v.shape}"
        )
    D_v = w_v.shape[1] // H_kv
    if w_o.shape[0] != H * D_v:
        raise ValueError(f"w_o must have shape (H*D_v, C) with H*D_v={H * D_v}, got {w_o.shape}")
    C_out = w_o.shape[1]
    sizes = {"b_q": H * D, "b_k": H_kv * D, "b_v": H_kv * D_v, "b_o": C_out}
    biases = []
    for name, b in zip(("b_q", "b_k", "b_v", "b_o"), params[4:]):
        if b is not None:
            b = as_array(b, name, ndim=1)
            if b.shape != (sizes[name],):
                raise ValueError(f"{name} must have shape ({sizes[name]},), got {b.shape}")
        biases.append(b)
    return MultiHeadParams(w_q, w_k, w_v, w_o, *biases), _Dims(H, H_kv, D, D_v, C_out)


def _affine(x, w, b):
    y = x @ w  # (B, L, C_out)
    return y if b is None else y + b


# --------------------------------------------------------------------------------------------
# Forward and backward
# --------------------------------------------------------------------------------------------


class MultiHeadCache(NamedTuple):
    """What :func:`multihead_attention` keeps: the inputs, the weights, the concatenated heads
    ``concat (B, L, H*D_v)``, and the attention cache with ``probs (B, H, L, S)``."""

    x_q: np.ndarray
    x_kv: np.ndarray
    params: MultiHeadParams
    H: int
    H_kv: int
    concat: np.ndarray
    attention: AttentionCache


class MultiHeadGrads(NamedTuple):
    """Gradients of :func:`multihead_attention`, each the shape of its argument (``None`` for an
    absent bias). In self-attention (``x_kv is x_q``) the gradient of ``x`` is ``dx_q + dx_kv``."""

    dx_q: np.ndarray
    dx_kv: np.ndarray
    dw_q: np.ndarray
    dw_k: np.ndarray
    dw_v: np.ndarray
    dw_o: np.ndarray
    db_q: np.ndarray | None
    db_k: np.ndarray | None
    db_v: np.ndarray | None
    db_o: np.ndarray | None


def multihead_attention(x_q, x_kv, params: MultiHeadParams, H: int, *, H_kv: int | None = None,
                        mask=None, bias=None):
    r"""Multi-head (and grouped-query) attention in NumPy, keeping what the backward needs.

    .. math::

        Q = X_q W_Q + b_Q,\quad K = X_{kv} W_K + b_K,\quad V = X_{kv} W_V + b_V, \\
        \text{head}_h = \operatorname{softmax}\!\left(\frac{Q_h K_{g(h)}^\top}{\sqrt{D}} + M\right) V_{g(h)},
        \qquad \text{out} = \operatorname{Concat}_h(\text{head}_h)\, W_O + b_O .

    Parameters
    ----------
    x_q : ndarray, shape (B, L, C)
        Queries' input.
    x_kv : ndarray, shape (B, S, C_kv)
        Keys' and values' input: ``x_q`` itself for self-attention, the encoder output for
        cross-attention (``S != L`` allowed).
    params : MultiHeadParams
        ``w_q (C, H*D)``, ``w_k (C_kv, H_kv*D)``, ``w_v (C_kv, H_kv*D_v)``, ``w_o (H*D_v, C)``
        and optional biases.
    H : int
        Query heads.
    H_kv : int, optional
        Key/value heads, default ``H``; ``H % H_kv == 0``.
    mask : ndarray of bool, optional
        ``True`` = may attend, broadcastable to ``(B, H, L, S)``.
    bias : ndarray, optional
        Additive score bias broadcastable to ``(B, H, L, S)``.

    Returns
    -------
    out : ndarray, shape (B, L, C)
    cache : MultiHeadCache

    Notes
    -----
    The attention itself is :func:`attnmath.attention.scaled_dot_product_attention`
    (scale ``1/sqrt(D)``, grouped heads as torch's ``enable_gqa``; a fully masked row gives a
    zero head output, so the block's output there is ``b_O``). Oracles:
    ``torch.nn.MultiheadAttention`` (``batch_first=True``, float64, the same weights, masks
    converted by :func:`torch_mha_attn_mask` / :func:`torch_key_padding_mask`), and for
    grouped-query weights ``torch.nn.functional.scaled_dot_product_attention(enable_gqa=True)``
    between ``torch.nn.functional.linear`` projections.
    """
    x_q = as_array(x_q, "x_q", ndim=3)
    x_kv = as_array(x_kv, "x_kv", ndim=3)
    B, L, C = x_q.shape
    B_kv, S, C_kv = x_kv.shape
    if B_kv != B:
        raise ValueError(
            f"x_q and x_kv must have the same batch size B, got x_q {x_q.shape}, x_kv {x_kv.shape}"
        )
    params, dims = _check_params(params, H, H_kv, C, C_kv)
    H, H_kv = dims.H, dims.H_kv
    w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o = params
    q = split_heads(_affine(x_q, w_q, b_q), H)  # (B, L, H*D) -> (B, H, L, D)
    k = split_heads(_affine(x_kv, w_k, b_k), H_kv)  # (B, S, H_kv*D) -> (B, H_kv, S, D)
    v = split_heads(_affine(x_kv, w_v, b_v), H_kv)  # (B, S, H_kv*D_v) -> (B, H_kv, S, D_v)
    heads, att_cache = scaled_dot_product_attention(q, k, v, mask=mask, bias=bias)  # (B, H, L, D_v)
    concat = merge_heads(heads)  # (B, L, H*D_v)
    out = _affine(concat, w_o, b_o)  # (B, L, C)
    return out, MultiHeadCache(x_q, x_kv, params, H, H_kv, concat, att_cache)


def multihead_attention_backward(dout, cache: MultiHeadCache) -> MultiHeadGrads:
    r"""Backward pass of :func:`multihead_attention` (and of its grouped/multi-query variants).

    .. math::

        dW_O = \textstyle\sum_{b,l} \text{concat}^\top dO, \quad d\,\text{concat} = dO\, W_O^\top, \quad
        (dQ, dK, dV) = \text{attention\_backward}, \\
        dX_q = dQ\, W_Q^\top, \quad dX_{kv} = dK\, W_K^\top + dV\, W_V^\top, \quad
        dW_Q = \textstyle\sum_{b,l} X_q^\top dQ, \quad db_Q = \textstyle\sum_{b,l} dQ, \ \dots

    Parameters
    ----------
    dout : ndarray, shape (B, L, C)
        Gradient of the loss with respect to ``out``.
    cache : MultiHeadCache

    Returns
    -------
    MultiHeadGrads
        ``dx_q (B, L, C)``, ``dx_kv (B, S, C_kv)``, ``dw_* `` and ``db_*`` shaped as the
        parameters (``None`` where a bias is absent).

    Notes
    -----
    ``dx_q`` and ``dx_kv`` are the gradients with respect to the two *arguments*. When the same
    array is passed as both (self-attention), its gradient is ``dx_q + dx_kv``;
    :func:`self_attention_backward` returns that sum. Oracles: ``torch.autograd`` through
    ``nn.MultiheadAttention``, and central differences.
    """
    if not isinstance(cache, MultiHeadCache):
        raise TypeError(f"cache must be a MultiHeadCache, got {type(cache).__name__}")
    x_q, x_kv, params, H, H_kv, concat, att_cache = cache
    w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o = params
    B, L, C = x_q.shape
    dout = as_array(dout, "dout")
    if dout.shape != (B, L, w_o.shape[1]):
        raise ValueError(f"dout must have the output's shape {(B, L, w_o.shape[1])}, got {dout.shape}")
    dw_o = np.einsum("blk,blc->kc", concat, dout)  # (H*D_v, C)
    db_o = None if b_o is None else dout.sum(axis=(0, 1))  # (C,)
    dconcat = dout @ w_o.T  # (B, L, H*D_v)
    dheads = split_heads(dconcat, H)  # (B, H, L, D_v)
    dq, dk, dv = attention_backward(dheads, att_cache)  # (B, H, L, D), (B, H_kv, S, D), (B, H_kv, S, D_v)
    dq_flat = merge_heads(dq)  # (B, L, H*D)
    dk_flat = merge_heads(dk)  # (B, S, H_kv*D)
    dv_flat = merge_heads(dv)  # (B, S, H_kv*D_v)
    dx_q = dq_flat @ w_q.T  # (B, L, C)
    dx_kv = dk_flat @ w_k.T + dv_flat @ w_v.T  # (B, S, C_kv)
    dw_q = np.einsum("blc,blk->ck", x_q, dq_flat)  # (C, H*D)
    dw_k = np.einsum("bsc,bsk->ck", x_kv, dk_flat)  # (C_kv, H_kv*D)
    dw_v = np.einsum("bsc,bsk->ck", x_kv, dv_flat)  # (C_kv, H_kv*D_v)
    db_q = None if b_q is None else dq_flat.sum(axis=(0, 1))  # (H*D,)
    db_k = None if b_k is None else dk_flat.sum(axis=(0, 1))  # (H_kv*D,)
    db_v = None if b_v is None else dv_flat.sum(axis=(0, 1))  # (H_kv*D_v,)
    return MultiHeadGrads(dx_q, dx_kv, dw_q, dw_k, dw_v, dw_o, db_q, db_k, db_v, db_o)


def grouped_query_attention(x_q, x_kv, params: MultiHeadParams, H: int, H_kv: int, *, mask=None, bias=None):
    r"""Grouped-query attention (Ainslie et al., 2023): ``H`` query heads share ``H_kv`` key/value heads.

    .. math::

        \text{head}_h = \operatorname{Attention}(Q_h, K_{\lfloor h/G \rfloor}, V_{\lfloor h/G \rfloor}),
        \qquad G = H / H_{kv}.

    Parameters and returns as :func:`multihead_attention` with ``H_kv`` required
    (``w_k (C_kv, H_kv*D)``, ``w_v (C_kv, H_kv*D_v)``). Backward:
    :func:`multihead_attention_backward`.

    Notes
    -----
    The same code path as :func:`multihead_attention`; the key/value cache of a decoder shrinks by
    ``H / H_kv`` (:func:`attnmath.kv_cache.kv_cache_bytes`). Query heads ``G*g .. G*g+G-1`` read kv head ``g``, as
    torch's ``enable_gqa`` / ``repeat_interleave``. Oracle:
    ``torch.nn.functional.scaled_dot_product_attention(enable_gqa=True)``.
    """
    if H_kv is None:
        raise ValueError("H_kv must be given for grouped-query attention, got None")
    return multihead_attention(x_q, x_kv, params, H, H_kv=H_kv, mask=mask, bias=bias)


def multi_query_attention(x_q, x_kv, params: MultiHeadParams, H: int, *, mask=None, bias=None):
    r"""Multi-query attention (Shazeer, 2019): all ``H`` query heads share one key/value head.

    .. math::

        \text{head}_h = \operatorname{Attention}(Q_h, K, V), \qquad
        K = X_{kv} W_K \in \mathbb{R}^{S \times D}.

    Parameters and returns as :func:`multihead_attention` with ``H_kv = 1``
    (``w_k (C_kv, D)``, ``w_v (C_kv, D_v)``). Backward: :func:`multihead_attention_backward`.

    Notes
    -----
    Grouped-query attention with ``H_kv = 1``; the same code path. Oracle: as
    :func:`grouped_query_attention`.
    """
    return multihead_attention(x_q, x_kv, params, H, H_kv=1, mask=mask, bias=bias)


class SelfAttentionGrads(NamedTuple):
    """Gradients of :func:`self_attention`: ``dx (B, L, C)`` is the total gradient of the one input."""

    dx: np.ndarray
    dw_q: np.ndarray
    dw_k: np.ndarray
    dw_v: np.ndarray
    dw_o: np.ndarray
    db_q: np.ndarray | None
    db_k: np.ndarray | None
    db_v: np.ndarray | None
    db_o: np.ndarray | None


def self_attention(x, params: MultiHeadParams, H: int, *, H_kv: int | None = None, mask=None, bias=None):
    r"""Multi-head self-attention: queries, keys and values all come from ``x``.

    .. math:: \operatorname{SelfAttention}(X) = \operatorname{MultiHead}(X, X) .

    Parameters
    ----------
    x : ndarray, shape (B, L, C)
    params, H, H_kv, mask, bias
        As :func:`multihead_attention` (``S = L``).

    Returns
    -------
    out : ndarray, shape (B, L, C)
    cache : MultiHeadCache

    Notes
    -----
    Backward: :func:`self_attention_backward`, whose ``dx`` adds the two paths by which ``x``
    reaches the output. Oracle: ``torch.nn.MultiheadAttention(x, x, x)`` and ``torch.autograd``.
    """
    return multihead_attention(x, x, params, H, H_kv=H_kv, mask=mask, bias=bias)


def self_attention_backward(dout, cache: MultiHeadCache) -> SelfAttentionGrads:
    r"""Backward pass of :func:`self_attention`.

    .. math:: \frac{\partial \mathcal{L}}{\partial X} = dX_q + dX_{kv}
              = dQ\, W_Q^\top + dK\, W_K^\top + dV\, W_V^\top .

    Returns
    -------
    SelfAttentionGrads
        ``dx (B, L, C)`` and the weight gradients of :class:`MultiHeadGrads`.
    """
    g = multihead_attention_backward(dout, cache)
    return SelfAttentionGrads(g.dx_q + g.dx_kv, *g[2:])


def output_projection_as_sum(heads, w_o) -> np.ndarray:
    r"""The output projection as a sum over heads: each head writes through its own block of ``W_O``.

    .. math::

        \operatorname{Concat}(\text{head}_1, \dots, \text{head}_H)\, W_O
        = \sum_{h=1}^{H} \text{head}_h\, W_O[(h-1) D_v : h D_v, :] .

    Parameters
    ----------
    heads : ndarray, shape (B, H, L, D_v)
    w_o : ndarray, shape (H*D_v, C)

    Returns
    -------
    ndarray, shape (B, L, C)

    Notes
    -----
    Computed as an explicit loop over heads, never forming the concatenation, so that the test
    ``output_projection_as_sum(heads, w_o) == merge_heads(heads) @ w_o`` checks the identity.
    It is why multi-head attention is "a sum of ``H`` independent low-rank attention layers",
    each with a rank-``D_v`` output map.
    """
    heads = as_array(heads, "heads", ndim=4)
    w_o = as_array(w_o, "w_o", ndim=2)
    B, H, L, D_v = heads.shape
    if w_o.shape[0] != H * D_v:
        raise ValueError(f"w_o must have shape (H*D_v, C) with H*D_v={H * D_v}, got {w_o.shape}")
    C = w_o.shape[1]
    out = np.zeros((B, L, C), dtype=np.result_type(heads, w_o))  # (B, L, C)
    for h in range(H):
        out += heads[:, h] @ w_o[h * D_v:(h + 1) * D_v]  # (B, L, D_v) @ (D_v, C) -> (B, L, C)
    return out


# --------------------------------------------------------------------------------------------
# Torch mask conventions
# --------------------------------------------------------------------------------------------


def torch_mha_attn_mask(mask, B: int, H: int, L: int, S: int) -> np.ndarray:
    r"""Convert a ``True = may attend`` mask into ``nn.MultiheadAttention``'s ``attn_mask``.

    .. math:: \text{attn\_mask}[b H + h, l, s] = \lnot\, \text{mask}[b, h, l, s] .

    Parameters
    ----------
    mask : ndarray of bool
        ``True`` = may attend, broadcastable to ``(B, H, L, S)``.
    B, H, L, S : int
        The target shape.

    Returns
    -------
    ndarray of bool, shape (B*H, L, S)
        ``True`` = may **not** attend.

    Notes
    -----
    Beware the flipped convention: a boolean ``attn_mask`` (and ``key_padding_mask``) of
    ``torch.nn.MultiheadAttention`` marks the *blocked* positions with ``True``, whereas
    ``torch.nn.functional.scaled_dot_product_attention`` and this library mark the *allowed*
    ones. A 3-d ``attn_mask`` is indexed ``b*H + h`` (batch-major). Where every key of a row is
    blocked, this library returns a zero head output; ``nn.MultiheadAttention`` does the same
    with ``need_weights=False`` (it calls ``scaled_dot_product_attention``) but returns NaN with
    ``need_weights=True`` (its explicit softmax of an all ``-inf`` row).
    """
    B, H, L, S = (check_positive_int(v, n) for v, n in ((B, "B"), (H, "H"), (L, "L"), (S, "S")))
    full = broadcast_mask(mask, (B, H, L, S))  # (B, H, L, S)
    return ~full.reshape(B * H, L, S)  # (B*H, L, S)


def torch_key_padding_mask(mask) -> np.ndarray:
    r"""Convert a padding mask (``True`` = real key) into ``nn.MultiheadAttention``'s ``key_padding_mask``.

    .. math:: \text{key\_padding\_mask}[b, s] = \lnot\, \text{mask}[b, s] .

    Parameters
    ----------
    mask : ndarray of bool, shape (B, 1, 1, S) or (B, S)
        ``True`` = the key may be attended (as :func:`attnmath.masking.padding_mask` returns).

    Returns
    -------
    ndarray of bool, shape (B, S)
        ``True`` = padding, ignored (torch's convention, also ``src_key_padding_mask``).
    """
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise TypeError(f"mask must be boolean (True = may attend), got dtype {m.dtype}")
    if m.ndim == 4:
        if m.shape[1:3] != (1, 1):
            raise ValueError(f"mask must have shape (B, 1, 1, S) or (B, S), got {m.shape}")
        m = m[:, 0, 0, :]  # (B, S)
    elif m.ndim != 2:
        raise ValueError(f"mask must have shape (B, 1, 1, S) or (B, S), got {m.shape}")
    return ~m  # (B, S)


# --------------------------------------------------------------------------------------------
# Counting
# --------------------------------------------------------------------------------------------


def multihead_param_count(C: int, H: int, *, H_kv: int | None = None, bias: bool = True) -> int:
    r"""Number of parameters of (grouped-query) multi-head attention with ``D = D_v = C / H``.

    .. math::

        \underbrace{C \cdot C}_{W_Q} + \underbrace{2\, C \cdot H_{kv} D}_{W_K,\, W_V}
        + \underbrace{C \cdot C}_{W_O} + \underbrace{(C + 2 H_{kv} D + C)}_{\text{biases}},

    which for ``H_kv = H`` is :math:`4C^2 + 4C`, **independent of H**.

    Parameters
    ----------
    C : int
        Model width, divisible by ``H``.
    H : int
        Query heads.
    H_kv : int, optional
        Key/value heads (default ``H``).
    bias : bool
        Count the four bias vectors.

    Returns
    -------
    int

    Notes
    -----
    Each head's :math:`W_Q^{(h)}` is ``C x D`` (not ``D x D``), so the ``H`` query maps together
    hold :math:`H \cdot C \cdot C/H = C^2` numbers. Oracle: ``sum(p.numel())`` over
    ``torch.nn.MultiheadAttention(C, H, bias=bias)`` and over a grouped-query module made of
    ``torch.nn.Linear`` layers.
    """
    C = check_positive_int(C, "C")
    H = check_positive_int(H, "H")
    H_kv = _check_H_kv(H, H_kv)
    if C % H != 0:
        raise ValueError(f"the model width C={C} must be divisible by the number of heads H={H}")
    if not isinstance(bias, bool):
        raise TypeError(f"bias must be a bool, got {type(bias).__name__}")
    D = C // H
    weights = C * C + 2 * C * H_kv * D + C * C
    biases = C + 2 * H_kv * D + C if bias else 0
    return weights + biases


class MultiHeadFlops(NamedTuple):
    """Matmul FLOPs of multi-head attention (one multiply-add = 2 FLOPs), per stage."""

    q_proj: int
    k_proj: int
    v_proj: int
    scores: int
    weighted_sum: int
    out_proj: int

    @property
    def projections(self) -> int:
        """FLOPs of the four projections ``W_Q, W_K, W_V, W_O``."""
        return self.q_proj + self.k_proj + self.v_proj + self.out_proj

    @property
    def attention(self) -> int:
        """FLOPs of ``Q K^T`` and ``P V``."""
        return self.scores + self.weighted_sum

    @property
    def total(self) -> int:
        """All counted FLOPs."""
        return self.projections + self.attention


def multihead_flops(B: int, L: int, S: int, C: int, H: int, *, H_kv: int | None = None) -> MultiHeadFlops:
    r"""Matrix-multiplication FLOPs of one multi-head attention call, ``D = D_v = C / H``.

    .. math::

        \underbrace{2BLC^2}_{Q} + \underbrace{2 \cdot 2BSC\,H_{kv}D}_{K,\,V}
        + \underbrace{2BHLSD}_{QK^\top} + \underbrace{2BHLSD}_{PV} + \underbrace{2BLC^2}_{W_O} .

    Parameters
    ----------
    B, L, S : int
        Batch, query length, key/value length.
    C : int
        Model width, divisible by ``H``.
    H : int
        Query heads.
    H_kv : int, optional
        Key/value heads (default ``H``).

    Returns
    -------
    MultiHeadFlops
        Per-stage counts with ``projections``, ``attention`` and ``total``.

    Notes
    -----
    Counted: the six matrix products, a multiply-add as 2 FLOPs. **Not** counted: bias
    additions, the ``1/sqrt(D)`` scaling, masking and the softmax (about ``5 B H L S``
    elementwise operations: max, subtract, exp, sum, divide), which is the convention of
    ``torch.utils.flop_counter.FlopCounterMode``, the oracle (run on ``nn.MultiheadAttention``
    with ``need_weights=True``, whose attention is two batched matmuls). Since
    :math:`H \cdot D = C`, the matmul FLOPs do not depend on ``H``; the softmax work and the
    ``(B, H, L, S)`` weights memory do grow with ``H``. Grouped-query heads save only in the
    ``K`` and ``V`` projections: every query head still multiplies with its (shared) keys.
    """
    B, L, S, C, H = (check_positive_int(v, n) for v, n in ((B, "B"), (L, "L"), (S, "S"), (C, "C"), (H, "H")))
    H_kv = _check_H_kv(H, H_kv)
    if C % H != 0:
        raise ValueError(f"the model width C={C} must be divisible by the number of heads H={H}")
    D = C // H
    return MultiHeadFlops(
        q_proj=2 * B * L * C * H * D,
        k_proj=2 * B * S * C * H_kv * D,
        v_proj=2 * B * S * C * H_kv * D,
        scores=2 * B * H * L * S * D,
        weighted_sum=2 * B * H * L * S * D,
        out_proj=2 * B * L * H * D * C,
    )


# --------------------------------------------------------------------------------------------
# Encoder block (NumPy reference)
# --------------------------------------------------------------------------------------------


def layer_norm(x, gamma, beta, *, eps: float = 1e-5) -> np.ndarray:
    r"""Layer normalisation over the last axis.

    .. math::

        \operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta, \qquad
        \mu = \tfrac1C \textstyle\sum_c x_c,\quad \sigma^2 = \tfrac1C \textstyle\sum_c (x_c - \mu)^2 .

    Parameters
    ----------
    x : ndarray, shape (..., C)
    gamma, beta : ndarray, shape (C,)
    eps : float

    Returns
    -------
    ndarray, shape (..., C)

    Notes
    -----
    The biased variance (divide by ``C``), as ``torch.nn.LayerNorm``, the oracle.
    """
    x = as_array(x, "x")
    C = x.shape[-1] if x.ndim else 0
    gamma = as_array(gamma, "gamma", ndim=1)
    beta = as_array(beta, "beta", ndim=1)
    if gamma.shape != (C,) or beta.shape != (C,):
        raise ValueError(f"gamma and beta must have shape (C,) = ({C},), got {gamma.shape} and {beta.shape}")
    if not (isinstance(eps, numbers.Real) and eps > 0):
        raise ValueError(f"eps must be a positive number, got {eps!r}")
    mu = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)  # (..., 1)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta  # (..., C)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def feed_forward(x, w_1, b_1, w_2, b_2, *, activation: str = "relu") -> np.ndarray:
    r"""Position-wise feed-forward network: two affine maps with an activation between.

    .. math::

        \operatorname{FFN}(x) = \phi(x W_1 + b_1) W_2 + b_2, \qquad \phi = \max(0, \cdot) \text{ or } \\
        \operatorname{GELU}(z) = z\,\Phi(z) = \tfrac{z}{2}\bigl(1 + \operatorname{erf}(z/\sqrt2)\bigr).

    Parameters
    ----------
    x : ndarray, shape (..., C)
    w_1 : ndarray, shape (C, F)
    b_1 : ndarray of shape (F,), or None
    w_2 : ndarray, shape (F, C)
    b_2 : ndarray of shape (C,), or None
    activation : {"relu", "gelu"}
        ``"gelu"`` is the exact (erf) form, torch's default.

    Returns
    -------
    ndarray, shape (..., C)
    """
    if activation not in ("relu", "gelu"):
        raise ValueError(f"activation must be 'relu' or 'gelu', got {activation!r}")
    x = as_array(x, "x")
    w_1 = as_array(w_1, "w_1", ndim=2)
    w_2 = as_array(w_2, "w_2", ndim=2)
    if w_1.shape[0] != x.shape[-1] or w_2.shape != (w_1.shape[1], w_1.shape[0]):
        raise ValueError(
            f"w_1 must have shape (C, F) and w_2 (F, C) with C={x.shape[-1]}, got {w_1.shape} and {w_2.shape}"
        )
    hidden = _affine(x, w_1, b_1)  # (..., F)
    if activation == "relu":
        hidden = np.maximum(hidden, 0.0)
    else:
        hidden = 0.5 * hidden * (1.0 + _erf(hidden / math.sqrt(2.0)))
    return _affine(hidden, w_2, b_2)  # (..., C)


class EncoderBlockParams(NamedTuple):
    """Weights of a Transformer encoder block, row-vector convention.

    ``attn`` (:class:`MultiHeadParams`), ``w_1 (C, F)``, ``b_1 (F,)``, ``w_2 (F, C)``, ``b_2 (C,)``,
    and the two layer norms' ``ln1_gamma, ln1_beta, ln2_gamma, ln2_beta (C,)``. ``F`` is the
    feed-forward width. Torch's ``linear1.weight`` is ``w_1.T``.
    """

    attn: MultiHeadParams
    w_1: np.ndarray
    b_1: np.ndarray | None
    w_2: np.ndarray
    b_2: np.ndarray | None
    ln1_gamma: np.ndarray
    ln1_beta: np.ndarray
    ln2_gamma: np.ndarray
    ln2_beta: np.ndarray


def init_encoder_block_params(C: int, H: int, ffn_dim: int, *, seed: int = 0) -> EncoderBlockParams:
    """Random encoder block weights (layer-norm scales near 1 and shifts near 0, all nonzero)."""
    ffn_dim = check_positive_int(ffn_dim, "ffn_dim")
    attn = init_multihead_params(C, H, seed=seed)
    rng = np.random.default_rng(seed + 1)
    a1, a2 = 1.0 / math.sqrt(C), 1.0 / math.sqrt(ffn_dim)
    return EncoderBlockParams(
        attn,
        rng.uniform(-a1, a1, size=(C, ffn_dim)), rng.uniform(-a1, a1, size=(ffn_dim,)),
        rng.uniform(-a2, a2, size=(ffn_dim, C)), rng.uniform(-a2, a2, size=(C,)),
        1.0 + 0.1 * rng.standard_normal(C), 0.1 * rng.standard_normal(C),
        1.0 + 0.1 * rng.standard_normal(C), 0.1 * rng.standard_normal(C),
    )


def _encoder_sublayers(params, H, mask, activation, eps):
    if not isinstance(params, EncoderBlockParams):
        raise TypeError(f"params must be an EncoderBlockParams, got {type(params).__name__}")

    def attn(z):
        return self_attention(z, params.attn, H, mask=mask)[0]  # (B, L, C)

    def ffn(z):
        # (B, L, C)
        return feed_forward(z, params.w_1, params.b_1, params.w_2, params.b_2, activation=activation)

    def ln1(z):
        return layer_norm(z, params.ln1_gamma, params.ln1_beta, eps=eps)  # (B, L, C)

    def ln2(z):
        return layer_norm(z, params.ln2_gamma, params.ln2_beta, eps=eps)  # (B, L, C)

    return attn, ffn, ln1, ln2


def encoder_block_forward(x, params: EncoderBlockParams, H: int, *, mask=None, activation: str = "relu",
                          eps: float = 1e-5) -> np.ndarray:
    r"""Transformer encoder block, post-norm (the original Transformer's order).

    .. math::

        y = \operatorname{LN}_1\bigl(x + \operatorname{MHA}(x)\bigr), \qquad
        \text{out} = \operatorname{LN}_2\bigl(y + \operatorname{FFN}(y)\bigr) .

    Parameters
    ----------
    x : ndarray, shape (B, L, C)
    params : EncoderBlockParams
    H : int
        Heads.
    mask : ndarray of bool, optional
        ``True`` = may attend, broadcastable to ``(B, H, L, L)``; a padding mask is
        ``(B, 1, 1, L)``.
    activation : {"relu", "gelu"}
        The feed-forward nonlinearity.
    eps : float
        Layer-norm epsilon.

    Returns
    -------
    ndarray, shape (B, L, C)

    Notes
    -----
    Without dropout (evaluation). The NumPy reference of
    :class:`attnmath.nn.TransformerEncoderBlock` with ``norm_first=False`` and, through it, of
    ``torch.nn.TransformerEncoderLayer(batch_first=True, norm_first=False)``. The pre-norm
    variant is :func:`pre_norm_encoder_block_forward`.
    """
    x = as_array(x, "x", ndim=3)
    attn, ffn, ln1, ln2 = _encoder_sublayers(params, H, mask, activation, eps)
    y = ln1(x + attn(x))  # (B, L, C)
    return ln2(y + ffn(y))  # (B, L, C)


def pre_norm_encoder_block_forward(x, params: EncoderBlockParams, H: int, *, mask=None,
                                   activation: str = "relu", eps: float = 1e-5) -> np.ndarray:
    r"""Transformer encoder block, pre-norm (layer norm inside the residual branch).

    .. math::

        y = x + \operatorname{MHA}\bigl(\operatorname{LN}_1(x)\bigr), \qquad
        \text{out} = y + \operatorname{FFN}\bigl(\operatorname{LN}_2(y)\bigr) .

    Parameters and returns as :func:`encoder_block_forward`.

    Notes
    -----
    The residual stream is never normalised, so the identity path from input to output is
    intact (the reason pre-norm trains without warm-up); there is no final layer norm here
    (models add one after the last block). Reference of
    :class:`attnmath.nn.TransformerEncoderBlock` with ``norm_first=True`` and of
    ``torch.nn.TransformerEncoderLayer(norm_first=True)``.
    """
    x = as_array(x, "x", ndim=3)
    attn, ffn, ln1, ln2 = _encoder_sublayers(params, H, mask, activation, eps)
    y = x + attn(ln1(x))  # (B, L, C)
    return y + ffn(ln2(y))  # (B, L, C)
