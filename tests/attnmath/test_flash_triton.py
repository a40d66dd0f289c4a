"""Tests for attnmath.flash_triton: the Triton flash-attention kernels, forward and backward.

The kernels run in a child Python process started once per test process and shared with
``test_conformance.py`` (fixture ``triton_kernels``, ``tests/attnmath/conftest.py``):
natively when CUDA is available, otherwise on CPU tensors under Triton's interpreter, with
``TRITON_INTERPRET=1`` set in the child's environment only. The variable must be set before
``triton`` is first imported, and in this pytest process ``triton`` may already have been
imported by torch (``torch._dynamo`` imports it), so the child is the one place where it can be
set reliably; it never reaches this process or the other test modules, and this process never
imports ``attnmath.flash_triton`` (except to check its import error without Triton). Tensors
travel by pickle; an exception raised in the child is raised again here with its type and
message. The interpreter executes every program of the grid in Python with NumPy, so the sizes
are small (``L`` up to 71).

Oracles: the NumPy flash-tiled reference :mod:`attnmath.flash` in float64 and
``torch.nn.functional.scaled_dot_product_attention`` with ``torch.autograd``, on float32 or
float64 copies of the (rounded) inputs. Tolerances: float32 inputs ``rtol = 1e-5, atol = 2e-5``
against float64 (float32 products, sums of at most 71 terms); float16 and bfloat16 ``rtol = 4
eps, atol = 8 eps`` with ``eps`` the dtype's machine epsilon (2**-10, 2**-7), against float64 on
the same rounded inputs; and, as the GPU criterion, a largest error against float32 at most
twice that of torch's SDPA in the same dtype.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import torch.nn.functional as F

from attnmath.core import AttentionGrads
from attnmath.flash import flash_attention_backward, flash_attention_forward
from attnmath.testing import assert_close, triton_child_env

NATIVE = torch.cuda.is_available()
DEVICE = "cuda" if NATIVE else "cpu"
LIB = Path(__file__).resolve().parents[2] / "lib"

# Machine epsilon of each input dtype: tolerances below are small multiples of it.
EPS = {torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7, torch.float32: 2.0**-23}


def _child_env(interpret: bool) -> dict:
    return triton_child_env(interpret)


@pytest.fixture(scope="module")
def kernels(triton_kernels):
    """The kernel process of tests/attnmath/conftest.py: interpreted exactly when there is no CUDA."""
    assert triton_kernels.interpreted() is (not NATIVE)
    return triton_kernels


def _qkv(B=1, H=2, L=40, S=None, D=64, H_kv=None, *, dtype=torch.float32, seed=0):
    """Standard normal ``q (B, H, L, D)``, ``k, v (B, H_kv, S, D)``, ``dout (B, H, L, D)``."""
    S = L if S is None else S
    H_kv = H if H_kv is None else H_kv
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, L, D, generator=g)
    k = torch.randn(B, H_kv, S, D, generator=g)
    v = torch.randn(B, H_kv, S, D, generator=g)
    dout = torch.randn(B, H, L, D, generator=g)
    return tuple(x.to(dtype=dtype, device=DEVICE) for x in (q, k, v, dout))


def _sdpa_fwd_bwd(q, k, v, dout, *, causal, scale=None):
    """``torch`` SDPA and autograd in the inputs' dtype: ``out, dq, dk, dv``."""
    q, k, v = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                         enable_gqa=q.shape[1] != k.shape[1])
    out.backward(dout)
    return out.detach(), q.grad, k.grad, v.grad


def _numpy(x):
    return x.detach().cpu().double().numpy()


def _logsumexp_reference(q, k, *, causal, scale=None):
    """``lse (B, H, L)`` of the scaled (causally masked) scores, in float64."""
    q, k = q.double().cpu(), k.double().cpu()
    L, S, D = q.shape[2], k.shape[2], q.shape[3]
    k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)  # (B, H, S, D)
    scores = (q @ k.transpose(-1, -2)) * (D**-0.5 if scale is None else scale)  # (B, H, L, S)
    if causal:
        scores = scores.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), -torch.inf)
    return torch.logsumexp(scores, dim=-1)


# --------------------------------------------------------------------------- oracle: attnmath.flash


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    "L, D, block_q, block_k",
    [
        (16, 64, None, None),  # one tile, shorter than a tile
        (40, 128, None, None),  # D = 128, L not a multiple of any tile
        (64 + 7, 64, 16, 32),  # several query and key tiles, a ragged last one
        (64, 32, 16, 32),  # tiles that divide L = S: the loads and scores without a mask
    ],
)
def test_float32_kernels_match_the_numpy_flash_reference(kernels, causal, L, D, block_q, block_k):
    q, k, v, dout = _qkv(L=L, D=D, seed=L + D)
    out, lse, dq, dk, dv = kernels.fwd_bwd(q, k, v, dout, causal=causal, block_q=block_q,
                                           block_k=block_k)
    ref_out, cache = flash_attention_forward(*(_numpy(x) for x in (q, k, v)), block_q=16,
                                             block_k=16, causal=causal)
    ref = flash_attention_backward(_numpy(dout), cache)
    tol = {"rtol": 1e-5, "atol": 2e-5}  # float32 products and sums of <= 71 terms
    assert_close(out, ref_out, name="out", **tol)
    assert_close(lse, cache.lse, name="lse", **tol)
    for name, actual, expected in zip(AttentionGrads._fields, (dq, dk, dv), ref):
        assert_close(actual, expected, name=name, **tol)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("L, S", [(23, 50), (50, 23)])
