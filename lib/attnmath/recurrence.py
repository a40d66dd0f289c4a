r"""Attention as a recurrence: linear attention, state-space duality, gates and the delta rule.

Causal linear attention without a softmax keeps a matrix state
:math:`S_t \in \mathbb{R}^{D \times D_v}` and reads it with the query:

.. math::

    S_t = \alpha_t\, S_{t-1} + k_t v_t^\top, \qquad o_t = S_t^\top (s\, q_t),

with a decay :math:`\alpha_t \in (0, 1]` per head and step (:math:`\alpha_t = 1`: linear
attention; a constant :math:`\gamma`: RetNet's retention; a data-dependent scalar: Mamba-2's
SSD). Unrolled, :math:`o_i = \sum_{j \le i} G_{ij}\, (s\, q_i^\top k_j)\, v_j` with
:math:`G_{ij} = \alpha_{j+1} \cdots \alpha_i`, a *1-semiseparable* matrix
(:func:`semiseparable_mask`). The same layer is therefore computed three ways
(Dao & Gu, 2024, "state-space duality"):

* :func:`ssd_quadratic`, masked attention :math:`O = (G \circ s\,QK^\top)\,V`, cost
  :math:`O(L^2)`, one parallel step;
* :func:`ssd_recurrent`, the recurrence above, cost :math:`O(L D D_v)`, :math:`L` steps;
* :func:`ssd_chunked`, the quadratic form inside chunks of :math:`c` tokens and the
  recurrence across them (the tiling of flash attention applied to a recurrence), cost
  :math:`O(L c (D + D_v) + L D D_v)`, :math:`\lceil L/c \rceil` steps.

Their costs are counted by :func:`ssd_quadratic_cost`, :func:`ssd_recurrent_cost` and
:func:`ssd_chunked_cost`. Gated linear attention (Yang et al., 2024) gives every key dimension
its own data-dependent gate, :math:`S_t = \operatorname{diag}(\alpha_t) S_{t-1} + k_t v_t^\top`
(:func:`gla_quadratic`, :func:`gla_recurrent`, :func:`gla_chunked`); RetNet's fixed decays are
:func:`retention_decay`.

The delta rule (DeltaNet; Schlag et al., 2021; Yang et al., 2024) writes only what the state
gets wrong: each step is one step of gradient descent on :math:`\tfrac12\lVert S^\top k_t -
v_t\rVert^2` (:func:`delta_rule_step`); gated DeltaNet (Yang et al., 2025) decays the state
first. :func:`delta_rule_recurrent` runs it step by step, :func:`delta_rule_chunked` chunk by
chunk with the WY representation of a product of generalised Householder matrices
(:func:`wy_representation`).

:func:`recall_experiment` measures what a state of fixed size can hold: associative recall of
key-value pairs by softmax attention, linear attention and the delta rule.

Conventions: the state is ``(D, D_v)``, keys along its rows, as in flash-linear-attention
(Mamba-2's code keeps it transposed, ``(D_v, D)``). Every form takes the score scale
``scale`` (default :math:`1/\sqrt{D}`, as flash-linear-attention; Mamba-2 uses 1) and the
decays in log space, ``log_alpha`` :math:`= \log \alpha_t \le 0`, as both references do.
Inputs follow :func:`attnmath.core.prepare` (non-finite values raise, float16 is computed in
float32 and returned in the input's dtype, grouped key/value heads are shared by their query
heads); the recurrent forms are causal self-attention, so ``k`` and ``q`` have one length.

Shape legend: ``B`` batch, ``H`` query heads, ``H_kv`` key/value heads, ``L`` length (queries
and keys), ``D`` head dim, ``D_v`` value dim, ``c`` chunk length.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ._validate import FloatArray, as_array, as_rng, check_int, check_positive_int, check_real
from .core import Problem, check_finite, prepare

__all__ = [
    "FormCost",
    "Recurrence",
    "WY",
    "delta_rule_chunked",
    "delta_rule_recurrent",
    "delta_rule_step",
    "gla_chunked",
    "gla_quadratic",
    "gla_recurrent",
    "recall_experiment",
    "recall_pairs",
    "RECALL_MEMORIES",
    "retention_decay",
    "segment_sum",
    "semiseparable_mask",
    "ssd_chunked",
    "ssd_chunked_cost",
    "ssd_quadratic",
    "ssd_quadratic_cost",
    "ssd_recurrent",
    "ssd_recurrent_cost",
    "wy_representation",
]


class Recurrence(NamedTuple):
    """What every form returns: the output and the state after the last token."""

    #: ``(..., H, L, D_v)``, in the inputs' dtype.
    out: FloatArray
    #: ``(..., H, D, D_v)``, :math:`S_L`, the state a next token would read, in the inputs' dtype.
    state: FloatArray


class WY(NamedTuple):
    r"""The WY representation of one chunk of the delta rule (:func:`wy_representation`)."""

    #: The factor :math:`W` ``(..., c, D)``, with :math:`\prod_t (I - \beta_t k_t k_t^\top) = I - K^\top W`.
    w: FloatArray
    #: The factor :math:`U` ``(..., c, D_v)``, with the chunk's state from zero equal to :math:`K^\top U`.
    u: FloatArray


class FormCost(NamedTuple):
    """The cost of one form of the layer for one head (:func:`ssd_quadratic_cost` ...)."""

    #: Floating-point operations of the products (a multiply-add counts 2).
    flops: int
    #: Steps that must run one after another.
    steps: int
    #: Numbers held at once besides the inputs and the output (scores, state).
    memory: int


# ----------------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------------


class _Layer(NamedTuple):
    """A validated causal layer: queries already scaled, keys and values per query head."""

    prob: Problem
    q: FloatArray  # (..., H, L, D), times the scale
    k: FloatArray  # (..., H, L, D)
    v: FloatArray  # (..., H, L, D_v)
    state: FloatArray  # (..., H, D, D_v): the initial state


def _layer(q: object, k: object, v: object, scale: object, initial_state: object) -> _Layer:
    prob = prepare(q, k, v, scale=scale)
    if prob.L != prob.S:
        raise ValueError(f"k must have the length of q (causal self-attention): q has L={prob.L}, "
                         f"k has {prob.S}")
    shape = prob.q5.shape  # (..., H_kv, g, L, D)
    flat = prob.out_shape[:-1]  # (..., H, L)
    qs = (prob.q5 * prob.scale).reshape(flat + (shape[-1],))  # (..., H, L, D)
    ks = np.broadcast_to(prob.k5, shape).reshape(flat + (shape[-1],))  # (..., H, L, D)
    vs = np.broadcast_to(prob.v5, shape[:-1] + prob.v5.shape[-1:]).reshape(prob.out_shape)
    want = flat[:-1] + (shape[-1], prob.v5.shape[-1])  # (..., H, D, D_v)
    if initial_state is None:
        state = np.zeros(want, dtype=prob.dtype)
    else:
        state = as_array(initial_state, "initial_state", allow_int=True)
        if state.shape != want:
            raise ValueError(f"initial_state must have shape (..., H, D, D_v) = {want}, "
                             f"got {state.shape}")
        check_finite(state, "initial_state")
        state = state.astype(prob.dtype)
    return _Layer(prob, qs, ks, vs, state)


def _gates(x: object, name: str, layer: _Layer, *, vector: bool, log: bool) -> FloatArray:
    """``log_alpha`` or ``beta`` broadcast to ``(..., H, L)`` (``(..., H, L, D)`` if ``vector``)."""
    want = layer.prob.out_shape[:-1] + ((layer.q.shape[-1],) if vector else ())
    g = as_array(x, name, allow_int=True)
    check_finite(g, name)
    try:
        g = np.broadcast_to(g, want).astype(layer.prob.dtype)
    except ValueError:
        axes = "(..., H, L, D)" if vector else "(..., H, L)"
        raise ValueError(f"{name} of shape {g.shape} does not broadcast to {axes} = {want}") from None
    if log and (g > 0).any():
        raise ValueError(f"{name} must be <= 0 (the log of a decay in (0, 1]), got max {g.max()}")
    return g


def _finish(layer: _Layer, out: FloatArray, state: FloatArray) -> Recurrence:
    dtype = layer.prob.out_dtype
    return Recurrence(out.astype(dtype, copy=False), state.astype(dtype, copy=False))


def _check_chunk(chunk_size: object) -> int:
    return check_positive_int(chunk_size, "chunk_size")


# ----------------------------------------------------------------------------------------------
# the 1-semiseparable mask and the three forms of SSD
# ----------------------------------------------------------------------------------------------


def segment_sum(log_alpha: ArrayLike) -> FloatArray:
    r"""The sums of the log decays between every two positions: the log of the SSD mask.

    .. math::

        \Sigma_{ij} = \sum_{m = j + 1}^{i} \log \alpha_m \quad (j \le i), \qquad
        \Sigma_{ij} = -\infty \quad (j > i).

    Parameters
    ----------
    log_alpha : array_like, shape (..., L)
        :math:`\log \alpha_m`, finite.

    Returns
    -------
    ndarray, shape (..., L, L)
        Zero on the diagonal, :math:`-\infty` above it.

    Notes
    -----
    Each entry is a sum of its own terms (a cumulative sum down every column), not a
    difference :math:`b_i - b_j` of running sums, which would cancel in long sequences: this
    is the "stable segsum" of Mamba-2's minimal code. Oracle: the sums written out in the tests.
    """
    la = as_array(log_alpha, "log_alpha", allow_int=True, finite=True)
    if la.ndim < 1:
        raise ValueError(f"log_alpha must have a length axis (..., L), got shape {la.shape}")
    L = la.shape[-1]
    below = np.tri(L, L, -1, dtype=bool)  # (L, L): i > j
    terms = np.where(below, la[..., :, None], 0.0)  # (..., L, L): log alpha_i where i > j
    sums = np.cumsum(terms, axis=-2)  # (..., L, L): sum over j < m <= i
    return np.where(np.tri(L, L, dtype=bool), sums, -np.inf)  # (..., L, L)


def semiseparable_mask(log_alpha: ArrayLike) -> FloatArray:
    r"""The mask :math:`G` of SSD: :math:`G_{ij} = \alpha_{j+1} \cdots \alpha_i` below the
    diagonal, 1 on it, 0 above.

    .. math:: G = \exp(\Sigma), \qquad G_{ij} = \frac{b_i}{b_j}\ (j \le i),\quad
              b_i = \alpha_1 \cdots \alpha_i ,

    so every block of :math:`G` on or below the diagonal has rank one: :math:`G` is
    1-semiseparable. With every :math:`\alpha_t = 1` it is the causal mask.

    Parameters
    ----------
    log_alpha : array_like, shape (..., L)

    Returns
    -------
    ndarray, shape (..., L, L)

    Notes
    -----
    Computed as the exponential of :func:`segment_sum`, never as the ratio :math:`b_i/b_j`,
    which underflows and divides by zero for long sequences.
    """
    return np.exp(segment_sum(log_alpha))  # (..., L, L)


def _quadratic(layer: _Layer, la: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Output and final state of the masked quadratic form, scalar gates ``la (..., H, L)``."""
    L = la.shape[-1]
    if L == 0:
        return np.zeros(layer.v.shape, layer.prob.dtype), layer.state
    seg = segment_sum(la)  # (..., H, L, L)
    scores = (layer.q @ np.swapaxes(layer.k, -1, -2)) * np.exp(seg)  # (..., H, L, L)
    decay_in = np.exp(np.cumsum(la, axis=-1))[..., None]  # (..., H, L, 1): alpha_1 ... alpha_i
    out = scores @ layer.v + decay_in * (layer.q @ layer.state)  # (..., H, L, D_v)
    to_end = np.exp(seg[..., -1, :])[..., None]  # (..., H, L, 1): alpha_{j+1} ... alpha_L
    state = decay_in[..., -1, :, None] * layer.state + np.swapaxes(layer.k, -1, -2) @ (to_end * layer.v)
    return out, state  # (..., H, L, D_v), (..., H, D, D_v)


