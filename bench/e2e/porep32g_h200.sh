#!/bin/bash
# A 32 GiB PoRep C2 end to end on one H200 (issue 13), in two device calls back to back (the
# machine stays warm 30 s; .device-cache/ survives between calls):
#   PHASE=prep  the GPU tests, the pre-compiled porep-32g circuit, a sparse 32 GiB C1 (test
#               fixture), the witness timing of one partition, every partition checked against
#               every recorded row on the GPU (cuzk pce check)
#   PHASE=e2e   cuzk-daemon (CUDA, a TEST key made on the GPU from the pre-compiled circuit),
#               PreloadSRS (cold start), 3 x `cuzk-bench single -t porep`, `cuzk-bench batch -c 4 -j 2`,
#               a C1 with one flipped Merkle byte, every proof checked again on the client
#               (--verify-vk), then SnapDeals and WinningPoSt 32 GiB on the same daemon; device
#               memory sampled, the daemon's peak RSS from /usr/bin/time. SINGLE_RUNS, BATCH_COUNT
#               (0: no batch), SNAP_RUNS and WIN_RUNS size it: at 2026-12-03's speed (60 s a PoRep proof) the
#               defaults need more than one 10-minute call. The daemon's config: SYNTH_THREADS and
#               PARALLEL_SYNTHESIS (partitions synthesized at once, 4), WITNESS_PROCESSES (4 each),
#               GPU_WORKERS (2), LOOKAHEAD (2), BUDGET (the key budget, 120GiB).
#               LIMIT_GIB: a smaller card emulated (issue 26): `[gpus] device_memory_limit` and another
#               process holding the rest of the device's free memory, so that an overrun fails.
#               HOLD_AT=preload holds it after the first PreloadSRS instead of before the daemon
#               starts: a TEST key made on the lane needs the whole device for keygen (Filecoin's
#               own keys, and TEST keys written as .params, need no such step).
#   PHASE=testkey  `cuzk params write-test-key --circuit porep-32g` (the key made on the whole GPU,
#               written in Filecoin's .params layout); the e2e phase then loads that file as it loads
#               Filecoin's own (streamed from one page-locked host copy where the limit asks).
# TEST_LIMIT_GIB (prep): the GPU tests under the same emulation.
# Device tool: run with carry [".whl", ".device-carry"], command
#   PHASE=prep bash bench/e2e/porep32g_h200.sh   then   PHASE=e2e bash bench/e2e/porep32g_h200.sh
# .device-carry/cuda holds the library built here:
#   .venv/bin/python -m cuzk_plugin.backends.cuda.build --arch 90 --out .device-carry/cuda
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
CACHE=$PWD/.device-cache; PARAMS=$CACHE/params; mkdir -p "$PARAMS"
export PYTHONUNBUFFERED=1
if [ ! -d /tmp/site/grpc ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD CUZK_CUDA_LIBRARY=${CUDA_LIB:-$PWD/.device-carry/cuda/libcuzk_cuda.so}
PY=python3
C1=$CACHE/c1-32g.json
stamp() { date -u +%H:%M:%S; }
source bench/device_memory_hold.sh  # hold GIB / unhold
source bench/host_memory_guard.sh  # guard_host_memory PID FILE / unguard

if [ "${PHASE:-prep}" = testkey ]; then
    /usr/bin/time -v $PY -m cuzk_plugin.cli.main params write-test-key --circuit porep-32g --param-cache "$PARAMS" \
        >"$OUT/write-test-key.txt" 2>&1
    echo "write-test-key rc=$? at $(stamp)"; grep -vE "^\s" "$OUT/write-test-key.txt" | tail -15 | cut -c1-300
    grep -E "Elapsed|Maximum resident" "$OUT/write-test-key.txt"; ls -l "$PARAMS"; df -h "$PARAMS" | tail -1
    exit 0
fi

if [ "${PHASE:-prep}" = prep ]; then
    {
        date -u +%Y-%m-%dT%H:%M:%SZ; echo "commit $(cat .device-carry/commit.txt 2>/dev/null)"
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; free -g | head -2
    } | tee "$OUT/device.txt"
    # The circuits (single-threaded recordings, in parallel) and the test data run beside the GPU tests.
    extract() {
        /usr/bin/time -v $PY -m cuzk_plugin.cli.main pce extract --circuit "$1" --param-cache "$PARAMS" \
            >"$OUT/pce-$1.txt" 2>&1
        echo "pce extract $1 rc=$? at $(stamp)" >>"$OUT/pce-$1.txt"
    }
    pids=""
    for circuit in ${CIRCUITS:-porep-32g winning-32g snap-32g}; do extract "$circuit" & pids="$pids $!"; done
    ( [ -s "$C1" ] || /usr/bin/time -v $PY -m cuzk_plugin.filecoin.fixtures.seal --sector-size 32GiB --sparse --out "$C1" \
        >"$OUT/seal.txt" 2>&1; echo "seal rc=$? at $(stamp)" >>"$OUT/seal.txt" ) &
    seal=$!
    ( [ -s "$CACHE/snap/snap-vproof.json" ] || /usr/bin/time -f "%e s wall, %M KB peak RSS" $PY -m cuzk_plugin.filecoin.fixtures.snap_seal \
        --sector-size 32GiB --sparse --out "$CACHE/snap" >"$OUT/snap-data.txt" 2>&1; echo "snap data rc=$? at $(stamp)" >>"$OUT/snap-data.txt" ) &
    snap=$!
    mkdir -p "$CACHE/winning"
    $PY -m cuzk_plugin.filecoin.fixtures.post_seal --kind winning --sector-size 32GiB --sparse --first-sector 4242 --seed 2 \
        --out "$CACHE/winning/vanilla.json" >"$OUT/winning-data.txt" 2>&1
    grep '^cuzk-bench single' "$OUT/winning-data.txt" >"$CACHE/winning/cmd.txt"; tail -2 "$OUT/winning-data.txt"
    [ -n "${TEST_LIMIT_GIB:-}" ] && hold "$TEST_LIMIT_GIB"
    timeout "${TEST_TIMEOUT:-240}" $PY -m pytest tests/gpu -q -rfEs -p no:cacheprovider --backend cuda \
        ${TEST_K:+-k "$TEST_K"} >"$OUT/tests.txt" 2>&1
    echo "gpu tests rc=$? at $(stamp) (${TEST_LIMIT_GIB:-whole device})"; tail -6 "$OUT/tests.txt"
    unhold
    wait $seal; tail -3 "$OUT/seal.txt"
    if [ "${WITNESS_BENCH:-1}" = 1 ] && [ -f bench/synthesis/witness_h200.sh ]; then
        C1="$C1" timeout 150 bash bench/synthesis/witness_h200.sh >"$OUT/witness.txt" 2>&1
        echo "witness rc=$? at $(stamp)"; tail -12 "$OUT/witness.txt"
    fi
    wait $snap; tail -3 "$OUT/snap-data.txt"
    # A cached run prints no command line: keep the one the first run saved.
    snap_line=$(grep -m1 '^cuzk-bench single' "$OUT/snap-data.txt" 2>/dev/null) && echo "$snap_line" >"$CACHE/snap/cmd.txt"
    for p in $pids; do wait "$p"; done
    for f in "$OUT"/pce-*.txt; do grep -E "pce-|Elapsed|Maximum resident|rc=" "$f" | tail -4; done
    ls -l "$PARAMS"
    # Every partition's witness against every recorded row, a, b, c compared on the GPU.
    timeout "${CHECK_TIMEOUT:-150}" /usr/bin/time -v $PY -m cuzk_plugin.cli.main pce check --c1 "$C1" --param-cache "$PARAMS" \
        --backend cuda ${CHECK_PARTITIONS:+--partitions "$CHECK_PARTITIONS"} >"$OUT/pce-check.txt" 2>&1
    echo "pce check rc=$? at $(stamp)"; grep -E "partition|Maximum resident|Error|error" "$OUT/pce-check.txt" | cut -c1-300
    exit 0
fi

# -- PHASE=e2e ----------------------------------------------------------------------------------
SOCK=/tmp/cuzk-e2e.sock; ADDR=unix://$SOCK
limit_line=""  # (quotes inside ${VAR:+...} do not survive a here-document)
[ -n "${LIMIT_GIB:-}" ] && limit_line="device_memory_limit = \"${LIMIT_GIB}GiB\""
cat >"$CACHE/daemon.toml" <<EOF
[daemon]
listen = "$ADDR"
status_listen = ""
[srs]
param_cache = "$PARAMS"
allow_test_keys = true
[memory]
total_budget = "${BUDGET:-120GiB}"
safety_margin = "0"
[gpus]
backend = "cuda"
$limit_line
gpu_workers_per_device = ${GPU_WORKERS:-2}
[synthesis]
threads = ${SYNTH_THREADS:-4}
witness_processes = ${WITNESS_PROCESSES:-4}
[pipeline]
synthesis_lookahead = ${LOOKAHEAD:-2}
max_parallel_synthesis = ${PARALLEL_SYNTHESIS:-4}
EOF
cat "$CACHE/daemon.toml" >"$OUT/daemon.toml"
nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader -lms 500 >"$OUT/gpu-mem.csv" 2>/dev/null &
smi=$!
rm -f "$SOCK"
HOLD_AT=${HOLD_AT:-start}
[ -n "${LIMIT_GIB:-}" ] && [ "$HOLD_AT" = start ] && hold "$LIMIT_GIB"
held_after_preload() { [ -n "${LIMIT_GIB:-}" ] && [ "$HOLD_AT" = preload ] && [ -z "$holder" ] && hold "$LIMIT_GIB"; }
CUZK_TIMING=1 /usr/bin/time -v $PY -m cuzk_plugin.cli.daemon -c "$CACHE/daemon.toml" >"$OUT/daemon.log" 2>&1 &
daemon=$!
guard_host_memory $daemon "$OUT/host-mem.txt"
t_start=$(date +%s%N)
for _ in $(seq 1 120); do
    $PY -m cuzk_plugin.cli.bench status -a "$ADDR" --timeout 2 >/dev/null 2>&1 && break
    kill -0 $daemon 2>/dev/null || { echo "daemon exited:"; grep -v "^\s" "$OUT/daemon.log" | tail -5; unhold; exit 1; }
    sleep 0.5
done
echo "daemon up in $(( ($(date +%s%N) - t_start) / 1000000 )) ms at $(stamp)"
BENCH="$PY -m cuzk_plugin.cli.bench"
if [ "${SINGLE_RUNS:-3}" -gt 0 ] || [ "${BATCH_COUNT:-4}" -gt 0 ]; then  # PoRep (both 0: SnapDeals / WinningPoSt only)
VK=$PARAMS/porep-32g-test-key.vk
[ -f "$PARAMS/porep-32g-test-key.params" ] || rm -f "$VK"  # else written with the key's file (PHASE=testkey)
t0=$(date +%s%N)
$BENCH preload -a "$ADDR" -c porep-32g-test-key --timeout 600 --json | tee "$OUT/preload.json"
echo "cold start (daemon start -> key on the GPU): $(( ($(date +%s%N) - t_start) / 1000000 )) ms; preload $(( ($(date +%s%N) - t0) / 1000000 )) ms"
held_after_preload
for i in $(seq 1 "${SINGLE_RUNS:-3}"); do
    timeout 240 $BENCH single -a "$ADDR" -t porep --c1 "$C1" --verify-vk "$VK" --json >"$OUT/single-$i.json" 2>"$OUT/single-$i.err"
    echo "single $i rc=$? at $(stamp)"; grep -E '"status"|"latency_ms"' "$OUT/single-$i.json"; cat "$OUT/single-$i.err"
done
if [ "${BATCH_COUNT:-4}" -gt 0 ]; then
    timeout 300 $BENCH batch -a "$ADDR" -t porep --c1 "$C1" -c "${BATCH_COUNT:-4}" -j 2 --verify-vk "$VK" --json \
        --timeline-out "$OUT/batch-records.json" >"$OUT/batch.json" 2>"$OUT/batch.err"
    echo "batch rc=$? at $(stamp)"; head -30 "$OUT/batch.json"; cat "$OUT/batch.err"
fi
# One flipped byte in a Merkle path of partition 0: refused before the GPU, naming where.
$PY - "$C1" "$CACHE/c1-bad.json" <<'PY'
import json, sys
c1 = json.load(open(sys.argv[1]))
def first_path(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "path" and isinstance(v, list) and v:
                return v
            r = first_path(v)
            if r is not None:
                return r
    elif isinstance(node, list):
        for v in node:
            r = first_path(v)
            if r is not None:
                return r
path = first_path(c1["vanilla_proofs"])
def flip(node):
    if isinstance(node, list) and node and all(isinstance(x, int) for x in node):
        node[0] ^= 1
        return True
    if isinstance(node, list):
        return any(flip(x) for x in node)
    if isinstance(node, dict):
        return any(flip(v) for v in node.values())
    return False
assert flip(path)
json.dump(c1, open(sys.argv[2], "w"))
PY
timeout 120 $BENCH single -a "$ADDR" -t porep --c1 "$CACHE/c1-bad.json" --json >"$OUT/single-bad.json" 2>&1
echo "bad C1 rc=$? (expect 1)"; grep -E '"status"|"error"' "$OUT/single-bad.json" | cut -c1-400
$BENCH status -a "$ADDR" >"$OUT/status-porep.txt" 2>&1; cat "$OUT/status-porep.txt"
fi
# SnapDeals 32 GiB (16 partitions) on the same daemon, the PoRep key evicted first (device memory).
if [ -s "$CACHE/snap/snap-vproof.json" ] && [ "${SNAP_RUNS:-2}" -gt 0 ]; then
    $BENCH evict -a "$ADDR" -c porep-32g-test-key 2>/dev/null
    t0=$(date +%s%N)
    timeout 300 $BENCH preload -a "$ADDR" -c snap-32g-test-key --timeout 600 --json | tee "$OUT/preload-snap.json"
    echo "snap key: preload $(( ($(date +%s%N) - t0) / 1000000 )) ms at $(stamp)"
    held_after_preload
    snap_cmd=$(sed 's/^cuzk-bench //' "$CACHE/snap/cmd.txt")
    [ -n "$snap_cmd" ] || echo "no SnapDeals command line in $CACHE/snap/cmd.txt (the prep's snap_seal printed none)"
    VKS=$PARAMS/snap-32g-test-key.vk  # written by the lane that made the key
    for i in $(seq 1 "${SNAP_RUNS:-2}"); do
        v=""; [ "$i" = 1 ] && [ -f "$VKS" ] && v="--verify-vk $VKS"  # the first run checked on the client
        # shellcheck disable=SC2086  # the command line snap_seal printed
        timeout 240 $BENCH $snap_cmd -a "$ADDR" $v --json >"$OUT/snap-$i.json" 2>"$OUT/snap-$i.err"
        echo "snap $i rc=$? at $(stamp)"; grep -E '"status"|"latency_ms"|"error"' "$OUT/snap-$i.json" | tr -d '\n '; echo
    done
fi
# WinningPoSt 32 GiB (CRITICAL): its key made on the GPU, then request in -> verified proof out.
if [ -s "$CACHE/winning/cmd.txt" ] && [ "${WIN_RUNS:-5}" -gt 0 ]; then
    VKW=$PARAMS/winning-32g-test-key.vk; rm -f "$VKW"
    t0=$(date +%s%N)
    timeout 120 $BENCH preload -a "$ADDR" -c winning-32g-test-key --timeout 300 --json | tee "$OUT/preload-winning.json"
    echo "winning key: preload $(( ($(date +%s%N) - t0) / 1000000 )) ms at $(stamp)"
    win_cmd=$(sed 's/^cuzk-bench //' "$CACHE/winning/cmd.txt")
    for i in $(seq 1 "${WIN_RUNS:-5}"); do
        # shellcheck disable=SC2086  # the command line post_seal printed
        timeout 60 $BENCH $win_cmd -a "$ADDR" --verify-vk "$VKW" --json >"$OUT/winning-$i.json" 2>"$OUT/winning-$i.err"
        echo "winning $i rc=$? at $(stamp)"; grep -E '"status"|"latency_ms"|"error"' "$OUT/winning-$i.json" | tr -d '\n '; echo
        cat "$OUT/winning-$i.err"
    done
fi
$BENCH status -a "$ADDR" >"$OUT/status.txt" 2>&1; cat "$OUT/status.txt"
$BENCH metrics -a "$ADDR" >"$OUT/metrics.txt" 2>&1
# SIGTERM to the daemon itself, not to /usr/bin/time (which would die without its figures)
kill -TERM "$(pgrep -P $daemon)"; wait $daemon; echo "daemon rc=$?"
kill $smi 2>/dev/null
unguard
unhold
echo "host memory available, least: $(sort -k2 -n "$OUT/host-mem.txt" | head -1)"
grep -E "Maximum resident|Elapsed" "$OUT/daemon.log"
echo "device memory peak: $(sort -t, -k2 -n "$OUT/gpu-mem.csv" | tail -1)"
grep -E "TEST KEY|keygen|srs porep|CUZK_TIMING" "$OUT/daemon.log" | head -40 | cut -c1-300