def test_grouped_heads_and_unequal_lengths_match_the_numpy_reference(kernels, causal, L, S):
    # H = 4 query heads on H_kv = 2 key/value heads; top-left causal with L != S.
    q, k, v, dout = _qkv(B=1, H=4, H_kv=2, L=L, S=S, D=32, seed=L * S)
    out, lse, dq, dk, dv = kernels.fwd_bwd(q, k, v, dout, causal=causal, block_q=16, block_k=16)
    ref_out, cache = flash_attention_forward(*(_numpy(x) for x in (q, k, v)), causal=causal,
                                             causal_alignment="top_left")
    ref = flash_attention_backward(_numpy(dout), cache)
    tol = {"rtol": 1e-5, "atol": 2e-5}
    assert_close(out, ref_out, name="out", **tol)
    assert_close(lse, cache.lse, name="lse", **tol)
    assert dk.shape == k.shape and dv.shape == v.shape
    for name, actual, expected in zip(AttentionGrads._fields, (dq, dk, dv), ref):
        assert_close(actual, expected, name=name, **tol)


# --------------------------------------------------------------------------- oracle: torch


@pytest.mark.parametrize("causal", [False, True])
def test_float32_kernels_match_torch_sdpa_with_a_custom_scale_and_strided_inputs(kernels, causal):
    # q, k, v as transposed views of (B, L, H, D) storage: the kernels take the strides as given.
    g = torch.Generator().manual_seed(7)
    q, k, v, dout = (torch.randn(1, 40, 2, 64, generator=g).to(DEVICE).transpose(1, 2)
                     for _ in range(4))
    assert not q.is_contiguous()
    out, lse, dq, dk, dv = kernels.fwd_bwd(q, k, v, dout, causal=causal, scale=0.3)
    expected = _sdpa_fwd_bwd(*(x.double() for x in (q, k, v, dout)), causal=causal, scale=0.3)
    tol = {"rtol": 1e-5, "atol": 2e-5}
    for name, actual, e in zip(("out", "dq", "dk", "dv"), (out, dq, dk, dv), expected):
        assert_close(actual, e, name=name, **tol)
    assert_close(lse, _logsumexp_reference(q, k, causal=causal, scale=0.3), name="lse", **tol)


@pytest.mark.parametrize("D", [16, 32, 256])
def test_every_power_of_two_head_dim_matches_torch_sdpa(kernels, D):
    q, k, v, dout = _qkv(L=20, D=D, seed=D)
    out, lse, dq, dk, dv = kernels.fwd_bwd(q, k, v, dout, causal=True)
    expected = _sdpa_fwd_bwd(*(x.double() for x in (q, k, v, dout)), causal=True)
    tol = {"rtol": 1e-5, "atol": 2e-5}
    for name, actual, e in zip(("out", "dq", "dk", "dv"), (out, dq, dk, dv), expected):
        assert_close(actual, e, name=name, **tol)
    assert_close(lse, _logsumexp_reference(q, k, causal=True), name="lse", **tol)


# --------------------------------------------------------------------------- low precision


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
def test_half_precision_inputs_match_a_float32_reference_within_a_few_ulps(kernels, dtype, causal):
    q, k, v, dout = _qkv(L=64 + 7, D=64, dtype=dtype, seed=3)
    out, lse, dq, dk, dv = kernels.fwd_bwd(q, k, v, dout, causal=causal, block_q=32, block_k=16)
    assert out.dtype == dq.dtype == dk.dtype == dv.dtype == dtype and lse.dtype == torch.float32
    # Reference: float64 on the same rounded inputs, so only the kernels' rounding counts:
    # P and dS rounded to the input dtype before their products, outputs rounded once.
    expected = _sdpa_fwd_bwd(*(x.double() for x in (q, k, v, dout)), causal=causal)
    eps = EPS[dtype]
    for name, actual, e in zip(("out", "dq", "dk", "dv"), (out, dq, dk, dv), expected):
        assert_close(actual.double(), e, rtol=4 * eps, atol=8 * eps, name=f"{name} ({dtype})")
    # lse comes from float32 scores of the rounded inputs: float32 accuracy.
    assert_close(lse, _logsumexp_reference(q, k, causal=causal), rtol=1e-5, atol=2e-5, name="lse")


def _max_errors(results, reference):
    return [float((a.double() - r.double()).abs().max()) for a, r in zip(results, reference)]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D", [64, 128])
