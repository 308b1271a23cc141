#!/bin/bash
# One device call: the GPU suite (streamed-key tests included), the host -> device bandwidth of
# page-locked memory, then `kernels --op prove --log2 27` under residency plans (every vector
# resident; some streamed from the page-locked host copy; all streamed), every proof verified
# on the CPU; everything logged under $OUT.
# Build here first, then the device tool's `run` with carry [".whl", "cuzk_plugin/backends/cuda/build"]:
#   .venv/bin/python -m cuzk_plugin.backends.cuda.build      # sm_90 (H100, H200)
#   bash bench/cuda/residency_run.sh
# FULL_PLANS (default "all": nothing streamed) run on the whole device, then PLANS (default "h,l,a,b_g1 none")
# under LIMIT_GIB;
# TESTS=skip leaves the suite out; LOG2 (default 27), REPEAT (default 2); LIMIT_GIB (default 80) the
# device memory left to the benchmark (the rest held by another process).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export CUZK_CUDA_LIBRARY=$PWD/cuzk_plugin/backends/cuda/build/libcuzk_cuda.so
{
    date -u +%Y-%m-%dT%H:%M:%SZ
    echo "commit $(git rev-parse HEAD 2>/dev/null || cat .commit 2>/dev/null)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.free,pcie.link.gen.current,pcie.link.width.current --format=csv
    free -g | head -2
    python3 - <<'EOF'
import time, cupy as cp, numpy as np
n = 4 << 30
host = cp.cuda.alloc_pinned_memory(n)
src = np.frombuffer(host, dtype=np.uint8, count=n)
dst = cp.empty(n, dtype=cp.uint8)
times = []
for _ in range(5):
    cp.cuda.Device().synchronize(); t0 = time.perf_counter()
    dst.set(src); cp.cuda.Device().synchronize(); times.append(time.perf_counter() - t0)
times.sort()
print(f"pinned host -> device: {n / times[len(times) // 2] / 1e9:.1f} GB/s median of 5 (4 GiB copies; spread "
      f"{n / times[-1] / 1e9:.1f}-{n / times[0] / 1e9:.1f})")
EOF
} 2>&1 | tee "$OUT/device.txt"
if [ "${TESTS:-}" != skip ]; then
    # The streamed-key tests first (the new code), then the rest of the GPU suite.
    timeout 120 python3 -m pytest tests/gpu/test_cuda_residency.py tests/test_params_test_key.py \
        "tests/conformance/test_residency_plans.py" --backend cuda -q -rfEs -p no:cacheprovider >"$OUT/tests-residency.txt" 2>&1
    echo "residency tests rc=$?"; tail -8 "$OUT/tests-residency.txt"
    timeout ${TEST_TIMEOUT:-200} python3 -m pytest tests/gpu -q -rfEs -p no:cacheprovider \
        --deselect tests/gpu/test_cuda_residency.py >"$OUT/tests.txt" 2>&1
    echo "tests rc=$?"; tail -12 "$OUT/tests.txt"
fi
bench_plan() {  # $1: --resident value, or "all"
    echo "# prove 2^${LOG2:-27}, resident: $1" | tee -a "$OUT/bench.txt"
    args=()
    [ "$1" != all ] && args=(--resident "$1" --stream-chunk-log2 "${STREAM_CHUNK_LOG2:-24}")
    timeout ${BENCH_TIMEOUT:-120} python3 -m cuzk_plugin.cli.bench kernels --backend cuda --op prove --log2 "${LOG2:-27}" \
        --repeat "${REPEAT:-2}" "${args[@]}" 2>&1 | tee -a "$OUT/bench.txt"
    echo "rc=${PIPESTATUS[0]}" | tee -a "$OUT/bench.txt"
}
# The baseline on the whole device, then the smaller card.
for plan in ${FULL_PLANS:-all}; do bench_plan "$plan"; done
# A smaller card emulated (default 80 GiB: an H100's), the rest held by another process.
source bench/device_memory_hold.sh
hold "${LIMIT_GIB:-80}"
nvidia-smi --query-gpu=memory.total,memory.used,memory.free --format=csv | tee -a "$OUT/bench.txt"
for plan in ${PLANS:-h,l,a,b_g1 none}; do bench_plan "$plan"; done
unhold
date -u +%Y-%m-%dT%H:%M:%SZ >>"$OUT/device.txt"
