#!/bin/bash
# One device call from a fresh machine: 32 GiB proofs through the daemon at device limits, each
# part a fresh daemon whose TEST key is made on the lane with the whole device (PreloadSRS), the
# rest of the device then held by another process (porep32g_h200.sh HOLD_AT=preload), so that an
# overrun fails (on a card under 100 GB the porep key is written as a .params file first,
# PHASE=testkey, and loaded from it). PARTS (default "snap-24 porep-24 porep-80 porep-none"):
# KIND-LIMIT_GIB (none: the whole device; a limit the card does not exceed is skipped), KIND
# porep (RUNS proofs, then a C1 with one flipped byte) or snap (RUNS proofs). RUNS: default 2;
# NONE_BATCH (default 0): a porep-none part then proves that many with two in flight
# (`cuzk-bench batch -j 2`, the proofs/hour). The prep makes
# the pre-compiled circuits (SnapDeals' only for a snap part) and the test data; TEST_K picks GPU
# tests to run beside them (default: none). Each part's timing summary is printed; everything is
# tarred into $OUT/kinds-at-limits.tgz, also when DEADLINE_S (default 560) cuts it short.
# Run with carry [".whl", "cuzk_plugin/backends/cuda/build"]: bash bench/residency/kinds_at_limits.sh
# An A/B of two libraries: a part named KIND-LIMIT@old runs on OLD_LIB's library (default
# .device-carry/old, carried too: the baseline's libcuzk_cuda.so built from its own worktree,
# `python -m cuzk_plugin.backends.cuda.build --arch 90 --out .device-carry/old`); same Python.
set -u
FINAL=${OUT:-/tmp/out}; O=/tmp/kinds-at-limits; rm -rf "$O"; mkdir -p "$O" "$FINAL"
echo "${COMMIT:-$(git rev-parse HEAD 2>/dev/null)}" >"$O/commit.txt"  # COMMIT: the caller's HEAD (the device's git may lag its tree)
nvidia-smi --query-gpu=name,pci.bus_id,pcie.link.gen.max,pcie.link.gen.current,pcie.link.width.current \
    --format=csv >"$O/link.txt" 2>&1; cat "$O/link.txt"
export CUDA_LIB=$PWD/cuzk_plugin/backends/cuda/build/libcuzk_cuda.so
timeout "${DEADLINE_S:-560}" bash -c '
    part() {  # KIND-LIMIT or KIND-LIMIT@old
        local name=$1 lib=$CUDA_LIB
        [ "${1#*@}" = old ] && lib=${OLD_LIB:-$PWD/.device-carry/old}/libcuzk_cuda.so && set -- "${1%@*}"
        local kind=${1%-*} limit=${1##*-} runs=${RUNS:-2} porep=0 snap=0 batch=0
        [ "$limit" = none ] && limit= && [ "$kind" = porep ] && batch=${NONE_BATCH:-0}  # the whole device
        if [ -n "$limit" ] && [ $((limit * 1024)) -ge "$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)" ]; then
            echo "## $name: skipped (the card has no more than $limit GiB: a none part measures it)"; return
        fi
        if [ "$kind" = porep ]; then porep=$runs; else snap=$runs; fi
        if [ "$kind" = porep ] && [ ! -s .device-cache/params/porep-32g-test-key.params ] \
            && [ "$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)" -lt 100000 ]; then
            OUT=$0 PHASE=testkey bash bench/e2e/porep32g_h200.sh >"$0/testkey.log" 2>&1  # keygen on the lane needs ~100 GB
            echo "testkey rc=$? at $(date -u +%T)"
        fi
        mkdir -p "$0/$name"
        CUDA_LIB=$lib OUT="$0/$name" PHASE=e2e HOLD_AT=preload BUDGET=200GiB BATCH_COUNT=$batch WIN_RUNS=0 LIMIT_GIB=$limit \
            SINGLE_RUNS=$porep SNAP_RUNS=$snap timeout $((240 + 20 * batch)) bash bench/e2e/porep32g_h200.sh >"$0/$name/run.log" 2>&1
        echo "## $name: rc=$? at $(date -u +%T)"
        # Bracketed patterns: this bash -c script holds its own pkill lines, and a plain pattern
        # matched (and killed) it after the first part.
        pkill -TERM -f "cuzk_plugin[.]cli[.]daemon"; pkill -f "c[p][.]empty"; sleep 3
        pkill -KILL -f "cuzk_plugin[.]cli[.]daemon"
        grep -E "daemon up|cold start|preload [0-9]|single [0-9]|snap [0-9]|batch rc|proofs_per_s|\"wall_s|\"completed|latency_ms|bad C1|device memory|device link|Error|error" \
            "$0/$name/run.log" | cut -c1-300 | head -20
        grep -E "residency |host blocks|device link|CUZK_TIMING.*kind=" "$0/$name/daemon.log" 2>/dev/null | cut -c1-400 | head -8
        python3 bench/residency/timing_summary.py "$0/$name"
    }
    circuits=porep-32g; case " ${PARTS:-snap-24} " in *" snap-"*) circuits="porep-32g snap-32g";; esac
    OUT=$0 PHASE=prep CIRCUITS="$circuits" WITNESS_BENCH=0 CHECK_TIMEOUT=1 TEST_K="${TEST_K-no_such_test}" \
        bash bench/e2e/porep32g_h200.sh >"$0/prep.log" 2>&1; echo "prep rc=$? at $(date -u +%T)"
    grep -E "rc=" "$0/prep.log" | tail -6
    for p in ${PARTS:-snap-24 porep-24 porep-80 porep-none}; do part "$p"; done
' "$O"
echo "rc=$?"
tar czf "$FINAL/kinds-at-limits.tgz" -C /tmp kinds-at-limits
