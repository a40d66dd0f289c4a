"""Compile the Triton flash kernels for an H100 (sm_90) without a GPU and print their resources.

For each kernel (forward, ``dK, dV``, ``dQ``) and each setting asked for, Triton's own compiler
and ``ptxas`` build the kernel; the report gives the registers per thread, the bytes spilled to
local memory, the shared memory, and how many Hopper warpgroup matrix instructions (``HGMMA``)
and older ones (``HMMA``) the machine code holds. It costs no GPU time, so candidate settings for
the GPU benchmark's tuning pass (``bench/bench_flash_gpu.py --tune``) are screened here first.

Usage::

    python bench/compile_flash_triton.py                  # the default settings, fp16, D 64 and 128
    python bench/compile_flash_triton.py --candidates     # also every tuning candidate
"""

from __future__ import annotations

import argparse
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
_FLOAT_POINTERS = {"Lse", "Delta"}


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
    return sass.count("HGMMA"), len(re.findall(r"\bHMMA\b", sass))


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
    hgmma, hmma = _sass_counts(compiled.asm["cubin"], tools)
    return {"kernel": kernel.__name__.strip("_"), "regs": regs, "spill_bytes": spills,
            "shared_bytes": int(compiled.metadata.shared), "hgmma": hgmma, "hmma": hmma}


def kernels_of(cfg, D: int, causal: bool, even: bool):
    """``(kernel, constexprs, warps, stages)`` of the three launches for one setting."""
    import attnmath.flash_triton as ft

    common = {"HEAD_DIM": D, "CAUSAL": causal, "DOT_PRECISION": "tf32", "EMULATE_BF16": False}
    return [
        (ft._flash_fwd_kernel, dict(common, BLOCK_M=cfg.fwd_m, BLOCK_N=cfg.fwd_n, EVEN_N=even),
         cfg.fwd_warps, cfg.fwd_stages),
        (ft._flash_bwd_dkdv_kernel, dict(common, BLOCK_M=cfg.dkdv_m, BLOCK_N=cfg.dkdv_n, EVEN_M=even),
         cfg.dkdv_warps, cfg.bwd_stages),
        (ft._flash_bwd_dq_kernel, dict(common, BLOCK_M=cfg.dq_m, BLOCK_N=cfg.dq_n, EVEN_N=even),
         cfg.dq_warps, cfg.bwd_stages),
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", action="store_true", help="also the tuning candidates")
    parser.add_argument("--dtype", default="fp16", choices=("fp16", "bf16"))
    args = parser.parse_args(argv)
    os.environ.pop("TRITON_INTERPRET", None)
    import torch

    import attnmath.flash_triton as ft
    from bench_flash_gpu import tuning_candidates

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    print(f"{'D':>4} {'causal':>6} {'setting':>10} {'kernel':>22} {'regs':>5} {'spill B':>8} "
          f"{'smem KiB':>9} {'HGMMA':>6} {'HMMA':>5}")
    for D in (64, 128):
        settings = [("default", ft.kernel_config(D, dtype))]
        if args.candidates:
            settings += [(f"cand{i}", c) for i, c in enumerate(tuning_candidates(D))]
        for causal in (False, True):
            for label, cfg in settings:
                for kernel, consts, warps, stages in kernels_of(cfg, D, causal, even=True):
                    r = compile_one(kernel, consts, args.dtype, warps, stages)
                    print(f"{D:>4} {causal!s:>6} {label:>10} {r['kernel']:>22} {r['regs']:>5} "
                          f"{r['spill_bytes']:>8} {r['shared_bytes'] / 1024:>9.1f} {r['hgmma']:>6} "
                          f"{r['hmma']:>5}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