def ssd_quadratic(q: ArrayLike, k: ArrayLike, v: ArrayLike, log_alpha: ArrayLike, *,
                  scale: float | None = None, initial_state: ArrayLike | None = None) -> Recurrence:
    r"""SSD as masked attention: :math:`O = (G \circ s\,Q K^\top)\, V`.

    .. math::

        o_i = \sum_{j \le i} G_{ij}\, (s\, q_i^\top k_j)\, v_j + b_i\, S_0^\top (s\, q_i),
        \qquad S_L = b_L S_0 + \sum_j G_{Lj}\, k_j v_j^\top ,

    with :math:`G` the 1-semiseparable mask (:func:`semiseparable_mask`) and
    :math:`b_i = \alpha_1 \cdots \alpha_i`.

    Parameters
    ----------
    q : ndarray, shape (..., H, L, D)
    k : ndarray, shape (..., H_kv, L, D)
    v : ndarray, shape (..., H_kv, L, D_v)
    log_alpha : array_like, broadcastable to (..., H, L)
        :math:`\log \alpha_t \le 0`, per query head and step.
    scale : float, optional
        :math:`s`, default :math:`1/\sqrt{D}`.
    initial_state : ndarray, shape (..., H, D, D_v), optional
        :math:`S_0` (default zero).

    Returns
    -------
    Recurrence
        ``out (..., H, L, D_v)`` and ``state (..., H, D, D_v)``.

    Notes
    -----
    Cost :func:`ssd_quadratic_cost`. The :math:`L \times L` scores and mask are formed in full.
    Oracles: :func:`ssd_recurrent` (the proposition of the book's chapter "Attention as a
    recurrence"), torch in float64, and flash-linear-attention's simple-GLA reference.
    """
    layer = _layer(q, k, v, scale, initial_state)
    la = _gates(log_alpha, "log_alpha", layer, vector=False, log=True)
    return _finish(layer, *_quadratic(layer, la))


