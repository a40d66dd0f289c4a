r"""Multi-head attention: projections, heads, grouped-query heads and the output projection.

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

What multi-head attention costs is counted in :mod:`attnmath.counting`; the encoder block built
around it is :mod:`attnmath.encoder`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ._validate import (
    BoolArray,
    FloatArray,
    as_array,
    check_bool,
    check_bool_mask,
    check_heads,
    check_kv_heads,
    check_positive_int,
    check_seed,
    work_dtype,
)
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
]


# --------------------------------------------------------------------------------------------
# Heads
# --------------------------------------------------------------------------------------------


def split_heads(x: ArrayLike, H: int) -> FloatArray:
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
    :func:`merge_heads`. Values are moved as they are: NaN and infinities pass through, as in
    torch's ``view``.
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


def merge_heads(x: ArrayLike) -> FloatArray:
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
    multi-head formula. Values are moved as they are: NaN and infinities pass through.
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

    #: Query projection ``(C, H*D)``.
    w_q: np.ndarray
    #: Key projection ``(C_kv, H_kv*D)``.
    w_k: np.ndarray
    #: Value projection ``(C_kv, H_kv*D_v)``.
    w_v: np.ndarray
    #: Output projection ``(H*D_v, C)``.
    w_o: np.ndarray
    #: Query bias ``(H*D,)``, or ``None``.
    b_q: np.ndarray | None = None
    #: Key bias ``(H_kv*D,)``, or ``None``.
    b_k: np.ndarray | None = None
    #: Value bias ``(H_kv*D_v,)``, or ``None``.
    b_v: np.ndarray | None = None
    #: Output bias ``(C,)``, or ``None``.
    b_o: np.ndarray | None = None


def init_multihead_params(
    C: int, H: int, *, H_kv: int | None = None, bias: bool = True, seed: int = 0
) -> MultiHeadParams:
    r"""Random multi-head attention weights with ``D = D_v = C // H``.

    .. math::

        \begin{aligned}
        &W \sim \mathcal{U}\!\left(-\sqrt{6/(C_{in} + C_{out})},\; \sqrt{6/(C_{in} + C_{out})}\right), \\
        &b \sim \mathcal{U}(-1/\sqrt{C_{in}},\; 1/\sqrt{C_{in}}).
        \end{aligned}

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
    C, H, H_kv = check_heads(C, H, H_kv)
    bias = check_bool(bias, "bias")
    D = C // H
    rng = np.random.default_rng(check_seed(seed))

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


def params_from_in_proj(
    in_proj_weight: ArrayLike, in_proj_bias: ArrayLike | None,
    out_proj_weight: ArrayLike, out_proj_bias: ArrayLike | None
) -> MultiHeadParams:
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
    :func:`multihead_attention` reproduce ``nn.MultiheadAttention``. Values are moved as they
    are (NaN and infinities pass through); :func:`multihead_attention` refuses them.
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


