r"""Flash attention in Triton: FlashAttention-2 forward and backward kernels.

The same algorithm as :mod:`attnmath.flash`, written as GPU kernels: one program owns a tile of
``BLOCK_M`` query rows (forward, ``dQ``) or ``BLOCK_N`` key rows (``dK``, ``dV``) and keeps its
running state in registers, so the ``(L, S)`` score matrix never reaches GPU memory. With
:math:`s` the score scale and the scores taken in base 2 (:math:`\tilde S = s \log_2 e\, Q_i
K_j^\top`, so that :math:`e^{s\,x} = 2^{s \log_2 e\, x}` uses the fast ``exp2``), the forward
program for query tile :math:`i` walks over key tiles :math:`j`:

.. math::

    \begin{aligned}
    &m' = \max\bigl(m, \operatorname{rowmax} \tilde S^{(j)}\bigr), \quad \tilde P = 2^{\tilde S^{(j)} - m'},
      \quad \ell' = 2^{m - m'}\ell + \operatorname{rowsum}\tilde P, \\
    &\tilde o' = 2^{m - m'}\tilde o + \tilde P V_j,
    \end{aligned}

and stores :math:`o = \tilde o / \ell` and :math:`\operatorname{lse} = (m + \log_2 \ell)\ln 2`
(natural log). The backward pass has three kernels: ``D_i = rowsum(dO ⊙ O)``; one program per
key tile that recomputes :math:`P^\top = e^{s K_j Q_i^\top - \operatorname{lse}_i}` for every
query tile and accumulates

.. math::

    dV_j \mathrel{+}= P^\top dO_i, \quad dZ^\top = P^\top \odot (V_j\, dO_i^\top - D_i), \quad
    dK_j \mathrel{+}= s\, dZ^\top Q_i ;

and one program per query tile that accumulates :math:`dQ_i \mathrel{+}= s\, dZ\, K_j` over
the key tiles. Splitting ``dK, dV`` from ``dQ`` recomputes :math:`P` twice but needs no atomic
additions, so the gradients are deterministic.

Shapes: ``q (B, H, L, D)``, ``k, v (B, H_kv, S, D)`` with ``H % H_kv == 0`` (grouped-query
attention, query head ``h`` reads key/value head ``h // (H // H_kv)`` as torch's
``enable_gqa``), ``out (B, H, L, D)``, ``lse (B, H, L)`` in float32.

Importing this module needs ``triton`` (and ``torch``); :mod:`attnmath` itself never imports it.
The kernels run on CUDA tensors, or on CPU tensors under Triton's interpreter: set the
environment variable ``TRITON_INTERPRET=1`` before ``triton`` is first imported in the process
(Triton builds its own library and these kernels as interpreted functions at import; each
launch here sets the variable again while it runs). :data:`INTERPRETED` tells which kind was
built. Two gaps of the interpreter are bridged for bfloat16 (``EMULATE_BF16``): its ``tl.dot``
multiplies the raw bit patterns of bfloat16 tiles, and its float32 -> bfloat16 cast truncates.
There, bfloat16 tiles are widened to float32 before every ``tl.dot`` and rounded to bfloat16
values on the bits (round to nearest even) where the GPU code casts. The products are the
ones a GPU forms, since the product of two bfloat16 numbers is exact in float32; only the
order of the float32 additions may differ. On a GPU the flag is off and the code is the plain
bfloat16 one.

**Numerics and cost.** Accumulation is in float32 (scores, running max and sum, ``out``,
gradients); the probabilities, and in the backward ``dZ``, are rounded to the input dtype
before their products, as in FlashAttention-2, and results are rounded once at the end.
Float32 inputs use IEEE float32 products (no TF32). The forward does :math:`4 B H L S D`
flops (about half with ``causal`` and ``L = S``: tiles above the diagonal are skipped) and
keeps ``lse``, :math:`4 B H L` bytes, beyond inputs and output. The backward runs three
launches: ``D`` (:math:`4 B H L` bytes), ``dK, dV`` (four matmuls per tile pair:
:math:`K Q^\top`, :math:`P^\top dO`, :math:`V dO^\top`, :math:`dZ^\top Q`) and ``dQ`` (three:
:math:`Q K^\top`, :math:`dO V^\top`, :math:`dZ K`): :math:`14 B H L S D` flops against the
:math:`10 B H L S D` of a backward that adds ``dQ`` with atomics, the price of deterministic
gradients. ``D_i`` uses the stored (rounded) ``out``.

**The two backward paths** (:attr:`KernelConfig.dq_atomic`). ``split`` (the default): the
``dK, dV`` kernel, then the ``dQ`` kernel; 7 matrix products per tile pair, deterministic.
``atomic``: the ``dK, dV`` kernel also forms this key tile's share of ``dQ``,
:math:`s\, K_j^\top dZ^\top` (FlashAttention-2's fifth product), and adds it to a float32
``(B, H, L, D)`` buffer of zeros with atomic additions; the buffer is rounded to the input dtype
once at the end, and no ``dQ`` kernel runs: 5 products, :math:`10 B H L S D` flops, one
launch fewer, ``4 B H L D`` bytes more memory, and float32 sums whose order (so whose last
bits) may change from run to run on a GPU. It is selectable for measurement
(``kernel_config(...)._replace(dq_atomic=True)`` as ``config``); it is not the default until a
GPU run shows it faster (``bench/gpu_check.sh`` times both).

**The finite check.** NaN or an infinity in ``q``, ``k``, ``v`` (or ``dout``) raises
``ValueError`` naming the tensor, as everywhere in :mod:`attnmath`, unless ``check_finite=False``.
The check reads each tensor once (its smallest and largest element). CPU tensors (the
interpreter) are checked before the launch and raise in the call. For CUDA tensors, reading the
result on the host would wait for the GPU, which cost 0.14-1.27 ms per call on an H100
(2026-11-27, ``bench/results/gpu/NOTES.md``); so the reductions are launched before the
kernel, their result is copied to the host asynchronously, and no call waits for its own check.
What a caller sees with bad CUDA inputs:

* the forward returns (its output holds NaN); each later forward reports, with the same
  ``ValueError`` naming the tensor and the call that received it, the checks that the GPU has
  finished by then (a query, no wait);
* a backward (``out.backward()`` through :func:`flash_attention`, or
  :func:`flash_attention_triton_backward`) first waits for the checks of earlier calls, so the
  inputs of its forward raise there, before any gradient is computed. That wait ends when the
  GPU has run the forward's reductions, which come before the forward's kernel, so the GPU
  still has that kernel (and what followed it) to run;
* a bad ``dout`` is reported by the next call (as a forward's inputs are), or by
  :func:`wait_for_input_checks`, which waits for every pending check and raises for the first
  that failed.

References: Dao et al., "FlashAttention" (2022); Dao, "FlashAttention-2" (2024).
"""

from __future__ import annotations

import contextlib
import numbers
import os
from typing import NamedTuple

try:
    import triton
    import triton.language as tl
    from triton.runtime.jit import JITFunction
except ImportError as exc:  # pragma: no cover - exercised only where triton is absent
    raise ImportError(
        "attnmath.flash_triton needs Triton, which is not installed: install the version that "
        "matches your torch (pip install triton==<version>, pinned in requirements.txt). The "
        "NumPy flash-tiled reference, attnmath.flash, needs no Triton."
    ) from exc

import torch

from . import _finite_check
from ._validate import check_bool, check_scale
from .core import AttentionGrads, check_cache

__all__ = [
    "INTERPRETED",
    "SUPPORTED_DTYPES",
    "KernelConfig",
    "TritonFlashCache",
    "kernel_config",
    "flash_attention_triton",
    "flash_attention_triton_backward",
    "FlashAttentionTriton",
    "flash_attention",
    "wait_for_input_checks",
]

