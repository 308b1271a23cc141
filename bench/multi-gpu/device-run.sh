#!/usr/bin/env bash
# One call on a multi-GPU machine (nvidia-h200-x2 / -x4): install the carried wheels, build the
# CUDA library, then (1) bench/multi-gpu/run.sh: the daemon on 1, 2 and all GPUs, and (2) with
# CEILING=1, the 2^27 benchmark partition proved by `cuzk-bench kernels` in one process per GPU
# at once (no daemon: what the devices give with no host sharing). Everything lands in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD CUZK_BENCH_PARAMS=/tmp/params
{
  date -u +%Y-%m-%dT%H:%MZ
  git log -1 --format='commit %H' 2>/dev/null || cat .device-carry/commit.txt 2>/dev/null || true
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  nproc
} | tee "$OUT/device.txt"
t0=$(date +%s); python3 -m cuzk_plugin.backends.cuda.build -j "$(nproc)" > "$OUT/cuda_build.log" 2>&1
echo "cuda build rc=$? in $(( $(date +%s) - t0 ))s" | tee -a "$OUT/device.txt"
python3 -c "from cuzk_plugin.backends.registry import probe; print('cuda probe:', probe('cuda'))" | tee -a "$OUT/device.txt"
PY=python3 OUT="$OUT" timeout "${DAEMON_TIMEOUT:-420}" bench/multi-gpu/run.sh > "$OUT/scaling.jsonl" 2> "$OUT/scaling.err"
echo "daemon scaling rc=$?"; cut -c1-400 "$OUT/scaling.jsonl"; tail -5 "$OUT/scaling.err"
if [ "${CEILING:-0}" = 1 ]; then
  ndev=$(nvidia-smi -L | wc -l)
  for n in 1 $ndev; do
    for i in $(seq 0 $((n - 1))); do
      CUDA_VISIBLE_DEVICES=$i timeout 240 python3 -m cuzk_plugin.cli.bench kernels --backend cuda --op prove --log2 27 \
        --repeat 3 > "$OUT/ceiling-$n-gpu$i.txt" 2>&1 &
    done
    wait
    tail -n 3 "$OUT"/ceiling-$n-gpu*.txt
  done
fi
