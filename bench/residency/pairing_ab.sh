#!/bin/bash
# One device call: the GPU suite under a 24 GiB hold (the rest of the card held by another
# process), then an A/B of the MSMs run in turn against paired ones (prove.cu, pair_fits) on the
# benchmark circuit with its whole key streamed, one partition in flight and the planning limit
# of a small card (`kernels --op prove --memory-limit-gib`), every proof verified on the CPU.
# Build here first: the new library into cuzk_plugin/backends/cuda/build, the baseline's (the
# commit before) into .device-carry/old:
#   .venv/bin/python -m cuzk_plugin.backends.cuda.build
#   git worktree add /tmp/wt-old <base> && (cd /tmp/wt-old && /work/main/.venv/bin/python \
#       -m cuzk_plugin.backends.cuda.build --arch 90 --out /work/main/.device-carry/old)
#   mkdir -p .device-carry/old/src && git archive <base> cuzk_plugin | tar x -C .device-carry/old/src
# then the device tool's `run` with carry [".whl", "cuzk_plugin/backends/cuda/build", ".device-carry/old"]:
#   bash bench/residency/pairing_ab.sh
# OLD_LIB: another baseline folder (a library built from this tree with one commit reverted:
# same Python, so no src/). LOG2 (default 26), LIMITS (GiB, default "16 20 24"), CHUNK_LOG2 (points a streamed chunk,
# default 24; a 16 GiB card's plan takes 22), REPEAT (default 3), TESTS=skip, TEST_K (the tests run
# first, under the hold: the newest changes' by default), RESIDENT_BASELINE=0 (skip the resident
# run that bounds what batching partitions per chunk could save; RESIDENT_LIMIT_GIB, default 50). The same A/B
# measures any change to the streamed MSMs (old and new libraries, same inputs).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
NEW=$PWD/cuzk_plugin/backends/cuda/build OLD=${OLD_LIB:-$PWD/.device-carry/old}
{
    date -u +%Y-%m-%dT%H:%M:%SZ
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.free --format=csv,noheader
    nproc; free -g | head -2
} 2>&1 | tee "$OUT/device.txt"
if [ "${TESTS:-}" != skip ]; then
    source bench/device_memory_hold.sh
    hold "${TEST_LIMIT_GIB:-24}"
    CUZK_CUDA_LIBRARY=$NEW/libcuzk_cuda.so timeout "${TEST_TIMEOUT:-240}" python3 -m pytest tests/gpu -q -rfEs \
        -p no:cacheprovider --backend cuda -s -k "${TEST_K:-msm_streamed or two_buffers or cancel or pair or in_turn or small_device}" \
        >"$OUT/tests-focus.txt" 2>&1
    echo "focus tests rc=$? (${TEST_LIMIT_GIB:-24} GiB held)"; grep -E "^2\^|cancelled|passed|failed|Error" "$OUT/tests-focus.txt" | tail -12
    CUZK_CUDA_LIBRARY=$NEW/libcuzk_cuda.so timeout "${TEST_TIMEOUT:-240}" python3 -m pytest tests/gpu -q -rfEs \
        -p no:cacheprovider --backend cuda >"$OUT/tests.txt" 2>&1
    echo "gpu tests rc=$? (${TEST_LIMIT_GIB:-24} GiB held)"; tail -6 "$OUT/tests.txt"
    unhold
fi
for limit in ${LIMITS:-16 20 24}; do
    for lib in old new; do
        dir=$NEW; [ "$lib" = old ] && dir=$OLD
        echo "# $lib library, prove 2^${LOG2:-26}, whole key streamed in 2^${CHUNK_LOG2:-24} chunks, 1 in flight," \
            "limit $limit GiB" | tee -a "$OUT/bench.txt"
        # The old library with its own Python where carried (`git archive <base> cuzk_plugin` in
        # .device-carry/old/src), run from there: `python -m` puts the working directory first.
        src=$PWD; [ "$lib" = old ] && [ -d "$OLD/src/cuzk_plugin" ] && src=$OLD/src
        (cd "$src" && PYTHONPATH=/tmp/site:$src CUZK_CUDA_LIBRARY=$dir/libcuzk_cuda.so timeout "${BENCH_TIMEOUT:-150}" \
            python3 -m cuzk_plugin.cli.bench kernels --backend cuda --op prove --log2 "${LOG2:-26}" --repeat "${REPEAT:-3}" \
            --resident none --stream-chunk-log2 "${CHUNK_LOG2:-24}" --in-flight 1 --memory-limit-gib "$limit") 2>&1 \
            | tee -a "$OUT/bench.txt"
        echo "rc=${PIPESTATUS[0]}" | tee -a "$OUT/bench.txt"
    done
done
# The floor any batching of partitions per streamed chunk could reach (issue 26, item 3): the
# same partitions with the whole key resident, so that no chunk is copied at all, under a limit
# that leaves them the working room of the streamed runs at 20 GiB (the resident 2^26 key holds
# 30 GiB: h, l, a and b_g2; b_g1 shares a's points), so that both run their MSMs in turn.
if [ "${RESIDENT_BASELINE:-1}" = 1 ]; then
    limit=${RESIDENT_LIMIT_GIB:-50}
    echo "# new library, prove 2^${LOG2:-26}, whole key resident, 1 in flight, limit $limit GiB" | tee -a "$OUT/bench.txt"
    CUZK_CUDA_LIBRARY=$NEW/libcuzk_cuda.so timeout "${BENCH_TIMEOUT:-150}" python3 -m cuzk_plugin.cli.bench kernels \
        --backend cuda --op prove --log2 "${LOG2:-26}" --repeat "${REPEAT:-3}" --in-flight 1 \
        --resident h,l,a,b_g1,b_g2 --memory-limit-gib "$limit" 2>&1 | tee -a "$OUT/bench.txt"
    echo "rc=${PIPESTATUS[0]}" | tee -a "$OUT/bench.txt"
fi
date -u +%Y-%m-%dT%H:%M:%SZ >>"$OUT/device.txt"