LOG2E = 1.4426950408889634  # log2(e): e^x = 2^(x log2 e)
_LOG2E = tl.constexpr(LOG2E)  # the same, for the kernels
_LN2 = tl.constexpr(0.6931471805599453)  # ln(2): log(x) = log2(x) ln 2

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_TL_DTYPES = {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16, torch.float32: tl.float32}
_MIN_BLOCK, _MAX_BLOCK = 16, 256  # tl.dot needs every tile side >= 16
_MIN_HEAD_DIM, _MAX_HEAD_DIM = 16, 256


# --------------------------------------------------------------------------- device helpers


@triton.jit
def _to_dtype(x, DTYPE: tl.constexpr, EMULATE_BF16: tl.constexpr):
    """Round a float32 tile to ``DTYPE`` (round to nearest even).

    Under ``EMULATE_BF16`` (bfloat16 in the interpreter) the result stays a float32 tile that
    holds the bfloat16-rounded values: the interpreter's ``tl.dot`` cannot take bfloat16, and
    its float32 -> bfloat16 cast truncates, so the rounding is done on the bits here.
    """
    if EMULATE_BF16:
        bits = x.to(tl.uint32, bitcast=True)
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16  # keep 8 mantissa bits, RNE
        return bits.to(tl.float32, bitcast=True)
    else:
        return x.to(DTYPE)


@triton.jit
def _load_rows(base, offs_r, offs_d, stride_r, n_rows, EVEN: tl.constexpr, TRANSPOSED: tl.constexpr):
    """Rows ``offs_r`` of the ``(n_rows, D)`` matrix at ``base``: a ``(R, D)`` tile, or its
    transpose ``(D, R)`` with ``TRANSPOSED``. Rows past ``n_rows`` read as 0; ``EVEN`` says
    there are none (``n_rows`` a multiple of the tile), so the load needs no mask."""
    if TRANSPOSED:
        ptrs = base + offs_r[None, :] * stride_r + offs_d[:, None]
        if EVEN:
            tile = tl.load(ptrs)
        else:
            tile = tl.load(ptrs, mask=(offs_r < n_rows)[None, :], other=0.0)
    else:
        ptrs = base + offs_r[:, None] * stride_r + offs_d[None, :]
        if EVEN:
            tile = tl.load(ptrs)
        else:
            tile = tl.load(ptrs, mask=(offs_r < n_rows)[:, None], other=0.0)
    return tile


@triton.jit
def _fwd_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_m, offs_d,
               start, stop, S, qk_scale,
               BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr, EVEN_N: tl.constexpr,
               DTYPE: tl.constexpr, DOT_PRECISION: tl.constexpr, EMULATE_BF16: tl.constexpr):
    """Online-softmax update of one query tile over the key tiles ``start, ..., stop - 1``.

    ``EVEN_N``: ``S`` is a multiple of ``BLOCK_N``, so no key tile is ragged and the tiles
    without the causal mask need no mask at all (no compare and select per score)."""
    offs_n0 = tl.arange(0, BLOCK_N)
    for start_n in range(start, stop, BLOCK_N):
        offs_n = start_n + offs_n0  # (BLOCK_N,)
        kT = _load_rows(k_base, offs_n, offs_d, stride_kn, S, EVEN_N, True)  # (D, BLOCK_N)
        v = _load_rows(v_base, offs_n, offs_d, stride_vn, S, EVEN_N, False)  # (BLOCK_N, D)
        if EMULATE_BF16:
            kT = kT.to(tl.float32)
            v = v.to(tl.float32)
        s = tl.dot(q, kT, input_precision=DOT_PRECISION) * qk_scale  # (BLOCK_M, BLOCK_N), base 2
        if CAUSAL_MASK:
            allowed = (offs_n[None, :] <= offs_m[:, None]) & (offs_n < S)[None, :]
            s = tl.where(allowed, s, float("-inf"))
        elif not EVEN_N:
            s = tl.where((offs_n < S)[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))  # (BLOCK_M,), finite: see _flash_fwd_kernel
        p = tl.exp2(s - m_new[:, None])  # (BLOCK_M, BLOCK_N), P~
        alpha = tl.exp2(m_i - m_new)  # (BLOCK_M,), rescales the old sums; 0 on the first tile
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc = tl.dot(_to_dtype(p, DTYPE, EMULATE_BF16), v, acc,
                     input_precision=DOT_PRECISION)  # (BLOCK_M, D)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _flash_fwd_kernel(Q, K, V, Out, Lse,
                      stride_qb, stride_qh, stride_qm,
                      stride_kb, stride_kh, stride_kn,
                      stride_vb, stride_vh, stride_vn,
                      stride_ob, stride_oh, stride_om,
                      H, L, S, GROUP, qk_scale,
                      HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      CAUSAL: tl.constexpr, EVEN_N: tl.constexpr, DOT_PRECISION: tl.constexpr,
                      EMULATE_BF16: tl.constexpr):
    """Forward: program ``(i, b * H + h)`` computes ``out`` and ``lse`` of query tile ``i``."""
    if CAUSAL:  # the last query tiles see the most keys: they start first, the short ones end
        pid_m = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    h_kv = h // GROUP
    DTYPE: tl.constexpr = Out.dtype.element_ty
    m0 = pid_m * BLOCK_M
    offs_m = m0 + tl.arange(0, BLOCK_M)  # (BLOCK_M,)
    offs_d = tl.arange(0, HEAD_DIM)  # (D,)
    q_ok = offs_m < L
    q = tl.load(Q + b * stride_qb + h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :],
                mask=q_ok[:, None], other=0.0)  # (BLOCK_M, D)
    if EMULATE_BF16:
        q = q.to(tl.float32)
    k_base = K + b * stride_kb + h_kv * stride_kh
    v_base = V + b * stride_vb + h_kv * stride_vh
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)  # running max (base 2)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)  # running sum
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)  # unnormalised output
    if CAUSAL:
        # Top-left: row i sees keys j <= i. Tiles left of n_mid are seen whole by every row of
        # the tile (no mask); tiles from n_mid to the diagonal get the causal mask; tiles past
        # it are skipped. The first tile visited has key n_mid <= m0 <= every row, so each row
        # has a finite maximum from its first tile on (no -inf - -inf).
        n_mid = tl.minimum((m0 // BLOCK_N) * BLOCK_N, S)
        hi = tl.minimum(m0 + BLOCK_M, S)
        acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn,
                                   offs_m, offs_d, 0, n_mid, S, qk_scale, BLOCK_N, False, EVEN_N, DTYPE,
                                   DOT_PRECISION, EMULATE_BF16)
        acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn,
                                   offs_m, offs_d, n_mid, hi, S, qk_scale, BLOCK_N, True, EVEN_N, DTYPE,
                                   DOT_PRECISION, EMULATE_BF16)
    else:
        acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn,
                                   offs_m, offs_d, 0, S, S, qk_scale, BLOCK_N, False, EVEN_N, DTYPE,
                                   DOT_PRECISION, EMULATE_BF16)
    out = acc / l_i[:, None]  # (BLOCK_M, D)
    lse = (m_i + tl.log2(l_i)) * _LN2  # (BLOCK_M,), natural log
    out = _to_dtype(out, DTYPE, EMULATE_BF16).to(DTYPE)
    tl.store(Out + b * stride_ob + h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :],
             out, mask=q_ok[:, None])
    tl.store(Lse + pid_bh.to(tl.int64) * L + offs_m, lse, mask=q_ok)