def params_to_in_proj(
    params: MultiHeadParams
) -> tuple[FloatArray, FloatArray | None, FloatArray, FloatArray | None]:
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
    present or all ``None``; each bias must have its weight's output width. Inverse of
    :func:`params_from_in_proj`; values are moved as they are (NaN and infinities pass through).
    """
    if not isinstance(params, MultiHeadParams):
        raise TypeError(f"params must be a MultiHeadParams, got {type(params).__name__}")
    names = [f"params.{n}" for n in params._fields]
    w_q, w_k, w_v, w_o = (as_array(w, n, ndim=2) for w, n in zip(params[:4], names))
    if not (w_q.shape[0] == w_k.shape[0] == w_v.shape[0]):
        raise ValueError(
            "params.w_q, params.w_k and params.w_v must share their input width C, "
            f"got {w_q.shape}, {w_k.shape}, {w_v.shape}"
        )
    if w_k.shape != w_v.shape:
        raise ValueError(
            f"a fused input projection needs D_v = D: params.w_k {w_k.shape} != params.w_v {w_v.shape}"
        )
    present = [b is not None for b in params[4:]]
    if any(present[:3]) and not all(present[:3]):
        raise ValueError("params.b_q, b_k and b_v must be all present or all None for a fused in_proj_bias")
    # every bias has the width of its weight's output: (H*D,), (H_kv*D,), (H_kv*D,), (C,)
    widths = (w_q.shape[1], w_k.shape[1], w_v.shape[1], w_o.shape[1])
    b_q, b_k, b_v, b_o = (None if b is None else as_array(b, n, ndim=1)
                          for b, n in zip(params[4:], names[4:]))
    for b, n, width in zip((b_q, b_k, b_v, b_o), names[4:], widths):
        if b is not None and b.shape != (width,):
            raise ValueError(f"{n} must have shape ({width},) to match its weight, got {b.shape}")
    in_w = np.concatenate([w_q, w_k, w_v], axis=1).T  # (H*D + 2*H_kv*D, C)
    in_b = np.concatenate([b_q, b_k, b_v]) if all(present[:3]) else None  # (H*D + 2*H_kv*D,)
    out_b = None if b_o is None else b_o.copy()
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
    H_kv = check_kv_heads(H, H_kv)
    w_q, w_k, w_v, w_o = (as_array(w, f"params.{n}", ndim=2)
                          for w, n in zip(params[:4], ("w_q", "w_k", "w_v", "w_o")))
    if w_q.shape[0] != C_q:
        raise ValueError(f"params.w_q must have shape (C, H*D) with C={C_q} (the width of x_q), got {w_q.shape}")
    if w_q.shape[1] % H != 0:
        raise ValueError(
            f"w_q has {w_q.shape[1]} output columns, which is not divisible by the number of heads H={H}"
        )
    D = w_q.shape[1] // H
    if w_k.shape != (C_kv, H_kv * D):
        raise ValueError(
            f"params.w_k must have shape (C_kv, H_kv*D) = ({C_kv}, {H_kv * D}) for H_kv={H_kv}, D={D} "
            "(C_kv: the width of x_kv), "
            f"got {w_k.shape}" + ("; pass H_kv for grouped-query weights" if w_k.shape[0] == C_kv else "")
        )
    if w_v.shape[0] != C_kv or w_v.shape[1] % H_kv != 0:
        raise ValueError(
            f"params.w_v must have shape (C_kv, H_kv*D_v) with C_kv={C_kv} (the width of x_kv), "
            f"H_kv={H_kv}, got {w_v.shape}"
        )
    D_v = w_v.shape[1] // H_kv
    if w_o.shape[0] != H * D_v:
        raise ValueError(f"params.w_o must have shape (H*D_v, C) with H*D_v={H * D_v}, got {w_o.shape}")
    C_out = w_o.shape[1]
    sizes = {"b_q": H * D, "b_k": H_kv * D, "b_v": H_kv * D_v, "b_o": C_out}
    biases = []
    for name, b in zip(("b_q", "b_k", "b_v", "b_o"), params[4:]):
        if b is not None:
            b = as_array(b, f"params.{name}", ndim=1)
            if b.shape != (sizes[name],):
                raise ValueError(f"params.{name} must have shape ({sizes[name]},), got {b.shape}")
        biases.append(b)
    return MultiHeadParams(w_q, w_k, w_v, w_o, *biases), _Dims(H, H_kv, D, D_v, C_out)


def _working_copies(
    dtype: np.dtype, x_q: FloatArray, x_kv: FloatArray, params: MultiHeadParams
) -> tuple[FloatArray, FloatArray, MultiHeadParams]:
    """The inputs and weights in the working dtype of ``dtype`` (half precision: float32)."""
    work = work_dtype(dtype)
    w_q, w_k, w_v, w_o = (w.astype(work, copy=False) for w in params[:4])
    b_q, b_k, b_v, b_o = (None if b is None else b.astype(work, copy=False) for b in params[4:])
    params = MultiHeadParams(w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o)
    return x_q.astype(work, copy=False), x_kv.astype(work, copy=False), params


def _affine(x: FloatArray, w: FloatArray, b: FloatArray | None) -> FloatArray:
    y = x @ w  # (B, L, C_out)
    return y if b is None else y + b


# --------------------------------------------------------------------------------------------
# Forward and backward
# --------------------------------------------------------------------------------------------


class MultiHeadCache(NamedTuple):
    """What :func:`multihead_attention` keeps: the inputs, the weights, the concatenated heads
    ``concat (B, L, H*D_v)``, and the attention cache with ``probs (B, H, L, S)``."""

    #: Query-side input ``(B, L, C)``.
    x_q: np.ndarray
    #: Key/value-side input ``(B, S, C_kv)``.
    x_kv: np.ndarray
    #: The weights used (:class:`MultiHeadParams`).
    params: MultiHeadParams
    #: Number of query heads.
    H: int
    #: Number of key/value heads.
    H_kv: int
    #: Concatenated head outputs ``(B, L, H*D_v)``, before the output projection.
    concat: np.ndarray
    #: The attention cache, with ``probs (B, H, L, S)``.
    attention: AttentionCache


class MultiHeadGrads(NamedTuple):
    """Gradients of :func:`multihead_attention`, each the shape of its argument (``None`` for an
    absent bias). In self-attention (``x_kv is x_q``) the gradient of ``x`` is ``dx_q + dx_kv``."""

    #: Gradient of ``x_q`` ``(B, L, C)``.
    dx_q: np.ndarray
    #: Gradient of ``x_kv`` ``(B, S, C_kv)``.
    dx_kv: np.ndarray
    #: Gradient of ``w_q`` ``(C, H*D)``.
    dw_q: np.ndarray
    #: Gradient of ``w_k`` ``(C_kv, H_kv*D)``.
    dw_k: np.ndarray
    #: Gradient of ``w_v`` ``(C_kv, H_kv*D_v)``.
    dw_v: np.ndarray
    #: Gradient of ``w_o`` ``(H*D_v, C)``.
    dw_o: np.ndarray
    #: Gradient of ``b_q`` ``(H*D,)``; ``None`` without that bias.
    db_q: np.ndarray | None
    #: Gradient of ``b_k`` ``(H_kv*D,)``; ``None`` without that bias.
    db_k: np.ndarray | None
    #: Gradient of ``b_v`` ``(H_kv*D_v,)``; ``None`` without that bias.
    db_v: np.ndarray | None
    #: Gradient of ``b_o`` ``(C,)``; ``None`` without that bias.
    db_o: np.ndarray | None


def _check_inputs(x_q: ArrayLike, x_kv: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """``x_q (B, L, C)`` and ``x_kv (B, S, C_kv)``: finite, with the same batch size."""
    q = as_array(x_q, "x_q", ndim=3, finite=True)
    kv = as_array(x_kv, "x_kv", ndim=3, finite=True)
    if kv.shape[0] != q.shape[0]:
        raise ValueError(
            f"x_q and x_kv must have the same batch size B, got x_q {q.shape}, x_kv {kv.shape}"
        )
    return q, kv


def multihead_attention(
    x_q: ArrayLike, x_kv: ArrayLike, params: MultiHeadParams, H: int, *,
    H_kv: int | None = None, mask: ArrayLike | None = None,
    bias: ArrayLike | None = None
) -> tuple[FloatArray, MultiHeadCache]:
    r"""Multi-head (and grouped-query) attention in NumPy, keeping what the backward needs.

    .. math::

        Q = X_q W_Q + b_Q,\quad K = X_{kv} W_K + b_K,\quad V = X_{kv} W_V + b_V, \\
        \text{head}_h = \operatorname{softmax}\!\left(\frac{Q_h K_{g(h)}^\top}{\sqrt{D}}
            + \mathrm{bias}_M\right) V_{g(h)}, \\
        \text{out} = \operatorname{Concat}_h(\text{head}_h)\, W_O + b_O .

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
    mask, bias : ndarray, optional
        Boolean mask (``True`` = may attend) and additive score bias, each broadcastable to
        ``(B, H, L, S)``.

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
    x_q, x_kv = _check_inputs(x_q, x_kv)  # (B, L, C), (B, S, C_kv)
    params, dims = _check_params(params, H, H_kv, x_q.shape[-1], x_kv.shape[-1])
    H, H_kv = dims.H, dims.H_kv
    dtype = np.result_type(x_q, x_kv, *(p for p in params if p is not None))
    x_q, x_kv, params = _working_copies(dtype, x_q, x_kv, params)  # float16 -> float32
    w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o = params
    q = split_heads(_affine(x_q, w_q, b_q), H)  # (B, L, H*D) -> (B, H, L, D)
    k = split_heads(_affine(x_kv, w_k, b_k), H_kv)  # (B, S, H_kv*D) -> (B, H_kv, S, D)
    v = split_heads(_affine(x_kv, w_v, b_v), H_kv)  # (B, S, H_kv*D_v) -> (B, H_kv, S, D_v)
    heads, att_cache = scaled_dot_product_attention(q, k, v, mask=mask, bias=bias)  # (B, H, L, D_v)
    concat = merge_heads(heads)  # (B, L, H*D_v)
    out = _affine(concat, w_o, b_o).astype(dtype, copy=False)  # (B, L, C)
    return out, MultiHeadCache(x_q, x_kv, params, H, H_kv, concat, att_cache)


