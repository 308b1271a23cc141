#!/bin/bash
# One device call from a fresh machine (~8 min on an H200): SnapDeals 32 GiB through the daemon at
# a 24 GiB device limit (SNAP_RUNS, default 2), then PoRep 32 GiB at 80 GiB (SINGLE_RUNS, default
# 2). Each TEST key is made on the lane with the whole device (PreloadSRS), then the rest of the
# device is held by another process (porep32g_h200.sh HOLD_AT=preload), so an overrun fails.
# The prep makes both pre-compiled circuits and the test data; TEST_K picks GPU tests to run
# beside them (default: none). Each part's timing summary is printed; everything is tarred into
# $OUT/snap-porep80.tgz, also when DEADLINE_S (default 560) cuts it short.
# Run with carry [".whl", "cuzk_plugin/backends/cuda/build"]: bash bench/residency/snap24_porep80.sh
set -u
FINAL=${OUT:-/tmp/out}; O=/tmp/snap-porep80; rm -rf "$O"; mkdir -p "$O" "$FINAL"
git rev-parse HEAD >"$O/commit.txt" 2>/dev/null
export CUDA_LIB=$PWD/cuzk_plugin/backends/cuda/build/libcuzk_cuda.so
timeout "${DEADLINE_S:-560}" bash -c '
    part() {  # NAME then the environment of porep32g_h200.sh PHASE=e2e
        local name=$1; shift; mkdir -p "$0/$name"
        env OUT="$0/$name" PHASE=e2e HOLD_AT=preload BUDGET=200GiB BATCH_COUNT=0 WIN_RUNS=0 "$@" \
            timeout 240 bash bench/e2e/porep32g_h200.sh >"$0/$name/run.log" 2>&1
        echo "## $name: rc=$? at $(date -u +%T)"
        pkill -TERM -f cuzk_plugin.cli.daemon; pkill -f "cp.empty"; sleep 3; pkill -KILL -f cuzk_plugin.cli.daemon
        grep -E "daemon up|cold start|preload [0-9]|single [0-9]|snap [0-9]|latency_ms|bad C1|device memory|Error|error" \
            "$0/$name/run.log" | cut -c1-300 | head -20
        grep -E "residency |CUZK_TIMING.*kind=" "$0/$name/daemon.log" 2>/dev/null | cut -c1-400 | head -8
        python3 bench/residency/timing_summary.py "$0/$name"
    }
    OUT=$0 PHASE=prep CIRCUITS="porep-32g snap-32g" WITNESS_BENCH=0 CHECK_TIMEOUT=1 TEST_K="${TEST_K-no_such_test}" \
        bash bench/e2e/porep32g_h200.sh >"$0/prep.log" 2>&1; echo "prep rc=$? at $(date -u +%T)"
    grep -E "rc=" "$0/prep.log" | tail -6
    part snap-24 LIMIT_GIB=24 SNAP_RUNS=${SNAP_RUNS:-2} SINGLE_RUNS=0
    part porep-80 LIMIT_GIB=80 SNAP_RUNS=0 SINGLE_RUNS=${SINGLE_RUNS:-2}
' "$O"
echo "rc=$?"
tar czf "$FINAL/snap-porep80.tgz" -C /tmp snap-porep80