def test_error_is_at_most_twice_that_of_torch_sdpa_in_the_same_dtype(kernels, dtype, causal, D):
    # Natively on a GPU (against torch's fused kernels), under the interpreter on the CPU
    # (against torch's CPU kernel). The reference is float32 SDPA on the same rounded inputs.
    B, H, L = (2, 4, 1024) if NATIVE else (1, 2, 64 + 7 if D == 64 else 40)
    q, k, v, dout = _qkv(B=B, H=H, L=L, D=D, dtype=dtype, seed=D + causal)
    try:
        theirs = _sdpa_fwd_bwd(q, k, v, dout, causal=causal)
    except RuntimeError as exc:  # pragma: no cover - depends on the torch build
        pytest.skip(f"torch's SDPA does not run {dtype} on {DEVICE}: {exc}")
    reference = _sdpa_fwd_bwd(*(x.float() for x in (q, k, v, dout)), causal=causal)
    out, _, dq, dk, dv = kernels.fwd_bwd(q, k, v, dout, causal=causal)
    ours_err = _max_errors((out, dq, dk, dv), reference)
    their_err = _max_errors(theirs, reference)
    for name, mine, sdpa in zip(("out", "dq", "dk", "dv"), ours_err, their_err):
        assert mine <= 2.0 * sdpa + EPS[torch.float32], (
            f"{name} ({dtype}, causal={causal}, D={D}): max error {mine:.3e} against float32, "
            f"torch SDPA's is {sdpa:.3e}; allowed 2x"
        )


# --------------------------------------------------------------------------- properties


def test_result_does_not_depend_on_the_tiles(kernels):
    q, k, v, dout = _qkv(L=50, D=32, seed=11)
    ref = kernels.fwd_bwd(q, k, v, dout, causal=True)
    for block_q, block_k in [(16, 16), (32, 16), (16, 64)]:
        got = kernels.fwd_bwd(q, k, v, dout, causal=True, block_q=block_q, block_k=block_k)
        for name, a, e in zip(("out", "lse", "dq", "dk", "dv"), got, ref):
            assert_close(a, e, rtol=1e-5, atol=2e-6, name=f"{name}, tiles {block_q}x{block_k}")


@pytest.mark.parametrize("H, H_kv, L, S, D, causal, tiles, dtype", [
    (1, 1, 64 + 7, None, 64, True, (16, 32), torch.float32),  # ragged, several tiles; d = 64 shape
    (1, 1, 40, None, 128, False, (None, None), torch.float32),  # d = 128, its default tiles
    (4, 2, 23, 50, 32, True, (16, 16), torch.float32),  # grouped heads, L < S, top-left causal
    (4, 2, 50, 23, 32, False, (16, 16), torch.float32),  # grouped heads, L > S
    (2, 2, 64 + 7, None, 64, True, (32, 16), torch.bfloat16),
])
def test_the_atomic_backward_matches_the_float64_reference(kernels, H, H_kv, L, S, D, causal, tiles, dtype):
    # KernelConfig.dq_atomic: dQ added by the dK, dV kernel (5 products). Against float64
    # SDPA and autograd on the same rounded inputs.
    q, k, v, dout = _qkv(H=H, H_kv=H_kv, L=L, S=S, D=D, dtype=dtype, seed=L + D + causal)
    config = dict(kernels.kernel_config(D, dtype, block_q=tiles[0], block_k=tiles[1]), dq_atomic=True)
    out, lse, dq, dk, dv = kernels.fwd_bwd(q, k, v, dout, causal=causal, config=config)
    expected = _sdpa_fwd_bwd(*(x.double() for x in (q, k, v, dout)), causal=causal)
    tol = ({"rtol": 1e-5, "atol": 2e-5} if dtype == torch.float32
           else {"rtol": 4 * EPS[dtype], "atol": 8 * EPS[dtype]})
    for name, actual, e in zip(("out", "dq", "dk", "dv"), (out, dq, dk, dv), expected):
        assert_close(actual.double(), e, name=f"{name} (atomic dQ)", **tol)


def test_autograd_keeps_lse_and_never_an_l_by_s_array(kernels):
    q, k, v, _ = _qkv(L=40, D=32, seed=12)
    saved = kernels.saved_shapes(q, k, v, causal=True)
    assert sorted(saved) == sorted([(1, 2, 40, 32)] * 4 + [(1, 2, 40)])  # q, k, v, out; lse
    assert not any(s[-2:] == (40, 40) for s in saved)


def test_functional_forward_returns_float32_lse_without_autograd_history(kernels):
    q, k, v, _ = _qkv(L=16, D=16, dtype=torch.float16, seed=13)
    out, lse, no_history = kernels.forward_history(q, k, v)
    assert out.shape == (1, 2, 16, 16) and out.dtype == torch.float16
    assert lse.shape == (1, 2, 16) and lse.dtype == torch.float32
    assert no_history