def multihead_attention_backward(
    dout: ArrayLike, cache: MultiHeadCache
) -> MultiHeadGrads:
    r"""Backward pass of :func:`multihead_attention` (and of its grouped/multi-query variants).

    .. math::

        \begin{aligned}
        &dW_O = \textstyle\sum_{b,l} \text{concat}^\top dO, \quad d\,\text{concat} = dO\, W_O^\top, \\
        &(dQ, dK, dV) = \text{attention\_backward}, \\
        &dX_q = dQ\, W_Q^\top, \quad dX_{kv} = dK\, W_K^\top + dV\, W_V^\top, \quad dW_Q =
          \textstyle\sum_{b,l} X_q^\top dQ, \\
        &db_Q = \textstyle\sum_{b,l} dQ, \ \dots
        \end{aligned}

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


def grouped_query_attention(
    x_q: ArrayLike, x_kv: ArrayLike, params: MultiHeadParams, H: int, H_kv: int, *,
    mask: ArrayLike | None = None, bias: ArrayLike | None = None
) -> tuple[FloatArray, MultiHeadCache]:
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


def multi_query_attention(
    x_q: ArrayLike, x_kv: ArrayLike, params: MultiHeadParams, H: int, *,
    mask: ArrayLike | None = None, bias: ArrayLike | None = None
) -> tuple[FloatArray, MultiHeadCache]:
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

    #: Total gradient of the one input ``(B, L, C)``.
    dx: np.ndarray
    #: Gradient of ``w_q`` ``(C, H*D)``.
    dw_q: np.ndarray
    #: Gradient of ``w_k`` ``(C, H_kv*D)``.
    dw_k: np.ndarray
    #: Gradient of ``w_v`` ``(C, H_kv*D_v)``.
    dw_v: np.ndarray
    #: Gradient of ``w_o`` ``(H*D_v, C)``.
    dw_o: np.ndarray
    #: Gradient of ``b_q`` ``(H*D,)``; ``None`` without that bias.
    db_q: np.ndarray | None
    #: Gradient of ``b_k`` ``(H_kv*D,)``; ``None`` without that bias.
    db_k: np.ndarray | None
    #: Gradient of ``b_v`` ``(H_kv*D_v,)``; ``None`` without that bias.
    db_v: np.ndarray | None
    #: Gradient of ``b_o`` ``(C,)``; ``None`` without that bias.
    db_o: np.ndarray | None


def self_attention(
    x: ArrayLike, params: MultiHeadParams, H: int, *, H_kv: int | None = None,
    mask: ArrayLike | None = None, bias: ArrayLike | None = None
) -> tuple[FloatArray, MultiHeadCache]:
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
    x = as_array(x, "x", ndim=3, finite=True)
    return multihead_attention(x, x, params, H, H_kv=H_kv, mask=mask, bias=bias)


def self_attention_backward(
    dout: ArrayLike, cache: MultiHeadCache
) -> SelfAttentionGrads:
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


def output_projection_as_sum(heads: ArrayLike, w_o: ArrayLike) -> FloatArray:
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
    heads = as_array(heads, "heads", ndim=4, finite=True)
    w_o = as_array(w_o, "w_o", ndim=2, finite=True)
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


def torch_mha_attn_mask(mask: ArrayLike, B: int, H: int, L: int, S: int) -> BoolArray:
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


def torch_key_padding_mask(mask: ArrayLike) -> BoolArray:
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
    m = check_bool_mask(mask, "mask")
    if m.ndim == 4:
        if m.shape[1:3] != (1, 1):
            raise ValueError(f"mask must have shape (B, 1, 1, S) or (B, S), got {m.shape}")
        m = m[:, 0, 0, :]  # (B, S)
    elif m.ndim != 2:
        raise ValueError(f"mask must have shape (B, 1, 1, S) or (B, S), got {m.shape}")
    return ~m  # (B, S)
