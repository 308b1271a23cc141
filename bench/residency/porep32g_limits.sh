#!/bin/bash
# A 32 GiB PoRep through the daemon at each device limit in LIMITS (GiB; "none": the whole
# device), after `PHASE=prep` and `PHASE=testkey` of bench/e2e/porep32g_h200.sh in the same
# warm machine (the pre-compiled circuit, the sparse C1 and the porep-32g TEST key written as a
# .params file, all under .device-cache/). Each limit: a fresh daemon on that file (cold start
# measured), SINGLE_RUNS `cuzk-bench single -t porep`, every proof checked on the client, the
# residency plan from `cuzk-bench status`; the rest of the device held by another process.
# CUDA_LIB: the library built here; run with carry [".whl", "cuzk_plugin/backends/cuda/build"]:
#   CUDA_LIB=$PWD/cuzk_plugin/backends/cuda/build/libcuzk_cuda.so LIMITS="80 24" bash bench/residency/porep32g_limits.sh
set -u
OUT=${OUT:-/tmp/out}
KEY=$PWD/.device-cache/params/porep-32g-test-key.params
if [ ! -s "$KEY" ]; then  # made by PHASE=testkey (about 47 GB of device memory: an 80 GB card does)
    echo "no $KEY: run PHASE=prep and PHASE=testkey of bench/e2e/porep32g_h200.sh on this machine first" >&2
    exit 1
fi
for limit in ${LIMITS:-80 24}; do
    dir=$OUT/e2e-$limit; mkdir -p "$dir"
    lim=$limit; [ "$limit" = none ] && lim=
    # [memory] total_budget: before ecb3f1f the budget counted a lane's device copy like host
    # memory (the 2026-12-05 runs); BUDGET keeps those runs' setting.
    OUT=$dir PHASE=e2e LIMIT_GIB=$lim BUDGET=${BUDGET:-200GiB} SINGLE_RUNS=${SINGLE_RUNS:-2} BATCH_COUNT=0 SNAP_RUNS=0 \
        WIN_RUNS=0 timeout "${LIMIT_TIMEOUT:-280}" bash bench/e2e/porep32g_h200.sh >"$dir/run.log" 2>&1
    echo "## limit $limit GiB: rc=$?"
    pkill -TERM -f cuzk_plugin.cli.daemon; pkill -f "cp.empty"; sleep 3; pkill -KILL -f cuzk_plugin.cli.daemon
    grep -E "daemon up|cold start|single [0-9]|latency_ms|bad C1|key porep|device memory|partition\(s\)|Error|error" \
        "$dir/run.log" | cut -c1-300 | head -30
    grep -E "residency porep|pce porep.*loaded|CUZK_TIMING" "$dir/daemon.log" 2>/dev/null | cut -c1-300 | head -14
    python3 bench/residency/timing_summary.py "$dir" | tee "$dir/summary.txt"
done