def test_kernel_config_shrinks_tiles_for_large_head_dims_and_float32(kernels):
    c64, c128, c256 = (kernels.kernel_config(D) for D in (64, 128, 256))
    for key in ("fwd_m", "dkdv_n", "dq_m"):
        assert c64[key] >= c128[key] >= c256[key], key
    c32 = kernels.kernel_config(128, torch.float32)
    assert c32["fwd_m"] <= c128["fwd_m"] // 2 and c32["dkdv_n"] == c128["dkdv_n"] // 2
    assert c32["fwd_stages"] == c32["bwd_stages"] == 1
    over = kernels.kernel_config(64, block_q=16, block_k=32)
    assert [over[k] for k in ("fwd_m", "dkdv_m", "dq_m", "fwd_n", "dkdv_n", "dq_n")] == [16] * 3 + [32] * 3


_TUNED = {"fwd_m": 64, "fwd_n": 32, "dkdv_m": 16, "dkdv_n": 64, "dq_m": 32, "dq_n": 16,
          "fwd_warps": 4, "dkdv_warps": 4, "dq_warps": 4, "fwd_stages": 2, "bwd_stages": 2,
          "dq_atomic": False}


def test_a_given_config_replaces_the_defaults_and_keeps_the_result(kernels):
    assert kernels.kernel_config(64, config=_TUNED) == _TUNED
    assert kernels.kernel_config(64, config=_TUNED, block_k=16)["fwd_n"] == 16
    for causal in (False, True):
        q, k, v, dout = _qkv(L=64 + 5, D=32, seed=21 + causal)
        ref = kernels.fwd_bwd(q, k, v, dout, causal=causal)
        got = kernels.fwd_bwd(q, k, v, dout, causal=causal, config=_TUNED)
        for name, a, e in zip(("out", "lse", "dq", "dk", "dv"), got, ref):
            assert_close(a, e, rtol=1e-5, atol=2e-6, name=f"{name}, causal={causal}")


@pytest.mark.parametrize("field, value, message", [
    ("fwd_m", 48, "config.fwd_m must be a power of two"),
    ("dq_n", 512, "config.dq_n must be a power of two"),
    ("dkdv_warps", 3, "config.dkdv_warps must be 1, 2, 4, 8 or 16 warps"),
    ("fwd_warps", True, "config.fwd_warps must be 1, 2, 4, 8 or 16 warps"),
    ("bwd_stages", 0, "config.bwd_stages must be an integer from 1 to 8"),
    ("fwd_stages", 2.5, "config.fwd_stages must be an integer from 1 to 8"),
])
def test_a_bad_config_gets_a_clear_error(kernels, field, value, message):
    with pytest.raises(ValueError, match=message):
        kernels.kernel_config(64, config=dict(_TUNED, **{field: value}))


def test_a_config_that_is_not_a_kernel_config_is_refused(kernels):
    with pytest.raises(TypeError, match="config must be a KernelConfig, got dict"):
        kernels.kernel_config_raw(64, config=_TUNED)
    with pytest.raises(TypeError, match="config.dq_atomic must be True or False"):
        kernels.kernel_config(64, config=dict(_TUNED, dq_atomic=1))


def test_check_finite_false_skips_the_check_and_keeps_the_result(kernels):
    q, k, v, dout = _qkv(L=40, D=32, seed=31)
    out, cache = kernels.flash_attention_triton(q, k, v, causal=True)
    fast, fast_cache = kernels.flash_attention_triton(q, k, v, causal=True, check_finite=False)
    assert_close(fast, out, rtol=0, atol=0, name="out")
    grads = kernels.flash_attention_triton_backward(dout, cache)
    fast_grads = kernels.flash_attention_triton_backward(dout, fast_cache, check_finite=False)
    for name, a, e in zip(("dq", "dk", "dv"), fast_grads, grads):
        assert_close(a, e, rtol=0, atol=0, name=name)
    nan_out, _ = kernels.flash_attention_triton(q * float("nan"), k, v, check_finite=False)
    assert bool(torch.isnan(nan_out).all())  # not raised, and not hidden either
    with pytest.raises(TypeError, match="check_finite must be True or False"):
        kernels.flash_attention_triton(q, k, v, check_finite=1)
    with pytest.raises(TypeError, match="check_finite must be True or False"):
        kernels.flash_attention_triton_backward(dout, cache, check_finite="no")


def test_the_finite_check_names_the_tensor_and_passes_large_finite_values(kernels):
    big = torch.full((1, 1, 8, 16), 3e38, dtype=torch.bfloat16, device=DEVICE)  # finite; its sum is not
    # (CUDA tensors: the check runs on the GPU and wait_for_input_checks reports it.)
    assert kernels.checked_finite(q=big, k=-big, v=big) is None
    assert kernels.wait_for_input_checks() is None
    with pytest.raises(ValueError, match="k contains NaN"):
        kernels.checked_finite(q=big, k=torch.where(big > 0, float("nan"), 0.0).to(big.dtype), v=big)
        kernels.wait_for_input_checks()
    with pytest.raises(ValueError, match="v contains an infinity"):
        kernels.checked_finite(q=big, k=big, v=big * 2)
        kernels.wait_for_input_checks()
    with pytest.raises(ValueError, match="q contains an infinity"):
        kernels.checked_finite(q=big * -2, k=big, v=big)
        kernels.wait_for_input_checks()
    empty = big[:, :, :0]
    assert kernels.checked_finite(q=empty, k=empty, v=empty) is None


