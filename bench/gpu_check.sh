#!/usr/bin/env bash
# The GPU check of the Triton flash kernels, in one call on a machine with a CUDA GPU, PyTorch,
# Triton, pytest and pytest-xdist (nothing is installed), in order of worth:
#   1. the versions and the device;
#   2. correctness natively: the kernels' tests (both backward paths, the finite check without
#      a wait) without the interpreter;
#   3. bench/bench_flash_gpu.py: relative errors against float32 SDPA (both backward paths),
#      the atomic backward's tuning pass, CS336's leaderboard configuration (B=1, N=16384,
#      16 heads, d=64, bf16, causal, forward+backward), then the grid, forward+backward first:
#      the default call (its finite check without a wait), the kernels alone with the split
#      and the atomic backward, and SDPA's backends, with the FlashAttention SDPA runs named
#      and FlashAttention-3 as a column where torch can switch it in.
# Everything it prints and the benchmark's JSON (device, date, versions in it) go to $OUT
# (default /tmp/gpu-check): versions.txt, tests.txt, bench.txt, flash_gpu.json.
#
#   bash bench/gpu_check.sh [SECONDS]    # SECONDS: the whole run's budget, 540 by default
#   bash bench/gpu_check.sh --dry-run    # no GPU: the plumbing of every step, nothing timed
#   BENCH_ARGS=--tune bash bench/gpu_check.sh  # also tune the split path (default --tune-atomic)
#   GPU_TESTS=0 bash bench/gpu_check.sh  # the benchmark alone, without the tests
#
# The benchmark starts no new configuration once the budget is spent, and writes its JSON after
# every configuration, so a run cut short keeps what it measured. With --dry-run the tests are
# only collected and the benchmark runs each step once on tiny CPU tensors (Triton's
# interpreter), so that a typo fails here and not in a GPU session.
set -u
cd "$(dirname "$0")/.."
dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
budget=${1:-540}
start=$(date +%s)
export PYTHONPATH="$PWD/lib${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
PY=${PYTHON:-python3}
tests="tests/attnmath/test_flash_triton.py tests/attnmath/test_flash_triton_check.py"

{
  date -u '+%Y-%m-%d %H:%M UTC'
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm --format=csv \
    || echo "nvidia-smi: not available here"
  "$PY" - <<'EOF'
import sys, torch, triton
line = (f"python {sys.version.split()[0]}; torch {torch.__version__} (CUDA {torch.version.cuda}); "
        f"triton {triton.__version__}")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    line += f"; {p.name}, {p.multi_processor_count} SMs, {p.total_memory / 2**30:.1f} GiB"
print(line)
EOF
} 2>&1 | tee "$OUT/versions.txt"

if [ "${GPU_TESTS:-1}" != 0 ]; then
  if [ $dry = 1 ]; then
    echo "== $tests: collected only (dry run)"
    "$PY" -m pytest $tests -p no:cacheprovider -q --collect-only > "$OUT/tests.txt" 2>&1
  else
    echo "== $tests, natively"
    timeout 170 "$PY" -m pytest $tests -p no:cacheprovider -q -n 8 > "$OUT/tests.txt" 2>&1
  fi
  echo "pytest exit code $?" >> "$OUT/tests.txt"
  tail -n 25 "$OUT/tests.txt"
fi

left=$(( budget - ($(date +%s) - start) - 25 ))
bench_args=${BENCH_ARGS---tune-atomic}
[ $dry = 1 ] && bench_args="$bench_args --dry-run"
echo "== bench/bench_flash_gpu.py $bench_args, ${left} s left"
"$PY" bench/bench_flash_gpu.py $bench_args --budget-s "$left" --out "$OUT/flash_gpu.json" \
  > "$OUT/bench.txt" 2>&1
status=$?
echo "bench exit code $status" >> "$OUT/bench.txt"
grep -v '^  tune' "$OUT/bench.txt" | grep -v '^  [a-z_]* fwd' | tail -n 110
echo "== done in $(( $(date +%s) - start )) s"
exit $status