def _scan(layer: _Layer, la: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The recurrence ``S_t = alpha_t S_{t-1} + k_t v_t^T``, ``la (..., H, L, 1 or D)``."""
    state = layer.state  # (..., H, D, D_v)
    out = np.empty(layer.v.shape, dtype=layer.prob.dtype)  # (..., H, L, D_v)
    for t in range(layer.q.shape[-2]):
        write = layer.k[..., t, :, None] * layer.v[..., t, None, :]  # (..., H, D, D_v)
        state = np.exp(la[..., t, :])[..., :, None] * state + write
        out[..., t, :] = np.einsum("...d,...de->...e", layer.q[..., t, :], state)
    return out, state


def ssd_recurrent(q: ArrayLike, k: ArrayLike, v: ArrayLike, log_alpha: ArrayLike, *,
                  scale: float | None = None, initial_state: ArrayLike | None = None) -> Recurrence:
    r"""SSD as a recurrence with a matrix state.

    .. math:: S_t = \alpha_t S_{t-1} + k_t v_t^\top, \qquad o_t = S_t^\top (s\, q_t) .

    Parameters and returns as :func:`ssd_quadratic`.

    Notes
    -----
    :math:`\alpha_t = 1` is causal linear attention without a feature map or normaliser, the
    "RNN" of Katharopoulos et al. (2020) (:func:`attnmath.linear.causal_linear_attention` adds
    both); constant :math:`\alpha_t = \gamma_h` is RetNet's retention (:func:`retention_decay`);
    Mamba-2 sets :math:`\log \alpha_t = \Delta_t A` from the input, with :math:`q, k, v` its
    :math:`C, B, \Delta_t x` and ``scale=1``. Decoding one token costs
    :math:`O(D D_v)` whatever the position. Cost :func:`ssd_recurrent_cost`.
    """
    layer = _layer(q, k, v, scale, initial_state)
    la = _gates(log_alpha, "log_alpha", layer, vector=False, log=True)
    return _finish(layer, *_scan(layer, la[..., None]))


def _by_chunks(layer: _Layer, gates: tuple[FloatArray, ...], chunk_size: int,
               chunk_form: Any) -> tuple[FloatArray, FloatArray]:
    """Run ``chunk_form(layer_of_chunk, *gates_of_chunk)`` chunk after chunk, passing the state."""
    out = np.empty(layer.v.shape, dtype=layer.prob.dtype)  # (..., H, L, D_v)
    state = layer.state  # (..., H, D, D_v)
    L = layer.q.shape[-2]
    for c0 in range(0, L, chunk_size):
        part = slice(c0, min(c0 + chunk_size, L))
        chunk = layer._replace(q=layer.q[..., part, :], k=layer.k[..., part, :],
                               v=layer.v[..., part, :], state=state)
        out[..., part, :], state = chunk_form(chunk, *(g[..., part] if g.ndim == layer.q.ndim - 1
                                                       else g[..., part, :] for g in gates))
    return out, state


def ssd_chunked(q: ArrayLike, k: ArrayLike, v: ArrayLike, log_alpha: ArrayLike, *,
                chunk_size: int, scale: float | None = None,
                initial_state: ArrayLike | None = None) -> Recurrence:
    r"""SSD chunk by chunk: the quadratic form inside a chunk, the recurrence across chunks.

    For the chunk of positions :math:`a < i \le b` entered with state :math:`S_a`,

    .. math::

        \begin{aligned}
        o_i &= \sum_{a < j \le i} G_{ij}\,(s\, q_i^\top k_j)\, v_j
              + G_{ia}\, S_a^\top (s\, q_i), \\
        S_b &= G_{ba}\, S_a + \sum_{a < j \le b} G_{bj}\, k_j v_j^\top ,
        \end{aligned}

    which is :func:`ssd_quadratic` on the chunk with initial state :math:`S_a`.

    Parameters
    ----------
    q, k, v, log_alpha, scale, initial_state
        As in :func:`ssd_quadratic`.
    chunk_size : int
        :math:`c \ge 1`; the last chunk is shorter when :math:`c` does not divide :math:`L`.

    Returns
    -------
    Recurrence

    Notes
    -----
    ``chunk_size=1`` is the recurrence, ``chunk_size >= L`` the quadratic form. Only
    :math:`c \times c` scores and one state are held at a time. Mamba-2's minimal code and
    flash-linear-attention's kernels compute the chunks' states first and pass them on in a
    second loop; the arithmetic is the same. Cost :func:`ssd_chunked_cost`.
    """
    C = _check_chunk(chunk_size)
    layer = _layer(q, k, v, scale, initial_state)
    la = _gates(log_alpha, "log_alpha", layer, vector=False, log=True)
    return _finish(layer, *_by_chunks(layer, (la,), C, _quadratic))


# ----------------------------------------------------------------------------------------------
# gates: RetNet's fixed decay, gated linear attention's vector gates
# ----------------------------------------------------------------------------------------------


def retention_decay(H: int) -> FloatArray:
    r"""RetNet's decay per head, :math:`\gamma_h = 1 - 2^{-5-h}`, :math:`h = 0, \dots, H-1`.

    Retention is :func:`ssd_quadratic` (or any form) with
    :math:`\log \alpha_t = \log \gamma_h` at every step: :math:`G_{ij} = \gamma_h^{\,i-j}`.

    Parameters
    ----------
    H : int
        Heads (>= 1).

    Returns
    -------
    ndarray, shape (H,)
        From :math:`1 - 1/32` up towards 1: the first head forgets fastest.

    Notes
    -----
    Sun et al. (2023), the multi-scale retention: :math:`\gamma = 1 - 2^{-5 - \text{arange}(0,
    h)}`. The paper also rotates queries and keys (xPos) and normalises each head's output
    (GroupNorm); neither is part of the recurrence and neither is applied here.
    """
    H = check_positive_int(H, "H")
    return 1.0 - 2.0 ** (-5.0 - np.arange(H, dtype=np.float64))  # (H,)


def _gla_chunk(layer: _Layer, la: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Output and state of one chunk of gated linear attention, ``la (..., H, c, D)``."""
    C = la.shape[-2]
    if C == 0:
        return np.zeros(layer.v.shape, layer.prob.dtype), layer.state
    seg = segment_sum(np.swapaxes(la, -1, -2))  # (..., H, D, c, c): per key dimension
    scores = np.einsum("...id,...jd,...dij->...ij", layer.q, layer.k, np.exp(seg))  # (..., H, c, c)
    decay_in = np.exp(np.cumsum(la, axis=-2))  # (..., H, c, D): alpha_1 ... alpha_i, per dim
    out = scores @ layer.v + (layer.q * decay_in) @ layer.state  # (..., H, c, D_v)
    to_end = np.exp(np.swapaxes(seg[..., -1, :], -1, -2))  # (..., H, c, D)
    state = (decay_in[..., -1, :, None] * layer.state
             + np.swapaxes(layer.k * to_end, -1, -2) @ layer.v)  # (..., H, D, D_v)
    return out, state


def gla_quadratic(q: ArrayLike, k: ArrayLike, v: ArrayLike, log_alpha: ArrayLike, *,
                  scale: float | None = None, initial_state: ArrayLike | None = None) -> Recurrence:
    r"""Gated linear attention in its parallel form, one gate per key dimension.

    .. math::

        o_i = \sum_{j \le i} \Bigl(\sum_{d} s\, q_{id}\, k_{jd}\,
              \alpha_{j+1,d} \cdots \alpha_{i,d}\Bigr) v_j
              + \bigl(s\, q_i \circ b_i\bigr)^\top S_0 ,

    with :math:`b_i = \alpha_1 \circ \cdots \circ \alpha_i`.

    Parameters
    ----------
    q, k, v, scale, initial_state
        As in :func:`ssd_quadratic`.
    log_alpha : array_like, broadcastable to (..., H, L, D)
        :math:`\log \alpha_{t,d} \le 0`; a gate of shape ``(..., H, L, 1)`` is SSD's.

    Returns
    -------
    Recurrence

    Notes
    -----
    The gate no longer factors out of the inner product, so the mask is a
    :math:`D \times L \times L` tensor (:func:`segment_sum` per dimension) instead of SSD's
    :math:`L \times L` matrix: cost :math:`O(L^2 D)` memory. Yang et al. (2024) form the ratios
    :math:`b_i / b_j` instead, in chunks small enough not to overflow, with a second level of
    chunks in log space. Oracle: :func:`gla_recurrent`.
    """
    layer = _layer(q, k, v, scale, initial_state)
    la = _gates(log_alpha, "log_alpha", layer, vector=True, log=True)
    return _finish(layer, *_gla_chunk(layer, la))


def gla_recurrent(q: ArrayLike, k: ArrayLike, v: ArrayLike, log_alpha: ArrayLike, *,
                  scale: float | None = None, initial_state: ArrayLike | None = None) -> Recurrence:
    r"""Gated linear attention as a recurrence (Yang et al., 2024).

    .. math::

        S_t = \operatorname{diag}(\alpha_t)\, S_{t-1} + k_t v_t^\top, \qquad
        o_t = S_t^\top (s\, q_t), \qquad \alpha_t \in (0, 1]^D .

    Parameters and returns as :func:`gla_quadratic`.

    Notes
    -----
    The model computes :math:`\alpha_t` from the token (a low-rank projection through a
    sigmoid, raised to the power :math:`1/16`); this function takes it as given. A gate that is
    the same for every :math:`d` is :func:`ssd_recurrent`. Oracle: flash-linear-attention's
    ``naive_recurrent_gla``.
    """
    layer = _layer(q, k, v, scale, initial_state)
    la = _gates(log_alpha, "log_alpha", layer, vector=True, log=True)
    return _finish(layer, *_scan(layer, la))


def gla_chunked(q: ArrayLike, k: ArrayLike, v: ArrayLike, log_alpha: ArrayLike, *,
                chunk_size: int, scale: float | None = None,
                initial_state: ArrayLike | None = None) -> Recurrence:
    r"""Gated linear attention chunk by chunk: :func:`gla_quadratic` inside each chunk of
    ``chunk_size`` tokens, the state passed from chunk to chunk.

    Parameters and returns as :func:`gla_quadratic`, with ``chunk_size`` :math:`c \ge 1`.

    Notes
    -----
    The same schedule as :func:`ssd_chunked`; only the chunk's form differs.
    """
    C = _check_chunk(chunk_size)
    layer = _layer(q, k, v, scale, initial_state)
    la = _gates(log_alpha, "log_alpha", layer, vector=True, log=True)
    return _finish(layer, *_by_chunks(layer, (la,), C, _gla_chunk))


# ----------------------------------------------------------------------------------------------
# costs
# ----------------------------------------------------------------------------------------------


def _sizes(L: object, D: object, D_v: object) -> tuple[int, int, int]:
    return (check_positive_int(L, "L", allow_zero=True), check_positive_int(D, "D"),
            check_positive_int(D_v, "D_v"))


def ssd_quadratic_cost(L: int, D: int, D_v: int) -> FormCost:
    r"""Cost of :func:`ssd_quadratic` for one head, from a zero state.

    .. math::

        F = \underbrace{2 L^2 D}_{Q K^\top} + \underbrace{2 L^2 D_v}_{(G \circ \cdot) V},
        \qquad \text{steps} = 1, \qquad \text{memory} = L^2 .

    Notes
    -----
    Products only (the mask, the exponentials and the final state are not counted; the
    convention of :mod:`attnmath.counting`). The full :math:`L \times L` products are counted,
    as the function computes them; a kernel that skips the masked half does half. Oracle:
    ``torch.utils.flop_counter.FlopCounterMode`` on the same products in the tests.
    """
    L, D, D_v = _sizes(L, D, D_v)
    return FormCost(2 * L * L * (D + D_v), 1, L * L)


def ssd_recurrent_cost(L: int, D: int, D_v: int) -> FormCost:
    r"""Cost of :func:`ssd_recurrent` for one head.

    .. math::

        F = L\,\bigl(\underbrace{2 D D_v}_{k_t v_t^\top}
            + \underbrace{2 D D_v}_{S_t^\top q_t}\bigr) = 4 L D D_v ,
        \qquad \text{steps} = L, \qquad \text{memory} = D D_v .

    Notes
    -----
    The outer product :math:`k_t v_t^\top` is counted as the product of a :math:`D \times 1`
    and a :math:`1 \times D_v` matrix, as ``FlopCounterMode`` counts it; the decay
    :math:`\alpha_t S_{t-1}` is elementwise and not counted.
    """
    L, D, D_v = _sizes(L, D, D_v)
    return FormCost(4 * L * D * D_v, L, D * D_v)


def ssd_chunked_cost(L: int, D: int, D_v: int, chunk_size: int) -> FormCost:
    r"""Cost of :func:`ssd_chunked` for one head.

    For chunks of lengths :math:`\ell_1, \dots, \ell_n` (:math:`n = \lceil L / c \rceil`, all
    :math:`c` but the last),

    .. math::

        \begin{aligned}
        F &= \sum_{m=1}^{n} \Bigl(2 \ell_m^2 (D + D_v) + \underbrace{2 \ell_m D D_v}_{Q S}
            + \underbrace{2 \ell_m D D_v}_{K^\top V}\Bigr) \\
          &= 2 (D + D_v) \sum_m \ell_m^2 + 4 L D D_v ,
        \end{aligned}

    :math:`2 L c (D + D_v) + 4 L D D_v` when :math:`c` divides :math:`L`;
    :math:`\text{steps} = n`, :math:`\text{memory} = c'^2 + D D_v` with :math:`c' = \min(c, L)`.

    Notes
    -----
    Linear in :math:`L` for a fixed :math:`c`. Against the recurrence it trades
    :math:`2 c (D + D_v)` extra FLOPs per token for :math:`c` times fewer sequential steps,
    each of them matrix products that a GPU's tensor cores run well. Counted as
    :func:`ssd_quadratic_cost` and :func:`ssd_recurrent_cost`.
    """
    L, D, D_v = _sizes(L, D, D_v)
    C = _check_chunk(chunk_size)
    full, last = divmod(L, C)
    squares = full * C * C + last * last
    n = full + (last > 0)
    return FormCost(2 * (D + D_v) * squares + 4 * L * D * D_v, n, min(C, L) ** 2 + D * D_v)


# ----------------------------------------------------------------------------------------------
# the delta rule
# ----------------------------------------------------------------------------------------------


def delta_rule_step(state: ArrayLike, k: ArrayLike, v: ArrayLike, beta: ArrayLike,
                    log_alpha: ArrayLike = 0.0) -> FloatArray:
    r"""One step of the (gated) delta rule: one gradient step on the state's recall error.

    .. math::

        \begin{aligned}
        S_t &= \alpha_t S_{t-1} - \beta_t \nabla \ell_t(\alpha_t S_{t-1}) \\
            &= \alpha_t S_{t-1} + \beta_t k_t \bigl(v_t - \alpha_t S_{t-1}^\top k_t\bigr)^\top, \\
        \ell_t(S) &= \tfrac12 \lVert S^\top k_t - v_t \rVert^2 .
        \end{aligned}

    Parameters
    ----------
    state : array_like, shape (..., D, D_v)
        :math:`S_{t-1}`.
    k : array_like, shape (..., D)
    v : array_like, shape (..., D_v)
    beta : array_like, broadcastable to (...)
        The step size :math:`\beta_t` (DeltaNet: a sigmoid of the token, in :math:`(0, 1)`).
    log_alpha : array_like, broadcastable to (...)
        :math:`\log \alpha_t \le 0`; 0 (the default) is DeltaNet, anything else gated DeltaNet.

    Returns
    -------
    ndarray, shape (..., D, D_v)
        :math:`S_t`; with :math:`\beta_t \lVert k_t\rVert^2 = 1` it recalls :math:`v_t` from
        :math:`k_t` exactly.

    Notes
    -----
    Linear attention's write :math:`S_{t-1} + k_t v_t^\top` is the gradient step on
    :math:`-\langle S^\top k_t, v_t\rangle` instead, a loss that keeps rewarding a key already
    stored. The models normalise :math:`k_t` to unit length, so that :math:`I - \beta_t k_t
    k_t^\top` is a contraction for :math:`0 \le \beta_t \le 2`; this function does not.
    Oracle: the gradient of :math:`\ell_t` by ``torch.autograd`` in the tests.
    """
    S = as_array(state, "state", allow_int=True, finite=True)
    k, v = as_array(k, "k", allow_int=True, finite=True), as_array(v, "v", allow_int=True, finite=True)
    if S.ndim < 2 or k.shape != S.shape[:-1] or v.shape != S.shape[:-2] + S.shape[-1:]:
        raise ValueError(f"state (..., D, D_v), k (..., D) and v (..., D_v) disagree: got state "
                         f"{S.shape}, k {k.shape}, v {v.shape}")
    b = _per_state(beta, "beta", S.shape[:-2])  # (...)
    la = _per_state(log_alpha, "log_alpha", S.shape[:-2])  # (...)
    if (la > 0).any():
        raise ValueError(f"log_alpha must be <= 0 (the log of a decay in (0, 1]), got max {la.max()}")
    return _delta_update(S, k, v, b, la)


def _delta_update(S: FloatArray, k: FloatArray, v: FloatArray, b: FloatArray,
                  la: FloatArray) -> FloatArray:
    """The arithmetic of :func:`delta_rule_step`, on checked arrays."""
    decayed = np.exp(la)[..., None, None] * S  # (..., D, D_v)
    error = v - np.einsum("...d,...de->...e", k, decayed)  # (..., D_v): v_t - S^T k_t
    return decayed + b[..., None, None] * k[..., :, None] * error[..., None, :]


def _per_state(x: object, name: str, lead: tuple) -> FloatArray:
    """``beta`` or ``log_alpha`` of :func:`delta_rule_step` broadcast to the state's leading axes."""
    g = as_array(x, name, allow_int=True, finite=True)
    try:
        return np.broadcast_to(g, lead)
    except ValueError:
        raise ValueError(f"{name} of shape {g.shape} does not broadcast to the state's leading "
                         f"axes {lead}") from None


def _delta_gates(layer: _Layer, beta: object, log_alpha: object) -> tuple[FloatArray, FloatArray]:
    b = _gates(beta, "beta", layer, vector=False, log=False)
    la = _gates(0.0 if log_alpha is None else log_alpha, "log_alpha", layer, vector=False, log=True)
    return b, la


def delta_rule_recurrent(q: ArrayLike, k: ArrayLike, v: ArrayLike, beta: ArrayLike, *,
                         log_alpha: ArrayLike | None = None, scale: float | None = None,
                         initial_state: ArrayLike | None = None) -> Recurrence:
    r"""DeltaNet (and gated DeltaNet) step by step.

    .. math::

        S_t = \alpha_t \bigl(I - \beta_t k_t k_t^\top\bigr) S_{t-1} + \beta_t k_t v_t^\top,
        \qquad o_t = S_t^\top (s\, q_t) .

    Parameters
    ----------
    q, k, v, scale, initial_state
        As in :func:`ssd_quadratic`.
    beta : array_like, broadcastable to (..., H, L)
        Step sizes :math:`\beta_t`.
    log_alpha : array_like, broadcastable to (..., H, L), optional
        Gated DeltaNet's :math:`\log \alpha_t \le 0` (Yang et al., 2025); ``None``: DeltaNet.

    Returns
    -------
    Recurrence

    Notes
    -----
    Each step is :func:`delta_rule_step`'s. The keys are used as given: the models normalise
    them to unit length (:math:`L_2`), which keeps the state bounded for
    :math:`0 \le \beta_t \le 2`. Oracles: flash-linear-attention's ``delta_rule_recurrence``
    and ``naive_recurrent_gated_delta_rule``.
    """
    layer = _layer(q, k, v, scale, initial_state)
    b, la = _delta_gates(layer, beta, log_alpha)
    state = layer.state  # (..., H, D, D_v)
    out = np.empty(layer.v.shape, dtype=layer.prob.dtype)  # (..., H, L, D_v)
    for t in range(layer.q.shape[-2]):
        state = _delta_update(state, layer.k[..., t, :], layer.v[..., t, :], b[..., t], la[..., t])
        out[..., t, :] = np.einsum("...d,...de->...e", layer.q[..., t, :], state)
    return _finish(layer, out, state)


def _unit_lower_inverse(A: FloatArray) -> FloatArray:
    """``(I + A)^{-1}`` for a strictly lower triangular ``A (..., c, c)``, by forward substitution."""
    C = A.shape[-1]
    T = np.broadcast_to(np.eye(C, dtype=A.dtype), A.shape).copy()  # (..., c, c)
    for i in range(1, C):
        T[..., i, :i] = -np.einsum("...s,...st->...t", A[..., i, :i], T[..., :i, :i])
    return T


def wy_representation(k: ArrayLike, v: ArrayLike, beta: ArrayLike,
                      log_alpha: ArrayLike | None = None) -> WY:
    r"""The WY representation of one chunk of the (gated) delta rule, by the UT transform.

    With :math:`b_t = \alpha_1 \cdots \alpha_t` inside the chunk and the strictly lower
    triangular :math:`A_{ts} = \beta_t \frac{b_t}{b_s} k_t^\top k_s` (:math:`s < t`),

    .. math::

        T = (I + A)^{-1}, \qquad W = T \operatorname{diag}(\beta \circ b)\, K, \qquad
        U = T \operatorname{diag}(\beta)\, V .

    The values the chunk writes into its state are then :math:`\Delta = U - W S_0` for the
    state :math:`S_0` it starts from, and without gates
    :math:`\prod_{t=c}^{1}(I - \beta_t k_t k_t^\top) = I - K^\top W`.

    Parameters
    ----------
    k : array_like, shape (..., c, D)
    v : array_like, shape (..., c, D_v)
    beta : array_like, shape (..., c)
    log_alpha : array_like, shape (..., c), optional
        Gated DeltaNet's :math:`\log\alpha_t \le 0`; ``None`` for DeltaNet.

    Returns
    -------
    WY
        ``w (..., c, D)`` and ``u (..., c, D_v)``.

    Notes
    -----
    Row :math:`t` of :math:`(I + A)\,\Delta = \operatorname{diag}(\beta)(V - \operatorname{
    diag}(b) K S_0)` is the delta rule's write :math:`\delta_t = \beta_t (v_t - \alpha_t
    S_{t-1}^\top k_t)` with :math:`S_{t-1}` unrolled to the chunk's start (the proof is in the
    book's chapter). :math:`T` is computed by forward substitution, :math:`O(c^3)`, the "UT
    transform" of Yang et al. (2024). Oracle: the product of the factors, and the recurrence.
    """
    k = as_array(k, "k", allow_int=True, finite=True)
    v = as_array(v, "v", allow_int=True, finite=True)
    steps = as_array(beta, "beta", allow_int=True, finite=True)
    la = np.zeros(steps.shape) if log_alpha is None else as_array(log_alpha, "log_alpha", allow_int=True,
                                                               finite=True)
    if k.ndim < 2 or v.shape[:-1] != k.shape[:-1] or steps.shape != k.shape[:-1] or la.shape != steps.shape:
        raise ValueError(f"k (..., c, D), v (..., c, D_v), beta (..., c) and log_alpha (..., c) "
                         f"disagree: got {k.shape}, {v.shape}, {steps.shape}, {la.shape}")
    if (la > 0).any():
        raise ValueError(f"log_alpha must be <= 0 (the log of a decay in (0, 1]), got max {la.max()}")
    ratio = np.exp(segment_sum(la)) * np.tri(k.shape[-2], k.shape[-2], -1)  # (..., c, c): s < t
    A = steps[..., :, None] * ratio * (k @ np.swapaxes(k, -1, -2))  # (..., c, c)
    T = _unit_lower_inverse(A)  # (..., c, c)
    decay = np.exp(np.cumsum(la, axis=-1))  # (..., c): b_t
    dtype = np.result_type(k, v) if np.issubdtype(np.result_type(k, v), np.floating) else np.float64
    return WY((T @ ((steps * decay)[..., None] * k)).astype(dtype, copy=False),  # the inputs' precision
              (T @ (steps[..., None] * v)).astype(dtype, copy=False))


def _delta_chunk(layer: _Layer, b: FloatArray, la: FloatArray) -> tuple[FloatArray, FloatArray]:
    """One chunk of the delta rule: SSD on the values it writes, ``U - W S_0``."""
    w, u = wy_representation(layer.k, layer.v, b, la)  # (..., H, c, D), (..., H, c, D_v)
    written = u - w @ layer.state  # (..., H, c, D_v)
    return _quadratic(layer._replace(v=written), la)


def delta_rule_chunked(q: ArrayLike, k: ArrayLike, v: ArrayLike, beta: ArrayLike, *,
                       chunk_size: int, log_alpha: ArrayLike | None = None,
                       scale: float | None = None,
                       initial_state: ArrayLike | None = None) -> Recurrence:
    r"""The (gated) delta rule chunk by chunk, with the WY representation.

    In each chunk, entered with state :math:`S_0`, the values written are
    :math:`\Delta = U - W S_0` (:func:`wy_representation`), and then the chunk is
    :func:`ssd_quadratic` with values :math:`\Delta`:

    .. math::

        O = (G \circ s\, Q K^\top)\, \Delta + \operatorname{diag}(b)\, s\, Q S_0, \qquad
        S_c = b_c S_0 + K^\top \operatorname{diag}(G_{c,:})\, \Delta .

    Parameters
    ----------
    q, k, v, beta, log_alpha, scale, initial_state
        As in :func:`delta_rule_recurrent`.
    chunk_size : int
        :math:`c \ge 1`; the last chunk may be shorter.

    Returns
    -------
    Recurrence

    Notes
    -----
    The only sequential work inside a chunk is the forward substitution of the
    :math:`c \times c` matrix :math:`T`; everything else is matrix products. Oracles:
    :func:`delta_rule_recurrent`, flash-linear-attention's ``delta_rule_chunkwise`` and
    ``naive_chunk_gated_delta_rule``.
    """
    C = _check_chunk(chunk_size)
    layer = _layer(q, k, v, scale, initial_state)
    b, la = _delta_gates(layer, beta, log_alpha)
    return _finish(layer, *_by_chunks(layer, (b, la), C, _delta_chunk))


# ----------------------------------------------------------------------------------------------
# what the state can hold: associative recall
# ----------------------------------------------------------------------------------------------


def recall_pairs(trials: int, n_pairs: int, D: int, D_v: int | None = None, *,
                 seed: object = 0) -> tuple[FloatArray, FloatArray]:
    r"""Random key-value pairs for associative recall: unit keys, Gaussian values.

    Parameters
    ----------
    trials : int
        Independent sets of pairs (>= 1).
    n_pairs : int
        :math:`N \ge 1` pairs per set.
    D, D_v : int
        Key and value dims (``D_v`` defaults to ``D``).
    seed : int or numpy.random.Generator

    Returns
    -------
    keys, values : ndarray, shapes (trials, N, D) and (trials, N, D_v)
        Keys uniform on the unit sphere; values with independent standard normal entries.
    """
    trials = check_positive_int(trials, "trials")
    N = check_positive_int(n_pairs, "n_pairs")
    D = check_positive_int(D, "D")
    D_v = D if D_v is None else check_positive_int(D_v, "D_v")
    rng = as_rng(seed)
    keys = rng.standard_normal((trials, N, D))  # (trials, N, D)
    keys /= np.linalg.norm(keys, axis=-1, keepdims=True)
    return keys, rng.standard_normal((trials, N, D_v))  # (trials, N, D_v)


def _recalled(candidates: FloatArray, read: FloatArray) -> float:
    """Share of the queries whose read-out ``read (trials, N, D_v)`` lies closest in angle to
    their own value, candidate ``n`` of ``candidates (trials, M, D_v)`` for query ``n < N``."""
    unit = candidates / np.linalg.norm(candidates, axis=-1, keepdims=True)  # (trials, M, D_v)
    guess = np.argmax(read @ np.swapaxes(unit, -1, -2), axis=-1)  # (trials, N)
    return float(np.mean(guess == np.arange(read.shape[-2])))


def _read(keys: FloatArray, values: FloatArray, queries: FloatArray, memory: str, beta: float,
          softmax_scale: float, window: int) -> FloatArray:
    """What ``memory`` returns for ``queries (trials, N, D)`` after reading the pairs in order."""
    from .attention import scaled_dot_product_attention

    k, v = keys[:, None], values[:, None]  # (trials, 1, M, D), (trials, 1, M, D_v)
    steps = np.ones(k.shape[:-1])  # (trials, 1, M)
    if memory == "softmax":
        return scaled_dot_product_attention(queries[:, None], k, v, scale=softmax_scale)[0][:, 0]
    if memory == "softmax, window":
        return scaled_dot_product_attention(queries[:, None], k[..., -window:, :], v[..., -window:, :],
                                            scale=softmax_scale)[0][:, 0]
    if memory == "linear":
        state = ssd_recurrent(k, k, v, 0.0 * steps, scale=1.0).state[:, 0]  # (trials, D, D_v)
    elif memory == "delta rule":
        state = delta_rule_recurrent(k, k, v, beta * steps, scale=1.0).state[:, 0]
    else:  # the best state for these pairs: least squares
        state = np.linalg.pinv(keys) @ values  # (trials, D, D_v)
    return queries @ state  # (trials, N, D_v)


#: The memories of :func:`recall_experiment`, in the order of its results.
RECALL_MEMORIES = ("softmax", "softmax, window", "linear", "delta rule", "least squares")


def _recall_cell(N: int, D: int, seed: int, trials: int, betas: tuple[float, ...],
                 softmax_scale: float) -> dict[str, dict[str, float]]:
    """Both tasks of :func:`recall_experiment` for one number of pairs and one seed."""
    window = max(1, D // 2)
    rng = np.random.default_rng([seed, N])
    keys, values = recall_pairs(trials, N, D, seed=rng)
    new = rng.standard_normal(values.shape)  # (trials, N, D): the values written second
    order = rng.permutation(N)  # the order in which the keys are written again
    twice_k = np.concatenate([keys, keys[:, order]], axis=1)  # (trials, 2N, D)
    twice_v = np.concatenate([values, new[:, order]], axis=1)  # (trials, 2N, D)
    candidates = np.concatenate([new, values], axis=1)  # (trials, 2N, D): right answers first
    result: dict[str, dict[str, float]] = {"distinct": {}, "overwrite": {}}
    for memory in RECALL_MEMORIES:
        for beta in betas if memory == "delta rule" else (1.0,):
            name = f"delta rule, beta={beta:g}" if memory == "delta rule" else memory
            read = _read(keys, values, keys, memory, beta, softmax_scale, window)
            result["distinct"][name] = _recalled(values, read)
            if memory != "least squares":
                read = _read(twice_k, twice_v, keys, memory, beta, softmax_scale, window)
                result["overwrite"][name] = _recalled(candidates, read)
    return result


def recall_experiment(n_pairs: tuple[int, ...] = (4, 8, 16, 32, 64, 128),
                      D: int = 16, *, seeds: tuple[int, ...] = (0, 1, 2, 3, 4), trials: int = 32,
                      betas: tuple[float, ...] = (1.0, 0.25),
                      softmax_scale: float = 8.0) -> dict[str, Any]:
    r"""Associative recall at a fixed state size: what each memory holds, and what it updates.

    For each :math:`N` and seed, ``trials`` sets of :math:`N` pairs (:func:`recall_pairs`,
    :math:`D_v = D`, drawn with the seed ``[seed, N]``) and two tasks. ``distinct``: a memory
    reads the pairs in order and is queried with every key; a key is recalled when the
    read-out is closer in angle to its value than to any other stored value. ``overwrite``: it
    then reads every key again, in a random order, with a new value, and must return the new
    one (closest among all :math:`2N` values). The memories (:data:`RECALL_MEMORIES`):
    ``softmax`` attention over everything read (a KV cache of :math:`2D` numbers per pair,
    growing), scores times ``softmax_scale``; ``softmax, window``, the same over the last
    :math:`D/2` pairs, a KV cache of the recurrent state's :math:`D^2` numbers; ``linear``,
    :math:`S = \sum_j k_j v_j^\top` (:func:`ssd_recurrent`); ``delta rule, beta=b``
    (:func:`delta_rule_recurrent`, :math:`\beta_t = b`); ``least squares``, the best
    :math:`D \times D` state :math:`K^{+} V` (distinct task only).

    Parameters
    ----------
    n_pairs : tuple of int
        The numbers of pairs :math:`N`.
    D : int
        Key and value dim, even; the recurrent state holds :math:`D^2` numbers.
    seeds : tuple of int
    trials : int
        Sets of pairs per seed and :math:`N`.
    betas : tuple of float
        The delta rule's step sizes, in :math:`(0, 2]`.
    softmax_scale : float
        On unit keys the stored key scores ``softmax_scale``, another one that times a cosine of
        standard deviation :math:`1/\sqrt D`.

    Returns
    -------
    dict
        ``{"config", "window", "state_numbers", "accuracy": {task: {memory: [[per seed] per
        N]}}}``, plain data.

    Notes
    -----
    No training: the keys are random, so this measures what each memory can hold, not what a
    trained model makes of it. Without positions, softmax attention cannot tell a key's second
    write from its first and averages the two values. Deterministic.
    """
    config = _recall_config(n_pairs, D, seeds, trials, betas, softmax_scale)
    Ns, seed_list, beta_list = config["n_pairs"], config["seeds"], tuple(config["betas"])
    D, trials, scale = config["D"], config["trials"], config["softmax_scale"]
    accuracy: dict[str, dict[str, list[list[float]]]] = {"distinct": {}, "overwrite": {}}
    for N in Ns:
        cells = [_recall_cell(N, D, seed, trials, beta_list, scale) for seed in seed_list]
        for task, table in accuracy.items():
            for name in cells[0][task]:
                table.setdefault(name, []).append([cell[task][name] for cell in cells])
    return {"config": config, "window": D // 2, "state_numbers": D * D, "accuracy": accuracy}


def _recall_config(n_pairs: object, D: object, seeds: object, trials: object, betas: object,
                   softmax_scale: object) -> dict[str, Any]:
    """The checked settings of :func:`recall_experiment`, as plain data."""
    D = check_positive_int(D, "D")
    if D % 2:
        raise ValueError(f"D must be even (the window holds D/2 pairs), got D={D}")
    beta_list = [check_real(b, "betas", positive=True) for b in _as_tuple(betas, "betas")]
    if max(beta_list) > 2.0:
        raise ValueError(f"betas must lie in (0, 2], where a step on a unit key does not grow the "
                         f"state, got {beta_list}")
    return {"n_pairs": [check_positive_int(n, "n_pairs") for n in _as_tuple(n_pairs, "n_pairs")],
            "D": D, "seeds": [check_int(s, "seeds", minimum=0) for s in _as_tuple(seeds, "seeds")],
            "trials": check_positive_int(trials, "trials"), "betas": beta_list,
            "softmax_scale": check_real(softmax_scale, "softmax_scale", positive=True)}


def _as_tuple(x: object, name: str) -> tuple:
    if isinstance(x, (str, bytes)) or not isinstance(x, (tuple, list)) or not x:
        raise TypeError(f"{name} must be a non-empty tuple, got {x!r}")
    return tuple(x)