def test_nan_and_infinities_in_q_k_v_raise_naming_the_tensor(kernels):
    # CPU tensors raise in the call; CUDA ones are checked on the GPU without a wait and are
    # reported by wait_for_input_checks (or the next call; module docstring).
    q, k, v, _ = _qkv(L=16, D=16, dtype=torch.float16)
    for name in ("q", "k", "v"):
        for value, kind in ((float("nan"), "NaN"), (float("inf"), "an infinity"),
                            (float("-inf"), "an infinity")):
            args = {"q": q.clone(), "k": k.clone(), "v": v.clone()}
            args[name][0, 1, 5, 7] = value
            with pytest.raises(ValueError, match=rf"^{name} contains {kind}; attention inputs must be finite"):
                kernels.flash_attention_triton(**args)
                kernels.wait_for_input_checks()
    assert kernels.wait_for_input_checks() is None  # every check was reported once


@pytest.mark.skipif(not NATIVE, reason="needs a CUDA device")
def test_a_clean_cuda_call_does_not_wait_for_the_gpu(monkeypatch):
    # Natively there is no interpreter to switch on before triton's import: this process can
    # import the module. torch's sync debug mode raises on any call that waits for the GPU.
    import attnmath.flash_triton as ft

    q, k, v, dout = _qkv(L=256, D=64, dtype=torch.float16)
    out, cache = ft.flash_attention_triton(q, k, v, causal=True)  # compiles
    ft.flash_attention_triton_backward(dout, cache)
    ft.wait_for_input_checks()
    torch.cuda.synchronize()
    reads = []  # host reads of CUDA tensors (reading the pinned host copy of a finished check is not one)
    for method in ("item", "tolist", "__bool__", "cpu"):
        original = getattr(torch.Tensor, method)

        def counted(self, *a, _o=original, _m=method, **kw):
            if self.is_cuda:
                reads.append(_m)
            return _o(self, *a, **kw)

        monkeypatch.setattr(torch.Tensor, method, counted)
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            out, cache = ft.flash_attention_triton(q, k, v, causal=True)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert ft._finite_check.pending() >= 1 and reads == []
    ft.wait_for_input_checks()
    bad = q.clone()
    bad[0, 0, 3, 3] = float("nan")
    out, cache = ft.flash_attention_triton(bad, k, v)  # returns: the check is on the GPU
    with pytest.raises(ValueError, match="^q contains NaN.*earlier call of flash_attention_triton"):
        ft.flash_attention_triton_backward(dout, cache)  # waits for the forward's check


# --------------------------------------------------------------------------- bad input


def test_bad_input_gets_a_clear_error(kernels):
    q, k, v, dout = _qkv(L=16, D=64)
    with pytest.raises(ValueError, match=r"q must have 4 dimensions \(B, H, L, D\)"):
        kernels.flash_attention_triton(q[0], k, v)
    with pytest.raises(TypeError, match="k must be a torch.Tensor"):
        kernels.flash_attention_triton(q, k.cpu().numpy(), v)
    with pytest.raises(TypeError, match="one dtype"):
        kernels.flash_attention_triton(q, k.half(), v)
    with pytest.raises(TypeError, match="float16, bfloat16 or float32"):
        kernels.flash_attention_triton(q.double(), k.double(), v.double())
    for D in (8, 48, 512):
        qd, kd, vd, _ = _qkv(L=16, D=D)
        with pytest.raises(ValueError, match="head dim D must be a power of two"):
            kernels.flash_attention_triton(qd, kd, vd)
    with pytest.raises(ValueError, match="share the head dim"):
        kernels.flash_attention_triton(q, k[..., :32], v)
    with pytest.raises(ValueError, match="D_v"):
        kernels.flash_attention_triton(q, k, v[..., :32])
    q3, k3, v3, _ = _qkv(H=3, H_kv=2, L=16, D=16)
    with pytest.raises(ValueError, match="multiple of the key/value heads"):
        kernels.flash_attention_triton(q3, k3, v3)
    with pytest.raises(ValueError, match="batch size"):
        kernels.flash_attention_triton(q, torch.cat([k, k]), torch.cat([v, v]))
    with pytest.raises(TypeError, match="causal must be True or False"):
        kernels.flash_attention_triton(q, k, v, causal=1)
    with pytest.raises(ValueError, match="scale must be finite"):
        kernels.flash_attention_triton(q, k, v, scale=float("inf"))
    with pytest.raises(ValueError, match="block_q must be a power of two"):
        kernels.flash_attention_triton(q, k, v, block_q=24)
    with pytest.raises(ValueError, match="block_k must be a power of two"):
        kernels.flash_attention_triton(q, k, v, block_k=8)
    out, cache = kernels.flash_attention_triton(q, k, v)
    with pytest.raises(ValueError, match="dout must have shape"):
        kernels.flash_attention_triton_backward(dout[..., :32], cache)
    q_, k_, v_, out_, lse_, scale_, causal_ = cache
    with pytest.raises(TypeError, match="cache.lse must have dtype torch.float32"):
        kernels.flash_attention_triton_backward(dout, (q_, k_, v_, out_, lse_.double(), scale_, causal_))
    with pytest.raises(ValueError, match="cache.out must have shape"):
        kernels.flash_attention_triton_backward(dout, (q_, k_, v_, out_[..., :8, :], lse_, scale_, causal_))
    with pytest.raises(TypeError, match="cache.causal must be True or False"):
        kernels.flash_attention_triton_backward(dout, (q_, k_, v_, out_, lse_, scale_, 1))
    # Another method's cache (the NumPy flash forward's) is named as such.
    _, numpy_cache = flash_attention_forward(*(_numpy(x) for x in (q, k, v)))
    with pytest.raises(TypeError, match="TritonFlashCache returned by flash_attention_triton, got FlashCache"):
        kernels.flash_attention_triton_backward(dout, numpy_cache)
    with pytest.raises(ValueError, match="q contains NaN"):
        kernels.flash_attention_triton(q * float("nan"), k, v)
        kernels.wait_for_input_checks()  # CUDA tensors: the check ran on the GPU
    with pytest.raises(ValueError, match="dout contains an infinity"):
        kernels.flash_attention_triton_backward(dout * float("inf"), cache)
        kernels.wait_for_input_checks()