@triton.jit
def _flash_bwd_delta_kernel(Out, DOut, Delta,
                            stride_ob, stride_oh, stride_om,
                            stride_dob, stride_doh, stride_dom,
                            H, L,
                            HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    """Backward preprocessing: ``Delta[b, h, i] = sum_d dO[b, h, i, d] * O[b, h, i, d]``."""
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    ok = offs_m < L
    o = tl.load(Out + b * stride_ob + h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :],
                mask=ok[:, None], other=0.0).to(tl.float32)  # (BLOCK_M, D)
    do = tl.load(DOut + b * stride_dob + h * stride_doh + offs_m[:, None] * stride_dom
                 + offs_d[None, :], mask=ok[:, None], other=0.0).to(tl.float32)  # (BLOCK_M, D)
    tl.store(Delta + pid_bh.to(tl.int64) * L + offs_m, tl.sum(o * do, 1), mask=ok)


@triton.jit
def _bwd_dkdv_inner(dk, dv, k, v, q_base, do_base, lse_base, delta_base, dq_base, stride_qm,
                    stride_dom, stride_dqm, offs_n, offs_d, start, stop, L, qk_scale, sm_scale,
                    BLOCK_M: tl.constexpr, CAUSAL_MASK: tl.constexpr, EVEN_M: tl.constexpr,
                    ATOMIC_DQ: tl.constexpr, DTYPE: tl.constexpr, DOT_PRECISION: tl.constexpr,
                    EMULATE_BF16: tl.constexpr):
    r"""Accumulate ``dK_j``, ``dV_j`` of one key tile over the query tiles ``start, ..., stop - 1``
    (``EVEN_M``: ``L`` is a multiple of ``BLOCK_M``, no query tile is ragged). ``ATOMIC_DQ``:
    also add this key tile's share :math:`s\, dZ_{ij} K_j` of each ``dQ_i`` to the float32 rows
    at ``dq_base`` with atomic additions (the fifth matrix product), formed transposed,
    :math:`s\, K_j^\top dZ_{ij}^\top`: its ``D`` rows fill a warpgroup's matrix instruction
    (64 rows) also for 32-row query tiles, which :math:`dZ_{ij} K_j` would not (sm_90 builds:
    all ``HGMMA`` instead of some ``HMMA``, fewer spills; ``bench/results/compile_flash_triton.json``)."""
    offs_m0 = tl.arange(0, BLOCK_M)
    for start_m in range(start, stop, BLOCK_M):
        offs_m = start_m + offs_m0  # (BLOCK_M,)
        qT = _load_rows(q_base, offs_m, offs_d, stride_qm, L, EVEN_M, True)  # (D, BLOCK_M)
        do = _load_rows(do_base, offs_m, offs_d, stride_dom, L, EVEN_M, False)  # (BLOCK_M, D)
        if EMULATE_BF16:
            qT = qT.to(tl.float32)
            do = do.to(tl.float32)
        if EVEN_M:
            lse2 = tl.load(lse_base + offs_m) * _LOG2E  # (BLOCK_M,), base 2
            delta = tl.load(delta_base + offs_m)  # (BLOCK_M,)
        else:
            lse2 = tl.load(lse_base + offs_m, mask=offs_m < L, other=0.0) * _LOG2E
            delta = tl.load(delta_base + offs_m, mask=offs_m < L, other=0.0)
        sT = tl.dot(k, qT, input_precision=DOT_PRECISION) * qk_scale  # (BLOCK_N, BLOCK_M)
        pT = tl.exp2(sT - lse2[None, :])  # (BLOCK_N, BLOCK_M), P^T
        if CAUSAL_MASK:
            pT = tl.where((offs_m[None, :] >= offs_n[:, None]) & (offs_m < L)[None, :], pT, 0.0)
        elif not EVEN_M:
            pT = tl.where((offs_m < L)[None, :], pT, 0.0)
        dv = tl.dot(_to_dtype(pT, DTYPE, EMULATE_BF16), do, dv,
                    input_precision=DOT_PRECISION)  # (BLOCK_N, D)
        dpT = tl.dot(v, tl.trans(do), input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_M), dP^T
        dsT = _to_dtype(pT * (dpT - delta[None, :]), DTYPE, EMULATE_BF16)  # (BLOCK_N, BLOCK_M), dZ^T
        dk = tl.dot(dsT, tl.trans(qT), dk, input_precision=DOT_PRECISION)  # (BLOCK_N, D)
        if ATOMIC_DQ:  # keys past S have k = 0 rows: they add nothing
            dqT = tl.dot(tl.trans(k), dsT, input_precision=DOT_PRECISION) * sm_scale  # (D, BLOCK_M)
            dq_ptrs = dq_base + offs_m[None, :] * stride_dqm + offs_d[:, None]
            if EVEN_M:
                tl.atomic_add(dq_ptrs, dqT, sem="relaxed")
            else:
                tl.atomic_add(dq_ptrs, dqT, mask=(offs_m < L)[None, :], sem="relaxed")
    return dk, dv


