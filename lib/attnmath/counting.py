r"""Counting what multi-head attention costs: parameters and matrix-multiplication FLOPs.

.. math::

    \begin{aligned}
    &\#\text{params} = 4C^2 + 4C \quad (H_{kv} = H), \\
    &\text{FLOPs} = 2BLC^2 + 4BSC\,H_{kv}D + 4BHLSD + 2BLC^2 ,
    \end{aligned}

both independent of the number of heads ``H`` when ``D = C / H``. The key/value cache of a
decoder is counted by :func:`attnmath.kv_cache.kv_cache_bytes`. Taught in
``book/05_multihead.md`` ("Counting parameters and FLOPs") and used by ``book/11_capstone.md``.
"""

from __future__ import annotations

from typing import NamedTuple

from ._validate import check_bool, check_heads, check_positive_int

__all__ = [
    "multihead_param_count",
    "MultiHeadFlops",
    "multihead_flops",
    "attention_core_flops",
]


def multihead_param_count(
    C: int, H: int, *, H_kv: int | None = None, bias: bool = True
) -> int:
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
    C, H, H_kv = check_heads(C, H, H_kv)
    bias = check_bool(bias, "bias")
    D = C // H
    weights = C * C + 2 * C * H_kv * D + C * C
    biases = C + 2 * H_kv * D + C if bias else 0
    return weights + biases


class MultiHeadFlops(NamedTuple):
    """Matmul FLOPs of multi-head attention (one multiply-add = 2 FLOPs), per stage."""

    #: FLOPs of the query projection ``x W_Q``, ``2 B L C (H D)``.
    q_proj: int
    #: FLOPs of the key projection ``x W_K``, ``2 B S C (H_kv D)``.
    k_proj: int
    #: FLOPs of the value projection ``x W_V``, ``2 B S C (H_kv D_v)``.
    v_proj: int
    #: FLOPs of the scores ``Q K^T``, ``2 B H L S D``.
    scores: int
    #: FLOPs of the weighted sum ``P V``, ``2 B H L S D_v``.
    weighted_sum: int
    #: FLOPs of the output projection, ``2 B L (H D_v) C``.
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


def multihead_flops(
    B: int, L: int, S: int, C: int, H: int, *, H_kv: int | None = None
) -> MultiHeadFlops:
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
    B, L, S = (check_positive_int(v, n) for v, n in ((B, "B"), (L, "L"), (S, "S")))
    C, H, H_kv = check_heads(C, H, H_kv)
    D = C // H
    return MultiHeadFlops(
        q_proj=2 * B * L * C * H * D,
        k_proj=2 * B * S * C * H_kv * D,
        v_proj=2 * B * S * C * H_kv * D,
        scores=2 * B * H * L * S * D,
        weighted_sum=2 * B * H * L * S * D,
        out_proj=2 * B * L * H * D * C,
    )


def attention_core_flops(B: int, H: int, N: int, D: int, *, causal: bool = False,
                         backward: bool = False) -> float:
    r"""FLOPs of self-attention's two matrix products, as the FlashAttention papers count them.

    .. math::

        F_{\text{fwd}} = \frac{4 B H N^2 D}{1 + [\text{causal}]}, \qquad
        F_{\text{fwd+bwd}} = 3.5\, F_{\text{fwd}} ,

    the forward's :math:`QK^\top` and :math:`PV` (a multiply-add as 2 FLOPs), halved with the
    causal mask, and a backward counted as five such products (2.5 times the forward).

    Parameters
    ----------
    B, H, N, D : int
        Batch, heads, sequence length (``L = S = N``) and head dim, all positive.
    causal : bool
        Count the causal half only.
    backward : bool
        Count the forward and the backward pass.

    Returns
    -------
    float
        The FLOPs counted. Every implementation of a benchmark is charged the same count,
        whatever it computes (a kernel that recomputes :math:`P` in its backward, or one that
        computes the masked half too), so FLOP/s compare times
        (``bench/bench_flash_gpu.py``, ``book/08_flash.md``).
    """
    B, H, N, D = (check_positive_int(x, name) for x, name in ((B, "B"), (H, "H"), (N, "N"), (D, "D")))
    causal = check_bool(causal, "causal")
    backward = check_bool(backward, "backward")
    forward = 4.0 * B * H * N * N * D / (2.0 if causal else 1.0)
    return 3.5 * forward if backward else forward