# --------------------------------------------------------------------------- compiled kernels
#
# The tests of the compiled (not interpreted) module share one child process started without
# TRITON_INTERPRET (fixture ``compiled_kernels``), so that torch and Triton are imported there
# once instead of once per test. Nothing they run changes that process's module: the compile
# points Triton's cache at a fresh folder for itself only (a cold compile), and the benchmark
# script and its tuning candidates are loaded as the command line loads them.

COMPILED_HELPERS = r"""
import contextlib, io, os, runpy, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


def _h100_jobs(D):
    # (label, kernel, block_m, block_n, warps, stages, constants) of the float16 build: both
    # backward paths (the dK, dV kernel alone, and adding dQ with atomics).
    cfg = ft.kernel_config(D, torch.float16)
    dkdv = (ft._flash_bwd_dkdv_kernel, cfg.dkdv_m, cfg.dkdv_n, cfg.dkdv_warps, cfg.bwd_stages)
    return [("_flash_fwd_kernel", ft._flash_fwd_kernel, cfg.fwd_m, cfg.fwd_n, cfg.fwd_warps,
             cfg.fwd_stages, {"EVEN_N": False}),
            ("_flash_bwd_dkdv_kernel", *dkdv, {"EVEN_M": False, "ATOMIC_DQ": False}),
            ("_flash_bwd_dkdv_kernel, atomic dQ", *dkdv, {"EVEN_M": False, "ATOMIC_DQ": True}),
            ("_flash_bwd_dq_kernel", ft._flash_bwd_dq_kernel, cfg.dq_m, cfg.dq_n, cfg.dq_warps,
             cfg.bwd_stages, {"EVEN_N": False})]


def _signature(kernel, consts):
    signature = {}
    for name in kernel.arg_names:
        if name in consts:
            signature[name] = "constexpr"
        elif name in ("Q", "K", "V", "Out", "DOut", "DK", "DV", "DQ"):
            signature[name] = "*fp16"
        elif name in ("Lse", "Delta", "DQAcc"):
            signature[name] = "*fp32"
        elif name.endswith("scale"):
            signature[name] = "fp32"
        else:
            signature[name] = "i32"
    return signature


def compile_for_h100(cache_dir):
    # The float16, D = 128, causal kernels compiled for sm_90 with Triton's compiler and ptxas,
    # Triton's cache in cache_dir: {kernel name: bytes of shared memory}.
    assert not ft.INTERPRETED
    D, shared = 128, {}
    old = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = cache_dir  # Triton reads it at each compile
    try:
        for label, kernel, block_m, block_n, warps, stages, extra in _h100_jobs(D):
            consts = {"HEAD_DIM": D, "BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": True,
                      "DOT_PRECISION": "tf32", "EMULATE_BF16": False, **extra}
            compiled = triton.compile(ASTSource(kernel, _signature(kernel, consts), constexprs=consts),
                                      target=GPUTarget("cuda", 90, 32),
                                      options=dict(num_warps=warps, num_stages=stages))
            shared[label] = int(compiled.metadata.shared)
    finally:
        if old is None:
            del os.environ["TRITON_CACHE_DIR"]
        else:
            os.environ["TRITON_CACHE_DIR"] = old
    return shared


def tuning_candidates_by_head_dim(bench_dir):
    # {d: [default settings, *tuning candidates]} of bench/bench_flash_gpu.py, as lists.
    sys.path.insert(0, bench_dir)
    try:
        from bench_flash_gpu import atomic_candidates, tuning_candidates
    finally:
        sys.path.remove(bench_dir)
    return {d: ([list(ft.kernel_config(d))] + [list(c) for c in tuning_candidates(d)],
                [list(ft.kernel_config(d, config=c)) for c in atomic_candidates(d)]) for d in (64, 128)}


def run_script(path, *argv):
    # The script run as ``python path *argv`` runs it, here: (exit status, what it printed).
    saved_path, saved_argv, printed = list(sys.path), sys.argv, io.StringIO()
    sys.path.insert(0, os.path.dirname(path))
    sys.argv = [path, *argv]
    try:
        with contextlib.redirect_stdout(printed):
            runpy.run_path(path, run_name="__main__")
        status = 0
    except SystemExit as exc:
        status = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.path[:], sys.argv = saved_path, saved_argv
    return status, printed.getvalue()
"""


