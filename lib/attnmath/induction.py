r"""Induction heads: a two-layer attention-only transformer trained on repeated random segments.

Every sequence is ``[BOS, s_1, ..., s_T, s_1, ..., s_T]``: a beginning-of-sequence token and a
segment of ``T`` distinct random tokens, written twice. In the first copy the next token cannot
be predicted (it is a fresh random draw); in the second copy it can, but only *in context*: the
token after the current one is the token that followed its earlier occurrence. A small
attention-only transformer (:class:`AttentionOnlyTransformer`, no MLP, no normalisation) learns
this with two heads that compose (Elhage et al., 2021; Olsson et al., 2022): a
*previous-token head* in layer 1 copies the token at ``i - 1`` into position ``i``, and an
*induction head* in layer 2 uses it as its key to find the position that follows an earlier
occurrence of the current token, and copies that position's token to the output.

The head scores are NumPy functions of attention patterns ``A`` of shape ``(..., L, L)``
(row ``i`` is the distribution of query ``i`` over keys ``j <= i``):

.. math::

    \begin{aligned}
    &\text{prev}(A) = \frac{1}{L-1}\sum_{i=1}^{L-1} A_{i,i-1}, \qquad \text{first}(A) =
      \frac{1}{L-1}\sum_{i=1}^{L-1} A_{i,0}, \\
    &\text{ind}(A) = \frac{1}{|\mathcal Q|}\sum_{i\in\mathcal Q} \sum_{j \in \mathcal K_i} A_{i,j},
    \end{aligned}

where :math:`\mathcal K_i = \{j' + 1 : j' < i,\ x_{j'} = x_i\}` are the positions right after
earlier occurrences of the query's token and :math:`\mathcal Q = \{i : \mathcal K_i \neq
\emptyset\}`. The copying score of a head's OV circuit is the eigenvalue ratio of Elhage et
al. (2021).

The training loop (:func:`train_induction`) is deterministic on the CPU: seeded data, a seeded
``torch`` generator for the initial weights, and a fixed number of threads.
``python -m attnmath.induction --out book/data/induction.npz`` re-runs the full training and
writes the data the book's chapter 12 loads.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from numpy.typing import ArrayLike, NDArray
from torch import nn

from ._validate import (
    FloatArray,
    as_array,
    as_rng,
    check_bool,
    check_heads,
    check_int,
    check_int_array,
    check_positive_int,
    check_real,
)
from .nn import MultiHeadAttention

__all__ = [
    "BOS",
    "AttentionOnlyTransformer",
    "InductionConfig",
    "InductionRun",
    "PhaseChange",
    "RepeatedBatch",
    "copying_score",
    "first_token_score",
    "induction_score",
    "load_run",
    "mean_attention_distance",
    "ov_circuit",
    "phase_change",
    "predictable_mask",
    "previous_token_score",
    "repeated_batch",
    "repeated_sequence",
    "train_induction",
]

BOS = 0
"""The beginning-of-sequence token; segments are drawn from the tokens ``1 .. V-1``."""


# --------------------------------------------------------------------------------------------
# data


def repeated_sequence(segment: ArrayLike, L: int | None = None) -> NDArray[np.int64]:
    """The sequence ``[BOS, segment, segment, ...]``, cut to length ``L``.

    Parameters
    ----------
    segment : array_like of int, shape (T,)
        Tokens ``>= 1`` (``0`` is :data:`BOS`), ``T >= 1``.
    L : int, optional
        Length of the sequence, ``>= 1``; default ``2 T + 1`` (the segment exactly twice).

    Returns
    -------
    tokens : ndarray of int64, shape (L,)
        ``tokens[0] = BOS`` and ``tokens[i] = segment[(i - 1) % T]`` for ``i >= 1``.
    """
    segment = check_int_array(segment, "segment", ndim=1, minimum=1)
    T = segment.shape[0]
    if T == 0:
        raise ValueError("segment must hold at least one token")
    L = 2 * T + 1 if L is None else check_positive_int(L, "L")
    reps = -(-(L - 1) // T)  # ceil((L - 1) / T)
    body = np.tile(segment, reps)[:L - 1]  # (L - 1,)
    return np.concatenate([[BOS], body]).astype(np.int64)  # (L,)


def predictable_mask(T: int, L: int | None = None) -> NDArray[np.bool_]:
    """Positions whose next token is predictable from an earlier copy of the segment.

    Position ``i`` predicts token ``i + 1``. In :func:`repeated_sequence` with period ``T``,
    for ``i >= T + 1`` the current token ``x_i`` occurred at ``i - T`` and the next token is
    ``x_{i+1} = x_{i-T+1}``, the token that followed it. Position ``T`` (the last token of the
    first copy) is not included: its successor starts the repeat, which the content does not
    announce.

    Parameters
    ----------
    T : int
        Segment length (the period), ``>= 1``.
    L : int, optional
        Sequence length, ``>= 1``; default ``2 T + 1``.

    Returns
    -------
    mask : ndarray of bool, shape (L - 1,)
        Over the ``L - 1`` positions that have a next token.
    """
    T = check_positive_int(T, "T")
    L = 2 * T + 1 if L is None else check_positive_int(L, "L")
    mask = np.zeros(L - 1, dtype=bool)
    mask[T + 1:] = True
    return mask


class RepeatedBatch(NamedTuple):
    """What :func:`repeated_batch` returns."""

    #: Token ids ``(B, 2 T + 1)``, int64; a random segment, its repeat, one more token.
    tokens: NDArray[np.int64]
    #: Each row's segment length ``(B,)``, int64.
    periods: NDArray[np.int64]
    #: Boolean ``(B, 2 T)``; each row's :func:`predictable_mask`.
    mask: NDArray[np.bool_]


def repeated_batch(B: int, T: int, V: int, seed: int | np.random.Generator, *,
                   min_T: int | None = None) -> RepeatedBatch:
    """A batch of :func:`repeated_sequence` rows of length ``2 T + 1`` with random segments.

    Each row draws its period ``T_b`` uniformly from ``min_T .. T`` (always ``T`` when
    ``min_T`` is None: the segment exactly twice), then ``T_b`` distinct tokens uniformly
    without replacement from ``1 .. V-1``, and repeats them to fill the row. Distinct tokens
    give every token after the first copy exactly one successor in context; a varying period
    means that position alone cannot say where the repeat starts.

    Parameters
    ----------
    B : int
        Rows (``>= 0``).
    T : int
        Longest segment, ``1 <= T <= V - 1``.
    V : int
        Vocabulary size including :data:`BOS`.
    seed : int or numpy.random.Generator
    min_T : int, optional
        Shortest segment, ``1 <= min_T <= T``.

    Returns
    -------
    RepeatedBatch
        ``tokens (B, 2 T + 1)``, ``periods (B,)``, ``mask (B, 2 T)``.
    """
    B = check_positive_int(B, "B", allow_zero=True)
    T = check_positive_int(T, "T")
    V = check_int(V, "V", minimum=2)
    if T > V - 1:
        raise ValueError(f"T must be <= V - 1 = {V - 1} (distinct tokens), got T={T}")
    lo = T if min_T is None else check_positive_int(min_T, "min_T")
    if lo > T:
        raise ValueError(f"min_T must be <= T = {T}, got {lo}")
    rng = as_rng(seed)
    L = 2 * T + 1
    periods = rng.integers(lo, T + 1, size=B)  # (B,)
    order = np.argsort(rng.random((B, V - 1)), axis=1) + 1  # (B, V - 1): a permutation per row
    tokens = np.empty((B, L), dtype=np.int64)
    mask = np.empty((B, L - 1), dtype=bool)
    for b in range(B):
        tokens[b] = repeated_sequence(order[b, :periods[b]], L)  # (L,)
        mask[b] = predictable_mask(int(periods[b]), L)  # (L - 1,)
    return RepeatedBatch(tokens, periods.astype(np.int64), mask)


# --------------------------------------------------------------------------------------------
# head scores


def _check_pattern(probs: ArrayLike, min_L: int = 1) -> FloatArray:
    probs = as_array(probs, "probs", finite=True)
    if probs.ndim < 2 or probs.shape[-1] != probs.shape[-2]:
        raise ValueError(f"probs must have shape (..., L, L), got {probs.shape}")
    if probs.shape[-1] < min_L:
        raise ValueError(f"probs needs L >= {min_L} positions, got shape {probs.shape}")
    return probs


def previous_token_score(probs: ArrayLike) -> FloatArray:
    r"""Mean attention weight from each query to the position just before it.

    .. math:: \text{prev}(A) = \frac{1}{L-1}\sum_{i=1}^{L-1} A_{i,\,i-1}

    Parameters
    ----------
    probs : array_like, shape (..., L, L)
        Attention patterns, ``L >= 2``.

    Returns
    -------
    score : ndarray, shape (...)
        ``1`` for a head that always attends to the previous token; ``0`` for one that never
        does.
    """
    probs = _check_pattern(probs, min_L=2)
    sub = np.diagonal(probs, offset=-1, axis1=-2, axis2=-1)  # (..., L - 1): A[i, i-1]
    return sub.mean(axis=-1)


def first_token_score(probs: ArrayLike) -> FloatArray:
    r"""Mean attention weight on position 0 (the sink), over the queries ``i >= 1``.

    .. math:: \text{first}(A) = \frac{1}{L-1}\sum_{i=1}^{L-1} A_{i,\,0}

    Query 0 is left out: under a causal mask it can only attend to itself.

    Parameters
    ----------
    probs : array_like, shape (..., L, L)
        Attention patterns, ``L >= 2``.

    Returns
    -------
    score : ndarray, shape (...)
    """
    probs = _check_pattern(probs, min_L=2)
    return probs[..., 1:, 0].mean(axis=-1)


def mean_attention_distance(probs: ArrayLike) -> FloatArray:
    r"""Mean distance, in positions, from each query to the keys it attends to.

    .. math:: \text{dist}(A) = \frac{1}{L-1}\sum_{i=1}^{L-1}\sum_{j \le i} A_{i,j}\,(i - j)

    A measure of locality: ``1`` for a previous-token head, ``0`` for a head that attends to
    itself, :math:`\frac{1}{L-1}\sum_{i=1}^{L-1} i/2` for uniform causal attention.

    Parameters
    ----------
    probs : array_like, shape (..., L, L)
        Causal attention patterns (weight only on ``j <= i``), ``L >= 2``.

    Returns
    -------
    distance : ndarray, shape (...)
    """
    probs = _check_pattern(probs, min_L=2)
    L = probs.shape[-1]
    offset = np.arange(L)[:, None] - np.arange(L)[None, :]  # (L, L): i - j
    distance = (probs[..., 1:, :] * offset[1:]).sum(axis=-1).mean(axis=-1)  # (...)
    return distance.astype(probs.dtype, copy=False)


def induction_score(probs: ArrayLike, tokens: ArrayLike) -> FloatArray:
    r"""Prefix-matching score: weight on the positions right after earlier copies of the query's token.

    .. math::

        \begin{aligned}
        &\mathcal K_i = \{\,j' + 1 : j' < i,\ x_{j'} = x_i\,\}, \qquad \mathcal Q = \{\,i : \mathcal K_i \ne
          \emptyset\,\}, \\
        &\text{ind}(A) = \frac{1}{|\mathcal Q|}\sum_{i \in \mathcal Q}\sum_{j \in \mathcal K_i} A_{i,j}
        \end{aligned}

    On ``[BOS, s, s]`` with distinct tokens, :math:`\mathcal Q = \{T+1, \dots, 2T\}` and
    :math:`\mathcal K_i = \{i - T + 1\}`: the score is the mean of the diagonal of ``A`` at
    offset ``-(T - 1)``.

    Parameters
    ----------
    probs : array_like, shape (..., L, L)
        Attention patterns of one sequence (any leading axes: layers, heads).
    tokens : array_like of int, shape (L,)
        The sequence the patterns were computed on; at least one token must occur twice.

    Returns
    -------
    score : ndarray, shape (...)
        ``1`` for a perfect induction head.
    """
    probs = _check_pattern(probs)
    tokens = check_int_array(tokens, "tokens", ndim=1)
    L = probs.shape[-1]
    if tokens.shape[0] != L:
        raise ValueError(
            f"tokens must have length L = {L} (probs' last axis), got {tokens.shape}")
    same = tokens[:, None] == tokens[None, :]  # (L, L): x_i == x_j'
    earlier = np.tril(same, k=-1)  # (L, L): j' < i
    target = np.zeros((L, L), dtype=bool)  # (L, L): j in K_i
    target[:, 1:] = earlier[:, :-1]  # j = j' + 1
    queries = target.any(axis=1)  # (L,): Q
    if not queries.any():
        raise ValueError("tokens has no repeated token: no induction score")
    weight = (probs * target).sum(axis=-1)  # (..., L)
    return weight[..., queries].mean(axis=-1)


def ov_circuit(W_E: ArrayLike, W_V: ArrayLike, W_O: ArrayLike, W_U: ArrayLike) -> FloatArray:
    r"""The full OV circuit of one head: how attending to token ``a`` changes the logit of ``b``.

    With row vectors (``x W`` is a map), embeddings ``W_E`` (rows are tokens), the head's value
    map ``W_V`` (``C -> D``), output map ``W_O`` (``D -> C``) and the unembedding ``W_U``
    (``C -> V``):

    .. math:: M = W_E\, W_V\, W_O\, W_U \in \mathbb R^{V \times V},

    the transpose of Elhage et al.'s :math:`W_U W_O W_V W_E` (column-vector convention). It
    is the direct path only: the value is read from the token embedding alone.

    Parameters
    ----------
    W_E : array_like, shape (V, C)
    W_V : array_like, shape (C, D)
    W_O : array_like, shape (D, C)
    W_U : array_like, shape (C, V)

    Returns
    -------
    M : ndarray, shape (V, V)
    """
    W_E = as_array(W_E, "W_E", ndim=2, finite=True)
    W_V = as_array(W_V, "W_V", ndim=2, finite=True)
    W_O = as_array(W_O, "W_O", ndim=2, finite=True)
    W_U = as_array(W_U, "W_U", ndim=2, finite=True)
    V, C = W_E.shape
    D = W_V.shape[1]
    if W_V.shape[0] != C:
        raise ValueError(f"W_V must have shape (C, D) with C={C}, got {W_V.shape}")
    if W_O.shape != (D, C):
        raise ValueError(f"W_O must have shape (D, C) = {(D, C)}, got {W_O.shape}")
    if W_U.shape != (C, V):
        raise ValueError(f"W_U must have shape (C, V) = {(C, V)}, got {W_U.shape}")
    return W_E @ W_V @ W_O @ W_U  # (V, V)


def copying_score(M: ArrayLike) -> float:
    r"""Eigenvalue copying score of a square circuit matrix (Elhage et al., 2021).

    .. math:: \text{copy}(M) = \frac{\sum_k \lambda_k}{\sum_k |\lambda_k|}
        = \frac{\operatorname{tr} M}{\sum_k |\lambda_k|} \in [-1, 1]

    ``1`` when every non-zero eigenvalue is positive (a copying head: attending to a token
    raises that token's logit, e.g. ``M = c I``), ``-1`` when all are negative.

    Parameters
    ----------
    M : array_like, shape (V, V)
        A square matrix, e.g. :func:`ov_circuit`; not all zero.

    Returns
    -------
    score : float
    """
    M = as_array(M, "M", ndim=2)
    if M.shape[0] != M.shape[1]:
        raise ValueError(f"M must be square, got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError("M must be finite")
    lam = np.linalg.eigvals(M.astype(np.float64))  # (V,)
    total = float(np.abs(lam).sum())
    if total == 0.0:
        raise ValueError("M has only zero eigenvalues: the copying score is undefined")
    return float(lam.real.sum() / total)


# --------------------------------------------------------------------------------------------
# phase change


class PhaseChange(NamedTuple):
    """Where a loss curve drops: the steps at which it crosses 90 %, 50 % and 10 % of its drop."""

    #: First logged step after the plateau where the loss is at most ``lo + 0.9 (hi - lo)``.
    start: int
    #: First logged step after the plateau where the loss is at most ``lo + 0.5 (hi - lo)``.
    mid: int
    #: First logged step after the plateau where the loss is at most ``lo + 0.1 (hi - lo)``.
    end: int


def phase_change(steps: ArrayLike, loss: ArrayLike, *, plateau: int = 0) -> PhaseChange:
    r"""Locate the drop of a loss curve between its plateau and its final value.

    With ``hi`` the loss at index ``plateau`` and ``lo`` the minimum of the curve after it, the
    crossings are the first logged steps after ``plateau`` where

    .. math:: \ell(t) \le \text{lo} + q\,(\text{hi} - \text{lo}), \qquad q = 0.9,\ 0.5,\ 0.1 .

    A phase change is a drop whose window ``end - start`` is short compared with the run.

    Parameters
    ----------
    steps : array_like of int, shape (N,)
        Logged steps, increasing.
    loss : array_like, shape (N,)
        The loss at those steps.
    plateau : int
        Index of the point taken as the plateau level (default the first); pass the index of
        a point after the initial transient.

    Returns
    -------
    PhaseChange
        ``(start, mid, end)``, steps of the 90 %, 50 % and 10 % crossings.
    """
    steps = check_int_array(steps, "steps", ndim=1)
    loss = as_array(loss, "loss", ndim=1)
    if loss.shape != steps.shape:
        raise ValueError(f"loss must have the shape of steps {steps.shape}, got {loss.shape}")
    if not np.all(np.isfinite(loss)):
        raise ValueError("loss must be finite")
    if steps.size and np.any(np.diff(steps) <= 0):
        raise ValueError("steps must be strictly increasing")
    plateau = check_int(plateau, "plateau", minimum=0)
    if plateau >= steps.size - 1:
        raise ValueError(f"plateau must index a point before the last of {steps.size}, got {plateau}")
    tail = loss[plateau:]
    hi, lo = tail[0], tail.min()
    if not hi > lo:
        raise ValueError("loss does not drop after the plateau")
    crossing = []
    for q in (0.9, 0.5, 0.1):
        idx = int(np.argmax(tail <= lo + q * (hi - lo)))
        crossing.append(int(steps[plateau + idx]))
    return PhaseChange(*crossing)


# --------------------------------------------------------------------------------------------
# the model


class AttentionOnlyTransformer(nn.Module):
    r"""A causal transformer with attention layers only: embeddings, residual stream, unembedding.

    .. math::

        \begin{aligned}
        &x^{(0)}_i = W_E[t_i] + P_i, \qquad x^{(\ell)} = x^{(\ell-1)} +
          \operatorname{MHA}_\ell\bigl(x^{(\ell-1)}\bigr), \\
        &\text{logits} = x^{(n)} W_U
        \end{aligned}

    No MLP, no layer normalisation and no biases, so each head's OV circuit
    (:func:`ov_circuit`) is a product of its weight matrices. The attention layers are
    :class:`attnmath.nn.MultiHeadAttention` with the causal mask.

    Parameters
    ----------
    V : int
        Vocabulary size.
    n_ctx : int
        Longest sequence (learned position embeddings).
    C : int
        Model width, divisible by ``H``.
    H : int
        Heads per layer.
    n_layers : int
        Attention layers.
    """

    def __init__(self, V: int, n_ctx: int, C: int, H: int, n_layers: int = 2):
        super().__init__()
        V = check_int(V, "V", minimum=2)
        n_ctx = check_positive_int(n_ctx, "n_ctx")
        n_layers = check_positive_int(n_layers, "n_layers")
        C, H, _ = check_heads(C, H)
        self.V, self.n_ctx = V, n_ctx
        self.embed = nn.Embedding(V, C)
        self.pos = nn.Embedding(n_ctx, C)
        self.layers = nn.ModuleList(MultiHeadAttention(C, H, bias=False) for _ in range(n_layers))
        self.unembed = nn.Linear(C, V, bias=False)
        for emb in (self.embed, self.pos):
            nn.init.normal_(emb.weight, std=C ** -0.5)

    def forward(self, tokens: torch.Tensor, *, need_weights: bool = False):
        """Logits of the next token at every position.

        Parameters
        ----------
        tokens : LongTensor, shape (B, L)
            ``L <= n_ctx``.
        need_weights : bool
            Also return the attention patterns.

        Returns
        -------
        logits : Tensor, shape (B, L, V)
            Returned alone when ``need_weights`` is False.
        patterns : Tensor, shape (n_layers, B, H, L, L)
            Only with ``need_weights=True``.
        """
        if not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.long \
                or tokens.dim() != 2:
            raise TypeError("tokens must be a 2-d torch.LongTensor (B, L)")
        need_weights = check_bool(need_weights, "need_weights")
        B, L = tokens.shape
        if L > self.n_ctx:
            raise ValueError(f"tokens has length L={L} > n_ctx={self.n_ctx}")
        if tokens.numel() and not (0 <= int(tokens.min()) and int(tokens.max()) < self.V):
            raise ValueError(f"tokens must lie in [0, V) = [0, {self.V}), got "
                             f"[{int(tokens.min())}, {int(tokens.max())}]")
        x = self.embed(tokens) + self.pos.weight[:L]  # (B, L, C)
        patterns = []
        for layer in self.layers:
            if need_weights:
                out, w = layer(x, is_causal=True, need_weights=True)
                # out (B, L, C), w (B, H, L, L)
                patterns.append(w)
            else:
                out = layer(x, is_causal=True)  # (B, L, C)
            x = x + out  # (B, L, C): the residual stream
        logits = self.unembed(x)  # (B, L, V)
        return (logits, torch.stack(patterns)) if need_weights else logits

    def head_ov_circuits(self, layer: int) -> FloatArray:
        """The direct-path OV circuits of every head of ``layer``, shape ``(H, V, V)``.

        Row ``a``, column ``b`` of head ``h`` is :func:`ov_circuit` with this model's weights.
        """
        layer = check_int(layer, "layer", minimum=0)
        if layer >= len(self.layers):
            raise ValueError(f"layer must be < n_layers = {len(self.layers)}, got {layer}")
        mha = self.layers[layer]
        assert isinstance(mha, MultiHeadAttention)
        H, D, C = mha.H, mha.D, mha.C
        w = mha.in_proj_weight.detach().double().numpy()  # (3 C, C), rows q | k | v
        W_E = self.embed.weight.detach().double().numpy()  # (V, C)
        W_U = self.unembed.weight.detach().double().numpy().T  # (C, V)
        W_out = mha.out_proj.weight.detach().double().numpy()  # (C, H D)
        out = []
        for h in range(H):
            W_V = w[2 * C + h * D:2 * C + (h + 1) * D].T  # (C, D)
            W_O = W_out[:, h * D:(h + 1) * D].T  # (D, C)
            out.append(ov_circuit(W_E, W_V, W_O, W_U))
        return np.stack(out)  # (H, V, V)


# --------------------------------------------------------------------------------------------
# training


@dataclass(frozen=True)
class InductionConfig:
    """Sizes and optimiser settings of one training run (all plain numbers, so it serialises)."""

    V: int = 48
    T: int = 20
    min_T: int = 8
    C: int = 64
    H: int = 4
    n_layers: int = 2
    steps: int = 3000
    batch: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.0
    log_every: int = 25
    eval_batch: int = 64
    seed: int = 0
    threads: int = 1


class InductionRun(NamedTuple):
    """What :func:`train_induction` returns."""

    #: Logged steps ``(N,)``, int64; ``0`` is the initial model.
    steps: NDArray[np.int64]
    #: Cross-entropy ``(N,)`` over all positions of the evaluation batch.
    loss_total: FloatArray
    #: Cross-entropy ``(N,)`` over the first copy (positions ``0 .. T-1``).
    loss_first: FloatArray
    #: Cross-entropy ``(N,)`` over the predictable positions (:func:`predictable_mask`).
    loss_repeat: FloatArray
    #: Previous-token score ``(N, n_layers, H)`` of every head (:func:`previous_token_score`).
    prev: FloatArray
    #: Induction score ``(N, n_layers, H)`` of every head (:func:`induction_score`).
    induction: FloatArray
    #: First-token score ``(N, n_layers, H)`` of every head (:func:`first_token_score`).
    first: FloatArray
    #: Mean attention distance ``(N, n_layers, H)`` (:func:`mean_attention_distance`).
    distance: FloatArray
    #: Copying score ``(N, n_layers, H)`` of every head (:func:`copying_score`).
    copying: FloatArray
    #: The trained :class:`AttentionOnlyTransformer`.
    model: AttentionOnlyTransformer
    #: Wall time of the training loop, in seconds.
    seconds: float


def _check_config(config: object) -> InductionConfig:
    if not isinstance(config, InductionConfig):
        raise TypeError(f"config must be an InductionConfig, got {type(config).__name__}")
    for name in ("V", "T", "min_T", "C", "H", "n_layers", "steps", "batch", "log_every", "eval_batch",
                 "threads"):
        check_positive_int(getattr(config, name), f"config.{name}")
    check_int(config.seed, "config.seed", minimum=0)
    check_real(config.lr, "config.lr", positive=True)
    check_real(config.weight_decay, "config.weight_decay", nonnegative=True)
    if config.T > config.V - 1:
        raise ValueError(f"config.T must be <= V - 1 = {config.V - 1}, got {config.T}")
    if config.min_T > config.T:
        raise ValueError(f"config.min_T must be <= config.T = {config.T}, got {config.min_T}")
    if config.C % config.H:
        raise ValueError(f"config.C={config.C} must be divisible by config.H={config.H}")
    return config


@torch.no_grad()
def _evaluate(model: AttentionOnlyTransformer, batch: RepeatedBatch) -> dict[str, Any]:
    tokens = torch.from_numpy(batch.tokens)  # (B, L)
    logits, patterns = model(tokens, need_weights=True)  # (B, L, V), (n, B, H, L, L)
    nll_t = F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")
    nll = nll_t.double().numpy()  # (B, L - 1)
    first = np.arange(nll.shape[1]) < batch.periods[:, None]  # (B, L - 1): i < T_b
    A = patterns.double().numpy()  # (n, B, H, L, L)
    tok = tokens.numpy()
    ind = np.mean([induction_score(A[:, b], tok[b]) for b in range(tok.shape[0])], axis=0)
    n = len(model.layers)
    return {
        "loss_total": nll.mean(), "loss_first": nll[first].mean(),
        "loss_repeat": nll[batch.mask].mean(),
        "prev": previous_token_score(A).mean(axis=1), "induction": ind,  # (n, H)
        "first": first_token_score(A).mean(axis=1),
        "distance": mean_attention_distance(A).mean(axis=1),
        "copying": np.array([[copying_score(M) for M in model.head_ov_circuits(layer)]
                             for layer in range(n)]),
    }


def train_induction(config: InductionConfig = InductionConfig()) -> InductionRun:
    """Train an :class:`AttentionOnlyTransformer` on :func:`repeated_batch` data, on the CPU.

    Adam on the mean next-token cross-entropy over all ``2 T`` positions, a fresh batch per
    step. Deterministic for a given ``config``: the data come from
    ``numpy.random.default_rng(seed)``, the initial weights from ``torch.manual_seed(seed)``
    inside a forked RNG state (the caller's torch RNG is left alone), and torch runs on
    ``config.threads`` threads (restored afterwards).

    Parameters
    ----------
    config : InductionConfig

    Returns
    -------
    InductionRun
        Losses and head scores on a fixed evaluation batch every ``log_every`` steps.
    """
    cfg = _check_config(config)
    rng = np.random.default_rng(cfg.seed)
    eval_batch = repeated_batch(cfg.eval_batch, cfg.T, cfg.V, rng, min_T=cfg.min_T)
    threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    log: dict[str, list] = {}
    steps: list[int] = []
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            model = AttentionOnlyTransformer(cfg.V, 2 * cfg.T + 1, cfg.C, cfg.H, cfg.n_layers)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        start = time.perf_counter()
        for step in range(cfg.steps + 1):
            if step % cfg.log_every == 0 or step == cfg.steps:
                model.eval()
                for key, value in _evaluate(model, eval_batch).items():
                    log.setdefault(key, []).append(value)
                steps.append(step)
                model.train()
            if step == cfg.steps:
                break
            batch = repeated_batch(cfg.batch, cfg.T, cfg.V, rng, min_T=cfg.min_T)
            tokens = torch.from_numpy(batch.tokens)  # (B, L)
            logits = model(tokens)  # (B, L, V)
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, cfg.V), tokens[:, 1:].reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        seconds = time.perf_counter() - start
    finally:
        torch.set_num_threads(threads)
    arrays = {key: np.asarray(value, dtype=np.float64) for key, value in log.items()}
    return InductionRun(steps=np.asarray(steps, dtype=np.int64), model=model, seconds=seconds,
                        **arrays)


# --------------------------------------------------------------------------------------------
# the committed data


def _run_data(run: InductionRun, config: InductionConfig) -> dict[str, NDArray[Any]]:
    """The arrays that ``python -m attnmath.induction`` writes: curves, scores, one example.

    Keys: ``steps``, ``loss_total``, ``loss_first``, ``loss_repeat`` ``(N,)``; ``prev``,
    ``induction``, ``first``, ``distance``, ``copying`` ``(N, n_layers, H)``;
    ``example_tokens`` ``(L,)`` and ``example_patterns`` ``(n_layers, H, L, L)`` of the
    trained model on one fresh sequence ``[BOS, s, s]`` with ``T = config.T``; ``config``
    (JSON text), ``seconds`` (training wall time) and the weights, ``param/<name>``.
    """
    tokens = repeated_batch(1, config.T, config.V, np.random.default_rng(config.seed + 1)).tokens
    with torch.no_grad():
        _, patterns = run.model(torch.from_numpy(tokens), need_weights=True)
    data = {key: np.asarray(getattr(run, key)) for key in
            ("steps", "loss_total", "loss_first", "loss_repeat", "prev", "induction", "first",
             "distance", "copying")}
    data["example_tokens"] = tokens[0]
    data["example_patterns"] = patterns[:, 0].double().numpy().astype(np.float32)
    data["config"] = np.asarray(json.dumps(asdict(config), sort_keys=True))
    data["seconds"] = np.asarray(run.seconds)
    for name, value in run.model.state_dict().items():
        data[f"param/{name}"] = value.detach().numpy().copy()
    return data


def load_run(
    path: str | os.PathLike[str],
) -> tuple[InductionConfig, dict[str, NDArray[Any]], AttentionOnlyTransformer]:
    """Read a file written by ``python -m attnmath.induction``.

    Returns
    -------
    config : InductionConfig
    data : dict of str to ndarray
        The arrays that ``python -m attnmath.induction`` writes (loss curves ``loss_total``,
        ``loss_first``, ``loss_repeat`` and ``steps``; head scores ``prev``, ``induction``,
        ``first``, ``distance``, ``copying`` of shape ``(N, n_layers, H)``; ``example_tokens``
        and ``example_patterns``; ``seconds``), without ``config`` and the weights.
    model : AttentionOnlyTransformer
        The trained model, rebuilt from the stored weights (float32, evaluation mode).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file name, got {type(path).__name__}")
    if not os.path.isfile(path):
        raise ValueError(f"path {str(path)!r} is not a file written by attnmath.induction")
    with np.load(path) as npz:
        data = {key: npz[key] for key in npz.files}
    config = InductionConfig(**json.loads(str(data.pop("config"))))
    model = AttentionOnlyTransformer(config.V, 2 * config.T + 1, config.C, config.H,
                                     config.n_layers)
    state = {key.removeprefix("param/"): torch.from_numpy(data.pop(key))
             for key in [k for k in data if k.startswith("param/")]}
    model.load_state_dict(state)
    return config, data, model.eval()


def main(argv: list[str] | None = None) -> None:
    """Command line: ``python -m attnmath.induction --out book/data/induction.npz``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the .npz file to write")
    parser.add_argument("--seed", type=int, default=InductionConfig.seed)
    parser.add_argument("--steps", type=int, default=InductionConfig.steps)
    args = parser.parse_args(argv)
    config = InductionConfig(seed=args.seed, steps=args.steps)
    run = train_induction(config)
    data: dict[str, Any] = _run_data(run, config)
    np.savez_compressed(args.out, **data)
    last = -1
    print(f"trained {config.steps} steps in {run.seconds:.1f} s on {config.threads} thread(s)")
    print(f"loss on the repeated half: {run.loss_repeat[0]:.3f} -> {run.loss_repeat[last]:.3f}; "
          f"first half {run.loss_first[last]:.3f}; ln V = {math.log(config.V):.3f}")
    print(f"phase change (90/50/10 % crossings): {phase_change(run.steps, run.loss_repeat)}")
    for name in ("prev", "induction", "first", "distance", "copying"):
        print(f"{name:9s}", np.array2string(getattr(run, name)[last], precision=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
