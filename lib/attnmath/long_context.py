r"""Long context: RoPE frequency scaling, attention sinks with a sliding window, ring attention.

Three ways attention reaches past the length it was trained or built for.

* **RoPE scaling.** Rotary embeddings (:func:`attnmath.positional.apply_rope`) rotate pair
  :math:`i` of a query or key at position :math:`m` by :math:`m\theta_i`,
  :math:`\theta_i = b^{-2i/D}`. Beyond the training length :math:`L` the slow pairs reach
  angles never seen in training. Position interpolation (Chen et al., 2023) divides every
  frequency by the factor :math:`s = L'/L`; NTK-aware scaling raises the base to
  :math:`b\,s^{D/(D-2)}`; YaRN (Peng et al., 2024) interpolates only the pairs that turn
  less than :math:`\alpha` times over :math:`L`, keeps those that turn more than
  :math:`\beta` times, ramps in between, and sharpens the softmax by
  :math:`\sqrt{1/t} = 0.1 \ln s + 1`.
* **Attention sinks** (StreamingLLM, Xiao et al., 2023): a decoding cache that keeps the
  first ``n_sink`` tokens and the last ``window`` tokens, with positions counted inside the
  cache, so that memory and positions stay bounded however long the stream.
* **Ring attention** (Liu et al., 2023): ``P`` workers each hold one block of queries and
  one block of keys and values; the key/value blocks travel around a ring in ``P`` steps
  and every worker merges its partial results with
  :func:`attnmath.flash.merge_attention_states`, the merge of flash-decoding.

The module also holds the small extrapolation experiment of the book's chapter "Long
context" (:func:`marker_batch`, :func:`extrapolation_experiment`): a one-layer attention
model trained at one length with sinusoidal, rotary or ALiBi positions and evaluated at
longer ones. ``python -m attnmath.long_context --out book/data/extrapolation.json`` re-runs
it (torch, about a minute of CPU).

Shape legend: ``B`` batch, ``H`` query heads, ``H_kv`` key/value heads, ``L`` query length,
``S`` key/value length, ``D`` head dim, ``D_v`` value dim, ``P`` ring workers.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import (
    BoolArray,
    FloatArray,
    as_rng,
    check_alignment,
    check_bool,
    check_int,
    check_positive_int,
    check_real,
)
from .core import Problem, prepare
from .flash import AttentionState, attention_state, merge_attention_states
from .masking import sliding_window_mask
from .positional import _check_even, apply_rope, sinusoidal_frequencies

__all__ = [
    "ExtrapolationConfig",
    "RingAttention",
    "extrapolation_experiment",
    "interpolated_frequencies",
    "marker_batch",
    "ntk_frequencies",
    "ring_attention",
    "ring_min_block",
    "ring_step_cost",
    "rope_rotations",
    "sink_cache_kept",
    "sink_window_mask",
    "streaming_attention",
    "yarn_attention_factor",
    "yarn_frequencies",
    "yarn_ramp",
]


# ----------------------------------------------------------------------------------------------
# RoPE scaling
# ----------------------------------------------------------------------------------------------


def _check_scale_factor(scale: object) -> float:
    s = check_real(scale, "scale", positive=True)
    if s < 1.0:
        raise ValueError(f"scale must be >= 1 (the context grows by this factor), got {s}")
    return s


def rope_rotations(inv_freq: ArrayLike, context: int) -> FloatArray:
    r"""How many full turns each RoPE pair makes over ``context`` positions.

    .. math:: r_i = \frac{L\,\theta_i}{2\pi} = \frac{L}{\lambda_i}, \qquad
              \lambda_i = \frac{2\pi}{\theta_i}\ \text{(the wavelength)} .

    Parameters
    ----------
    inv_freq : array_like, shape (D/2,)
        The frequencies :math:`\theta_i` (radians per position), e.g. from
        :func:`attnmath.positional.sinusoidal_frequencies` or the scaled ones of this module.
    context : int
        The number of positions :math:`L` (>= 1).

    Returns
    -------
    ndarray, shape (D/2,)

    Notes
    -----
    A pair with :math:`r_i < 1` never completes a turn inside the context, so a model trained
    on :math:`L` positions has seen only the arc :math:`[0, L\theta_i)` of its angles; YaRN's
    ramp (:func:`yarn_ramp`) is a function of :math:`r_i`.
    """
    theta = _check_frequencies(inv_freq)
    L = check_positive_int(context, "context")
    return (L * theta / (2.0 * np.pi)).astype(_float_dtype(inv_freq), copy=False)  # (D/2,)


def _float_dtype(x: object) -> np.dtype:
    """The floating dtype of an input array, float64 for integer or non-array input."""
    dtype = np.asarray(x).dtype
    return dtype if np.issubdtype(dtype, np.floating) else np.dtype(np.float64)


def _check_frequencies(inv_freq: object) -> FloatArray:
    if isinstance(inv_freq, (str, bytes)) or inv_freq is None:
        raise TypeError(f"inv_freq must be an array of frequencies, got {type(inv_freq).__name__}")
    theta = np.asarray(inv_freq)
    if theta.dtype == np.bool_ or theta.dtype.kind not in "fi":
        raise TypeError(f"inv_freq must have a real floating dtype, got {theta.dtype}")
    theta = theta.astype(np.float64)
    if theta.ndim != 1 or theta.size == 0:
        raise ValueError(f"inv_freq must have shape (D/2,) with D/2 >= 1, got shape {theta.shape}")
    if not (np.isfinite(theta).all() and (theta > 0).all()):
        raise ValueError("inv_freq must be finite and positive")
    return theta


def interpolated_frequencies(D: int, scale: float, *, base: float = 10000.0) -> FloatArray:
    r"""Position interpolation (Chen et al., 2023): every RoPE frequency divided by ``scale``.

    .. math:: \theta'_i = \frac{\theta_i}{s} = \frac{b^{-2i/D}}{s}, \qquad s = \frac{L'}{L} .

    Rotating position :math:`m` by :math:`m\theta'_i` is rotating position :math:`m/s` by
    :math:`\theta_i`: the :math:`L'` positions of the long context are squeezed into the
    :math:`L` positions of training.

    Parameters
    ----------
    D : int
        Head dim; positive and even.
    scale : float
        :math:`s \ge 1`, the factor by which the context grows (``1`` gives plain RoPE).
    base : float
        The RoPE base :math:`b`, 10000 by default.

    Returns
    -------
    ndarray, shape (D/2,)

    Notes
    -----
    Every pair is slowed down, also the fast ones that turned many times in training: two
    neighbouring tokens are now :math:`\theta_0/s` apart instead of :math:`\theta_0`, a
    resolution never seen in training, which is why the method needs some fine-tuning.
    Oracle: the paper's definition :math:`f'(x, m) = f(x, m L / L')` in the tests.
    """
    D = _check_even(D, "D")
    s = _check_scale_factor(scale)
    return sinusoidal_frequencies(D, base=base) / s  # (D/2,)


def ntk_frequencies(D: int, scale: float, *, base: float = 10000.0) -> FloatArray:
    r"""NTK-aware scaling: plain RoPE with the base raised to :math:`b\,s^{D/(D-2)}`.

    .. math::

        \theta'_i = \bigl(b\, s^{D/(D-2)}\bigr)^{-2i/D} = \theta_i\, s^{-2i/(D-2)},
        \qquad i = 0, \dots, D/2 - 1 .

    The fastest pair (:math:`i = 0`) keeps its frequency, the slowest
    (:math:`i = D/2 - 1`) is divided by exactly :math:`s` (interpolated), and the pairs in
    between are slowed down by a geometric interpolation of the two.

    Parameters
    ----------
    D : int
        Head dim; even and at least 4 (for ``D = 2`` the exponent :math:`D/(D-2)` is
        undefined).
    scale : float
        :math:`s \ge 1`.
    base : float
        The original base :math:`b`.

    Returns
    -------
    ndarray, shape (D/2,)

    Notes
    -----
    Proposed in a public post by "bloc97" (2023) and analysed by Peng et al. (2023), who also
    note that the actual extension reached is smaller than :math:`s`. Oracle: the base-changed
    formula written out in the tests.
    """
    D = check_positive_int(D, "D")
    if D % 2 or D < 4:
        raise ValueError(f"D must be even and >= 4 for NTK-aware scaling, got D={D}")
    s = _check_scale_factor(scale)
    base = check_real(base, "base", positive=True)
    return sinusoidal_frequencies(D, base=base * s ** (D / (D - 2)))  # (D/2,)


def yarn_ramp(rotations: ArrayLike, *, beta_fast: float = 32.0,
              beta_slow: float = 1.0) -> FloatArray:
    r"""YaRN's ramp :math:`\gamma(r)`: 0 = interpolate the pair, 1 = keep its frequency.

    .. math::

        \gamma(r) = \begin{cases} 0 & r < \alpha \\ 1 & r > \beta \\
        \dfrac{r - \alpha}{\beta - \alpha} & \text{otherwise,} \end{cases}
        \qquad \alpha = \mathtt{beta\_slow},\ \beta = \mathtt{beta\_fast} .

    Parameters
    ----------
    rotations : array_like, shape (D/2,)
        The turns :math:`r_i` of each pair over the original context (:func:`rope_rotations`).
    beta_fast, beta_slow : float
        :math:`\beta > \alpha > 0`; the paper's values for LLaMA are 32 and 1.

    Returns
    -------
    ndarray, shape (D/2,)
        In :math:`[0, 1]`.
    """
    r = np.asarray(rotations)
    if r.dtype == np.bool_ or r.dtype.kind not in "fi":
        raise TypeError(f"rotations must be a real array, got dtype {r.dtype}")
    r = r.astype(np.float64)
    if not np.isfinite(r).all() or (r < 0).any():
        raise ValueError("rotations must be finite and >= 0")
    hi = check_real(beta_fast, "beta_fast", positive=True)
    lo = check_real(beta_slow, "beta_slow", positive=True)
    if not hi > lo:
        raise ValueError(f"beta_fast must exceed beta_slow, got beta_fast={hi}, beta_slow={lo}")
    return np.clip((r - lo) / (hi - lo), 0.0, 1.0).astype(_float_dtype(rotations), copy=False)


def yarn_frequencies(D: int, scale: float, original_context: int, *,
                     base: float = 10000.0, beta_fast: float = 32.0,
                     beta_slow: float = 1.0) -> FloatArray:
    r"""YaRN's frequencies ("NTK-by-parts"): interpolate slow pairs, keep fast ones.

    .. math::

        \theta'_i = \bigl(1 - \gamma(r_i)\bigr)\frac{\theta_i}{s} + \gamma(r_i)\,\theta_i,
        \qquad r_i = \frac{L\,\theta_i}{2\pi},

    with the ramp :math:`\gamma` of :func:`yarn_ramp` and :math:`L` the original context.

    Parameters
    ----------
    D : int
        Head dim; positive and even.
    scale : float
        :math:`s = L'/L \ge 1`.
    original_context : int
        :math:`L`, the context length the model was trained on.
    base : float
        The RoPE base :math:`b`.
    beta_fast, beta_slow : float
        :math:`\beta` and :math:`\alpha` of the ramp (32 and 1 in the paper).

    Returns
    -------
    ndarray, shape (D/2,)
        Between :math:`\theta_i/s` and :math:`\theta_i`.

    Notes
    -----
    This is the paper's definition, a ramp linear in the number of turns :math:`r`. The
    authors' code (and Hugging Face's) computes the dimension indices where :math:`r = \beta`
    and :math:`r = \alpha`, rounds them down and up, and ramps linearly in the *index*
    between them, i.e. roughly linearly in :math:`\log r`; the two agree outside the ramp
    and differ inside it. YaRN also scales the logits, :func:`yarn_attention_factor`.
    Oracle: the paper's piecewise definition written out per pair in the tests, and its
    limits (pairs with :math:`r > \beta` keep :math:`\theta_i`, those with :math:`r < \alpha`
    get :math:`\theta_i/s`).
    """
    D = _check_even(D, "D")
    s = _check_scale_factor(scale)
    L = check_positive_int(original_context, "original_context")
    theta = sinusoidal_frequencies(D, base=base)  # (D/2,)
    gamma = yarn_ramp(rope_rotations(theta, L), beta_fast=beta_fast,
                      beta_slow=beta_slow)  # (D/2,)
    return (1.0 - gamma) * theta / s + gamma * theta  # (D/2,)


def yarn_attention_factor(scale: float) -> float:
    r"""YaRN's logit scale :math:`\sqrt{1/t} = 0.1 \ln s + 1`.

    .. math::

        \operatorname{softmax}\!\left(\frac{q_m^\top k_n}{t\sqrt{D}}\right), \qquad
        \sqrt{1/t} = 0.1 \ln s + 1 .

    Parameters
    ----------
    scale : float
        :math:`s \ge 1`.

    Returns
    -------
    float
        :math:`\sqrt{1/t} \ge 1`; multiply both the rotated queries and keys by it (the
        scores grow by :math:`1/t`), or the scores by its square.

    Notes
    -----
    The constants 0.1 and 1 are the paper's fit for LLaMA models, not derived: a lower
    temperature compensates the flatter softmax over a longer context. ``s = 1`` gives 1.
    """
    s = _check_scale_factor(scale)
    return 0.1 * math.log(s) + 1.0


# ----------------------------------------------------------------------------------------------
# attention sinks with a sliding window (StreamingLLM)
# ----------------------------------------------------------------------------------------------


def _check_sink_window(n_sink: object, window: object) -> tuple[int, int]:
    return (check_positive_int(n_sink, "n_sink", allow_zero=True),
            check_positive_int(window, "window"))


def sink_cache_kept(S: int, *, n_sink: int, window: int) -> NDArray[np.int64]:
    r"""The tokens a sink-and-window cache holds after ``S`` tokens, in order.

    .. math:: \mathcal K_S = \{0, \dots, n_{\text{sink}} - 1\} \cup
              \{S - w, \dots, S - 1\} \quad (\text{indices} < S)

    Parameters
    ----------
    S : int
        Tokens seen so far (>= 0), the newest one included.
    n_sink : int
        Initial tokens kept for ever (>= 0; StreamingLLM uses 4).
    window : int
        :math:`w \ge 1` most recent tokens kept, the newest included.

    Returns
    -------
    ndarray of int64, shape (min(S, n_sink + window),)
        Increasing token indices; all of ``0 .. S-1`` while ``S <= n_sink + window``.

    Notes
    -----
    The cache never holds more than ``n_sink + window`` tokens. Once full, each new token
    evicts the oldest non-sink token: the evicted tokens are ``n_sink, n_sink + 1, ...``, in
    this order, each once; a sink is never evicted.
    """
    S = check_positive_int(S, "S", allow_zero=True)
    n_sink, window = _check_sink_window(n_sink, window)
    head = np.arange(min(n_sink, S))
    tail = np.arange(max(min(n_sink, S), S - window), S)
    return np.concatenate([head, tail]).astype(np.int64)


def sink_window_mask(L: int, S: int | None = None, *, n_sink: int, window: int,
                     alignment: str = "top_left") -> BoolArray:
    r"""The causal mask of attention with sinks and a window: key :math:`j` is visible from
    query :math:`i` iff it is a sink or among the last :math:`w` tokens.

    .. math:: M_{ij} = [\, j \le i' \,]\,\bigl([\, j < n_{\text{sink}} \,] \lor
              [\, j > i' - w \,]\bigr), \qquad i' = i + \delta,

    where :math:`\delta` is ``0`` (top-left) or ``S - L`` (bottom-right).

    Parameters
    ----------
    L : int
        Query length (>= 1).
    S : int, optional
        Key length (>= 1), default ``L``.
    n_sink, window : int
        As in :func:`sink_cache_kept`.
    alignment : {"top_left", "bottom_right"}
        Where the queries sit among the keys (:func:`attnmath.masking.causal_mask`).

    Returns
    -------
    ndarray of bool, shape (L, S)
        Row :math:`i` is ``True`` exactly at ``sink_cache_kept(i' + 1, ...)``.

    Notes
    -----
    This is the window of :func:`attnmath.masking.sliding_window_mask` plus the first
    ``n_sink`` columns (below the diagonal). Attention with this mask over the whole sequence
    equals attention over the cache's keys, *when the positions are the same*; StreamingLLM
    re-numbers positions inside the cache (:func:`streaming_attention`).
    """
    L = check_positive_int(L, "L")
    S = L if S is None else check_positive_int(S, "S")
    n_sink, window = _check_sink_window(n_sink, window)
    alignment = check_alignment(alignment)
    band = sliding_window_mask(L, window, S, alignment=alignment)  # (L, S)
    offset = S - L if alignment == "bottom_right" else 0
    i = np.arange(L)[:, None] + offset  # (L, 1)
    j = np.arange(S)[None, :]  # (1, S)
    return band | ((j < n_sink) & (j <= i))  # (L, S)


def streaming_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, n_sink: int,
                        window: int, rope_base: float | None = None,
                        scale: float | None = None) -> FloatArray:
    r"""Decode a stream token by token with a sink-and-window cache (StreamingLLM).

    At step :math:`t` the key and value of token :math:`t` enter the cache, the oldest
    non-sink token leaves it if it holds more than ``n_sink + window`` tokens
    (:func:`sink_cache_kept`), and query :math:`t` attends to the cache. With ``rope_base``
    the cached (un-rotated) keys get the positions ``0 .. n - 1`` of their *slots* and the
    query the position ``n - 1`` of the newest slot, as in the paper, so no position ever
    exceeds ``n_sink + window - 1``.

    Parameters
    ----------
    q : ndarray, shape (B, H, L, D)
        One query per step (``L`` steps), before RoPE.
    k : ndarray, shape (B, H_kv, L, D)
        Keys before RoPE, one per step.
    v : ndarray, shape (B, H_kv, L, D_v)
    n_sink, window : int
        As in :func:`sink_cache_kept`.
    rope_base : float, optional
        Apply interleaved RoPE (:func:`attnmath.positional.apply_rope`) with this base at the
        cache positions; ``None``: no rotation.
    scale : float, optional
        Score scale, ``1/sqrt(D)`` by default.

    Returns
    -------
    ndarray, shape (B, H, L, D_v)
        Row :math:`t` is the output of step :math:`t`.

    Notes
    -----
    Without RoPE this equals masked attention with :func:`sink_window_mask` (tested). With
    RoPE the relative offsets inside the window are the true ones, while a sink is placed
    right before the window instead of far back. Each step costs :math:`O(n D)` with
    :math:`n \le n_{\text{sink}} + w`, independent of the stream's length.
    """
    prob = prepare(q, k, v, scale=scale)  # validates shapes, finiteness, scale
    q, k, v = prob.inputs
    if q.ndim != 4 or q.shape[-2] != k.shape[-2]:
        raise ValueError(f"q, k and v must have shape (B, H, L, D), (B, H_kv, L, D), "
                         f"(B, H_kv, L, D_v) with one key per query, got q {q.shape}, "
                         f"k {k.shape}")
    n_sink, window = _check_sink_window(n_sink, window)
    if rope_base is not None:
        rope_base = check_real(rope_base, "rope_base", positive=True)
    out = np.empty(prob.out_shape, dtype=prob.out_dtype)  # (B, H, L, D_v)
    for t in range(q.shape[-2]):
        kept = sink_cache_kept(t + 1, n_sink=n_sink, window=window)  # (n,)
        q_t, k_c, v_c = q[:, :, t:t + 1, :], k[:, :, kept, :], v[:, :, kept, :]
        if rope_base is not None:
            slots = np.arange(kept.size)  # positions inside the cache
            q_t = apply_rope(q_t, slots[-1:], base=rope_base)  # (B, H, 1, D)
            k_c = apply_rope(k_c, slots, base=rope_base)  # (B, H_kv, n, D)
        state = attention_state(q_t, k_c, v_c, scale=prob.scale)
        out[:, :, t, :] = state.out[:, :, 0, :]
    return out


# ----------------------------------------------------------------------------------------------
# ring attention
# ----------------------------------------------------------------------------------------------


class RingAttention(NamedTuple):
    """What :func:`ring_attention` computes and what its simulated ring did."""

    #: Attention output ``(B, H, L, D_v)`` in the inputs' dtype.
    out: np.ndarray
    #: Log-sum-exp of each query's scores ``(B, H, L)``; ``-inf`` for a query that sees no key.
    lse: np.ndarray
    #: Int64 ``(P, P)``; ``[t, w]`` bytes of keys and values worker ``w`` sends to worker ``w + 1``
    #: in step ``t`` (nothing in the last step).
    sent_bytes: np.ndarray
    #: Boolean ``(P, P)``; ``[t, w]`` whether worker ``w`` computed a block in step ``t``
    #: (``False`` where every score of the block is masked and the block is skipped).
    computed: np.ndarray


def _bounds(n: int, P: int) -> np.ndarray:
    """Block boundaries of ``n`` rows over ``P`` workers (sizes differ by at most one)."""
    sizes = np.full(P, n // P) + (np.arange(P) < n % P)
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)  # (P + 1,)


def ring_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, P: int,
                   causal: bool = False, causal_alignment: str = "top_left",
                   scale: float | None = None) -> RingAttention:
    r"""Exact attention computed by ``P`` simulated workers on a ring.

    Worker :math:`w` holds query block :math:`Q_w` and, at step :math:`t = 0, \dots, P-1`,
    the key/value block :math:`b = (w - t) \bmod P`, whose partial state
    (:func:`attnmath.flash.attention_state`) it merges into its own
    (:func:`attnmath.flash.merge_attention_states`, exact and order-free) before passing the
    block on to worker :math:`w + 1`; after :math:`P` steps :math:`o_w` is exact:

    .. math::

        (o_w, \ell_w) \leftarrow \operatorname{merge}\bigl((o_w, \ell_w),\
        \operatorname{state}(Q_w, K_b, V_b)\bigr) .

    Parameters
    ----------
    q, k, v : ndarray, shapes (B, H, L, D), (B, H_kv, S, D), (B, H_kv, S, D_v)
        ``H % H_kv == 0`` (grouped-query attention).
    P : int
        Number of workers (>= 1). Queries and keys are split into ``P`` contiguous blocks
        whose sizes differ by at most one (empty blocks when ``P`` exceeds a length).
    causal, causal_alignment : bool, str
        Causal mask by *global* positions (:func:`attnmath.masking.causal_offset`); blocks it
        hides entirely are skipped (no compute, the block is still passed on).
    scale : float, optional
        ``1/sqrt(D)`` by default.

    Returns
    -------
    RingAttention
        ``out``, ``lse`` and the ring's log (bytes sent, blocks computed).

    Notes
    -----
    Each worker holds :math:`O((L + S)/P)` rows and sends one block per step,
    :math:`(S/P)\,H_{kv}(D + D_v)` numbers, while it computes (:func:`ring_min_block`).
    With a causal mask worker :math:`w` computes in :math:`w + 1` of the :math:`P` steps
    (``L = S``), the imbalance striped attention (Brandon et al., 2023) removes. Oracle:
    :func:`attnmath.testing.sdpa_oracle`.
    """
    P = check_positive_int(P, "P")
    prob = prepare(q, k, v, scale=scale, causal=check_bool(causal, "causal"),
                   causal_alignment=check_alignment(causal_alignment, "causal_alignment"))
    qb, kb = _bounds(prob.L, P), _bounds(prob.S, P)  # (P + 1,) each
    rows = [slice(qb[w], qb[w + 1]) for w in range(P)]
    cols = [slice(kb[b], kb[b + 1]) for b in range(P)]
    kv_bytes = [prob.inputs[1][..., c, :].nbytes + prob.inputs[2][..., c, :].nbytes for c in cols]
    states: list[AttentionState | None] = [None] * P  # each worker's running state
    sent, computed = np.zeros((P, P), dtype=np.int64), np.zeros((P, P), dtype=bool)  # (step, worker)
    for t in range(P):
        for w in range(P):
            b = (w - t) % P  # the key/value block worker w holds in step t
            sent[t, w] = kv_bytes[b] if t < P - 1 else 0  # sent on to w + 1 while computing
            if (state := _block_state(prob, rows[w], cols[b])) is not None:
                computed[t, w] = True
                prev = states[w]
                states[w] = state if prev is None else merge_attention_states([prev, state])
    return RingAttention(*_ring_output(prob, states, rows), sent, computed)


def _block_state(prob: Problem, rows: slice, cols: slice) -> AttentionState | None:
    """A worker's partial state of query rows ``rows`` over key block ``cols``; ``None`` when
    nothing is computed: an empty block, or one the causal mask hides entirely."""
    i0, i1, j0, j1 = rows.start, rows.stop, cols.start, cols.stop
    if i1 == i0 or j1 == j0 or (prob.causal and j0 > i1 - 1 + prob.offset):
        return None
    q, k, v = prob.inputs
    # Causal by global positions: local query r sits on global key i0 + r + offset, which is
    # local key i0 + r + offset - j0 of the block.
    return attention_state(q[..., rows, :], k[..., cols, :], v[..., cols, :], scale=prob.scale,
                           causal=prob.causal, causal_alignment=i0 + prob.offset - j0)


def _ring_output(prob: Problem, states: list[AttentionState | None], rows: list[slice]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``out (B, H, L, D_v)`` and ``lse (B, H, L)`` from the workers' final states, in the
    inputs' dtype; ``None`` (no queries, or no visible key at all) gives zeros and ``-inf``."""
    out = np.zeros(prob.out_shape, dtype=prob.dtype)  # (B, H, L, D_v)
    lse = np.full(prob.out_shape[:-1], -np.inf, dtype=prob.dtype)  # (B, H, L)
    for w, final in enumerate(states):
        if final is not None:
            out[..., rows[w], :] = final.out
            lse[..., rows[w]] = final.lse
    return out.astype(prob.out_dtype, copy=False), lse.astype(prob.out_dtype, copy=False)


def ring_step_cost(block: int, D: int, D_v: int | None = None, *, H: int = 1,
                   H_kv: int | None = None, bytes_per_elem: int = 2) -> tuple[int, int]:
    r"""FLOPs one worker computes and bytes it sends in one ring step, for square blocks.

    .. math::

        \text{flops} = \underbrace{2c^2 H D}_{QK^\top} + \underbrace{2c^2 H D_v}_{PV},
        \qquad
        \text{bytes} = c\, H_{kv} (D + D_v)\, b,

    with :math:`c` the block length (queries and keys), :math:`b` bytes per number, a
    multiply-add counted as 2 FLOPs (the convention of :mod:`attnmath.counting`).

    Parameters
    ----------
    block : int
        :math:`c \ge 1`, tokens per block.
    D, D_v : int
        Head dims (``D_v`` defaults to ``D``).
    H, H_kv : int
        Query heads and key/value heads (``H_kv`` defaults to ``H``; it must divide ``H``).
    bytes_per_elem : int
        2 for bfloat16 (the paper's setting), 4 for float32.

    Returns
    -------
    (flops, bytes) : tuple of int

    Notes
    -----
    Softmax and the merge (:math:`O(c^2 H)` and :math:`O(c H D_v)` operations) are not
    counted. The ratio flops/bytes grows linearly with :math:`c`, which is what lets the
    transfer hide behind the compute (:func:`ring_min_block`).
    """
    c = check_positive_int(block, "block")
    D = check_positive_int(D, "D")
    D_v = D if D_v is None else check_positive_int(D_v, "D_v")
    H = check_positive_int(H, "H")
    H_kv = H if H_kv is None else check_positive_int(H_kv, "H_kv")
    if H % H_kv:
        raise ValueError(f"H_kv={H_kv} must divide H={H}")
    b = check_positive_int(bytes_per_elem, "bytes_per_elem")
    return 2 * c * c * H * (D + D_v), c * H_kv * (D + D_v) * b


def ring_min_block(flops_per_s: float, bytes_per_s: float, *, bytes_per_elem: int = 2,
                   H: int = 1, H_kv: int | None = None) -> float:
    r"""The smallest block length whose transfer hides behind its compute.

    With :math:`F` FLOP/s of compute and :math:`B` bytes/s of link bandwidth per worker, a
    step computes for :math:`2c^2 H (D + D_v)/F` seconds and sends for
    :math:`c H_{kv} (D + D_v) b / B` seconds (:func:`ring_step_cost`); the transfer is
    hidden iff

    .. math::

        \frac{2 c^2 H (D + D_v)}{F} \ge \frac{c\, H_{kv} (D + D_v)\, b}{B}
        \iff c \ge \frac{F}{B} \cdot \frac{b\, H_{kv}}{2H} .

    For bfloat16 (:math:`b = 2`) and :math:`H_{kv} = H` this is Liu et al.'s condition
    :math:`c \ge F/B`; the head dims cancel.

    Parameters
    ----------
    flops_per_s, bytes_per_s : float
        :math:`F` and :math:`B`, both positive.
    bytes_per_elem : int
        :math:`b`.
    H, H_kv : int
        Query and key/value heads: grouped heads send fewer bytes for the same compute.

    Returns
    -------
    float
        :math:`c_{\min}`; blocks of at least this many tokens overlap fully.
    """
    F = check_real(flops_per_s, "flops_per_s", positive=True)
    B = check_real(bytes_per_s, "bytes_per_s", positive=True)
    b = check_positive_int(bytes_per_elem, "bytes_per_elem")
    H = check_positive_int(H, "H")
    H_kv = H if H_kv is None else check_positive_int(H_kv, "H_kv")
    if H % H_kv:
        raise ValueError(f"H_kv={H_kv} must divide H={H}")
    return F / B * b * H_kv / (2.0 * H)


# ----------------------------------------------------------------------------------------------
# the extrapolation experiment (torch, imported on demand)
# ----------------------------------------------------------------------------------------------


POSITIONS = ("sinusoidal", "rope", "alibi")


def _check_p_marker(p_marker: object) -> float:
    p = check_real(p_marker, "p_marker", positive=True)
    if p > 1.0:
        raise ValueError(f"p_marker must be in (0, 1], got {p}")
    return p


def marker_batch(B: int, L: int, *, V: int = 8, p_marker: float = 0.25,
                 seed: object = 0) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    r"""The synthetic task of the extrapolation experiment: recall the most recent marker.

    Each token is a *marker* carrying a value :math:`0 \le x < V` (token id :math:`x`) with
    probability ``p_marker``, else a *filler* (token id :math:`V + x`, which carries nothing).
    Token 0 is always a marker. The target at position :math:`t` is the value of the most
    recent marker at or before :math:`t`:

    .. math:: y_t = x_{\tau(t)}, \qquad \tau(t) = \max\{\, j \le t : j \text{ is a marker} \,\}.

    Parameters
    ----------
    B, L : int
        Batch size and length (>= 1).
    V : int
        Number of values (>= 2); the vocabulary has ``2 V`` tokens.
    p_marker : float
        Probability that a token is a marker, in ``(0, 1]``.
    seed : int or numpy.random.Generator

    Returns
    -------
    tokens, targets : ndarray of int64, shape (B, L) each

    Notes
    -----
    The answer depends on recent tokens only: the gap to the last marker (the fillers since it)
    is geometric with mean :math:`(1 - p)/p` (3 tokens for :math:`p = 1/4`). A model that finds "the nearest marker"
    solves it at any length; a model that learned "a marker at one of the offsets seen in
    training" may not.
    """
    B = check_positive_int(B, "B")
    L = check_positive_int(L, "L")
    V = check_int(V, "V", minimum=2)
    p = _check_p_marker(p_marker)
    rng = as_rng(seed)
    marker = rng.random((B, L)) < p  # (B, L)
    marker[:, 0] = True
    values = rng.integers(0, V, (B, L))  # (B, L)
    tokens = np.where(marker, values, V + values).astype(np.int64)  # (B, L)
    last = np.maximum.accumulate(np.where(marker, np.arange(L)[None, :], 0), axis=1)  # (B, L)
    return tokens, np.take_along_axis(values, last, axis=1).astype(np.int64)


@dataclass(frozen=True)
class ExtrapolationConfig:
    """Settings of :func:`extrapolation_experiment` (the book's values are the defaults).

    ``positions`` are the encodings trained, ``L_train`` the training length, ``lengths`` the
    evaluation lengths, ``seeds`` one training run each; the model is one causal attention
    layer (``H`` heads, width ``C``) and a ReLU MLP, trained with Adam.
    """

    positions: tuple[str, ...] = POSITIONS
    L_train: int = 32
    lengths: tuple[int, ...] = (32, 64, 128, 256, 512)
    seeds: tuple[int, ...] = (0, 1, 2)
    steps: int = 600
    batch: int = 32
    eval_batch: int = 64
    C: int = 32
    H: int = 4
    V: int = 8
    p_marker: float = 0.25
    lr: float = 3e-3
    rope_base: float = 10000.0

    def __post_init__(self) -> None:
        for name in ("L_train", "steps", "batch", "eval_batch", "C", "H", "V"):
            check_positive_int(getattr(self, name), name)
        if self.C % self.H or (self.C // self.H) % 2:
            raise ValueError(f"C={self.C} must be H={self.H} times an even head dim")
        bad = [p for p in self.positions if p not in POSITIONS]
        if bad or not self.positions:
            raise ValueError(f"positions must be a non-empty subset of {POSITIONS}, got {self.positions}")
        if not self.lengths:
            raise ValueError("lengths must hold at least one length")
        for n in self.lengths:
            check_positive_int(n, "lengths")
        if not self.seeds:
            raise ValueError("seeds must hold at least one seed")
        for seed in self.seeds:
            check_int(seed, "seeds", minimum=0)
        check_real(self.lr, "lr", positive=True)
        check_real(self.rope_base, "rope_base", positive=True)
        _check_p_marker(self.p_marker)


def _init_params(cfg: ExtrapolationConfig, seed: int) -> dict[str, Any]:
    import torch

    gen = torch.Generator().manual_seed(seed)

    def w(*shape: int) -> Any:
        return (torch.randn(*shape, generator=gen, dtype=torch.float32)
                / math.sqrt(shape[0])).requires_grad_(True)

    C, V = cfg.C, cfg.V
    zeros = lambda n: torch.zeros(n, requires_grad=True)  # noqa: E731
    return {"emb": (torch.randn(2 * V, C, generator=gen) * 0.5).requires_grad_(True),
            "w_qkv": w(C, 3 * C), "w_o": w(C, C), "w_1": w(C, 4 * C), "b_1": zeros(4 * C),
            "w_2": w(4 * C, C), "b_2": zeros(C), "w_out": w(C, V), "b_out": zeros(V)}


def _forward(params: dict[str, Any], tokens: Any, kind: str, cfg: ExtrapolationConfig,
             inv_freq: FloatArray | None = None, attention_factor: float = 1.0) -> Any:
    """Logits ``(B, L, V)`` of the one-layer model; positions by ``kind``; RoPE with the
    frequencies ``inv_freq`` (default: plain) and queries and keys times ``attention_factor``."""
    import torch
    import torch.nn.functional as F

    from .positional import alibi_bias, sinusoidal_encoding

    B, L = tokens.shape
    C, H = cfg.C, cfg.H
    Dh = C // H
    x = params["emb"][tokens]  # (B, L, C)
    if kind == "sinusoidal":
        x = x + torch.from_numpy(sinusoidal_encoding(L, C)).float()
    q, k, v = (x @ params["w_qkv"]).view(B, L, 3, H, Dh).permute(2, 0, 3, 1, 4)  # (B, H, L, Dh)
    allowed = torch.ones(L, L, dtype=torch.bool).tril()  # (L, L) causal
    bias = torch.zeros(H, L, L)
    if kind == "rope":
        theta = sinusoidal_frequencies(Dh, base=cfg.rope_base) if inv_freq is None else inv_freq
        angles = np.arange(L)[:, None] * theta[None, :]  # (L, Dh/2), float64
        cos = torch.from_numpy(np.cos(angles)).float()
        sin = torch.from_numpy(np.sin(angles)).float()

        def rot(z: Any) -> Any:
            even, odd = z[..., 0::2], z[..., 1::2]
            return torch.stack([even * cos - odd * sin, even * sin + odd * cos], -1).flatten(-2)

        q, k = rot(q) * attention_factor, rot(k) * attention_factor
    elif kind == "alibi":
        bias = torch.from_numpy(alibi_bias(H, L)).float()  # (H, L, L)
    mask = bias.masked_fill(~allowed, float("-inf"))  # (H, L, L)
    a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, H, L, Dh)
    x = x + a.transpose(1, 2).reshape(B, L, C) @ params["w_o"]
    x = x + torch.relu(x @ params["w_1"] + params["b_1"]) @ params["w_2"] + params["b_2"]
    return x @ params["w_out"] + params["b_out"]  # (B, L, V)


def _train(kind: str, cfg: ExtrapolationConfig, seed: int) -> tuple[dict[str, Any], list[float]]:
    import torch
    import torch.nn.functional as F

    params = _init_params(cfg, seed)
    opt = torch.optim.Adam(list(params.values()), lr=cfg.lr)
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(cfg.steps):
        tokens, targets = marker_batch(cfg.batch, cfg.L_train, V=cfg.V, p_marker=cfg.p_marker,
                                       seed=rng)
        logits = _forward(params, torch.from_numpy(tokens), kind, cfg)
        loss = F.cross_entropy(logits.reshape(-1, cfg.V), torch.from_numpy(targets).reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return params, losses


def _evaluate(params: dict[str, Any], kind: str, cfg: ExtrapolationConfig, L: int,
              inv_freq: FloatArray | None = None, attention_factor: float = 1.0
              ) -> dict[str, float]:
    """Loss and accuracy on positions inside (``< L_train``) and beyond the training length."""
    import torch
    import torch.nn.functional as F

    tokens, targets = marker_batch(cfg.eval_batch, L, V=cfg.V, p_marker=cfg.p_marker,
                                   seed=10_000 + L)
    with torch.no_grad():
        logits = _forward(params, torch.from_numpy(tokens), kind, cfg, inv_freq, attention_factor)
        y = torch.from_numpy(targets)
        loss = F.cross_entropy(logits.reshape(-1, cfg.V), y.reshape(-1),
                               reduction="none").view(y.shape).numpy()  # (B, L)
        correct = (logits.argmax(-1) == y).numpy()  # (B, L)
    n = min(L, cfg.L_train)
    result = {"loss_inside": float(loss[:, :n].mean()), "acc_inside": float(correct[:, :n].mean())}
    if L > cfg.L_train:
        result.update(loss_beyond=float(loss[:, n:].mean()), acc_beyond=float(correct[:, n:].mean()))
    return result


def extrapolation_experiment(config: ExtrapolationConfig = ExtrapolationConfig()
                             ) -> dict[str, Any]:
    r"""Train the one-layer model at ``L_train`` per encoding and seed; evaluate it longer.

    For every encoding in ``config.positions`` and seed, a model is trained on
    :func:`marker_batch` sequences of length ``L_train``, then evaluated on sequences of each
    length in ``config.lengths``: loss and accuracy on the positions before ``L_train``
    (inside) and from ``L_train`` on (beyond). The rotary model is also evaluated, without
    any further training, with the frequencies of position interpolation, NTK-aware scaling
    and YaRN (with its logit scale) for :math:`s = L/L_{\text{train}}`.

    Parameters
    ----------
    config : ExtrapolationConfig

    Returns
    -------
    dict
        ``{"config": ..., "runs": [{"position", "seed", "final_loss", "eval": {method:
        {length: metrics}}}, ...]}``, plain data (JSON-serialisable).

    Notes
    -----
    Deterministic for a given configuration on the CPU (seeded data and initial weights, one
    thread). Takes about a minute for the defaults.
    """
    import torch

    if not isinstance(config, ExtrapolationConfig):
        raise TypeError(f"config must be an ExtrapolationConfig, got {type(config).__name__}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        runs = []
        Dh = config.C // config.H
        for kind in config.positions:
            for seed in config.seeds:
                params, losses = _train(kind, config, seed)
                evals: dict[str, dict[str, dict[str, float]]] = {kind: {}}
                for L in config.lengths:
                    evals[kind][str(L)] = _evaluate(params, kind, config, L)
                if kind == "rope":
                    for L in config.lengths:
                        s = max(1.0, L / config.L_train)
                        scaled = {
                            "rope+PI": (interpolated_frequencies(Dh, s, base=config.rope_base), 1.0),
                            "rope+NTK": (ntk_frequencies(Dh, s, base=config.rope_base), 1.0),
                            "rope+YaRN": (yarn_frequencies(Dh, s, config.L_train,
                                                           base=config.rope_base),
                                          yarn_attention_factor(s))}
                        for name, (theta, factor) in scaled.items():
                            evals.setdefault(name, {})[str(L)] = _evaluate(
                                params, kind, config, L, theta, factor)
                runs.append({"position": kind, "seed": seed,
                             "final_loss": float(np.mean(losses[-20:])), "eval": evals})
    finally:
        torch.set_num_threads(threads)
    return {"config": asdict(config), "runs": runs}


def main(argv: list[str] | None = None) -> None:
    """Command line: ``python -m attnmath.long_context --out book/data/extrapolation.json``."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--out", required=True, help="where to write the JSON results")
    args = parser.parse_args(argv)
    data = extrapolation_experiment()
    with open(args.out, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":  # pragma: no cover
    main()