@pytest.fixture(scope="module")
def compiled_kernels():
    """:mod:`attnmath.flash_triton` in a child process without Triton's interpreter."""
    from attnmath.testing import TritonProcess

    proc = TritonProcess(interpret=False, helpers=COMPILED_HELPERS)
    try:
        yield proc
    finally:
        proc.close()


def test_compiled_kernels_reject_cpu_tensors_in_a_fresh_process(compiled_kernels):
    # A process that never had the interpreter on: CPU tensors are refused, naming the way out.
    assert compiled_kernels.interpreted() is False
    q = torch.randn(1, 1, 16, 16)
    with pytest.raises(ValueError) as info:
        compiled_kernels.flash_attention_triton(q, q, q)
    assert "TRITON_INTERPRET=1" in str(info.value) and "CUDA tensors" in str(info.value)


def test_kernels_compile_for_an_h100_without_a_gpu(compiled_kernels, tmp_path):
    # The interpreter runs the kernels as Python and cannot catch what only the compiler sees
    # (types, layouts, on-chip memory): compile the float16, D = 128, causal build for sm_90
    # with Triton's own compiler and ptxas, which need no GPU, into an empty cache (a cold compile).
    cache = tmp_path / "cache"
    shared = compiled_kernels.compile_for_h100(str(cache))
    assert set(shared) == {"_flash_fwd_kernel", "_flash_bwd_dkdv_kernel", "_flash_bwd_dq_kernel",
                           "_flash_bwd_dkdv_kernel, atomic dQ"}
    for name, n_bytes in shared.items():
        assert 0 < n_bytes <= 100 * 1024, f"{name} needs {n_bytes} bytes of shared memory"
    assert any(cache.rglob("*.cubin")), "nothing was compiled into the fresh cache"


def test_the_package_does_not_import_triton():
    code = "import sys, attnmath; print('triton' in sys.modules, 'attnmath.flash_triton' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                            env=_child_env(False), timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]


def test_missing_triton_raises_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "triton", None)  # "import triton" now raises ImportError
    monkeypatch.delitem(sys.modules, "attnmath.flash_triton", raising=False)
    with pytest.raises(ImportError, match="needs Triton, which is not installed"):
        importlib.import_module("attnmath.flash_triton")
    assert "attnmath.flash_triton" not in sys.modules


# --------------------------------------------------------------------------- GPU benchmark


