r"""Mixture-of-experts routing: softmax gating, top-k selection, capacity, load balancing.

A router scores every token against every expert and sends it to the :math:`K` best:

.. math::

    p(x) = \operatorname{softmax}(x W_g) \in \Delta^{E-1}, \qquad
    y(x) = \sum_{e \in \operatorname{TopK}(p(x))} g_e(x)\, \mathrm{FFN}_e(x),

with gates :math:`g_e = p_e` (the top-k probabilities unchanged, as in the Switch Transformer for
:math:`K = 1`) or :math:`g_e = p_e / \sum_{e' \in \operatorname{TopK}} p_{e'}` (renormalised, the
same as a softmax over the chosen logits: Shazeer et al. 2017 without the noise, Mixtral).

**How the router learns.** The choice of experts is piecewise constant in :math:`W_g`: a small
change of the weights leaves it unchanged, so it has zero derivative almost everywhere and no
gradient is routed "through the selection". The router is trained by the gate values
:math:`g_e`, which multiply the chosen experts' outputs and are differentiable, plus the
auxiliary :func:`load_balancing_loss`. This is the exact gradient of the loss wherever the
selection does not tie; no straight-through estimator is involved in standard top-k MoE
(Shazeer et al. 2017, GShard, Switch, Mixtral).

Shapes: ``N`` tokens (the batch and sequence axes flattened), ``C`` model width, ``E`` experts,
``K`` experts per token, ``F`` the experts' hidden width.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ._validate import (
    FloatArray,
    as_array,
    check_finite,
    check_int,
    check_int_array,
    check_positive_int,
    check_real,
    work_dtype,
)
from .softmax import softmax, softmax_vjp

__all__ = [
    "Routing",
    "CapacityRouting",
    "MoECache",
    "MoEGrads",
    "softmax_gating",
    "top_k_route",
    "top_k_route_renormalized",
    "expert_capacity",
    "apply_capacity",
    "load_balancing_loss",
    "moe_forward",
    "moe_forward_renormalized",
    "moe_backward",
]


class Routing(NamedTuple):
    """Which experts each token goes to, and with what weight."""

    #: Chosen experts ``(N, K)``, int64, best first, distinct within a row.
    expert_index: np.ndarray
    #: Weight ``(N, K)`` of each chosen expert's output.
    gate: np.ndarray
    #: Boolean ``(N, E)``; ``[n, e]`` is True iff token ``n`` goes to expert ``e``.
    dispatch: np.ndarray


class CapacityRouting(NamedTuple):
    """A routing after capacity limits: dropped slots have gate 0 and are not dispatched."""

    #: Experts ``(N, K)``, int64, as the router chose them (dropped slots included).
    expert_index: np.ndarray
    #: Gates ``(N, K)``, 0 where the slot was dropped.
    gate: np.ndarray
    #: Boolean ``(N, E)`` of the kept assignments only.
    dispatch: np.ndarray
    #: Boolean ``(N, K)``; False for a dropped (token, slot).
    kept: np.ndarray
    #: Int64 ``(n_dropped, 2)``; the dropped ``(token, slot)`` pairs, in refusal order.
    dropped: np.ndarray
    #: Slots per expert.
    capacity: int


class MoECache(NamedTuple):
    """What :func:`moe_forward` keeps for :func:`moe_backward`.

    ``x (N, C)``, the weights, ``probs (N, E)``, ``expert_index (N, K)``, the raw gates
    ``gate (N, K)`` (before capacity), ``kept (N, K)``, the experts' pre-activations
    ``h_pre (N, K, F)`` and outputs ``y (N, K, C)`` (zero for dropped slots), and whether the
    gates were renormalised.
    """

    #: Input tokens ``(N, C)``.
    x: np.ndarray
    #: Router weight ``(C, E)``.
    w_g: np.ndarray
    #: Experts' first weights ``(E, C, F)``.
    w1: np.ndarray
    #: Experts' second weights ``(E, F, C)``.
    w2: np.ndarray
    #: Router softmax ``(N, E)``.
    probs: np.ndarray
    #: Chosen experts ``(N, K)``, int64.
    expert_index: np.ndarray
    #: Raw gates ``(N, K)``, before capacity.
    gate: np.ndarray
    #: Boolean ``(N, K)``; False for a dropped slot.
    kept: np.ndarray
    #: Experts' pre-activations ``(N, K, F)``.
    h_pre: np.ndarray
    #: Experts' outputs ``(N, K, C)``, zero for dropped slots.
    y: np.ndarray
    #: Whether the top-``K`` gates were renormalised to sum to 1.
    renormalized: bool


class MoEGrads(NamedTuple):
    """Gradients of the loss: ``dx (N, C)``, ``dw_g (C, E)``, ``dw1 (E, C, F)``, ``dw2 (E, F, C)``."""

    #: Gradient of the input ``(N, C)``.
    dx: np.ndarray
    #: Gradient of the router weight ``(C, E)``.
    dw_g: np.ndarray
    #: Gradient of the experts' first weights ``(E, C, F)``.
    dw1: np.ndarray
    #: Gradient of the experts' second weights ``(E, F, C)``.
    dw2: np.ndarray


def softmax_gating(x: ArrayLike, w_g: ArrayLike) -> FloatArray:
    r"""Router probabilities :math:`p = \operatorname{softmax}(x W_g)`.

    .. math:: p_{ne} = \frac{e^{(x W_g)_{ne}}}{\sum_{e'} e^{(x W_g)_{ne'}}}

    Parameters
    ----------
    x : ndarray, shape (N, C)
        Tokens.
    w_g : ndarray, shape (C, E)
        Router weights.

    Returns
    -------
    ndarray, shape (N, E)
        Rows on the probability simplex.

    Notes
    -----
    Row-vector convention (:math:`x W_g`, as the textbook chapter's :math:`x^\top W_g`). Shazeer et al. (2017)
    add tunable Gaussian noise to the logits during training; that is a separate regulariser
    and is not applied here. Oracle: ``torch.softmax(x @ w_g, -1)``.
    """
    x = as_array(x, "x", ndim=2, finite=True)
    w_g = as_array(w_g, "w_g", ndim=2, finite=True)
    if w_g.shape[0] != x.shape[1] or w_g.shape[1] == 0:
        raise ValueError(f"w_g must have shape (C={x.shape[1]}, E) with E >= 1 experts, got {w_g.shape}")
    return softmax(x @ w_g, axis=-1)  # (N, E)


def _check_router_probs(probs) -> np.ndarray:
    probs = as_array(probs, "probs", ndim=2)
    if probs.shape[1] == 0:
        raise ValueError(f"probs must have shape (N, E) with E >= 1 experts, got {probs.shape}")
    if not (np.isfinite(probs).all() and (probs >= 0).all()):
        raise ValueError("probs must be finite and non-negative (router probabilities)")
    return probs


def _check_probs_k(probs: ArrayLike, k: object) -> tuple[FloatArray, int]:
    probs = _check_router_probs(probs)
    N, E = probs.shape
    k = check_int(k, "k")
    if not 1 <= k <= E:
        raise ValueError(f"k must satisfy 1 <= k <= E, got k={k} with E={E} experts")
    return probs, int(k)


def _select(probs: np.ndarray, k: int):
    """Top-k indices, best first, ties to the lowest expert index; with their dispatch mask."""
    N, E = probs.shape
    order = np.argsort(-probs, axis=1, kind="stable")  # (N, E), stable: equal values keep index order
    expert_index = order[:, :k].astype(np.int64)  # (N, K)
    dispatch = np.zeros((N, E), dtype=bool)
    np.put_along_axis(dispatch, expert_index, True, axis=1)  # (N, E)
    return expert_index, np.take_along_axis(probs, expert_index, axis=1), dispatch  # (N, K)


def top_k_route(probs: ArrayLike, k: int) -> Routing:
    r"""Top-k routing that keeps the chosen probabilities as gates.

    .. math:: g_{n,s} = p_{n, e_s}, \qquad e_1, \dots, e_K = \operatorname{TopK}(p_n),
              \qquad \sum_s g_{n,s} \le 1

    Parameters
    ----------
    probs : ndarray, shape (N, E)
        Router probabilities.
    k : int
        :math:`1 \le K \le E`.

    Returns
    -------
    Routing
        ``expert_index (N, K)`` best first, ``gate (N, K)``, ``dispatch (N, E)``.

    Notes
    -----
    Ties are broken toward the lowest expert index (a stable sort), so the result is
    deterministic; ``torch.topk`` does not promise an order among equal values. The gates sum to
    less than one for :math:`K < E`; with :math:`K = 1` this is the Switch Transformer's router,
    and it is the textbook chapter's :math:`\sum_{i \in \mathrm{TopK}} G(x)_i E_i(x)`. Oracle: ``torch.topk``.
    """
    probs, k = _check_probs_k(probs, k)
    expert_index, gate, dispatch = _select(probs, k)
    return Routing(expert_index, gate, dispatch)


def top_k_route_renormalized(probs: ArrayLike, k: int) -> Routing:
    r"""Top-k routing with the gates renormalised over the chosen experts.

    .. math::

        g_{n,s} = \frac{p_{n, e_s}}{\sum_{t=1}^{K} p_{n, e_t}}
                = \operatorname{softmax}\bigl(z_{n, e_1}, \dots, z_{n, e_K}\bigr)_s

    where :math:`z = x W_g` are the logits: renormalising the top-k probabilities is the softmax
    of the top-k logits (Shazeer et al. 2017's ``softmax(KeepTopK(...))``, Mixtral).

    Parameters and returns as :func:`top_k_route`; the gates of a row sum to one. With
    :math:`K = 1` every gate is 1 and the router would get no gradient from the output at all.
    Oracle: ``torch.topk`` and a division.
    """
    probs, k = _check_probs_k(probs, k)
    expert_index, gate, dispatch = _select(probs, k)
    total = gate.sum(axis=1, keepdims=True)  # (N, 1)
    if (total <= 0).any():
        raise ValueError("probs has a row whose top-k probabilities sum to 0: nothing to renormalise")
    return Routing(expert_index, gate / total, dispatch)


def _check_capacity_factor(capacity_factor) -> Fraction:
    capacity_factor = check_real(capacity_factor, "capacity_factor", positive=True)
    return Fraction(capacity_factor).limit_denominator(1_000_000)


def expert_capacity(N: int, K: int, E: int, capacity_factor: float) -> int:
    r"""Slots per expert, :math:`\lceil \text{capacity\_factor} \cdot N K / E \rceil`.

    ``N K / E`` is an expert's share under perfectly even routing. The factor is read as a
    decimal (``1.1`` is :math:`11/10`), so ``1.1 * 10 / 1`` gives 11, not the 12 that the binary
    rounding of ``1.1`` would give.
    """
    N, K, E = (check_positive_int(v, n) for v, n in ((N, "N"), (K, "K"), (E, "E")))
    cf = _check_capacity_factor(capacity_factor)
    return math.ceil(cf * N * K / E)


def apply_capacity(routing: Routing, capacity_factor: float) -> CapacityRouting:
    r"""Drop the assignments that exceed each expert's capacity.

    .. math:: \text{capacity} = \left\lceil \text{capacity\_factor} \cdot \frac{N K}{E} \right\rceil

    Parameters
    ----------
    routing : Routing
        From :func:`top_k_route` or :func:`top_k_route_renormalized`; ``E`` is read from its
        ``dispatch (N, E)``.
    capacity_factor : float
        Positive; 1.0 gives each expert exactly its even share (rounded up).

    Returns
    -------
    CapacityRouting
        Gates zeroed and dispatch cleared at dropped slots, the ``kept (N, K)`` mask, the dropped
        ``(token, slot)`` pairs and the capacity.

    Notes
    -----
    Priority: all first choices are served before any second choice, and within a choice
    rank tokens are served in index order (GShard's rule; for :math:`K = 1` it is the Switch
    Transformer's first-come order). A dropped slot contributes nothing to the layer's output;
    the residual connection around the layer (not part of this module) carries the token on.
    Gates are not renormalised after a drop. Oracle: a direct loop over (slot, token).
    """
    if not isinstance(routing, Routing):
        raise TypeError(f"routing must be a Routing, got {type(routing).__name__}")
    expert_index, gate, dispatch = routing
    N, K = expert_index.shape
    if N == 0:
        raise ValueError("routing must hold at least one token (N >= 1) to share a capacity")
    E = dispatch.shape[1]
    C = expert_capacity(N, K, E, capacity_factor)
    kept = np.zeros((N, K), dtype=bool)
    used = np.zeros(E, dtype=np.int64)  # slots taken per expert so far
    dropped_pairs: list[tuple[int, int]] = []
    for s in range(K):
        onehot = np.zeros((N, E), dtype=np.int64)
        onehot[np.arange(N), expert_index[:, s]] = 1  # (N, E)
        # Position of token n in its expert's queue: earlier slots, then earlier tokens.
        position = np.cumsum(onehot, axis=0) - 1 + used[None, :]  # (N, E)
        pos_n = position[np.arange(N), expert_index[:, s]]  # (N,)
        kept[:, s] = pos_n < C
        dropped_pairs.extend((int(n), s) for n in np.flatnonzero(~kept[:, s]))
        used += onehot.sum(axis=0)
    new_dispatch = np.zeros((N, E), dtype=bool)
    rows = np.repeat(np.arange(N)[:, None], K, axis=1)  # (N, K)
    new_dispatch[rows[kept], expert_index[kept]] = True
    dropped = np.array(dropped_pairs, dtype=np.int64).reshape(-1, 2)  # (n_dropped, 2)
    return CapacityRouting(expert_index, np.where(kept, gate, 0.0), new_dispatch, kept, dropped, C)


def load_balancing_loss(probs: ArrayLike, expert_index: ArrayLike) -> float:
    r"""The Switch Transformer's auxiliary load-balancing loss.

    .. math::

        \mathcal L_{\text{aux}} = E \sum_{e=1}^{E} f_e P_e, \qquad
        f_e = \frac{1}{N K} \sum_{n, s} [\, e_{n,s} = e \,], \qquad
        P_e = \frac{1}{N} \sum_n p_{ne}

    Parameters
    ----------
    probs : ndarray, shape (N, E)
        Router probabilities.
    expert_index : ndarray of int, shape (N, K)
        The chosen experts (all :math:`K` choices count).

    Returns
    -------
    float

    Notes
    -----
    :math:`f` counts all :math:`N K` assignments, so :math:`\sum_e f_e = 1` and the loss is 1
    under uniform routing for every :math:`K` (Switch has :math:`K = 1`; Mixtral's Hugging Face
    implementation sums over the :math:`K` slots without dividing by :math:`K`, giving :math:`K`
    times this). The loss equals 1 whenever :math:`f` or :math:`P` is uniform, and :math:`E`
    when both concentrate on one expert. One is *not* its minimum: :math:`f` and :math:`P` can be
    anti-aligned (the tests show 0.9 with :math:`E = 3` and argmax routing). It works as a
    penalty because its gradient :math:`\partial \mathcal L / \partial p_{ne} = E f_e / N` pushes
    probability away from the most loaded experts; :math:`f` is piecewise constant and gets no
    gradient. Oracle: the same formula in torch.
    """
    probs = _check_router_probs(probs)
    N, E = probs.shape
    if N == 0:
        raise ValueError("probs holds no tokens (N = 0): the loss is a mean over tokens")
    expert_index = check_int_array(expert_index, "expert_index")
    if expert_index.ndim != 2 or expert_index.shape[0] != N or expert_index.shape[1] == 0:
        raise ValueError(f"expert_index must have shape (N={N}, K), got {expert_index.shape}")
    if ((expert_index < 0) | (expert_index >= E)).any():
        raise ValueError(f"expert_index entries must lie in [0, E={E})")
    K = expert_index.shape[1]
    f = np.bincount(expert_index.reshape(-1), minlength=E) / (N * K)  # (E,)
    P = probs.mean(axis=0)  # (E,)
    return float(E * np.dot(f, P))


def _check_moe_inputs(
    x: ArrayLike, w_g: ArrayLike, w1: ArrayLike, w2: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    x = as_array(x, "x", ndim=2)
    w_g = as_array(w_g, "w_g", ndim=2)
    w1 = as_array(w1, "w1", ndim=3)
    w2 = as_array(w2, "w2", ndim=3)
    work = work_dtype(x, w_g, w1, w2)  # half precision is computed in float32
    x, w_g, w1, w2 = (a.astype(work, copy=False) for a in (x, w_g, w1, w2))
    N, C = x.shape
    if w_g.shape[0] != C:
        raise ValueError(f"w_g must have shape (C={C}, E), got {w_g.shape}")
    E = w_g.shape[1]
    if w1.shape[:2] != (E, C):
        raise ValueError(f"w1 must have shape (E={E}, C={C}, F), got {w1.shape}")
    F = w1.shape[2]
    if w2.shape != (E, F, C):
        raise ValueError(f"w2 must have shape (E={E}, F={F}, C={C}), got {w2.shape}")
    return x, w_g, w1, w2


def _moe_forward(
    x: ArrayLike, w_g: ArrayLike, w1: ArrayLike, w2: ArrayLike, k: int,
    capacity_factor: float | None, renormalized: bool,
) -> tuple[FloatArray, MoECache]:
    dtype = np.result_type(*(as_array(a, n) for a, n in ((x, "x"), (w_g, "w_g"), (w1, "w1"), (w2, "w2"))))
    x, w_g, w1, w2 = _check_moe_inputs(x, w_g, w1, w2)
    N, C = x.shape
    E, _, F = w1.shape
    probs = softmax_gating(x, w_g)  # (N, E)
    route = top_k_route_renormalized if renormalized else top_k_route
    routing = route(probs, k)
    K = routing.expert_index.shape[1]
    if capacity_factor is not None:
        capacity_factor = check_real(capacity_factor, "capacity_factor", positive=True)
    if capacity_factor is None or N == 0:  # no tokens: no slot to drop, an empty output
        kept = np.ones((N, K), dtype=bool)
    else:
        kept = apply_capacity(routing, capacity_factor).kept  # (N, K)
    h_pre = np.zeros((N, K, F), dtype=x.dtype)  # (N, K, F)
    y = np.zeros((N, K, C), dtype=x.dtype)  # (N, K, C)
    for e in range(E):
        n_idx, s_idx = np.nonzero((routing.expert_index == e) & kept)  # the tokens expert e serves
        if n_idx.size == 0:
            continue  # an expert no token reaches is never evaluated: its weights may be anything
        check_finite(w1[e], f"w1[{e}]")  # the weights of an expert in use
        check_finite(w2[e], f"w2[{e}]")
        pre = x[n_idx] @ w1[e]  # (M, F)
        h_pre[n_idx, s_idx] = pre
        y[n_idx, s_idx] = np.maximum(pre, 0.0) @ w2[e]  # (M, C)
    gate_eff = np.where(kept, routing.gate, 0.0)  # (N, K)
    out = np.einsum("nk,nkc->nc", gate_eff, y).astype(dtype, copy=False)  # (N, C)
    cache = MoECache(x, w_g, w1, w2, probs, routing.expert_index, routing.gate, kept, h_pre, y,
                     renormalized)
    return out, cache


def moe_forward(
    x: ArrayLike, w_g: ArrayLike, w1: ArrayLike, w2: ArrayLike, k: int, *,
    capacity_factor: float | None = None
) -> tuple[FloatArray, MoECache]:
    r"""A top-k mixture-of-experts layer with ReLU MLP experts; gates are the top-k probabilities.

    .. math::

        \mathrm{out}_n = \sum_{s=1}^{K} [\text{kept}_{n,s}]\; p_{n, e_{n,s}}\;
            \mathrm{ReLU}(x_n W_1^{(e_{n,s})})\, W_2^{(e_{n,s})}

    Parameters
    ----------
    x : ndarray, shape (N, C)
        Tokens.
    w_g : ndarray, shape (C, E)
        Router weights.
    w1 : ndarray, shape (E, C, F)
        First layer of each expert.
    w2 : ndarray, shape (E, F, C)
        Second layer of each expert.
    k : int
        Experts per token, :math:`1 \le K \le E`.
    capacity_factor : float, optional
        If given, :func:`apply_capacity` drops assignments beyond each expert's capacity; their
        slot contributes zero. ``None``: no limit.

    Returns
    -------
    out : ndarray, shape (N, C)
        The layer's output, without the residual connection.
    cache : MoECache

    Notes
    -----
    Each expert runs only on the tokens routed to it (a loop over experts with a gather), so
    the cost is :math:`O(N K C F)` rather than the :math:`O(N E C F)` of running every expert on
    every token. Experts have no biases. Routing as :func:`top_k_route` (ties to the lowest
    index). ``out`` has the inputs' dtype; half precision is computed in float32 (the cache
    keeps the float32 arrays, so :func:`moe_backward` returns float32 gradients for it).
    Oracle: the same layer in torch with ``torch.topk`` and autograd.
    """
    return _moe_forward(x, w_g, w1, w2, k, capacity_factor, False)


def moe_forward_renormalized(
    x: ArrayLike, w_g: ArrayLike, w1: ArrayLike, w2: ArrayLike, k: int, *,
    capacity_factor: float | None = None
) -> tuple[FloatArray, MoECache]:
    r"""The layer of :func:`moe_forward` with gates renormalised over the chosen experts (Mixtral).

    .. math::

        \mathrm{out}_n = \sum_{s=1}^{K} [\text{kept}_{n,s}]\;
            \operatorname{softmax}_s\bigl(z_{n,e_{n,1}}, \dots, z_{n,e_{n,K}}\bigr)\,
            \mathrm{FFN}_{e_{n,s}}(x_n)

    Same parameters and returns as :func:`moe_forward`. The gates depend only on the chosen
    logits, so the router's gradient is exactly zero on the logits of the experts a token did not
    choose. With ``k=1`` the gate is identically 1 and the router learns only from an auxiliary
    loss.
    """
    return _moe_forward(x, w_g, w1, w2, k, capacity_factor, True)


def _router_backward(probs: FloatArray, expert_index: np.ndarray, gate: FloatArray,
                     dgate: FloatArray, renormalized: bool, dtype: np.dtype) -> FloatArray:
    """Gradient ``(N, E)`` of the router logits from that of the gates ``dgate (N, K)``."""
    N, E = probs.shape
    rows = np.arange(N)[:, None]  # (N, 1)
    dlogits: FloatArray = np.zeros((N, E), dtype=dtype)  # (N, E)
    if renormalized:
        # Gates are softmax over the chosen logits: VJP over those K entries only.
        dlogits[rows, expert_index] = softmax_vjp(gate, dgate, axis=-1)  # (N, K) scattered
        return dlogits
    dprobs = np.zeros((N, E), dtype=dtype)  # (N, E)
    dprobs[rows, expert_index] = dgate  # the gate is the probability itself
    return softmax_vjp(probs, dprobs, axis=-1)  # (N, E)


def moe_backward(dout: ArrayLike, cache: MoECache) -> MoEGrads:
    r"""Backward pass of :func:`moe_forward` and :func:`moe_forward_renormalized`.

    .. math::

        \frac{\partial \mathcal L}{\partial g_{n,s}} = \bar o_n \cdot y_{n,s}, \qquad
        \frac{\partial \mathcal L}{\partial y_{n,s}} = g_{n,s}\, \bar o_n, \qquad
        \frac{\partial \mathcal L}{\partial z_n} = \text{softmax-VJP}\Bigl(
            \frac{\partial \mathcal L}{\partial g_{n,\cdot}}\Bigr),

    with :math:`\bar o = \partial \mathcal L / \partial \mathrm{out}` and :math:`z = x W_g`. The
    softmax VJP is over all :math:`E` probabilities for :func:`moe_forward`
    (:math:`\partial\mathcal L/\partial p_{ne}` is nonzero only at chosen experts) and over the
    :math:`K` chosen logits for the renormalised layer.

    Parameters
    ----------
    dout : ndarray, shape (N, C)
    cache : MoECache

    Returns
    -------
    MoEGrads
        ``dx (N, C)`` (through the experts and through the router), ``dw_g (C, E)``,
        ``dw1 (E, C, F)``, ``dw2 (E, F, C)``.

    Notes
    -----
    No gradient flows through the choice of experts: it is constant near any point without
    ties, and this is the exact derivative there (the finite-difference test checks it). An
    expert that received no token gets exactly zero weight gradient, and a dropped slot
    contributes nothing. The ReLU's derivative at 0 is taken as 0, as torch does. Oracle:
    ``torch.autograd`` and central differences.
    """
    if not isinstance(cache, MoECache):
        raise TypeError(f"cache must be the MoECache returned by moe_forward, got {type(cache).__name__}")
    x, w_g, w1, w2, probs, expert_index, gate, kept, h_pre, y, renormalized = cache
    dout = as_array(dout, "dout", ndim=2, finite=True).astype(x.dtype, copy=False)
    N, C = x.shape
    if dout.shape != (N, C):
        raise ValueError(f"dout must have the output's shape {(N, C)}, got {dout.shape}")
    E = w1.shape[0]
    gate_eff = np.where(kept, gate, 0.0)  # (N, K)
    dgate = np.einsum("nc,nkc->nk", dout, y)  # (N, K); zero at dropped slots since y = 0 there
    dy = gate_eff[:, :, None] * dout[:, None, :]  # (N, K, C)
    dx, dw1, dw2 = np.zeros_like(x), np.zeros_like(w1), np.zeros_like(w2)  # (N, C), (E, C, F), (E, F, C)
    for e in range(E):
        n_idx, s_idx = np.nonzero((expert_index == e) & kept)
        if n_idx.size == 0:
            continue
        pre = h_pre[n_idx, s_idx]  # (M, F)
        dy_e = dy[n_idx, s_idx]  # (M, C)
        dw2[e] = np.maximum(pre, 0.0).T @ dy_e  # (F, C)
        dpre = (dy_e @ w2[e].T) * (pre > 0)  # (M, F)
        dw1[e] = x[n_idx].T @ dpre  # (C, F)
        dx[n_idx] += dpre @ w1[e].T  # (M, C); a token appears at most once per expert
    dlogits = _router_backward(probs, expert_index, gate, dgate, renormalized, x.dtype)  # (N, E)
    dw_g = x.T @ dlogits  # (C, E)
    dx += dlogits @ w_g.T  # (N, C)
    return MoEGrads(dx, dw_g, dw1, dw2)