@triton.jit
def _flash_bwd_dkdv_kernel(Q, K, V, DOut, DK, DV, Lse, Delta, DQAcc,
                           stride_qb, stride_qh, stride_qm,
                           stride_kb, stride_kh, stride_kn,
                           stride_vb, stride_vh, stride_vn,
                           stride_dob, stride_doh, stride_dom,
                           stride_dkb, stride_dkh, stride_dkn,
                           stride_dvb, stride_dvh, stride_dvn,
                           H, H_kv, L, S, GROUP, qk_scale, sm_scale,
                           HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           CAUSAL: tl.constexpr, EVEN_M: tl.constexpr, ATOMIC_DQ: tl.constexpr,
                           DOT_PRECISION: tl.constexpr, EMULATE_BF16: tl.constexpr):
    """Backward: program ``(j, b * H_kv + h_kv)`` computes ``dK``, ``dV`` of key tile ``j``,
    summing the ``GROUP = H // H_kv`` query heads of the key/value head (no atomics). With
    ``ATOMIC_DQ`` it also adds its share of ``dQ`` to ``DQAcc``, a contiguous float32
    ``(B, H, L, D)`` of zeros (atomics; no ``dQ`` kernel follows)."""
    pid_n = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H_kv).to(tl.int64)
    h_kv = (pid_bh % H_kv).to(tl.int64)
    DTYPE: tl.constexpr = DK.dtype.element_ty
    n0 = pid_n * BLOCK_N
    offs_n = n0 + tl.arange(0, BLOCK_N)  # (BLOCK_N,)
    offs_d = tl.arange(0, HEAD_DIM)
    kv_ok = offs_n < S
    k = tl.load(K + b * stride_kb + h_kv * stride_kh + offs_n[:, None] * stride_kn + offs_d[None, :],
                mask=kv_ok[:, None], other=0.0)  # (BLOCK_N, D)
    v = tl.load(V + b * stride_vb + h_kv * stride_vh + offs_n[:, None] * stride_vn + offs_d[None, :],
                mask=kv_ok[:, None], other=0.0)  # (BLOCK_N, D)
    if EMULATE_BF16:
        k = k.to(tl.float32)
        v = v.to(tl.float32)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    for g in range(GROUP):
        h = h_kv * GROUP + g
        q_base = Q + b * stride_qb + h * stride_qh
        do_base = DOut + b * stride_dob + h * stride_doh
        lse_base = Lse + (b * H + h) * L
        delta_base = Delta + (b * H + h) * L
        dq_base = DQAcc + (b * H + h) * L * HEAD_DIM
        m_mid = n0 * 0  # the first query tile walked without the causal mask
        if CAUSAL:
            # Query rows i >= n0 see some key of this tile; rows i >= n0 + BLOCK_N - 1 see all
            # of them. Masked tiles from the one holding row n0 to m_mid, unmasked after.
            m_lo = (n0 // BLOCK_M) * BLOCK_M
            m_mid = tl.minimum(((n0 + BLOCK_N + BLOCK_M - 1) // BLOCK_M) * BLOCK_M, L)
            dk, dv = _bwd_dkdv_inner(dk, dv, k, v, q_base, do_base, lse_base, delta_base, dq_base,
                                     stride_qm, stride_dom, HEAD_DIM, offs_n, offs_d, m_lo, m_mid, L,
                                     qk_scale, sm_scale, BLOCK_M, True, EVEN_M, ATOMIC_DQ, DTYPE,
                                     DOT_PRECISION, EMULATE_BF16)
        dk, dv = _bwd_dkdv_inner(dk, dv, k, v, q_base, do_base, lse_base, delta_base, dq_base,
                                 stride_qm, stride_dom, HEAD_DIM, offs_n, offs_d, m_mid, L, L,
                                 qk_scale, sm_scale, BLOCK_M, False, EVEN_M, ATOMIC_DQ, DTYPE,
                                 DOT_PRECISION, EMULATE_BF16)
    dk = _to_dtype(dk * sm_scale, DTYPE, EMULATE_BF16).to(DTYPE)
    dv = _to_dtype(dv, DTYPE, EMULATE_BF16).to(DTYPE)
    tl.store(DK + b * stride_dkb + h_kv * stride_dkh + offs_n[:, None] * stride_dkn + offs_d[None, :],
             dk, mask=kv_ok[:, None])
    tl.store(DV + b * stride_dvb + h_kv * stride_dvh + offs_n[:, None] * stride_dvn + offs_d[None, :],
             dv, mask=kv_ok[:, None])


@triton.jit
def _bwd_dq_inner(dq, q, do, lse2, delta, k_base, v_base, stride_kn, stride_vn, offs_m, offs_d,
                  start, stop, S, qk_scale,
                  BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr, EVEN_N: tl.constexpr,
                  DTYPE: tl.constexpr, DOT_PRECISION: tl.constexpr, EMULATE_BF16: tl.constexpr):
    """Accumulate ``dQ_i`` of one query tile over the key tiles ``start, ..., stop - 1``
    (``EVEN_N``: ``S`` is a multiple of ``BLOCK_N``, no key tile is ragged)."""
    offs_n0 = tl.arange(0, BLOCK_N)
    for start_n in range(start, stop, BLOCK_N):
        offs_n = start_n + offs_n0  # (BLOCK_N,)
        kT = _load_rows(k_base, offs_n, offs_d, stride_kn, S, EVEN_N, True)  # (D, BLOCK_N)
        vT = _load_rows(v_base, offs_n, offs_d, stride_vn, S, EVEN_N, True)  # (D, BLOCK_N)
        if EMULATE_BF16:
            kT = kT.to(tl.float32)
            vT = vT.to(tl.float32)
        s = tl.dot(q, kT, input_precision=DOT_PRECISION) * qk_scale  # (BLOCK_M, BLOCK_N), base 2
        p = tl.exp2(s - lse2[:, None])  # (BLOCK_M, BLOCK_N), P
        if CAUSAL_MASK:
            p = tl.where((offs_n[None, :] <= offs_m[:, None]) & (offs_n < S)[None, :], p, 0.0)
        elif not EVEN_N:
            p = tl.where((offs_n < S)[None, :], p, 0.0)
        dp = tl.dot(do, vT, input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_N), dP
        ds = p * (dp - delta[:, None])  # (BLOCK_M, BLOCK_N), dZ
        dq = tl.dot(_to_dtype(ds, DTYPE, EMULATE_BF16), tl.trans(kT), dq,
                    input_precision=DOT_PRECISION)  # (BLOCK_M, D)
    return dq


@triton.jit
def _flash_bwd_dq_kernel(Q, K, V, DOut, DQ, Lse, Delta,
                         stride_qb, stride_qh, stride_qm,
                         stride_kb, stride_kh, stride_kn,
                         stride_vb, stride_vh, stride_vn,
                         stride_dob, stride_doh, stride_dom,
                         stride_dqb, stride_dqh, stride_dqm,
                         H, L, S, GROUP, qk_scale, sm_scale,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr, EVEN_N: tl.constexpr, DOT_PRECISION: tl.constexpr,
                         EMULATE_BF16: tl.constexpr):
    """Backward: program ``(i, b * H + h)`` computes ``dQ`` of query tile ``i``."""
    if CAUSAL:  # the last query tiles see the most keys: they start first, the short ones end
        pid_m = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    h_kv = h // GROUP
    DTYPE: tl.constexpr = DQ.dtype.element_ty
    m0 = pid_m * BLOCK_M
    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ok = offs_m < L
    q = tl.load(Q + b * stride_qb + h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :],
                mask=q_ok[:, None], other=0.0)  # (BLOCK_M, D)
    do = tl.load(DOut + b * stride_dob + h * stride_doh + offs_m[:, None] * stride_dom
                 + offs_d[None, :], mask=q_ok[:, None], other=0.0)  # (BLOCK_M, D)
    if EMULATE_BF16:
        q = q.to(tl.float32)
        do = do.to(tl.float32)
    row = pid_bh.to(tl.int64) * L + offs_m
    lse2 = tl.load(Lse + row, mask=q_ok, other=0.0) * _LOG2E  # (BLOCK_M,), base 2
    delta = tl.load(Delta + row, mask=q_ok, other=0.0)  # (BLOCK_M,)
    k_base = K + b * stride_kb + h_kv * stride_kh
    v_base = V + b * stride_vb + h_kv * stride_vh
    dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        n_mid = tl.minimum((m0 // BLOCK_N) * BLOCK_N, S)
        hi = tl.minimum(m0 + BLOCK_M, S)
        dq = _bwd_dq_inner(dq, q, do, lse2, delta, k_base, v_base, stride_kn, stride_vn, offs_m,
                           offs_d, 0, n_mid, S, qk_scale, BLOCK_N, False, EVEN_N, DTYPE, DOT_PRECISION,
                           EMULATE_BF16)
        dq = _bwd_dq_inner(dq, q, do, lse2, delta, k_base, v_base, stride_kn, stride_vn, offs_m,
                           offs_d, n_mid, hi, S, qk_scale, BLOCK_N, True, EVEN_N, DTYPE, DOT_PRECISION,
                           EMULATE_BF16)
    else:
        dq = _bwd_dq_inner(dq, q, do, lse2, delta, k_base, v_base, stride_kn, stride_vn, offs_m,
                           offs_d, 0, S, S, qk_scale, BLOCK_N, False, EVEN_N, DTYPE, DOT_PRECISION,
                           EMULATE_BF16)
    dq = dq * sm_scale
    dq = _to_dtype(dq, DTYPE, EMULATE_BF16).to(DTYPE)
    tl.store(DQ + b * stride_dqb + h * stride_dqh + offs_m[:, None] * stride_dqm + offs_d[None, :],
             dq, mask=q_ok[:, None])


INTERPRETED: bool = not isinstance(_flash_fwd_kernel, JITFunction)
"""Whether the kernels were built for Triton's interpreter (``TRITON_INTERPRET=1`` at import)."""

if INTERPRETED == isinstance(tl.zeros, JITFunction):  # Triton's own library was built the other way
    raise RuntimeError(
        "TRITON_INTERPRET was changed between the first 'import triton' and the import of "
        f"attnmath.flash_triton (kernels built {'for the interpreter' if INTERPRETED else 'for the GPU'}, "
        "Triton's library the other way): set TRITON_INTERPRET=1 before triton is first imported "
        "to run on the CPU, or leave it unset for the GPU"
    )


# --------------------------------------------------------------------------- host side


class KernelConfig(NamedTuple):
    """Tile sizes and launch settings of the kernels.

    ``fwd_m, fwd_n``: query and key tile of the forward; ``dkdv_m, dkdv_n``: query tile walked
    and key tile owned by the ``dK, dV`` kernel; ``dq_m, dq_n``: query tile owned and key tile
    walked by the ``dQ`` kernel. ``*_warps`` (threads per program / 32) and ``*_stages``
    (software-pipelining depth of the loads) are GPU launch settings; the interpreter ignores
    them. ``dq_atomic`` picks the backward path.
    """

    #: Query tile length of the forward kernel.
    fwd_m: int
    #: Key tile length of the forward kernel.
    fwd_n: int
    #: Query tile walked by the ``dK, dV`` kernel.
    dkdv_m: int
    #: Key tile owned by the ``dK, dV`` kernel.
    dkdv_n: int
    #: Query tile owned by the ``dQ`` kernel.
    dq_m: int
    #: Key tile walked by the ``dQ`` kernel.
    dq_n: int
    #: Warps (threads per program / 32) of the forward kernel; ignored by the interpreter.
    fwd_warps: int
    #: Warps of the ``dK, dV`` kernel; ignored by the interpreter.
    dkdv_warps: int
    #: Warps of the ``dQ`` kernel; ignored by the interpreter.
    dq_warps: int
    #: Software-pipelining depth of the forward's loads; ignored by the interpreter.
    fwd_stages: int
    #: Software-pipelining depth of both backward kernels' loads; ignored by the interpreter.
    bwd_stages: int
    #: The backward's ``dQ``: ``False`` (default) a kernel of its own, deterministic (7 matrix
    #: products per tile pair); ``True`` added by the ``dK, dV`` kernel with float32 atomic
    #: additions (5 products, one launch fewer, sums in a run-dependent order; ``dq_m``,
    #: ``dq_n`` and ``dq_warps`` unused). Module docstring, *The two backward paths*.
    dq_atomic: bool = False


def kernel_config(D: int, dtype: torch.dtype = torch.float16, *, block_q: int | None = None,
                  block_k: int | None = None, config: KernelConfig | None = None) -> KernelConfig:
    r"""Tile sizes and launch settings for head dim ``D`` and input ``dtype``.

    Parameters
    ----------
    D : int
        Head dim, a power of two in ``[16, 256]``.
    dtype : torch.dtype
        Input dtype; float32 tiles take twice the on-chip memory and registers, so they get
        half the tiles, eight warps and no pipelining.
    block_q, block_k : int, optional
        Override every query tile (``fwd_m``, ``dkdv_m``, ``dq_m``) and every key tile
        (``fwd_n``, ``dkdv_n``, ``dq_n``); powers of two in ``[16, 256]``.
    config : KernelConfig, optional
        Use these settings instead of the defaults for ``D`` and ``dtype`` (``block_q`` and
        ``block_k`` still override its tiles): tiles powers of two in ``[16, 256]``, warps
        1, 2, 4, 8 or 16, stages 1 to 8, ``dq_atomic`` a bool. The GPU benchmark tunes with it.

    Returns
    -------
    KernelConfig

    Notes
    -----
    The defaults follow the usual FlashAttention-2 shapes: large query tiles in the forward
    (each program reuses its ``Q`` tile across all keys), a large key tile with short query
    tiles for ``dK, dV`` (two ``(BLOCK_N, D)`` float32 accumulators live in registers), the
    transpose of that for ``dQ``; tiles shrink as ``D`` grows. They were checked by compiling
    every kernel for sm_90 (H100) and sm_80 (A100) with the Triton ``ptxas``
    (``bench/compile_flash_triton.py`` prints registers, spills and shared memory), then timed
    on an H100 (``bench/bench_flash_gpu.py --tune``, 2026-11-27, ``bench/results/gpu/NOTES.md``):
    the forward defaults were kept (no candidate gained more than the 11 % by which the default
    itself varied when timed again in that pass);
    the ``D = 128`` backward tiles (64 x 64, 8 warps, 3 stages) come from that pass (7.3 against
    8.1-8.2 ms at ``N = 4096``, single timings; no full run compares them with the old tiles).
    Float32 (a checking path with IEEE products) gets half the tiles and no pipelining.
    """
    _check_head_dim(D)
    if dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"dtype must be torch.float16, bfloat16 or float32, got {dtype!r}")
    cfg = _default_config(D, dtype) if config is None else _check_config(config)
    if block_q is not None:
        bq = _check_block(block_q, "block_q")
        cfg = cfg._replace(fwd_m=bq, dkdv_m=bq, dq_m=bq)
    if block_k is not None:
        bk = _check_block(block_k, "block_k")
        cfg = cfg._replace(fwd_n=bk, dkdv_n=bk, dq_n=bk)
    return cfg


def _default_config(D: int, dtype: torch.dtype) -> KernelConfig:
    """The settings :func:`kernel_config` returns without overrides."""
    #                     fwd_m  n  dkdv_m  n  dq_m  n  warps: fwd dkdv dq  stages: fwd bwd
    if D <= 64:
        cfg = KernelConfig(128, 64, 32, 128, 128, 32, 4, 8, 8, 3, 3)
    elif D == 128:
        cfg = KernelConfig(128, 64, 64, 64, 64, 64, 8, 8, 8, 3, 3)
    else:  # D == 256
        cfg = KernelConfig(64, 32, 16, 32, 32, 16, 8, 8, 8, 2, 1)
    if dtype == torch.float32:
        half = [max(_MIN_BLOCK, b // 2) for b in cfg[:6]]
        if D >= 128:  # IEEE float32 products run on the FMA units and hold more registers
            half[0] = min(half[0], 32)
        cfg = KernelConfig(half[0], half[1], half[2], half[3], half[4], half[5], 8, 8, 8, 1, 1)
    return cfg


def _check_config(config) -> KernelConfig:
    """A :class:`KernelConfig` with tiles, warps and stages a launch can take."""
    if not isinstance(config, KernelConfig):
        raise TypeError(f"config must be a KernelConfig, got {type(config).__name__}")
    for field in KernelConfig._fields[:6]:
        _check_block(getattr(config, field), f"config.{field}")
    for field, allowed, what in (("fwd_warps", (1, 2, 4, 8, 16), "1, 2, 4, 8 or 16 warps"),
                                 ("dkdv_warps", (1, 2, 4, 8, 16), "1, 2, 4, 8 or 16 warps"),
                                 ("dq_warps", (1, 2, 4, 8, 16), "1, 2, 4, 8 or 16 warps"),
                                 ("fwd_stages", range(1, 9), "an integer from 1 to 8"),
                                 ("bwd_stages", range(1, 9), "an integer from 1 to 8")):
        value = getattr(config, field)
        integral = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        if not integral or int(value) not in allowed:
            raise ValueError(f"config.{field} must be {what}, got {value!r}")
    return KernelConfig._make([*(int(x) for x in config[:-1]), check_bool(config.dq_atomic, "config.dq_atomic")])


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _check_head_dim(D) -> int:
    if isinstance(D, bool) or not isinstance(D, numbers.Integral):
        raise TypeError(f"head dim D must be an integer, got {type(D).__name__}")
    if not (_MIN_HEAD_DIM <= int(D) <= _MAX_HEAD_DIM and _is_power_of_two(int(D))):
        raise ValueError(
            f"head dim D must be a power of two in [{_MIN_HEAD_DIM}, {_MAX_HEAD_DIM}] "
            f"(16, 32, 64, 128, 256) for the Triton kernels, got D={D}"
        )
    return int(D)


def _check_block(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if not (_MIN_BLOCK <= int(value) <= _MAX_BLOCK and _is_power_of_two(int(value))):
        raise ValueError(f"{name} must be a power of two in [{_MIN_BLOCK}, {_MAX_BLOCK}], got {value}")
    return int(value)


def _check_finite(named: dict, call: str = "flash_attention_triton", wait: bool = False) -> None:
    """The non-finite policy of :mod:`attnmath.core` for ``named`` (name -> tensor): NaN or an
    infinity raises ``ValueError`` naming the tensor, at once for CPU tensors and without a
    wait for CUDA ones (:mod:`attnmath._finite_check`; ``call`` is named in a later report).
    First the checks of earlier calls are reported: those the GPU has run, or all (``wait``)."""
    _finite_check.raise_pending(wait=wait)
    _finite_check.check(named, call)


def wait_for_input_checks() -> None:
    r"""Wait for the finite checks still running on the GPU; raise for the first that failed.

    With ``check_finite=True`` (the default) the kernels' CUDA inputs are checked on the GPU,
    and no call waits for its own check (module docstring, *The finite check*). This function
    waits for every check not yet reported and raises ``ValueError`` for the first that found
    NaN or an infinity, naming the tensor (``q``, ``k``, ``v`` or ``dout``) and the call that
    received it, then forgets them. Without pending checks (CPU tensors are checked at once)
    it returns at once.

    Returns
    -------
    None
    """
    _finite_check.raise_pending(wait=True)


def _check_tensors(q, k, v):
    """Validate ``q (B, H, L, D)``, ``k, v (B, H_kv, S, D)`` (not their values: :func:`_check_finite`);
    return ``(B, H, H_kv, L, S, D)``."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        if x.dim() != 4:
            raise ValueError(
                f"{name} must have 4 dimensions {'(B, H, L, D)' if name == 'q' else '(B, H_kv, S, D)'}, "
                f"got shape {tuple(x.shape)}"
            )
        if x.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} must be float16, bfloat16 or float32, got {x.dtype}")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k and v must have one dtype, got q {q.dtype}, k {k.dtype}, v {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k and v must be on one device, got q {q.device}, k {k.device}, v {v.device}")
    B, H, L, D = q.shape
    B_k, H_kv, S, D_k = k.shape
    if B_k != B:
        raise ValueError(
            f"q and k must have the same batch size B, got q {tuple(q.shape)}, k {tuple(k.shape)}"
        )
    if D_k != D:
        raise ValueError(
            f"q and k must share the head dim D: q has D={D} (shape {tuple(q.shape)}), "
            f"k has D={D_k} (shape {tuple(k.shape)})"
        )
    if v.shape[:3] != k.shape[:3]:
        raise ValueError(f"k and v must agree on (B, H_kv, S), got k {tuple(k.shape)}, v {tuple(v.shape)}")
    if v.shape[3] != D:
        raise ValueError(
            f"the value head dim D_v must equal the head dim D={D} for the Triton kernels, "
            f"got v of shape {tuple(v.shape)}"
        )
    if H_kv == 0 or H % H_kv != 0:
        raise ValueError(
            f"the number of query heads H={H} must be a multiple of the key/value heads H_kv={H_kv}"
        )
    _check_head_dim(D)
    # The interpreter runs CPU tensors, and CUDA tensors through host copies.
    if q.device.type != "cuda" and not INTERPRETED:
        raise ValueError(
            f"q is on the {q.device.type} device, but the Triton kernels were built for the GPU: "
            "pass CUDA tensors, or set TRITON_INTERPRET=1 before triton is first imported to run "
            "them on the CPU with Triton's interpreter"
        )
    if q.device.type not in ("cpu", "cuda"):
        raise ValueError(f"Triton's interpreter runs CPU or CUDA tensors, got q on {q.device}")
    return B, H, H_kv, L, S, D


def _last_dim_contiguous(x: torch.Tensor) -> torch.Tensor:
    """The kernels index the head dim with unit stride; other strides are passed as they are."""
    return x if x.stride(-1) == 1 else x.contiguous()


def _launch_kwargs(warps: int, stages: int) -> dict:
    return {} if INTERPRETED else {"num_warps": warps, "num_stages": stages}


def _dot_settings(dtype: torch.dtype) -> tuple[str, bool]:
    """``input_precision`` of ``tl.dot`` and whether bfloat16 is emulated in float32."""
    emulate_bf16 = INTERPRETED and dtype == torch.bfloat16
    # float32 inputs: IEEE products (the default would round the operands to TF32 on the GPU).
    precision = "ieee" if dtype == torch.float32 or emulate_bf16 else "tf32"
    return precision, emulate_bf16


@contextlib.contextmanager
def _launch_scope(x: torch.Tensor):
    """Where the kernels run: ``x``'s GPU, or the interpreter with ``TRITON_INTERPRET=1`` set.

    Interpreted kernels read the variable while they run, not only when they are built; it is
    set for the launches and restored after, so that importing with it set is enough.
    """
    if INTERPRETED:
        previous = os.environ.get("TRITON_INTERPRET")
        os.environ["TRITON_INTERPRET"] = "1"
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop("TRITON_INTERPRET", None)
            else:
                os.environ["TRITON_INTERPRET"] = previous
    else:
        with torch.cuda.device(x.device):
            yield


class TritonFlashCache(NamedTuple):
    """What :func:`flash_attention_triton` keeps for its backward: every field is read there.

    ``q, k, v`` the inputs, ``out (B, H, L, D)`` the output, ``lse (B, H, L)`` the float32
    log-sum-exp; ``scale`` and ``causal`` as the forward used them, so that a backward cannot
    be run with other settings than its forward.
    """

    #: Queries ``(B, H, L, D)``, a torch tensor.
    q: torch.Tensor
    #: Keys ``(B, H_kv, S, D)``.
    k: torch.Tensor
    #: Values ``(B, H_kv, S, D)``.
    v: torch.Tensor
    #: Output ``(B, H, L, D)``.
    out: torch.Tensor
    #: Float32 log-sum-exp of each query's scores ``(B, H, L)``.
    lse: torch.Tensor
    #: Score scale the forward used (a scalar).
    scale: float
    #: Whether the forward was causal.
    causal: bool


def flash_attention_triton(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = False,
                           scale: float | None = None, block_q: int | None = None,
                           block_k: int | None = None, config: KernelConfig | None = None,
                           check_finite: bool = True) -> tuple[torch.Tensor, TritonFlashCache]:
    r"""Exact attention with the Triton FlashAttention-2 forward kernel; returns ``(out, cache)``.

    .. math::

        O = \operatorname{softmax}\!\left(s\, Q K^\top + \mathrm{bias}_M\right) V, \qquad
        \operatorname{lse}_i = \log \sum_{j \text{ allowed}} e^{s\, q_i \cdot k_j},

    with :math:`(\mathrm{bias}_M)_{ij} = -\infty` for :math:`j > i` when ``causal`` (top-left alignment, as
    torch's ``is_causal``, also when ``L != S``) and 0 otherwise; tile by tile with the online
    softmax (module docstring).

    Parameters
    ----------
    q, k, v : torch.Tensor, shapes (B, H, L, D), (B, H_kv, S, D), (B, H_kv, S, D)
        Float16, bfloat16 or float32, one dtype and device; ``D`` a power of two in
        ``[16, 256]``, ``D_v = D``, ``H % H_kv == 0``.
    causal : bool
        Top-left causal mask.
    scale : float, optional
        Score scale :math:`s`, ``1/sqrt(D)`` by default.
    block_q, block_k : int, optional
        Override the query and key tile sizes (:func:`kernel_config`).
    config : KernelConfig, optional
        Tiles, warps and stages instead of the defaults (:func:`kernel_config`).
    check_finite : bool
        Raise ``ValueError`` on NaN or an infinity in ``q``, ``k``, ``v`` (default; one read of
        each): CPU tensors here, CUDA ones at a later call, checked on the GPU without a wait
        (module docstring, *The finite check*). ``False`` skips it.

    Returns
    -------
    out : torch.Tensor, shape (B, H, L, D)
        In the input dtype.
    cache : TritonFlashCache
        The inputs, ``out``, ``lse (B, H, L)`` (float32), ``scale`` and ``causal``.

    Notes
    -----
    ``L = 0`` or ``S = 0`` returns zeros (and ``lse = -inf``) without a launch. No autograd
    history (use :func:`flash_attention`). Unlike :func:`attnmath.flash.flash_attention_forward`: no mask,
    no bottom-right alignment, so no row is fully masked. Numerics and cost: the module
    docstring. Oracles: :func:`attnmath.flash.flash_attention_forward` and torch's
    ``scaled_dot_product_attention`` and ``logsumexp`` on float32 copies of the inputs.
    """
    causal = check_bool(causal, "causal")
    B, H, H_kv, L, S, D = _check_tensors(q, k, v)
    scale = check_scale(scale, D)
    cfg = kernel_config(D, q.dtype, block_q=block_q, block_k=block_k, config=config)
    if check_bool(check_finite, "check_finite"):
        _check_finite({"q": q, "k": k, "v": v}, "flash_attention_triton")
    q, k, v = (_last_dim_contiguous(x) for x in (q, k, v))
    out, lse = _forward(q, k, v, cfg, scale, causal)
    return out, TritonFlashCache(q, k, v, out, lse, scale, causal)


def _forward(q, k, v, cfg, scale: float, causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``(out, lse)``: launched when there is something to attend; zeros and -inf, as torch,
    without a launch when ``L``, ``S`` or ``B * H`` is 0."""
    (B, H, L, D), S = q.shape, k.shape[2]
    if not (L and S and B * H):
        return (torch.zeros((B, H, L, D), dtype=q.dtype, device=q.device),
                torch.full((B, H, L), float("-inf"), dtype=torch.float32, device=q.device))
    out = torch.empty((B, H, L, D), dtype=q.dtype, device=q.device)  # the kernel writes every element
    lse = torch.empty((B, H, L), dtype=torch.float32, device=q.device)  # (B, H, L)
    _launch_forward(q, k, v, out, lse, cfg, scale, causal)
    return out, lse


def _launch_forward(q, k, v, out, lse, cfg, scale: float, causal: bool) -> None:
    """The forward launch, one program per query tile and head, into ``out`` and ``lse``."""
    (B, H, L, D), (H_kv, S) = q.shape, k.shape[1:3]
    precision, emulate_bf16 = _dot_settings(q.dtype)
    with _launch_scope(q):
        _flash_fwd_kernel[(triton.cdiv(L, cfg.fwd_m), B * H)](
            q, k, v, out, lse,
            q.stride(0), q.stride(1), q.stride(2),
            k.stride(0), k.stride(1), k.stride(2),
            v.stride(0), v.stride(1), v.stride(2),
            out.stride(0), out.stride(1), out.stride(2),
            H, L, S, H // H_kv, scale * LOG2E,
            HEAD_DIM=D, BLOCK_M=cfg.fwd_m, BLOCK_N=cfg.fwd_n, CAUSAL=causal,
            EVEN_N=S % cfg.fwd_n == 0, DOT_PRECISION=precision, EMULATE_BF16=emulate_bf16,
            **_launch_kwargs(cfg.fwd_warps, cfg.fwd_stages),
        )


def _check_backward(dout: torch.Tensor, cache: TritonFlashCache):
    """The cache's fields and ``dout`` checked (not their values): ``(q, k, v, out, lse, scale,
    causal)`` and the sizes ``(B, H, H_kv, L, S, D)``."""
    check_cache(cache, TritonFlashCache, "flash_attention_triton", "flash_attention_triton_backward")
    q, k, v, out, lse, scale, causal = cache
    causal = check_bool(causal, "cache.causal")
    B, H, H_kv, L, S, D = _check_tensors(q, k, v)
    scale = check_scale(scale, D)
    for name, x, shape, dtype in (("dout", dout, (B, H, L, D), q.dtype), ("cache.out", out, (B, H, L, D), q.dtype),
                                  ("cache.lse", lse, (B, H, L), torch.float32)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        if tuple(x.shape) != shape:
            raise ValueError(f"{name} must have shape {shape}, got {tuple(x.shape)}")
        if x.dtype != dtype:
            raise TypeError(f"{name} must have dtype {dtype}, got {x.dtype}")
        if x.device != q.device:
            raise ValueError(f"{name} must be on q's device {q.device}, got {x.device}")
    return (q, k, v, out, lse, scale, causal), (B, H, H_kv, L, S, D)


def flash_attention_triton_backward(dout: torch.Tensor, cache: TritonFlashCache, *,
                                    block_q: int | None = None, block_k: int | None = None,
                                    config: KernelConfig | None = None,
                                    check_finite: bool = True) -> AttentionGrads:
    r"""Gradients of :func:`flash_attention_triton` from ``dout``, recomputing ``P`` from ``lse``.

    .. math::

        \begin{aligned}
        &P_{ij} = e^{s\, q_i \cdot k_j - \operatorname{lse}_i}, \quad D_i = \sum_d dO_{id}\, O_{id},
          \quad dZ_{ij} = P_{ij}\bigl((dO\, V^\top)_{ij} - D_i\bigr), \\
        &dQ = s\, dZ\, K, \qquad dK = s\, dZ^\top Q, \qquad dV = P^\top dO .
        \end{aligned}

    Parameters
    ----------
    dout : torch.Tensor, shape (B, H, L, D)
        Gradient of the loss with respect to ``out``; same dtype as ``q``.
    cache : TritonFlashCache
        From :func:`flash_attention_triton`, with the forward's ``scale`` and ``causal``.
        Another method's cache raises ``TypeError``; fields that disagree ``ValueError``.
    block_q, block_k : int, optional
        Tile overrides for the backward kernels (they need not match the forward's).
    config : KernelConfig, optional
        Tiles, warps and stages instead of the defaults (:func:`kernel_config`).
    check_finite : bool
        Raise ``ValueError`` on NaN or an infinity in ``dout`` or the cached inputs (the
        default; one read of each): CPU tensors here; for CUDA ones, first wait for the
        checks of earlier calls (the forward's) and raise for them, then check these on the
        GPU without a wait (reported at a later call; module docstring). ``False`` skips it.

    Returns
    -------
    AttentionGrads
        ``dq (B, H, L, D)``, ``dk (B, H_kv, S, D)``, ``dv (B, H_kv, S, D)`` in the input dtype;
        for grouped heads ``dk``, ``dv`` are summed over the query heads of each group.

    Notes
    -----
    Three launches (``D``, then ``dK, dV`` per key tile, then ``dQ`` per query tile; their
    cost and rounding: the module docstring). Oracles:
    :func:`attnmath.flash.flash_attention_backward` and ``torch.autograd`` through
    ``torch.nn.functional.scaled_dot_product_attention`` on float32 copies of the inputs.
    """
    finite = check_bool(check_finite, "check_finite")
    (q, k, v, out, lse, scale, causal), (B, H, H_kv, L, S, D) = _check_backward(dout, cache)
    cfg = kernel_config(D, q.dtype, block_q=block_q, block_k=block_k, config=config)
    if finite:  # waits for the forward's check, which comes before its kernel on the GPU
        _check_finite({"q": q, "k": k, "v": v, "dout": dout}, "flash_attention_triton_backward", wait=True)
    return _backward(dout, TritonFlashCache(q, k, v, out, lse, scale, causal), cfg)


def _backward(dout: torch.Tensor, cache: TritonFlashCache, cfg: KernelConfig) -> AttentionGrads:
    """The backward launches on checked inputs (``dout`` finite, ``cache`` consistent)."""
    q, k, v, out, lse, scale, causal = cache
    (B, H, L, D), (H_kv, S) = q.shape, k.shape[1:3]
    if L == 0 or S == 0 or B * H == 0:  # no attention weights: every gradient is zero
        return AttentionGrads(torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v))
    q, k, v, out, dout = (_last_dim_contiguous(x) for x in (q, k, v, out, dout))
    lse = lse.contiguous()
    delta = torch.empty((B, H, L), dtype=torch.float32, device=q.device)  # (B, H, L): D_i
    dq = torch.empty((B, H, L, D), dtype=q.dtype, device=q.device)  # (B, H, L, D)
    dk = torch.empty((B, H_kv, S, D), dtype=q.dtype, device=q.device)  # (B, H_kv, S, D)
    dv = torch.empty((B, H_kv, S, D), dtype=q.dtype, device=q.device)  # (B, H_kv, S, D)
    with _launch_scope(q):
        _flash_bwd_delta_kernel[(triton.cdiv(L, 128), B * H)](
            out, dout, delta,
            out.stride(0), out.stride(1), out.stride(2),
            dout.stride(0), dout.stride(1), dout.stride(2),
            H, L, HEAD_DIM=D, BLOCK_M=128, **_launch_kwargs(4, 1),
        )
        _launch_gradients(q, k, v, dout, lse, delta, (dq, dk, dv), cfg, scale, causal)
    return AttentionGrads(dq, dk, dv)


def _launch_gradients(q, k, v, dout, lse, delta, grads, cfg, scale: float, causal: bool) -> None:
    """The gradient launches into ``grads = (dq, dk, dv)``: ``dK, dV`` (one program per key tile
    and key/value head), then ``dQ`` (one program per query tile and head); or, with
    ``cfg.dq_atomic``, ``dK, dV`` adding ``dQ`` into a float32 buffer, copied into ``dq``."""
    (B, H, L, D), (H_kv, S), (dq, dk, dv) = q.shape, k.shape[1:3], grads
    precision, emulate_bf16 = _dot_settings(q.dtype)
    common = {"HEAD_DIM": D, "CAUSAL": causal, "DOT_PRECISION": precision, "EMULATE_BF16": emulate_bf16}
    # (B, H, L, D) float32 sums of dQ, or a placeholder the kernel does not read
    dq_acc = torch.zeros((B, H, L, D), dtype=torch.float32, device=q.device) if cfg.dq_atomic else lse
    _flash_bwd_dkdv_kernel[(triton.cdiv(S, cfg.dkdv_n), B * H_kv)](
        q, k, v, dout, dk, dv, lse, delta, dq_acc,
        q.stride(0), q.stride(1), q.stride(2),
        k.stride(0), k.stride(1), k.stride(2),
        v.stride(0), v.stride(1), v.stride(2),
        dout.stride(0), dout.stride(1), dout.stride(2),
        dk.stride(0), dk.stride(1), dk.stride(2),
        dv.stride(0), dv.stride(1), dv.stride(2),
        H, H_kv, L, S, H // H_kv, scale * LOG2E, scale,
        BLOCK_M=cfg.dkdv_m, BLOCK_N=cfg.dkdv_n, EVEN_M=L % cfg.dkdv_m == 0,
        ATOMIC_DQ=cfg.dq_atomic, **common, **_launch_kwargs(cfg.dkdv_warps, cfg.bwd_stages),
    )
    if cfg.dq_atomic:
        dq.copy_(dq_acc)  # rounded once to the input dtype
        return
    _flash_bwd_dq_kernel[(triton.cdiv(L, cfg.dq_m), B * H)](
        q, k, v, dout, dq, lse, delta,
        q.stride(0), q.stride(1), q.stride(2),
        k.stride(0), k.stride(1), k.stride(2),
        v.stride(0), v.stride(1), v.stride(2),
        dout.stride(0), dout.stride(1), dout.stride(2),
        dq.stride(0), dq.stride(1), dq.stride(2),
        H, L, S, H // H_kv, scale * LOG2E, scale,
        BLOCK_M=cfg.dq_m, BLOCK_N=cfg.dq_n, EVEN_N=S % cfg.dq_n == 0, **common,
        **_launch_kwargs(cfg.dq_warps, cfg.bwd_stages),
    )


class FlashAttentionTriton(torch.autograd.Function):
    r"""Autograd wrapper: forward and backward by the Triton kernels.

    ``FlashAttentionTriton.apply(q, k, v, causal, scale, block_q, block_k, config, check_finite)
    -> out (B, H, L, D)``; the context keeps ``q, k, v, out`` and ``lse (B, H, L)``, never a ``(L, S)``
    array, the forward's ``scale`` and ``causal`` (the :class:`TritonFlashCache` fields) and
    the kernel settings. The backward checks only ``dout``: the rest was checked by the forward
    (on a GPU, the backward first waits for that check and raises for it; module docstring).
    """

    @staticmethod
    def forward(ctx, q, k, v, causal=False, scale=None, block_q=None, block_k=None, config=None,
                check_finite=True):
        out, cache = flash_attention_triton(q, k, v, causal=causal, scale=scale, block_q=block_q,
                                            block_k=block_k, config=config, check_finite=check_finite)
        ctx.check_finite = check_finite
        ctx.save_for_backward(cache.q, cache.k, cache.v, cache.out, cache.lse)
        ctx.settings = {"scale": cache.scale, "causal": cache.causal}
        ctx.config = kernel_config(q.shape[-1], q.dtype, block_q=block_q, block_k=block_k,
                                   config=config)
        return out

    @staticmethod
    def backward(ctx, dout):
        cache = TritonFlashCache(*ctx.saved_tensors, **ctx.settings)
        dout = dout.to(cache.q.dtype)
        if ctx.check_finite:  # waits for the forward's check, which comes before its kernel
            _check_finite({"dout": dout}, "flash_attention (its backward)", wait=True)
        dq, dk, dv = _backward(dout, cache, ctx.config)
        return dq, dk, dv, None, None, None, None, None, None


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                    scale: float | None = None, *, block_q: int | None = None,
                    block_k: int | None = None, config: KernelConfig | None = None,
                    check_finite: bool = True) -> torch.Tensor:
    r"""Differentiable flash attention: :func:`flash_attention_triton` forward, Triton backward.

    .. math::

        O = \operatorname{softmax}\!\left(s\, Q K^\top + \mathrm{bias}_M\right) V
        \quad (M \text{ the causal mask})

    Parameters
    ----------
    q : torch.Tensor, shape (B, H, L, D)
    k, v : torch.Tensor, shape (B, H_kv, S, D)
    causal : bool
        Top-left causal mask (torch's ``is_causal``).
    scale : float, optional
        ``1/sqrt(D)`` by default.
    block_q, block_k : int, optional
        Tile overrides (:func:`kernel_config`).
    config : KernelConfig, optional
        Tiles, warps and stages instead of the defaults, for the forward and the backward.
    check_finite : bool
        Raise ``ValueError`` on NaN or an infinity in the inputs, and in ``dout`` in the
        backward (the default; one read of each tensor). CPU tensors raise in the call; CUDA
        ones are checked on the GPU without a wait: bad inputs raise in the backward at the
        latest, a bad ``dout`` at a later call (module docstring, *The finite check*).
        ``False`` skips both checks, for inputs known to be finite.

    Returns
    -------
    torch.Tensor, shape (B, H, L, D)
        ``out.backward(...)`` runs :func:`flash_attention_triton_backward`.

    Notes
    -----
    A drop-in for ``torch.nn.functional.scaled_dot_product_attention(q, k, v,
    is_causal=causal, scale=scale, enable_gqa=True)`` without ``attn_mask`` and dropout.
    Oracle: that function and ``torch.autograd``, on float32 copies of the inputs.
    """
    return FlashAttentionTriton.apply(q, k, v, causal, scale, block_q, block_k, config,
                                      check_bool(check_finite, "check_finite"))