def _load_bench():
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_flash_gpu.py"
    spec = importlib.util.spec_from_file_location("bench_flash_gpu", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_benchmark_writes_the_chapter_format_and_a_ratio_table(tmp_path):
    bench = _load_bench()
    assert bench.attention_flops(2, 16, 1024, 64, causal=False, mode="fwd") == 4 * 2 * 16 * 1024**2 * 64
    fwd_causal = 4 * 2 * 16 * 1024**2 * 64 / 2
    assert bench.attention_flops(2, 16, 1024, 64, causal=True, mode="fwd_bwd") == 3.5 * fwd_causal
    assert bench.shapes(512, 64) == (32, 32) and bench.shapes(16384, 128) == (1, 16)
    rows = [{"impl": impl, "dtype": "bfloat16", "N": 1024, "d": 64, "causal": True, "mode": "fwd",
             "tflops": tf, "peak_mem_bytes": 3 * 2**20}
            for impl, tf in (("triton", 150.0), ("sdpa_flash", 200.0))]
    rows.append(dict(rows[0], dtype="float16", tflops=300.0))  # no float16 reference: no ratio
    oom = ("sdpa_math", "fwd", "bfloat16", True, 64, 1024)
    record = bench.make_record(rows, device="Fake GPU", torch_version="0", triton_version="0",
                               date="2000-01-01", tuning=[{"d": 64}], failures={oom: "OOM"})
    path = bench.write_record(record, tmp_path / "data" / "flash_gpu.json")
    loaded = json.loads(path.read_text())
    assert set(loaded) == {"device", "date", "torch", "triton", "protocol", "rows", "tuning", "failures"}
    assert loaded["protocol"]["impls"] == list(bench.IMPLS) and loaded["protocol"]["reference"] == "sdpa_flash"
    assert loaded["failures"] == [{"impl": "sdpa_math", "mode": "fwd", "dtype": "bfloat16",
                                   "causal": True, "d": 64, "N": 1024, "reason": "OOM"}]
    assert loaded["rows"][0] == {"impl": "triton", "dtype": "bfloat16", "N": 1024, "d": 64,
                                 "causal": True, "mode": "fwd", "tflops": 150.0,
                                 "peak_mem_bytes": 3 * 2**20}
    table = bench.format_table(rows, {("sdpa_math", "fwd", "bfloat16", True, 64, 1024): "OOM"})
    lines = [ln for ln in table.splitlines() if ln.lstrip().startswith("fwd")]
    bf16 = next(ln for ln in lines if "bfloat16" in ln)
    assert "150.0" in bf16 and "[0.75x]" in bf16 and "[1.00x]" in bf16 and "OOM" in bf16
    fp16 = next(ln for ln in lines if "float16" in ln.split())
    assert "300.0" in fp16 and "[  -  ]" in fp16 and "x]" not in fp16
    with pytest.raises(ValueError, match="row dtype must be one of"):
        bench.make_record([dict(rows[0], dtype="float32")], device="", torch_version="",
                          triton_version="")


def test_gpu_benchmark_names_the_sdpa_baseline_and_the_leaderboard_configuration():
    bench = _load_bench()
    baseline = bench.sdpa_baseline()  # no GPU needed: what torch offers and has switched in
    assert baseline["active"] is None and baseline["sdpa_flash"].startswith("FlashAttention-2 as bundled")
    assert set(baseline["switchable"]) == set(bench.SWITCHED_FLASH) <= set(bench.IMPLS)
    assert all(isinstance(state, str) and state for state in baseline["switchable"].values())
    assert {k: bench.LEADERBOARD[k] for k in ("B", "H", "N", "d", "dtype", "causal", "mode")} == {
        "B": 1, "H": 16, "N": 16384, "d": 64, "dtype": "bfloat16", "causal": True, "mode": "fwd_bwd"}
    assert set(bench.BACKWARD_ONLY) <= set(bench.IMPLS)


def test_gpu_benchmark_switches_flash_attention_3_in_and_back(monkeypatch):
    # torch's switch is process-wide dispatcher state: faked here, its calls recorded.
    import torch.nn.attention as attn

    bench, calls, active = _load_bench(), [], [None]
    monkeypatch.setattr(attn, "activate_flash_attention_impl",
                        lambda name: calls.append(("activate", name)) or active.__setitem__(0, name), raising=False)
    monkeypatch.setattr(attn, "current_flash_attention_impl", lambda: active[0], raising=False)
    monkeypatch.setattr(attn, "restore_flash_attention_impl",
                        lambda: calls.append(("restore",)) or active.__setitem__(0, None), raising=False)
    with bench.switched_flash("sdpa_fa3"):
        assert active[0] == "FA3"
    assert calls == [("activate", "FA3"), ("restore",)] and active[0] is None
    monkeypatch.setattr(attn, "activate_flash_attention_impl", lambda name: None, raising=False)
    with pytest.raises(RuntimeError, match="FA3 did not become SDPA's flash implementation"):
        with bench.switched_flash("sdpa_fa3"):
            pass
    assert calls[-1] == ("restore",)


def test_tuning_candidates_are_valid_distinct_settings_with_the_default_first(compiled_kernels):
    # In the child: this process never imports attnmath.flash_triton (module docstring).
    bench_dir = str(Path(__file__).resolve().parents[2] / "bench")
    by_head_dim = compiled_kernels.tuning_candidates_by_head_dim(bench_dir)
    assert sorted(by_head_dim) == [64, 128]
    for d, ((default, *candidates), atomic) in by_head_dim.items():
        assert candidates[0] == default, d
        # the atomic backward's: valid (kernel_config took them), the default's tiles first,
        # and only the dK, dV tiles, their warps and the stages changed
        assert atomic[0] == default[:11] + [True] and len({tuple(c) for c in atomic}) == len(atomic) >= 3
        assert all(c[11] is True and c[:2] + c[4:7] + c[8:10] == default[:2] + default[4:7] + default[8:10]
                   for c in atomic), atomic
        assert len({tuple(c) for c in candidates}) == len(candidates) >= 3
        fwd = {0, 1, 6, 9}  # fwd_m, fwd_n, fwd_warps, fwd_stages
        for c in candidates:
            assert all(16 <= b <= 256 and b & (b - 1) == 0 for b in c[:6]), c
            assert all(w in (1, 2, 4, 8, 16) for w in c[6:9]) and all(1 <= s <= 8 for s in c[9:11]), c
            assert c[11] is False, c  # the tuning pass keeps the split backward
            # each candidate changes the forward side or the backward side, not both
            changed = {i for i, (x, y) in enumerate(zip(c, default)) if x != y}
            assert changed <= fwd or not (changed & fwd), c


@pytest.mark.skipif(NATIVE, reason="checks the run without a CUDA device")
def test_gpu_benchmark_without_cuda_says_so_and_writes_nothing(compiled_kernels, tmp_path):
    out = tmp_path / "flash_gpu.json"
    script = Path(__file__).resolve().parents[2] / "bench" / "bench_flash_gpu.py"
    status, printed = compiled_kernels.run_script(str(script), "--out", str(out))
    assert status == 0, printed
    assert printed.strip() == "no CUDA device: GPU benchmark skipped"
    assert not out.exists()
