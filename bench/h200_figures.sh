#!/bin/bash
# One device call that re-measures the headline figures on the H200 after a change meant not to
# move them, and the streamed MSM against the build before it, everything tarred into one file
# under $OUT (the device tool returns 8 files at most):
#   1. a 32 GiB PoRep through the daemon, whole device, TEST key made on the GPU
#      (bench/e2e/porep32g_h200.sh PHASE=prep then PHASE=e2e, SINGLE_RUNS proofs);
#   2. the kernel rows of bench/cuda/h200_run.sh (KERNEL_SPECS);
#   3. prove 2^26 with the whole key streamed at a 24 GiB limit, the old build and its own Python
#      (.device-carry/old/libcuzk_cuda.so and .device-carry/old/src, `git archive <base> cuzk_plugin`)
#      against the new one, same inputs, every proof verified on the CPU (each run from its own
#      package's folder: `python -m` puts the working directory first on the path).
# Run with carry [".whl", "cuzk_plugin/backends/cuda/build", ".device-carry/old"], command
#   timeout 565 bash bench/h200_figures.sh; tar czf $OUT/figures.tgz -C /tmp figures
# (the tar outside, so that what ran comes back when the deadline cuts the script short).
set -u
O=/tmp/figures; rm -rf "$O"; mkdir -p "$O"
NEW=$PWD/cuzk_plugin/backends/cuda/build OLD=$PWD/.device-carry/old
echo "${COMMIT:-$(git rev-parse HEAD 2>/dev/null)}" >"$O/commit.txt"  # COMMIT: the caller's HEAD (the device's git may lag its tree)
OUT=$O/e2e PHASE=prep CIRCUITS=porep-32g WITNESS_BENCH=0 CHECK_TIMEOUT=1 TEST_K=small_device CUDA_LIB=$NEW/libcuzk_cuda.so \
    timeout 150 bash bench/e2e/porep32g_h200.sh >"$O/prep.log" 2>&1
echo "prep rc=$?"
OUT=$O/e2e PHASE=e2e CUDA_LIB=$NEW/libcuzk_cuda.so SINGLE_RUNS=${SINGLE_RUNS:-3} BATCH_COUNT=0 SNAP_RUNS=0 WIN_RUNS=0 \
    timeout "${E2E_TIMEOUT:-220}" bash bench/e2e/porep32g_h200.sh >"$O/e2e.log" 2>&1
echo "e2e rc=$?"; grep -E "cold start|latency_ms|rc=" "$O/e2e.log" | head -12
pkill -TERM -f cuzk_plugin.cli.daemon; sleep 2
OUT=$O/kernels SKIP_TESTS=1 CUZK_CUDA_LIBRARY=$NEW/libcuzk_cuda.so \
    BENCH_SPECS="${KERNEL_SPECS:-msm-g1:27:3 prove:27:5:0.95}" bash bench/cuda/h200_run.sh >"$O/kernels.log" 2>&1
grep -E "^cuda" "$O/kernels/bench.txt"
for lib in old new; do
    dir=$NEW src=$PWD; [ "$lib" = old ] && dir=$OLD src=$OLD/src
    echo "# $lib library, prove 2^26, whole key streamed in 2^24 chunks, 1 in flight, limit 24 GiB" >>"$O/ab.txt"
    (cd "$src" && PYTHONPATH=/tmp/site:$src CUZK_CUDA_LIBRARY=$dir/libcuzk_cuda.so timeout 150 python3 -m cuzk_plugin.cli.bench kernels \
        --backend cuda --op prove --log2 26 --repeat 3 --resident none --stream-chunk-log2 24 --in-flight 1 \
        --memory-limit-gib 24) >>"$O/ab.txt" 2>&1
    echo "rc=$?" >>"$O/ab.txt"
done
cat "$O/ab.txt"
