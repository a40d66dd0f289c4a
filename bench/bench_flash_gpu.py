"""GPU benchmark: the Triton flash-attention kernels against torch's SDPA backends.

Measures, on a CUDA GPU, the throughput (TFLOP/s) and the peak memory of

* ``triton``: :func:`attnmath.flash_triton.flash_attention` (forward and backward kernels), as
  called by default, with its check that the inputs are finite (one reduction per tensor, run
  on the GPU without a wait since 2026-12-07; one wait per pass before),
* ``triton_nocheck``: the same with ``check_finite=False``, the kernels and their launches alone,
  with the default (split) backward: 7 matrix products per tile pair,
* ``triton_atomic``: the kernels alone with the atomic backward (``KernelConfig.dq_atomic``:
  ``dQ`` added by the ``dK, dV`` kernel, FlashAttention-2's 5 products); ``fwd_bwd`` only,
* ``sdpa_flash``, ``sdpa_efficient``, ``sdpa_cudnn``, ``sdpa_math``:
  ``torch.nn.functional.scaled_dot_product_attention`` restricted to one backend with
  ``torch.nn.attention.sdpa_kernel`` (FlashAttention-2 as bundled with torch, named in the
  record's ``sdpa_baseline``; memory-efficient, cuDNN, and the plain math implementation that
  materialises the ``(N, N)`` matrix),
* ``sdpa_fa3``: the flash backend with FlashAttention-3 switched in
  (``torch.nn.attention.activate_flash_attention_impl("FA3")``), only where the installed torch
  offers it and its module ``flash_attn_interface`` is installed (``sdpa_baseline`` says which),

for bfloat16 and float16 inputs ``(B, H, N, d)`` with ``B * N = 16384`` tokens, ``N`` from 512
to 16384, ``d`` in {64, 128} and ``H = 2048 / d`` heads (model width 2048, as in the
FlashAttention-2 paper's benchmarks), causal and not, in two modes:

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

**Tuning** (``--tune``): before the grid, each ``(d, causal)`` tries the forward settings and
the backward settings of :func:`tuning_candidates` (float16, ``N = 4096``; candidates screened
for registers and shared memory by ``bench/compile_flash_triton.py`` without a GPU) and the
grid's ``triton`` rows use the fastest; then (also alone, ``--tune-atomic``) the atomic
backward's settings of :func:`atomic_candidates`, for the ``triton_atomic`` rows. The record's
``tuning`` lists every candidate's time, ``tuned`` the settings chosen.

**The leaderboard configuration** (:data:`LEADERBOARD`): Stanford CS336's (B = 1, N = 16384,
16 heads, d = 64, bfloat16, causal, forward+backward), timed in milliseconds for every
implementation into the record's ``leaderboard``, beside the leaderboard's best entry (someone
else's measurement on another H100).

Order of the steps, so that a run cut short by its budget keeps the most useful: versions and
the SDPA baseline, the correctness checks, tuning, the leaderboard configuration, the grid
(``fwd_bwd`` first), the switched-in flash columns. ``--dry-run`` runs every step once on tiny
CPU tensors, untimed (Triton's interpreter), to check the plumbing where there is no GPU.

Usage::

    python bench/bench_flash_gpu.py                 # every dtype, N, d, causal, mode
    python bench/bench_flash_gpu.py --tune          # tune first, then the grid with the best
    python bench/bench_flash_gpu.py --quick         # N in {512, 2048}, d = 64, float16
    python bench/bench_flash_gpu.py --budget-s 200  # stop starting new rows after 200 s
    python bench/bench_flash_gpu.py --dry-run --tune-atomic --out /tmp/x.json  # no GPU
    python bench/bench_flash_gpu.py --report book/data/flash_gpu.json  # a record's ratios, no GPU

Writes ``book/data/flash_gpu.json`` (``--out`` overrides), the format read by the flash
chapter::

    {"device": str, "date": str, "torch": str, "triton": str, "protocol": {...},
     "rows": [{"impl": str, "dtype": "float16" | "bfloat16", "N": int, "d": int,
               "causal": bool, "mode": "fwd" | "fwd_bwd", "tflops": float,
               "peak_mem_bytes": int}],
     "tuning": [...], "checks": [...],   # only when measured
     "failures": [{"impl", "mode", "dtype", "causal", "d", "N", "reason": "OOM" | "n/a"}],
     "versions": {...}, "sdpa_baseline": {...}, "leaderboard": {...}, "tuned": {...},
     "dry_run": bool}

and prints a table with each implementation's TFLOP/s and its ratio to ``sdpa_flash``. The
record is written again after every configuration, so a run stopped by a time limit keeps
what it measured. Without a CUDA device it prints "no CUDA device: GPU benchmark skipped",
writes nothing and exits 0.
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
DTYPES = ("float16", "bfloat16")
MODES = ("fwd", "fwd_bwd")
IMPLS = ("triton", "triton_nocheck", "triton_atomic", "sdpa_flash", "sdpa_fa3", "sdpa_efficient",
         "sdpa_cudnn", "sdpa_math")
BACKWARD_ONLY = ("triton_atomic",)  # its forward is triton_nocheck's: timed in fwd_bwd only
# Implementations that torch can switch SDPA's flash backend to (torch.nn.attention.
# activate_flash_attention_impl), and the module each needs: column -> (impl name, module).
SWITCHED_FLASH = {"sdpa_fa3": ("FA3", "flash_attn_interface")}
# CS336's public leaderboard configuration (Stanford, spring 2025): FlashAttention-2 forward and
# backward on one H100, and its best entry as issue 43 quotes it (someone else's measurement).
LEADERBOARD = {"B": 1, "H": 16, "N": 16384, "d": 64, "dtype": "bfloat16", "causal": True,
               "mode": "fwd_bwd", "best_entry_ms": 4.03,
               "best_entry_source": "Stanford CS336 public leaderboard, as quoted in issue 43 "
                                    "(another H100, someone else's measurement)"}
REFERENCE = "sdpa_flash"
SKIP_MESSAGE = "no CUDA device: GPU benchmark skipped"
MiB = 2**20


def attention_flops(B: int, H: int, N: int, d: int, *, causal: bool, mode: str) -> float:
    """FLOPs counted for one call: ``4 B H N^2 d`` forward (halved if causal), x3.5 with backward
    (:func:`attnmath.counting.attention_core_flops`)."""
    from attnmath.counting import attention_core_flops

    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return attention_core_flops(B, H, N, d, causal=causal, backward=mode == "fwd_bwd")


def protocol() -> dict:
    """What a record's numbers mean, written into it so that a reader needs no copy of this file:
    the implementations, modes, dtypes, sizes, tokens and width, and the reference of the ratios.
    The FLOP count is :func:`attnmath.counting.attention_core_flops`."""
    return {"impls": list(IMPLS), "modes": list(MODES), "dtypes": list(DTYPES), "ns": list(NS),
            "ds": list(DS), "tokens": TOKENS, "width": MODEL_WIDTH, "reference": REFERENCE,
            "flops": "attnmath.counting.attention_core_flops"}


def shapes(N: int, d: int) -> tuple[int, int]:
    """``(B, H)`` for ``B * N = 16384`` tokens and ``H * d = 2048``."""
    return max(1, TOKENS // N), MODEL_WIDTH // d


def make_record(rows: list[dict], *, device: str, torch_version: str, triton_version: str,
                date: str | None = None, tuning: list | None = None,
                checks: list | None = None, failures: dict | None = None,
                extra: dict | None = None) -> dict:
    """The JSON document read by the flash chapter, with its fields checked; ``extra``'s keys
    (versions, the SDPA baseline's name, the leaderboard configuration) are added as given."""
    checked = []
    for r in rows:
        if r["mode"] not in MODES:
            raise ValueError(f"row mode must be one of {MODES}, got {r['mode']!r}")
        if r["dtype"] not in DTYPES:
            raise ValueError(f"row dtype must be one of {DTYPES}, got {r['dtype']!r}")
        checked.append({"impl": str(r["impl"]), "dtype": str(r["dtype"]), "N": int(r["N"]),
                        "d": int(r["d"]), "causal": bool(r["causal"]), "mode": str(r["mode"]),
                        "tflops": float(r["tflops"]), "peak_mem_bytes": int(r["peak_mem_bytes"])})
    if date is None:
        date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    record = {"device": str(device), "date": str(date), "torch": str(torch_version),
              "triton": str(triton_version), "protocol": protocol(), "rows": checked}
    if tuning:
        record["tuning"] = list(tuning)
    if checks:
        record["checks"] = list(checks)
    if failures:
        keys = ("impl", "mode", "dtype", "causal", "d", "N")
        record["failures"] = [dict(zip(keys, key), reason=str(reason))
                              for key, reason in sorted(failures.items(), key=str)]
    record.update(extra or {})
    return record


def write_record(record: dict, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def format_table(rows: list[dict], failures: dict | None = None, impls=IMPLS) -> str:
    """One line per (mode, dtype, causal, d, N): TFLOP/s, peak MiB and ratio to ``sdpa_flash``.

    ``failures`` maps ``(impl, mode, dtype, causal, d, N)`` to a short reason ("n/a", "OOM")
    shown in place of a number.
    """
    failures = failures or {}
    by_key = {(r["impl"], r["mode"], r["dtype"], r["causal"], r["d"], r["N"]): r for r in rows}
    configs = sorted({(r["mode"], r["dtype"], r["causal"], r["d"], r["N"]) for r in rows}
                     | {key[1:] for key in failures})
    head = (f"{'mode':>8} {'dtype':>8} {'causal':>6} {'d':>4} {'N':>6} "
            + " ".join(f"{i:>24}" for i in impls))
    lines = [f"TFLOP/s (peak MiB) [ratio to {REFERENCE}]", head, "-" * len(head)]
    for config in configs:
        ref = by_key.get((REFERENCE, *config))
        cells = []
        for impl in impls:
            r = by_key.get((impl, *config))
            if r is None:
                cells.append(f"{failures.get((impl, *config), '-'):>24}")
                continue
            ratio = f"[{r['tflops'] / ref['tflops']:.2f}x]" if ref and ref["tflops"] > 0 else "[  -  ]"
            cells.append(f"{r['tflops']:7.1f} ({r['peak_mem_bytes'] / MiB:7.0f}) {ratio:>7}")
        mode, dtype, causal, d, N = config
        lines.append(f"{mode:>8} {dtype:>8} {causal!s:>6} {d:>4} {N:>6} " + " ".join(cells))
    return "\n".join(lines)


def ratio_grid(record: dict, impls=("triton", "triton_nocheck")) -> str:
    """Each ``impls`` entry's TFLOP/s over ``sdpa_flash``'s, one line per (mode, dtype, causal,
    d) and one column per ``N``, cells ``a/b`` in the order of ``impls`` (no GPU needed)."""
    rows = {(r["impl"], r["mode"], r["dtype"], r["causal"], r["d"], r["N"]): r["tflops"]
            for r in record["rows"]}
    ns = sorted({r["N"] for r in record["rows"]})
    lines = [f"{record['device']}, {record['date']}; torch {record['torch']}, triton {record['triton']}",
             f"ratio to {REFERENCE}: " + " / ".join(impls),
             f"{'mode':>8} {'dtype':>8} {'causal':>6} {'d':>4} " + " ".join(f"{n:>11}" for n in ns)]
    configs = sorted({key[1:5] for key in rows})
    for mode, dtype, causal, d in configs:
        cells = []
        for n in ns:
            ref = rows.get((REFERENCE, mode, dtype, causal, d, n))
            got = [rows.get((impl, mode, dtype, causal, d, n)) for impl in impls]
            cells.append("/".join("-" if g is None or not ref else f"{g / ref:.2f}" for g in got))
        lines.append(f"{mode:>8} {dtype:>8} {causal!s:>6} {d:>4} " + " ".join(f"{c:>11}" for c in cells))
    return "\n".join(lines)


def tuning_candidates(d: int) -> list:
    """Kernel settings tried by ``--tune`` for head dim ``d`` (the default first).

    Each is an :class:`attnmath.flash_triton.KernelConfig`; forward fields and backward fields
    are tuned separately, so a candidate changes one side only. Chosen for Hopper: 128-row
    query tiles for the forward (a warpgroup's matrix instruction takes 64 rows per warpgroup),
    4 or 8 warps, 2 to 4 pipeline stages; shared memory stays under the 227 KiB of a program.
    """
    from attnmath.flash_triton import kernel_config

    base = kernel_config(d)
    if d <= 64:
        fwd = [(128, 128, 8, 3), (128, 64, 4, 4), (128, 64, 8, 3)]
        bwd = [(64, 128, 128, 64, 8, 8, 3), (32, 128, 128, 32, 8, 8, 4)]
    else:
        fwd = [(128, 128, 8, 3), (128, 64, 8, 2), (64, 64, 4, 3)]
        bwd = [(64, 64, 64, 64, 8, 8, 2), (64, 64, 64, 64, 8, 8, 3)]
    out = [base]
    out += [base._replace(fwd_m=m, fwd_n=n, fwd_warps=w, fwd_stages=s) for m, n, w, s in fwd]
    out += [base._replace(dkdv_m=a, dkdv_n=b, dq_m=c, dq_n=e, dkdv_warps=w1, dq_warps=w2, bwd_stages=s)
            for a, b, c, e, w1, w2, s in bwd]
    return [c for i, c in enumerate(out) if c not in out[:i]]


def atomic_candidates(d: int) -> list:
    """Settings of the atomic backward (``KernelConfig.dq_atomic``) for head dim ``d``: the
    default's with ``dq_atomic``, then other ``dK, dV`` tiles, warps and stages (the ``dQ``
    fields are unused on that path). Screened by ``bench/compile_flash_triton.py --candidates``
    (registers, spills, HGMMA) before a GPU times them."""
    from attnmath.flash_triton import kernel_config

    base = kernel_config(d)._replace(dq_atomic=True)
    if d <= 64:
        bwd = [(64, 128, 8, 3), (32, 128, 8, 2), (32, 64, 4, 3)]
    else:
        bwd = [(64, 64, 8, 2), (32, 64, 8, 3), (32, 64, 8, 2)]
    out = [base] + [base._replace(dkdv_m=m, dkdv_n=n, dkdv_warps=w, bwd_stages=st) for m, n, w, st in bwd]
    return [c for i, c in enumerate(out) if c not in out[:i]]



# --------------------------------------------------------------------------- GPU part
#
# ``DRY_RUN`` (``--dry-run``): every step runs once on tiny CPU tensors (Triton's interpreter for
# the kernels), untimed, so that a GPU session does not fail on the script's plumbing.

DRY_RUN = False


def _device() -> str:
    return "cpu" if DRY_RUN else "cuda"


def _attention_fn(impl: str, causal: bool, config=None):
    """``f(q, k, v) -> out`` for one implementation (torch and triton imported by the caller).

    ``triton``: the default call (the finite check on, without a wait); ``triton_nocheck``: the
    kernels alone (``check_finite=False``), split backward; ``triton_atomic``: the kernels alone
    with the atomic backward (``KernelConfig.dq_atomic``); ``sdpa_*``: SDPA restricted to one
    backend (``sdpa_fa3``: the flash backend while FlashAttention-3 is switched in)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if impl.startswith("triton"):
        from attnmath.flash_triton import flash_attention, kernel_config

        check, atomic = impl == "triton", impl == "triton_atomic"

        def triton_fn(q, k, v):
            cfg = config or kernel_config(q.shape[-1], q.dtype)
            cfg = cfg._replace(dq_atomic=atomic)
            return flash_attention(q, k, v, causal, config=cfg, check_finite=check)

        return triton_fn
    backend = {"sdpa_flash": SDPBackend.FLASH_ATTENTION, "sdpa_fa3": SDPBackend.FLASH_ATTENTION,
               "sdpa_efficient": SDPBackend.EFFICIENT_ATTENTION,
               "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa_math": SDPBackend.MATH}[impl]

    def fn(q, k, v):
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return fn


def _time_ms(impl: str, N: int, d: int, causal: bool, mode: str, dtype: str, config=None,
             *, with_peak: bool = True, B: int | None = None, H: int | None = None) -> tuple[float, int]:
    """Median milliseconds of one call and its peak memory beyond the inputs (``B, H`` default
    to :func:`shapes`). Dry run: one untimed call at ``B = 1, H = 2, N <= 64``: ``(nan, 0)``."""
    import torch

    B0, H0 = shapes(N, d)
    B, H = B or B0, H or H0
    if DRY_RUN:
        B, H, N = 1, 2, min(N, 64)
    fn = _attention_fn(impl, causal, config)
    g = torch.Generator(device=_device()).manual_seed(0)
    grad = mode == "fwd_bwd"
    q, k, v = (torch.randn(B, H, N, d, device=_device(), dtype=getattr(torch, dtype), generator=g)
               .requires_grad_(grad) for _ in range(3))
    dout = torch.randn(B, H, N, d, device=_device(), dtype=getattr(torch, dtype), generator=g)

    if grad:
        def call():
            fn(q, k, v).backward(dout)
    else:
        def call():
            with torch.no_grad():
                fn(q, k, v)

    call()  # compile (Triton), select kernels, surface unsupported configurations
    if DRY_RUN:
        return float("nan"), 0
    from triton.testing import do_bench

    torch.cuda.synchronize()
    peak = 0
    if with_peak:
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
    ms = do_bench(call, warmup=10, rep=40, grad_to_none=[q, k, v] if grad else None,
                  return_mode="median")
    return ms, int(peak)


def measure(impl: str, N: int, d: int, causal: bool, mode: str, dtype: str = "float16",
            config=None) -> dict:
    """One row: TFLOP/s and peak memory of ``impl``; raises on an unsupported configuration."""
    ms, peak = _time_ms(impl, N, d, causal, mode, dtype, config)
    B, H = shapes(N, d)
    tflops = attention_flops(B, H, N, d, causal=causal, mode=mode) / (ms * 1e-3) / 1e12
    return {"impl": impl, "dtype": dtype, "N": N, "d": d, "causal": causal, "mode": mode,
            "tflops": tflops, "peak_mem_bytes": peak}


def check_correctness(dtype: str, d: int, causal: bool, N: int = 1024) -> dict:
    """Relative errors ``|x - ref| / |ref|`` (Frobenius) of out, dq, dk, dv of the Triton
    kernels (both backward paths) and of SDPA's flash backend, against float32 SDPA on the same
    rounded inputs, on fresh random inputs; the outputs are poisoned first, so an unwritten
    element shows as NaN."""
    import torch

    B, H = (1, 2) if DRY_RUN else (2, 8)
    N = min(N, 64) if DRY_RUN else N
    q, k, v, dout = (torch.randn(B, H, N, d, device=_device(), dtype=getattr(torch, dtype))
                     for _ in range(4))

    def run(impl, cast):
        qq, kk, vv = (x.to(cast).clone().requires_grad_(True) for x in (q, k, v))
        poison = torch.full((8 * q.numel(),), float("nan"), device=_device(), dtype=torch.float32)
        del poison  # its NaN-filled block is what the allocator hands out next
        out = _attention_fn(impl, causal)(qq, kk, vv)
        out.backward(dout.to(cast))
        return [out.detach(), qq.grad, kk.grad, vv.grad]

    ref = run("sdpa_math", torch.float32)
    result = {"dtype": dtype, "d": d, "causal": causal, "N": N}
    for impl in ("triton", "triton_atomic", "sdpa_flash"):
        got = run(impl, getattr(torch, dtype))
        result[impl] = {name: float((a.float() - r).norm() / r.norm())
                        for name, a, r in zip(("out", "dq", "dk", "dv"), got, ref)}
    return result


def tune(ds, causals, N: int = 4096, log=print, atomic_only: bool = False) -> tuple[dict, dict, list]:
    """The fastest settings per ``(d, causal)`` (float16, ``N``): the split path's forward and
    backward from :func:`tuning_candidates` (unless ``atomic_only``), and the atomic backward's
    from :func:`atomic_candidates` (forward+backward timed); and every candidate's times."""
    best, best_atomic, trials = {}, {}, []
    for d in ds:
        for causal in causals:
            if not atomic_only:
                best[(d, causal)] = _tune_split(d, causal, N, trials, log)
            times = {}
            for cfg in atomic_candidates(d):
                fb = _trial("triton_atomic", d, causal, N, cfg, "fwd_bwd", trials, log)
                if fb is not None:
                    times[cfg] = fb
            if times:
                best_atomic[(d, causal)] = min(times, key=times.get)
                log(f"  best atomic d={d} causal={causal}: {tuple(best_atomic[(d, causal)])}")
    return best, best_atomic, trials


def _trial(impl, d, causal, N, cfg, mode, trials, log):
    """One tuning timing (ms), logged and appended to ``trials``; ``None`` if it failed."""
    import torch

    try:
        ms, _ = _time_ms(impl, N, d, causal, mode, "float16", cfg, with_peak=False)
    except Exception as exc:  # out of resources, a compile error: log, go on  # noqa: BLE001
        log(f"  tune {impl} d={d} causal={causal} {tuple(cfg)}: {str(exc).splitlines()[0][:100]}")
        return None
    finally:
        if not DRY_RUN:
            torch.cuda.empty_cache()
    trials.append({"impl": impl, "d": d, "causal": causal, "N": N, "config": list(cfg),
                   "mode": mode, "ms": ms})
    log(f"  tune {impl} {mode} d={d} causal={causal} {tuple(cfg)}: {ms:.3f} ms")
    return ms


def _tune_split(d, causal, N, trials, log):
    """The split path's fastest forward and backward settings for ``(d, causal)``."""
    candidates = tuning_candidates(d)
    base = candidates[0]
    fwd_ms, bwd_ms = {}, {}
    for cfg in candidates:
        f = _trial("triton_nocheck", d, causal, N, cfg, "fwd", trials, log)
        fb = _trial("triton_nocheck", d, causal, N, cfg, "fwd_bwd", trials, log)
        if f is None or fb is None:
            continue
        fwd_ms.setdefault(cfg[0:2] + (cfg.fwd_warps, cfg.fwd_stages), f)
        bwd_ms.setdefault(cfg[2:6] + (cfg.dkdv_warps, cfg.dq_warps, cfg.bwd_stages), fb - f)
    fk = min(fwd_ms, key=fwd_ms.get, default=None)
    bk = min(bwd_ms, key=bwd_ms.get, default=None)
    cfg = base
    if fk is not None:
        cfg = cfg._replace(fwd_m=fk[0], fwd_n=fk[1], fwd_warps=fk[2], fwd_stages=fk[3])
    if bk is not None:
        cfg = cfg._replace(dkdv_m=bk[0], dkdv_n=bk[1], dq_m=bk[2], dq_n=bk[3],
                           dkdv_warps=bk[4], dq_warps=bk[5], bwd_stages=bk[6])
    log(f"  best d={d} causal={causal}: {tuple(cfg)} (default {tuple(base)})")
    return cfg


def _config_for(impl: str, d: int, causal: bool, best: dict, best_atomic: dict):
    if impl == "triton_atomic":
        return best_atomic.get((d, causal))
    return best.get((d, causal)) if impl.startswith("triton") else None


def run_grid(dtypes, ds, ns, best: dict, deadline: float, save, log=print, impls=IMPLS,
             best_atomic: dict | None = None, rows=None, failures=None) -> tuple[list, dict]:
    """Every row of the grid for ``impls`` until ``deadline`` (``time.monotonic()``), the
    forward+backward first (the backward paths are the question), appended to ``rows``."""
    import time

    rows = rows if rows is not None else []
    failures = failures if failures is not None else {}
    best_atomic = best_atomic or {}
    for mode in reversed(MODES):
        for dtype in dtypes:
            for causal in (False, True):
                for d in ds:
                    for N in ns:
                        if time.monotonic() > deadline:
                            log(f"  time budget spent: stopped before {mode} {dtype} "
                                f"causal={causal} d={d} N={N}")
                            return rows, failures
                        for impl in impls:
                            if mode == "fwd" and impl in BACKWARD_ONLY:
                                continue
                            config = _config_for(impl, d, causal, best, best_atomic)
                            _measure_into(rows, failures, impl, N, d, causal, mode, dtype, config, log)
                        done = [r for r in rows if (r["mode"], r["dtype"], r["causal"], r["d"], r["N"])
                                == (mode, dtype, causal, d, N)]
                        log(f"  {mode} {dtype} causal={causal} d={d} N={N}: "
                            + ", ".join(f"{r['impl']} {r['tflops']:.1f}" for r in done))
                        save(rows, failures)
    return rows, failures


def _measure_into(rows, failures, impl, N, d, causal, mode, dtype, config, log) -> None:
    """:func:`measure` one row into ``rows``, or its failure ("OOM", "n/a") into ``failures``."""
    import torch

    key = (impl, mode, dtype, causal, d, N)
    try:
        rows.append(measure(impl, N, d, causal, mode, dtype, config))
    except torch.cuda.OutOfMemoryError:
        failures[key] = "OOM"
    except Exception as exc:  # noqa: BLE001  (no kernel for it, a compile error)
        failures[key] = "n/a"
        log(f"  {impl} {mode} {dtype} causal={causal} d={d} N={N}: {str(exc).splitlines()[0][:120]}")
    finally:
        if not DRY_RUN:
            torch.cuda.empty_cache()


def run_checks(dtypes, ds, log=print) -> list:
    """:func:`check_correctness` for every dtype, d and causal; a failure is recorded, not raised."""
    checks = []
    for dtype in dtypes:
        for d in ds:
            for causal in (False, True):
                try:
                    c = check_correctness(dtype, d, causal)
                except Exception as exc:  # noqa: BLE001  (a compile or launch error: recorded)
                    checks.append({"dtype": dtype, "d": d, "causal": causal, "error": repr(exc)[:300]})
                    log(f"  check {dtype} d={d} causal={causal} FAILED: {repr(exc)[:300]}")
                    continue
                checks.append(c)
                log(f"  relative error vs float32 ({dtype}, d={d}, causal={causal}): "
                    + "; ".join(f"{impl} " + ", ".join(f"{k} {v:.1e}" for k, v in c[impl].items())
                                for impl in ("triton", "triton_atomic", "sdpa_flash")))
    return checks


def sdpa_baseline() -> dict:
    """Which FlashAttention SDPA's flash backend runs, and which others torch can switch in.

    ``flash_version``: the FlashAttention-2 tag torch's bundled kernels match
    (``torch.nn.attention._get_flash_version``); ``active``: the switched-in implementation
    (``current_flash_attention_impl``; ``None`` is the bundled FlashAttention-2); ``offered``:
    ``list_flash_attention_impls()``; ``switchable``: for each column of
    :data:`SWITCHED_FLASH`, whether the module it needs is installed."""
    import importlib.util

    import torch
    import torch.nn.attention as attn

    def call(name):
        fn = getattr(attn, name, None)
        try:
            return fn() if fn is not None else None
        except Exception as exc:  # noqa: BLE001  (a private helper that changed)
            return f"error: {exc}"[:200]

    version, active, offered = call("_get_flash_version"), call("current_flash_attention_impl"), \
        call("list_flash_attention_impls") or []
    switchable = {}
    for column, (name, module) in SWITCHED_FLASH.items():
        if not hasattr(attn, "activate_flash_attention_impl") or name not in offered:
            switchable[column] = f"torch {torch.__version__} does not offer {name}"
        elif importlib.util.find_spec(module.split(".")[0]) is None:
            switchable[column] = f"{name} offered, but its module {module} is not installed"
        else:
            switchable[column] = "available"
    sdpa_flash = (f"FlashAttention-2 as bundled with torch {torch.__version__} (flash-attention "
                  f"{version or 'version not reported'})" if active is None else f"{active} (switched in)")
    return {"sdpa_flash": sdpa_flash, "flash_version": version, "active": active,
            "offered": list(offered), "switchable": switchable}


@__import__("contextlib").contextmanager
def switched_flash(column: str):
    """SDPA's flash backend switched to :data:`SWITCHED_FLASH`'s ``column`` while inside."""
    import torch.nn.attention as attn

    name = SWITCHED_FLASH[column][0]
    attn.activate_flash_attention_impl(name)
    try:
        if attn.current_flash_attention_impl() != name:
            raise RuntimeError(f"{name} did not become SDPA's flash implementation")
        yield
    finally:
        attn.restore_flash_attention_impl()


def leaderboard(impls, best: dict, best_atomic: dict, log=print) -> dict:
    """:data:`LEADERBOARD`'s configuration: milliseconds of forward+backward per implementation
    (a failure as its reason), beside the leaderboard's best entry."""
    import torch

    c = LEADERBOARD
    ms, failures = {}, {}
    for impl in impls:
        config = _config_for(impl, c["d"], c["causal"], best, best_atomic)
        try:
            ms[impl], _ = _time_ms(impl, c["N"], c["d"], c["causal"], c["mode"], c["dtype"], config,
                                   with_peak=False, B=c["B"], H=c["H"])
        except Exception as exc:  # noqa: BLE001
            failures[impl] = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        finally:
            if not DRY_RUN:
                torch.cuda.empty_cache()
    log("  CS336 leaderboard configuration (B=1, N=16384, H=16, d=64, bf16, causal, fwd+bwd): "
        + ", ".join(f"{k} {v:.3f} ms" for k, v in ms.items())
        + f"; the leaderboard's best entry {c['best_entry_ms']} ms (another H100)")
    return {"config": {k: c[k] for k in ("B", "H", "N", "d", "dtype", "causal", "mode")},
            "ms": ms, "failures": failures, "best_entry_ms": c["best_entry_ms"],
            "best_entry_source": c["best_entry_source"]}


def versions() -> dict:
    """The device, date and software versions written into every record."""
    import datetime as dt
    import platform

    import torch
    import triton

    out = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "python": platform.python_version(), "torch": torch.__version__,
           "cuda": torch.version.cuda, "triton": triton.__version__,
           "device": "CPU (dry run: nothing timed)" if DRY_RUN else torch.cuda.get_device_name(0)}
    if not DRY_RUN:
        p = torch.cuda.get_device_properties(0)
        out["sms"] = p.multi_processor_count
        out["memory_gib"] = round(p.total_memory / 2**30, 1)
    return out


def main(argv=None) -> int:
    import os
    import time

    start = time.monotonic()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N in {512, 2048}, d = 64, float16 only")
    parser.add_argument("--tune", action="store_true", help="tune both backward paths' settings first")
    parser.add_argument("--tune-atomic", action="store_true", help="tune the atomic backward only")
    parser.add_argument("--budget-s", type=float, default=float("inf"),
                        help="start no new configuration after this many seconds")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON path (default {DEFAULT_OUT})")
    parser.add_argument("--report", type=Path, help="print the ratios of a recorded JSON and exit")
    parser.add_argument("--dry-run", action="store_true",
                        help="every step once on tiny CPU tensors, untimed (Triton's interpreter)")
    args = parser.parse_args(argv)
    if args.report is not None:
        print(ratio_grid(json.loads(args.report.read_text())))
        return 0
    global DRY_RUN
    DRY_RUN = args.dry_run
    if DRY_RUN:  # before triton is first imported
        os.environ["TRITON_INTERPRET"] = "1"

    import torch

    if not DRY_RUN and not torch.cuda.is_available():
        print(SKIP_MESSAGE)
        return 0
    try:
        from attnmath import flash_triton
    except ImportError as exc:
        print(f"the GPU benchmark needs Triton: {exc}", file=sys.stderr)
        return 1
    if flash_triton.INTERPRETED != DRY_RUN:
        print("TRITON_INTERPRET=1 is set: unset it to benchmark the compiled kernels", file=sys.stderr)
        return 1
    return _run(args, start)


def _run(args, start: float) -> int:
    """The steps, in order of their worth if the budget runs out: checks, the leaderboard
    configuration, tuning, the grid (forward+backward first), the switched-in flash columns."""
    import time

    ns, ds, dtypes = ((512, 2048), (64,), ("float16",)) if args.quick else (NS, DS, DTYPES)
    if DRY_RUN:
        ns, ds, dtypes = (512,), (64,), ("bfloat16",)
    log = lambda line: print(line, flush=True)  # noqa: E731
    extra = {"versions": versions(), "sdpa_baseline": sdpa_baseline(), "dry_run": DRY_RUN}
    log(f"{extra['versions']}; B * N = {TOKENS} tokens, H * d = {MODEL_WIDTH}")
    log(f"  SDPA baseline: {extra['sdpa_baseline']}")
    checks = run_checks(dtypes, ds, log)
    own = [i for i in IMPLS if i not in SWITCHED_FLASH]
    switched = [c for c, state in extra["sdpa_baseline"]["switchable"].items() if state == "available"]
    tuned = args.tune or args.tune_atomic
    best, best_atomic, trials = tune(ds, (False, True), log=log, atomic_only=not args.tune) if tuned else ({}, {}, [])
    extra["leaderboard"] = leaderboard([i for i in own if i != "sdpa_math"], best, best_atomic, log)
    extra["tuned"] = {"split": {f"d={d} causal={c}": list(v) for (d, c), v in best.items()},
                      "atomic": {f"d={d} causal={c}": list(v) for (d, c), v in best_atomic.items()}}
    version = extra["versions"]

    def save(rows, failures):
        write_record(make_record(rows, device=version["device"], torch_version=version["torch"],
                                 triton_version=version["triton"], date=version["date"], tuning=trials,
                                 checks=checks, failures=failures, extra=extra), args.out)

    deadline = start + args.budget_s
    rows, failures = run_grid(dtypes, ds, ns, best, deadline, save, log, impls=own, best_atomic=best_atomic)
    for column in switched:  # one switch per column: the dispatcher change is process-wide
        try:
            with switched_flash(column):
                extra["leaderboard"]["ms"].update(leaderboard([column], best, best_atomic, log)["ms"])
                run_grid(dtypes, ds, ns, best, deadline, save, log, impls=[column], rows=rows,
                         failures=failures)
        except Exception as exc:  # noqa: BLE001  (the switch itself failed: recorded, not fatal)
            extra["sdpa_baseline"]["switchable"][column] = f"failed: {str(exc).splitlines()[0][:200]}"
            log(f"  {column}: the switch failed: {exc!r}"[:300])
    save(rows, failures)
    print(format_table(rows, failures, impls=own + switched))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
