"""GPU benchmark: the Triton flash-attention kernels against torch's SDPA backends.

Measures, on a CUDA GPU, the throughput (TFLOP/s) and the peak memory of

* ``triton``: :func:`attnmath.flash_triton.flash_attention` (forward and backward kernels),
* ``sdpa_flash``, ``sdpa_efficient``, ``sdpa_cudnn``, ``sdpa_math``:
  ``torch.nn.functional.scaled_dot_product_attention`` restricted to one backend with
  ``torch.nn.attention.sdpa_kernel`` (FlashAttention-2, memory-efficient, cuDNN, and the plain
  math implementation that materialises the ``(N, N)`` matrix),

for float16 inputs ``(B, H, N, d)`` with ``B * N = 16384`` tokens, ``N`` from 512 to 16384,
``d`` in {64, 128} and ``H = 2048 / d`` heads (model width 2048, as in the FlashAttention-2
paper's benchmarks), causal and not, in two modes:

* ``fwd``: the forward pass, without autograd;
* ``fwd_bwd``: forward and ``out.backward(dout)``, gradients of ``q``, ``k``, ``v``.

FLOP convention (the FlashAttention papers'): the forward counts its two matmuls,
``4 * B * H * N**2 * d`` flops, halved when causal; the backward counts 2.5 times the forward
(five matmuls), so ``fwd_bwd`` counts 3.5 times the forward. The same count is used for every
implementation, whatever it actually computes (the Triton backward recomputes ``P`` in two
kernels and performs seven matmuls; the math backend computes the masked half too), so
TFLOP/s compares times. Times are medians of ``triton.testing.do_bench`` (which clears the L2
cache between runs). ``peak_mem_bytes`` is ``torch.cuda.max_memory_allocated()`` during one
call minus what was allocated before it (inputs and ``dout`` excluded; outputs, saved
tensors, gradients and workspaces included). A backend that cannot run a configuration, or
runs out of memory, gets no row and is printed as ``n/a`` or ``OOM``.

Usage::

    python bench/bench_flash_gpu.py            # every N, d, causal, mode: several minutes
    python bench/bench_flash_gpu.py --quick    # N in {512, 2048}, d = 64

Writes ``book/data/flash_gpu.json`` (``--out`` overrides), the format read by the flash
chapter::

    {"device": str, "date": str, "torch": str, "triton": str,
     "rows": [{"impl": str, "N": int, "d": int, "causal": bool, "mode": "fwd" | "fwd_bwd",
               "tflops": float, "peak_mem_bytes": int}]}

and prints a table with each implementation's TFLOP/s and its ratio to ``sdpa_flash``. Without
a CUDA device it prints "no CUDA device: GPU benchmark skipped", writes nothing and exits 0.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

DEFAULT_OUT = ROOT / "book" / "data" / "flash_gpu.json"
TOKENS = 16 * 1024  # B * N
MODEL_WIDTH = 2048  # H * d
NS = (512, 1024, 2048, 4096, 8192, 16384)
DS = (64, 128)
MODES = ("fwd", "fwd_bwd")
IMPLS = ("triton", "sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "sdpa_math")
REFERENCE = "sdpa_flash"
SKIP_MESSAGE = "no CUDA device: GPU benchmark skipped"
MiB = 2**20


def attention_flops(B: int, H: int, N: int, d: int, *, causal: bool, mode: str) -> float:
    """FLOPs counted for one call: ``4 B H N^2 d`` forward (halved if causal), x3.5 with backward."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    fwd = 4.0 * B * H * N * N * d / (2.0 if causal else 1.0)
    return fwd if mode == "fwd" else 3.5 * fwd


