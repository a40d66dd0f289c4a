#!/usr/bin/env bash
# The GPU check of the Triton flash kernels, in one call on a machine with a CUDA GPU, PyTorch,
# Triton, pytest and pytest-xdist (nothing is installed): the versions, the kernels' tests run
# natively (no interpreter), then the GPU benchmark with its tuning pass. Everything it prints
# and the benchmark's JSON go to $OUT (default /tmp/gpu-check).
#
#   bash bench/gpu_check.sh [SECONDS]    # SECONDS: the whole run's budget, 400 by default
#   BENCH_ARGS= bash bench/gpu_check.sh  # the benchmark without its tuning pass (default --tune)
#   GPU_TESTS=0 bash bench/gpu_check.sh  # the benchmark alone, without the tests
#
# The benchmark starts no new configuration once the budget is spent, and writes its JSON after
# every configuration, so a run cut short keeps what it measured.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
budget=${1:-400}
start=$(date +%s)
export PYTHONPATH="$PWD/lib${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
PY=${PYTHON:-python3}

{
  date -u '+%Y-%m-%d %H:%M UTC'
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm --format=csv
  "$PY" - <<'EOF'
import sys, torch, triton
p = torch.cuda.get_device_properties(0)
print(f"python {sys.version.split()[0]}; torch {torch.__version__} (CUDA {torch.version.cuda}); "
      f"triton {triton.__version__}; {p.name}, {p.multi_processor_count} SMs, "
      f"{p.total_memory / 2**30:.1f} GiB")
EOF
} 2>&1 | tee "$OUT/versions.txt"

if [ "${GPU_TESTS:-1}" != 0 ]; then
echo "== tests/attnmath/test_flash_triton.py, natively"
timeout 170 "$PY" -m pytest tests/attnmath/test_flash_triton.py -p no:cacheprovider -q -n 8 \
  --junitxml="$OUT/tests.xml" > "$OUT/tests.txt" 2>&1
echo "pytest exit code $?" >> "$OUT/tests.txt"
tail -n 25 "$OUT/tests.txt"
fi

left=$(( budget - ($(date +%s) - start) - 20 ))
bench_args=${BENCH_ARGS---tune}
echo "== bench/bench_flash_gpu.py $bench_args, ${left} s left"
"$PY" bench/bench_flash_gpu.py $bench_args --budget-s "$left" --out "$OUT/flash_gpu.json" \
  > "$OUT/bench.txt" 2>&1
echo "bench exit code $?" >> "$OUT/bench.txt"
grep -v '^  ' "$OUT/bench.txt" | tail -n 120
echo "== done in $(( $(date +%s) - start )) s"
