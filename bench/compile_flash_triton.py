"""Compile the Triton flash kernels for an H100 (sm_90) without a GPU and print their resources.

For each kernel (forward, ``dK, dV``, ``dQ``) and each setting asked for, Triton's own compiler
and ``ptxas`` build the kernel; the report gives the registers per thread, the bytes spilled to
local memory, the shared memory, and how many Hopper warpgroup matrix instructions (``HGMMA``)
and older ones (``HMMA``) the machine code holds. It costs no GPU time, so candidate settings for
the GPU benchmark's tuning pass (``bench/bench_flash_gpu.py --tune``) are screened here first.

Both backward paths are built: ``split`` (the ``dK, dV`` kernel, then the ``dQ`` kernel: 7
matrix products per tile pair) and ``atomic`` (``KernelConfig.dq_atomic``: the ``dK, dV``
kernel adds ``dQ`` with atomics, 5 products, one launch). The SASS counts are static (each
``HGMMA`` instruction in the code once, whatever the loop trip counts).

Usage::

    python bench/compile_flash_triton.py                  # the default settings, fp16, D 64 and 128
    python bench/compile_flash_triton.py --candidates     # also every tuning candidate
    python bench/compile_flash_triton.py --json bench/results/compile_flash_triton.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT / "bench"))

_POINTERS = {"Q", "K", "V", "Out", "DOut", "DK", "DV", "DQ"}
_FLOAT_POINTERS = {"Lse", "Delta", "DQAcc"}


def _signature(kernel, consts: dict, dtype: str) -> dict:
    signature = {}
    for name in kernel.arg_names:
        if name in consts:
            signature[name] = "constexpr"
        elif name in _POINTERS:
            signature[name] = f"*{dtype}"
        elif name in _FLOAT_POINTERS:
            signature[name] = "*fp32"
        elif name.endswith("scale"):
            signature[name] = "fp32"
        else:
            signature[name] = "i32"
    return signature


def _ptxas_report(ptx: str, ptxas: Path) -> tuple[int, int]:
    """``(registers, spilled bytes)`` from ``ptxas -v`` on the kernel's PTX."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        result = subprocess.run([str(ptxas), "-v", "--gpu-name=sm_90a", str(src), "-o",
                                 str(Path(tmp) / "k.o")], capture_output=True, text=True, check=True)
    regs = re.search(r"Used (\d+) registers", result.stderr)
    spills = [int(x) for x in re.findall(r"(\d+) bytes spill stores", result.stderr)]
    return (int(regs.group(1)) if regs else -1), max(spills, default=0)


def _sass_counts(cubin: bytes, tools: Path) -> tuple[int, int]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        sass = subprocess.run([str(tools / "cuobjdump"), "--dump-sass", str(path)],
                              capture_output=True, text=True, check=True).stdout
    return len(re.findall(r"\bHGMMA\.", sass)), len(re.findall(r"\bHMMA\.", sass)), \
        len(re.findall(r"\bRED\.E\.ADD\.F32|\bREDG\.E\.ADD\.F32|\bATOMG?\.E\.ADD\.F32", sass))


