#!/bin/bash
# One call on the GPU machine: GPU tests, then kernel benchmarks; everything logged under $OUT.
# Usage (from the repo root, library built here and carried):
#   bash bench/cuda_device_run.sh "<pytest args or 'skip'>" "<bench spec ...>"
# A bench spec is op:log2:repeat[:window[:VAR=value]], e.g. msm-g1:24:5 ntt:27:10
# msm-g1:27:3:0:CZ_MSM_ACCUMULATE=inline.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
# Every carried wheel (py_arkworks_bls12381, and pyopencl with its dependencies, so the
# OpenCL conformance tests run on NVIDIA's OpenCL too instead of skipping).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export CUZK_CUDA_LIBRARY=$PWD/cuzk_plugin/backends/cuda/build/libcuzk_cuda.so
{
    date -u +%Y-%m-%dT%H:%MZ
    git log -1 --format='commit %H' 2>/dev/null || true
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv
} | tee "$OUT/device.txt"
TESTS=$1
shift
if [ "$TESTS" != skip ]; then
    timeout 300 python3 -m pytest $TESTS -rfEs -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests.txt"
fi
for spec in "$@"; do
    IFS=: read -r op log2 repeat window envset <<<"$spec"
    echo "# $spec" >>"$OUT/bench.txt"
    timeout 240 env ${envset:-CZ_BENCH=1} python3 -m cuzk_plugin.cli.bench kernels --backend cuda --op "$op" --log2 "$log2" \
        --repeat "$repeat" --window "${window:-0}" 2>&1 | tee -a "$OUT/bench.txt"
done
echo "=== summary"; cat "$OUT/bench.txt" 2>/dev/null; tail -3 "$OUT/gpu-tests.txt" 2>/dev/null