def shapes(N: int, d: int) -> tuple[int, int]:
    """``(B, H)`` for ``B * N = 16384`` tokens and ``H * d = 2048``."""
    return max(1, TOKENS // N), MODEL_WIDTH // d


def make_record(rows: list[dict], *, device: str, torch_version: str, triton_version: str,
                date: str | None = None) -> dict:
    """The JSON document read by the flash chapter, with its fields checked."""
    checked = []
    for r in rows:
        if r["mode"] not in MODES:
            raise ValueError(f"row mode must be one of {MODES}, got {r['mode']!r}")
        checked.append({"impl": str(r["impl"]), "N": int(r["N"]), "d": int(r["d"]),
                        "causal": bool(r["causal"]), "mode": str(r["mode"]),
                        "tflops": float(r["tflops"]), "peak_mem_bytes": int(r["peak_mem_bytes"])})
    if date is None:
        date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return {"device": str(device), "date": str(date), "torch": str(torch_version),
            "triton": str(triton_version), "rows": checked}


def write_record(record: dict, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def format_table(rows: list[dict], failures: dict | None = None, impls=IMPLS) -> str:
    """One line per (mode, causal, d, N): TFLOP/s, peak MiB and ratio to ``sdpa_flash`` per impl.

    ``failures`` maps ``(impl, mode, causal, d, N)`` to a short reason ("n/a", "OOM") shown in
    place of a number.
    """
    failures = failures or {}
    by_key = {(r["impl"], r["mode"], r["causal"], r["d"], r["N"]): r for r in rows}
    configs = sorted({(r["mode"], r["causal"], r["d"], r["N"]) for r in rows}
                     | {key[1:] for key in failures})
    head = f"{'mode':>8} {'causal':>6} {'d':>4} {'N':>6} " + " ".join(f"{i:>24}" for i in impls)
    lines = [f"TFLOP/s (peak MiB) [ratio to {REFERENCE}]", head, "-" * len(head)]
    for mode, causal, d, N in configs:
        ref = by_key.get((REFERENCE, mode, causal, d, N))
        cells = []
        for impl in impls:
            r = by_key.get((impl, mode, causal, d, N))
            if r is None:
                cells.append(f"{failures.get((impl, mode, causal, d, N), '-'):>24}")
                continue
            ratio = f"[{r['tflops'] / ref['tflops']:.2f}x]" if ref and ref["tflops"] > 0 else "[  -  ]"
            cells.append(f"{r['tflops']:7.1f} ({r['peak_mem_bytes'] / MiB:7.0f}) {ratio:>7}")
        lines.append(f"{mode:>8} {causal!s:>6} {d:>4} {N:>6} " + " ".join(cells))
    return "\n".join(lines)


# --------------------------------------------------------------------------- GPU part


def _attention_fn(impl: str, causal: bool):
    """``f(q, k, v) -> out`` for one implementation (torch and triton imported by the caller)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if impl == "triton":
        from attnmath.flash_triton import flash_attention

        return lambda q, k, v: flash_attention(q, k, v, causal)
    backend = {"sdpa_flash": SDPBackend.FLASH_ATTENTION,
               "sdpa_efficient": SDPBackend.EFFICIENT_ATTENTION,
               "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION,
               "sdpa_math": SDPBackend.MATH}[impl]

    def fn(q, k, v):
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return fn


def measure(impl: str, N: int, d: int, causal: bool, mode: str) -> dict:
    """One row: TFLOP/s and peak memory of ``impl``; raises on an unsupported configuration."""
    import torch
    from triton.testing import do_bench

    B, H = shapes(N, d)
    fn = _attention_fn(impl, causal)
    g = torch.Generator(device="cuda").manual_seed(0)
    grad = mode == "fwd_bwd"
    q, k, v = (torch.randn(B, H, N, d, device="cuda", dtype=torch.float16, generator=g)
               .requires_grad_(grad) for _ in range(3))
    dout = torch.randn(B, H, N, d, device="cuda", dtype=torch.float16, generator=g)

    if grad:
        def call():
            fn(q, k, v).backward(dout)
    else:
        def call():
            with torch.no_grad():
                fn(q, k, v)

    call()  # compile (Triton), select kernels, surface unsupported configurations
    torch.cuda.synchronize()
    for x in (q, k, v):
        x.grad = None
    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    call()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    for x in (q, k, v):
        x.grad = None
    ms = do_bench(call, warmup=25, rep=100, grad_to_none=[q, k, v] if grad else None,
                  return_mode="median")
    tflops = attention_flops(B, H, N, d, causal=causal, mode=mode) / (ms * 1e-3) / 1e12
    return {"impl": impl, "N": N, "d": d, "causal": causal, "mode": mode, "tflops": tflops,
            "peak_mem_bytes": int(peak)}


def check_correctness(d: int = 64, N: int = 1024) -> str:
    """Max |triton - sdpa_flash| of out, dq, dk, dv (float16, causal) at one size: a sanity line."""
    import torch

    B, H = 2, 4
    g = torch.Generator(device="cuda").manual_seed(1)
    q, k, v, dout = (torch.randn(B, H, N, d, device="cuda", dtype=torch.float16, generator=g)
                     for _ in range(4))
    results = []
    for impl in ("triton", "sdpa_flash"):
        qq, kk, vv = (x.clone().requires_grad_(True) for x in (q, k, v))
        out = _attention_fn(impl, True)(qq, kk, vv)
        out.backward(dout)
        results.append([out.detach(), qq.grad, kk.grad, vv.grad])
    errs = [float((a.float() - b.float()).abs().max()) for a, b in zip(*results)]
    return "max |triton - sdpa_flash| (out, dq, dk, dv): " + ", ".join(f"{e:.1e}" for e in errs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N in {512, 2048}, d = 64 only")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON path (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print(SKIP_MESSAGE)
        return 0
    try:
        import triton

        from attnmath import flash_triton
    except ImportError as exc:
        print(f"the GPU benchmark needs Triton: {exc}", file=sys.stderr)
        return 1
    if flash_triton.INTERPRETED:
        print("TRITON_INTERPRET=1 is set: unset it to benchmark the compiled kernels", file=sys.stderr)
        return 1

    ns, ds = ((512, 2048), (64,)) if args.quick else (NS, DS)
    device = torch.cuda.get_device_name(0)
    print(f"{device}; torch {torch.__version__}, triton {triton.__version__}; float16, "
          f"B * N = {TOKENS} tokens, H * d = {MODEL_WIDTH}")
    print(check_correctness())
    rows, failures = [], {}
    for mode in MODES:
        for causal in (False, True):
            for d in ds:
                for N in ns:
                    for impl in IMPLS:
                        key = (impl, mode, causal, d, N)
                        try:
                            rows.append(measure(impl, N, d, causal, mode))
                        except torch.cuda.OutOfMemoryError:
                            failures[key] = "OOM"
                        except RuntimeError as exc:  # no kernel of this backend for the config
                            failures[key] = "n/a"
                            print(f"  {impl} {mode} causal={causal} d={d} N={N}: "
                                  f"{str(exc).splitlines()[0][:120]}", file=sys.stderr)
                        finally:
                            torch.cuda.empty_cache()
                    config = (mode, causal, d, N)
                    done = [r for r in rows if (r["mode"], r["causal"], r["d"], r["N"]) == config]
                    print("  " + f"{mode} causal={causal} d={d} N={N}: "
                          + ", ".join(f"{r['impl']} {r['tflops']:.1f}" for r in done), flush=True)
    record = make_record(rows, device=device, torch_version=torch.__version__,
                         triton_version=triton.__version__)
    path = write_record(record, args.out)
    print(format_table(rows, failures))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