def compile_one(kernel, consts: dict, dtype: str, warps: int, stages: int) -> dict:
    """Compile one kernel for sm_90; its resources as a dict."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    compiled = triton.compile(ASTSource(kernel, _signature(kernel, consts, dtype), constexprs=consts),
                              target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": warps, "num_stages": stages})
    tools = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    regs, spills = _ptxas_report(compiled.asm["ptx"], tools / "ptxas")
    hgmma, hmma, atomics = _sass_counts(compiled.asm["cubin"], tools)
    return {"kernel": kernel.__name__.strip("_"), "regs": regs, "spill_bytes": spills,
            "shared_bytes": int(compiled.metadata.shared), "hgmma": hgmma, "hmma": hmma,
            "atomic_adds": atomics}


def kernels_of(cfg, D: int, causal: bool, even: bool):
    """``(path, kernel, constexprs, warps, stages)`` of the launches for one setting: the
    forward, and the backward's ``split`` path (``dK, dV``, then ``dQ``) or, with
    ``cfg.dq_atomic``, its ``atomic`` path (``dK, dV`` adding ``dQ``)."""
    import attnmath.flash_triton as ft

    common = {"HEAD_DIM": D, "CAUSAL": causal, "DOT_PRECISION": "tf32", "EMULATE_BF16": False}
    path = "atomic" if cfg.dq_atomic else "split"
    jobs = [
        ("fwd", ft._flash_fwd_kernel, dict(common, BLOCK_M=cfg.fwd_m, BLOCK_N=cfg.fwd_n, EVEN_N=even),
         cfg.fwd_warps, cfg.fwd_stages),
        (path, ft._flash_bwd_dkdv_kernel, dict(common, BLOCK_M=cfg.dkdv_m, BLOCK_N=cfg.dkdv_n, EVEN_M=even,
                                                ATOMIC_DQ=cfg.dq_atomic), cfg.dkdv_warps, cfg.bwd_stages),
    ]
    if not cfg.dq_atomic:
        jobs.append((path, ft._flash_bwd_dq_kernel, dict(common, BLOCK_M=cfg.dq_m, BLOCK_N=cfg.dq_n,
                                                         EVEN_N=even), cfg.dq_warps, cfg.bwd_stages))
    return jobs


def settings_of(D: int, dtype, candidates: bool) -> list:
    """``(label, KernelConfig)`` to build for ``D``: the default, the default with the atomic
    backward, and with ``candidates`` every tuning candidate (both paths; ``tuning_candidates``)."""
    import attnmath.flash_triton as ft
    from bench_flash_gpu import atomic_candidates, tuning_candidates

    base = ft.kernel_config(D, dtype)
    settings = [("default", base), ("atomic", base._replace(dq_atomic=True))]
    if candidates:
        settings += [(f"cand{i}", c) for i, c in enumerate(tuning_candidates(D)) if c != base]
        settings += [(f"atom{i}", c) for i, c in enumerate(atomic_candidates(D))
                     if c != base._replace(dq_atomic=True)]
    return settings


def _versions() -> dict:
    import datetime
    import platform

    import torch
    import triton

    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    release = subprocess.run([str(ptxas), "--version"], capture_output=True, text=True).stdout
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "target": "sm_90a (H100/H200), compiled without a GPU",
            "python": platform.python_version(), "torch": torch.__version__,
            "triton": triton.__version__,
            "ptxas": next((ln for ln in release.splitlines() if "release" in ln), release.strip())}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", action="store_true", help="also the tuning candidates")
    parser.add_argument("--dtype", default="fp16", choices=("fp16", "bf16"))
    parser.add_argument("--json", type=Path, help="also write the rows, with date and versions, here")
    args = parser.parse_args(argv)
    os.environ.pop("TRITON_INTERPRET", None)
    import torch

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    print(f"{'D':>4} {'causal':>6} {'setting':>8} {'path':>6} {'kernel':>22} {'regs':>5} {'spill B':>8} "
          f"{'smem KiB':>9} {'HGMMA':>6} {'HMMA':>5} {'atom':>5}")
    rows, built = [], set()
    for D in (64, 128):
        for causal in (False, True):
            for label, cfg in settings_of(D, dtype, args.candidates):
                for path, kernel, consts, warps, stages in kernels_of(cfg, D, causal, even=True):
                    key = (kernel.__name__, tuple(sorted(consts.items())), warps, stages)
                    if key in built:  # the same build under another setting's name
                        continue
                    built.add(key)
                    r = compile_one(kernel, consts, args.dtype, warps, stages)
                    rows.append(dict(r, D=D, causal=causal, setting=label, path=path, config=list(cfg),
                                     warps=warps, stages=stages))
                    print(f"{D:>4} {causal!s:>6} {label:>8} {path:>6} {r['kernel']:>22} {r['regs']:>5} "
                          f"{r['spill_bytes']:>8} {r['shared_bytes'] / 1024:>9.1f} {r['hgmma']:>6} "
                          f"{r['hmma']:>5} {r['atomic_adds']:>5}", flush=True)
    if args.json is not None:
        record = dict(_versions(), dtype=args.dtype, rows=rows)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
