"""Peak memory of plain, query-chunked and flash-tiled attention as the sequence grows.

Measures, with ``tracemalloc``, the peak bytes allocated *during* one forward call (inputs are
allocated before the measurement starts; the output is included) for

* plain attention, ``attnmath.attention.scaled_dot_product_attention`` (keeps ``probs (B, H, L, S)``),
* ``attnmath.chunked.chunked_attention`` (one ``(chunk, S)`` block of scores at a time),
* ``attnmath.flash.flash_attention_forward`` (one ``(block_q, block_k)`` tile; keeps ``lse (B, H, L)``),

at ``B = H = 1``, ``D = 64``, ``L = S = n``. NumPy runs in float32 by default (``--dtype float64``
doubles every figure); all three methods use the same dtype. Wall-clock times are printed for
information only: this is a CPU NumPy run, not a GPU kernel.

Usage::

    python bench/bench_memory.py            # n = 1k, 2k, 4k, 8k, 16k
    python bench/bench_memory.py --quick    # n = 256, 512: a few seconds

Writes ``bench/results/memory.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from attnmath.attention import scaled_dot_product_attention  # noqa: E402
from attnmath.chunked import chunked_attention  # noqa: E402
from attnmath.flash import attention_matrix_bytes, flash_attention_forward  # noqa: E402

MiB = 2**20


def measure(fn):
    """Run ``fn()`` once; return (its result, peak traced bytes above the start, seconds)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        t0 = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak - before, seconds


def available_bytes() -> int | None:
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run: n = 256, 512")
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--d", type=int, default=64, help="head dim D")
    parser.add_argument("--block", type=int, default=None,
                        help="flash tile size block_q = block_k (default 1024; 128 with --quick)")
    parser.add_argument("--chunk", type=int, default=None,
                        help="chunked attention's query rows per block (default 1024; 128 with --quick)")
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parent / "results" / "memory.json")
    args = parser.parse_args(argv)

    sizes = [256, 512] if args.quick else [1024, 2048, 4096, 8192, 16384]
    block = args.block or (128 if args.quick else 1024)
    chunk = args.chunk or (128 if args.quick else 1024)
    dtype = np.dtype(args.dtype)
    D = args.d
    # A Python float: under NumPy 2's promotion rules a float64 *NumPy* scalar (such as
    # 1 / np.sqrt(D)) would silently turn float32 scores into float64 in any method.
    scale = 1.0 / float(np.sqrt(D))
    print(f"peak traced memory of one forward call; B = H = 1, D = {D}, {dtype.name}; "
          f"flash tiles {block}x{block}, chunk {chunk} rows")
    header = (f"{'n':>6} {'(n,n) matrix':>13} {'plain':>11} {'chunked':>11} {'flash':>10} "
              f"{'plain/flash':>12} {'plain/chunk':>12}   times plain/chunked/flash (s)   max|flash-plain|")
    print(header)
    print("-" * len(header))

    rows = []
    t_start = time.perf_counter()
    for n in sizes:
        rng = np.random.default_rng(n)
        q, k, v = (rng.standard_normal((1, 1, n, D)).astype(dtype) for _ in range(3))
        matrix = attention_matrix_bytes(n, n, bytes_per_elem=dtype.itemsize)
        # Plain attention holds the scores, the probabilities and a few softmax temporaries
        # of size n^2 at once; skip it where that could not fit.
        avail = available_bytes()
        plain_fits = avail is None or 6 * matrix < 0.8 * avail
        if plain_fits:
            (plain_out, _), plain_peak, plain_s = measure(
                lambda: scaled_dot_product_attention(q, k, v, scale=scale))
        else:
            plain_out, plain_peak, plain_s = None, None, None
        chunk_out, chunk_peak, chunk_s = measure(
            lambda: chunked_attention(q, k, v, chunk_size=chunk, scale=scale))
        (flash_out, _), flash_peak, flash_s = measure(
            lambda: flash_attention_forward(q, k, v, block_q=block, block_k=block, scale=scale))
        reference = plain_out if plain_out is not None else chunk_out
        err = float(np.max(np.abs(flash_out.astype(np.float64) - reference.astype(np.float64))))
        row = dict(
            n=n, attention_matrix_bytes=matrix,
            plain_peak_bytes=plain_peak, chunked_peak_bytes=chunk_peak, flash_peak_bytes=flash_peak,
            plain_over_flash=None if plain_peak is None else plain_peak / flash_peak,
            plain_over_chunked=None if plain_peak is None else plain_peak / chunk_peak,
            plain_seconds=plain_s, chunked_seconds=chunk_s, flash_seconds=flash_s,
            max_abs_diff_flash_vs_reference=err,
            reference="plain" if plain_out is not None else "chunked",
        )
        rows.append(row)

        def mib(x):
            return "skipped" if x is None else f"{x / MiB:.1f} MiB"

        def ratio(x):
            return "-" if x is None else f"{x:.0f}x"

        def sec(x):
            return "-" if x is None else f"{x:.2f}"

        print(f"{n:>6} {mib(matrix):>13} {mib(plain_peak):>11} {mib(chunk_peak):>11} "
              f"{mib(flash_peak):>10} {ratio(row['plain_over_flash']):>12} "
              f"{ratio(row['plain_over_chunked']):>12}   "
              f"{sec(plain_s):>6} / {sec(chunk_s):>6} / {sec(flash_s):>6}             {err:.1e}",
              flush=True)
        del q, k, v, plain_out, chunk_out, flash_out, reference
    total_s = time.perf_counter() - t_start
    print(f"total {total_s:.1f} s")

    result = dict(
        description="peak tracemalloc bytes during one forward call (inputs excluded, output included)",
        command="python bench/bench_memory.py" + (" --quick" if args.quick else "")
        + ("" if args.dtype == "float32" else f" --dtype {args.dtype}"),
        dtype=dtype.name, B=1, H=1, D=D, block_q=block, block_k=block, chunk_size=chunk,
        numpy=np.__version__, python=platform.python_version(), machine=platform.machine(),
        cpu_count=os.cpu_count(), total_seconds=total_s, rows=rows,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
