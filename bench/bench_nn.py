"""Benchmark: attnmath.nn modules against torch's own, and the NumPy reference against torch's kernel.

Usage::

    python bench/bench_nn.py            # B=8, L=128 and 512, C=256, H=8; ~15 s on 2 idle cores
    python bench/bench_nn.py --quick    # tiny shapes, a few seconds

Writes ``bench/results/nn.json`` (``--quick`` writes ``bench/results/nn_quick.json`` so that a
smoke run never replaces the full figures; ``--out`` overrides both).

Rows (median wall time over repeats, ``ratio = ours / torch``; the target for the modules is
``ratio <= 1.2``; ``min ratio`` compares the fastest repeats, which is the steadier figure on a
machine with other load):

* ``MultiHeadAttention`` vs ``torch.nn.MultiheadAttention`` (self-attention, ``batch_first``),
* ``TransformerEncoderBlock`` vs ``torch.nn.TransformerEncoderLayer`` (``ffn_dim = 4C``),

each in two modes, ``forward`` (eval mode under ``torch.no_grad()``, where torch may take its
fused "fast path") and ``forward+backward`` (training mode, dropout 0, gradients of the inputs
and parameters), in float32; and

* ``attnmath.attention.scaled_dot_product_attention`` (NumPy, float64, keeps ``probs``) vs
  ``torch.nn.functional.scaled_dot_product_attention`` on the CPU, float64, same shapes
  ``(B, H, L, D)``.

This is a benchmark, not a test: it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from attnmath.attention import scaled_dot_product_attention  # noqa: E402
from attnmath.nn import MultiHeadAttention, TransformerEncoderBlock  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def _times(fn, repeats: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def _paired(fn_ours, fn_theirs, repeats: int, warmup: int) -> tuple[list[float], list[float]]:
    """Times of two functions, measured in alternating rounds so that drift hits both."""
    for _ in range(warmup):
        fn_ours()
        fn_theirs()
    ours, theirs = [], []
    for _ in range(repeats):
        for fn, acc in ((fn_ours, ours), (fn_theirs, theirs)):
            t0 = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t0)
    return ours, theirs


def _row(module, mode, dtype, shape, t_ours, t_theirs) -> dict:
    med_o, med_t = statistics.median(t_ours), statistics.median(t_theirs)
    return {
        "module": module, "mode": mode, "dtype": dtype, "shape": shape,
        "ours_ms": 1e3 * med_o, "torch_ms": 1e3 * med_t, "ratio": med_o / med_t,
        "ours_min_ms": 1e3 * min(t_ours), "torch_min_ms": 1e3 * min(t_theirs),
        "min_ratio": min(t_ours) / min(t_theirs), "repeats": len(t_ours),
    }


def _modules(kind: str, C: int, H: int):
    torch.manual_seed(0)
    if kind == "attention":
        theirs = torch.nn.MultiheadAttention(C, H, batch_first=True)
        ours = MultiHeadAttention(C, H).load_from_torch(theirs)

        def call_theirs(x):
            return theirs(x, x, x, need_weights=False)[0]

        def call_ours(x):
            return ours(x)
    else:
        theirs = torch.nn.TransformerEncoderLayer(C, H, 4 * C, dropout=0.0, batch_first=True)
        ours = TransformerEncoderBlock(C, H, 4 * C).load_from_torch(theirs)
        call_theirs, call_ours = theirs, ours
    return ours, theirs, call_ours, call_theirs


def bench_modules(B: int, lengths, C: int, H: int, repeats: int, warmup: int) -> list[dict]:
    rows = []
    for kind in ("attention", "encoder block"):
        for L in lengths:
            ours, theirs, call_ours, call_theirs = _modules(kind, C, H)
            x = torch.randn(B, L, C)

            def fwd(call, module):
                module.eval()

                def run():
                    with torch.no_grad():
                        call(x)
                return run

            def fwd_bwd(call, module):
                module.train()
                xg = x.clone().requires_grad_(True)

                def run():
                    module.zero_grad(set_to_none=True)
                    xg.grad = None
                    call(xg).sum().backward()
                return run

            for mode, make in (("forward", fwd), ("forward+backward", fwd_bwd)):
                t_ours, t_theirs = _paired(make(call_ours, ours), make(call_theirs, theirs), repeats, warmup)
                rows.append(_row(kind, mode, "float32", {"B": B, "L": L, "C": C, "H": H}, t_ours, t_theirs))
    return rows


def bench_numpy_reference(B: int, lengths, C: int, H: int, repeats: int, warmup: int) -> list[dict]:
    rows = []
    D = C // H
    for L in lengths:
        rng = np.random.default_rng(0)
        q, k, v = (rng.standard_normal((B, H, L, D)) for _ in range(3))  # (B, H, L, D) float64
        qt, kt, vt = (torch.from_numpy(a) for a in (q, k, v))
        t_np = _times(lambda: scaled_dot_product_attention(q, k, v), repeats, warmup)
        sdpa = torch.nn.functional.scaled_dot_product_attention
        t_torch = _times(lambda: sdpa(qt, kt, vt), repeats, warmup)
        rows.append(_row("sdpa: NumPy reference vs torch CPU", "forward", "float64",
                         {"B": B, "H": H, "L": L, "D": D}, t_np, t_torch))
    return rows


def _table(rows) -> str:
    head = (f"{'what':<36}{'mode':<18}{'dtype':<9}{'L':>5}{'ours ms':>10}{'torch ms':>10}{'ratio':>7}"
            f"{'min ratio':>11}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['module']:<36}{r['mode']:<18}{r['dtype']:<9}{r['shape']['L']:>5}"
            f"{r['ours_ms']:>10.2f}{r['torch_ms']:>10.2f}{r['ratio']:>7.2f}{r['min_ratio']:>11.2f}"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny shapes and few repeats (a smoke run)")
    parser.add_argument("--out", type=Path, default=None, help="JSON output path")
    args = parser.parse_args(argv)

    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    torch.set_num_threads(threads)
    if args.quick:
        B, lengths, C, H, repeats, warmup = 2, (32,), 64, 4, 5, 3
        out = args.out or RESULTS / "nn_quick.json"
    else:
        B, lengths, C, H, repeats, warmup = 8, (128, 512), 256, 8, 7, 2
        out = args.out or RESULTS / "nn.json"

    t0 = time.perf_counter()
    rows = bench_modules(B, lengths, C, H, repeats, warmup)
    rows += bench_numpy_reference(B, lengths, C, H, max(3, repeats // 2), 1)
    elapsed = time.perf_counter() - t0

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"torch {torch.__version__}, numpy {np.__version__}, {threads} threads, "
          f"{platform.processor() or platform.machine()}, load average {load:.2f} at the end")
    print(_table(rows))
    modules = [r for r in rows if r["dtype"] == "float32"]
    worst = max(r["ratio"] for r in modules)
    print(f"worst module ratio {worst:.2f} (target <= 1.20); total {elapsed:.1f} s")

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "command": "python bench/bench_nn.py" + (" --quick" if args.quick else ""),
        "quick": args.quick,
        "torch": torch.__version__, "numpy": np.__version__, "python": sys.version.split()[0],
        "threads": threads, "machine": platform.machine(), "seconds": elapsed, "load_average_1min": load,
        "target_ratio": 1.2, "worst_module_ratio": worst, "rows": rows,
    }, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
