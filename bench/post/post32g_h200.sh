#!/bin/bash
# WinningPoSt and a full WindowPoSt partition at 32 GiB through cuzk-daemon on one H200 (issue 14
# targets: Winning request in -> verified proof out <= 0.5 s with the key loaded; a 2349-sector
# Window partition <= 10 s). One device call, ~8 minutes at most:
#   1. TEST-FIXTURE data (post_seal --sparse: sectors sharing one sparse tree_r_last) and the
#      pre-compiled winning / wpost circuits (cuzk pce extract, in the background, in parallel);
#   2. cuzk-daemon (BACKEND, [srs] allow_test_keys: keys made on the lanes from the circuits),
#      PreloadSRS of the Winning test key (cold start: the key made on the GPU);
#   3. WIN_RUNS x `cuzk-bench single -t winning --verify-vk`, then the Window key and
#      WPOST_RUNS x `cuzk-bench single -t wpost` (the first one --verify-vk), status;
#   4. SIGTERM, the daemon's peak RSS (/usr/bin/time -v), a summary in $OUT/summary.txt.
# Device tool: run with carry [".whl", ".device-carry"], command `bash bench/post/post32g_h200.sh`
# (CUZK_CUDA_LIBRARY=path overrides the library below)
# (.device-carry/cuda/libcuzk_cuda.so built here:
#   .venv/bin/python -m cuzk_plugin.backends.cuda.build --arch 90 --out .device-carry/cuda).
# .device-cache/params keeps the circuits and the data between calls on a warm machine: recording
# wpost-32g (125 M rows, 12.4 GB) takes minutes; if it does not finish within EXTRACT_TIMEOUT the
# Window runs are skipped, and a second call (circuit found, checked in seconds) runs them.
# LIMIT_GIB: a smaller card emulated (issue 26): `[gpus] device_memory_limit`, and after the
# Window key is made on the whole device (keygen's transients given back) another process holds
# the rest of the device's memory, so that an overrun of a proof fails instead of using it.
# Locally, e.g.: OUT=/tmp/o PY=.venv/bin/python BACKEND=cpu SIZE=8MiB bash bench/post/post32g_h200.sh
set -u -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
SIZE=${SIZE:-32GiB}; BACKEND=${BACKEND:-cuda}; PY=${PY:-python3}
WIN_RUNS=${WIN_RUNS:-5}; WPOST_RUNS=${WPOST_RUNS:-3}
DEADLINE_S=${DEADLINE_S:-450}  # no proof run is started that would end past this (the device call stops at 600 s)
CACHE=${CACHE:-$PWD/.device-cache}; PARAMS=$CACHE/params; DATA=$CACHE/post-data; mkdir -p "$PARAMS" "$DATA"
export PYTHONUNBUFFERED=1
if [ -d .whl ] && ! $PY -c "import grpc, pydantic_settings" 2>/dev/null; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
$PY -c "import cuzk_plugin.cli.daemon, cuzk_plugin.engine.engine" || {
    echo "the daemon's imports fail (tenacity, typing_extensions... missing? their wheels belong in .whl/)"; exit 1; }
[ -z "${CUZK_CUDA_LIBRARY:-}" ] && [ -f "$PWD/.device-carry/cuda/libcuzk_cuda.so" ] \
    && export CUZK_CUDA_LIBRARY=$PWD/.device-carry/cuda/libcuzk_cuda.so
short=$($PY -c "from cuzk_plugin.filecoin.fixtures.post_seal import parse_sector_size as p; from cuzk_plugin.filecoin.post.params \
import post_circuit_id as c, PostKind as K; print(c(K.WINNING, p('$SIZE')).split('-')[1])") || exit 1
WIN=winning-$short; WPOST=wpost-$short
SOCK=${SOCK:-/tmp/cuzk-post-$short.sock}; ADDR=unix://$SOCK
BENCH="$PY -m cuzk_plugin.cli.bench"
stamp() { date -u +%H:%M:%S; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
T0=$(date +%s%N)
{
    date -u +%Y-%m-%dT%H:%M:%SZ; echo "commit $(cat .device-carry/commit.txt 2>/dev/null || git log -1 --format=%h 2>/dev/null)"
    echo "SIZE=$SIZE BACKEND=$BACKEND WIN_RUNS=$WIN_RUNS WPOST_RUNS=$WPOST_RUNS WPOST_SECTORS=${WPOST_SECTORS:-full}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null; nproc; free -g | head -2
} | tee "$OUT/device.txt"

# -- 1. circuits (background) and data ------------------------------------------------------
extract() {  # circuit: record it (or check the recorded one), time and peak RSS in $OUT/pce-<id>.txt
    /usr/bin/time -v timeout "${EXTRACT_TIMEOUT:-520}" $PY -m cuzk_plugin.cli.main pce extract --circuit "$1" \
        --param-cache "$PARAMS" >"$OUT/pce-$1.txt" 2>&1
    echo "pce extract $1 rc=$? at $(stamp)" >>"$OUT/pce-$1.txt"
}
extract "$WIN" & pce_win=$!
pce_wpost=""
[ "$WPOST_RUNS" -gt 0 ] && { extract "$WPOST" & pce_wpost=$!; }
seal() {  # kind out args...: the sparse TEST-FIXTURE set; its cuzk-bench command in out.cmd
    local kind=$1 out=$2; shift 2
    /usr/bin/time -f "%e s wall, %M KB peak RSS" $PY -m cuzk_plugin.filecoin.fixtures.post_seal --kind "$kind" --sector-size "$SIZE" \
        --sparse --addr "$ADDR" --out "$out" "$@" >"$out.log" 2>&1 || { cat "$out.log"; return 1; }
    grep '^cuzk-bench single' "$out.log" | sed 's/^cuzk-bench //' >"$out.cmd"
    cat "$out.log"
}
seal winning "$DATA/winning-$short.json" --first-sector 4242 --seed 2 | tee "$OUT/data-winning.txt" || exit 1
sectors=${WPOST_SECTORS:-$($PY -c "from cuzk_plugin.filecoin.post.params import WINDOW_SECTORS as W; \
from cuzk_plugin.filecoin.fixtures.post_seal import parse_sector_size as p; print(W[p('$SIZE')])")}
seal window "$DATA/wpost-$short.json" --sectors "$sectors" --seed 3 | tee "$OUT/data-wpost.txt" || exit 1

# -- 2. the daemon, the Winning key ---------------------------------------------------------
limit_line=""  # (quotes inside ${VAR:+...} do not survive a here-document)
[ -n "${LIMIT_GIB:-}" ] && limit_line="device_memory_limit = \"${LIMIT_GIB}GiB\""
source bench/device_memory_hold.sh  # hold GIB / unhold
source bench/host_memory_guard.sh  # guard_host_memory PID FILE / unguard
cat >"$CACHE/post-daemon.toml" <<EOF
[daemon]
listen = "$ADDR"
status_listen = ""
[srs]
param_cache = "$PARAMS"
allow_test_keys = true
max_generated_log2 = ${MAX_GENERATED_LOG2:-20}
[memory]
total_budget = "${BUDGET:-100GiB}"
safety_margin = "0"
[gpus]
backend = "$BACKEND"
$limit_line
[synthesis]
threads = ${SYNTH_THREADS:-4}
EOF
cp "$CACHE/post-daemon.toml" "$OUT/daemon.toml"
command -v nvidia-smi >/dev/null && { nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader -lms 500 \
    >"$OUT/gpu-mem.csv" 2>/dev/null & smi=$!; }
rm -f "$SOCK"
CUZK_TIMING=1 /usr/bin/time -v $PY -m cuzk_plugin.cli.daemon -c "$CACHE/post-daemon.toml" >"$OUT/daemon.log" 2>&1 &
daemon=$!
guard_host_memory $daemon "$OUT/host-mem.txt"
t_start=$(date +%s%N)
for _ in $(seq 1 120); do
    $BENCH status -a "$ADDR" --timeout 2 >/dev/null 2>&1 && break
    kill -0 $daemon 2>/dev/null || { echo "daemon exited"; tail -20 "$OUT/daemon.log"; exit 1; }
    sleep 0.5
done
echo "daemon up in $(ms_since "$t_start") ms at $(stamp)"
wait $pce_win; grep -E "pce-|Elapsed|Maximum resident|rc=" "$OUT/pce-$WIN.txt"
VK_WIN=$PARAMS/$WIN-test-key.vk; VK_WPOST=$PARAMS/$WPOST-test-key.vk
rm -f "$VK_WIN" "$VK_WPOST"  # written again by the lane that makes the key (fresh secrets each start)
if [ "$WIN_RUNS" -gt 0 ]; then
    t0=$(date +%s%N)
    timeout "${PRELOAD_TIMEOUT:-300}" $BENCH preload -a "$ADDR" -c "$WIN-test-key" --timeout 600 --json | tee "$OUT/preload-winning.json"
    echo "winning cold start: preload $(ms_since "$t0") ms (daemon start -> key ready $(ms_since "$t_start") ms) at $(stamp)"
fi

# -- 3. proofs ------------------------------------------------------------------------------
prove() {  # name runs cmd-file [verify-vk, applied to the first run only when ONCE=1]
    local name=$1 runs=$2 cmd vk=${4:-}
    [ "$runs" -gt 0 ] || return 0
    cmd=$(cat "$3")
    # a file test key (2 KiB) has no .vk beside it: its .params begins with the verifying key
    [ -n "$vk" ] && [ ! -f "$vk" ] && [ -f "${vk%.vk}.params" ] && vk=${vk%.vk}.params
    [ -n "$vk" ] && [ ! -f "$vk" ] && { echo "$name: no $vk, proofs not checked on the client"; vk=""; }
    local last=0
    for i in $(seq 1 "$runs"); do
        if [ $(( $(ms_since "$T0") + last )) -gt $(( DEADLINE_S * 1000 )) ]; then
            echo "$name $i skipped: a run of ${last} ms would end past DEADLINE_S=$DEADLINE_S"; continue
        fi
        local v=""
        [ -n "$vk" ] && { [ "${ONCE:-0}" = 0 ] || [ "$i" = 1 ]; } && v="--verify-vk $vk"
        t0=$(date +%s%N)
        # shellcheck disable=SC2086  # the command line post_seal printed, split on purpose
        timeout "${PROOF_TIMEOUT:-240}" $BENCH $cmd $v --json >"$OUT/$name-$i.json" 2>"$OUT/$name-$i.err"
        echo "$name $i rc=$? wall $(ms_since "$t0") ms at $(stamp)"
        last=$(ms_since "$t0")
        grep -E '"status"|"latency_ms"|"error"' "$OUT/$name-$i.json" | tr -d '\n '; echo
        grep -v '^$' "$OUT/$name-$i.err" | tail -3
    done
}
prove winning "$WIN_RUNS" "$DATA/winning-$short.json.cmd" "$VK_WIN"
$BENCH status -a "$ADDR" >"$OUT/status-after-winning.txt" 2>&1
if [ "$WPOST_RUNS" -gt 0 ]; then
    wait $pce_wpost; grep -E "pce-|Elapsed|Maximum resident|rc=" "$OUT/pce-$WPOST.txt"
    # A circuit not recorded in time is not left to the daemon (it would record it inside the first job):
    # a second call finds what the first recorded (.device-cache is kept on a warm machine).
    [ -f "$PARAMS/pce-$WPOST.pce" ] || { echo "pce-$WPOST not ready: no wpost run (call again)"; WPOST_RUNS=0; }
fi
if [ "$WPOST_RUNS" -gt 0 ]; then
    t0=$(date +%s%N)
    timeout "${PRELOAD_TIMEOUT:-300}" $BENCH preload -a "$ADDR" -c "$WPOST-test-key" --timeout 600 --json | tee "$OUT/preload-wpost.json"
    echo "wpost key: preload $(ms_since "$t0") ms at $(stamp)"
    [ -n "${LIMIT_GIB:-}" ] && hold "$LIMIT_GIB"
    ONCE=1 prove wpost "$WPOST_RUNS" "$DATA/wpost-$short.json.cmd" "$VK_WPOST"
fi
$BENCH status -a "$ADDR" >"$OUT/status.txt" 2>&1; cat "$OUT/status.txt"
$BENCH metrics -a "$ADDR" >"$OUT/metrics.txt" 2>&1

# -- 4. stop, peaks, summary ----------------------------------------------------------------
# SIGTERM to the daemon itself, not to /usr/bin/time (which would die without printing its figures)
kill -TERM "$(pgrep -P $daemon)"; wait $daemon; echo "daemon rc=$? (SIGTERM)"
unguard
unhold
echo "host memory available, least: $(sort -k2 -n "$OUT/host-mem.txt" | head -1)"
[ -n "${smi:-}" ] && kill "$smi" 2>/dev/null
grep -E "Maximum resident|Elapsed" "$OUT/daemon.log" | sed 's/^/daemon /'
[ -s "$OUT/gpu-mem.csv" ] && echo "device memory peak: $(sort -t, -k2 -n "$OUT/gpu-mem.csv" | tail -1)"
grep -E "TEST KEY|srs (winning|wpost)" "$OUT/daemon.log" | cut -c1-300 | head -10
$PY - "$OUT" "$WIN_RUNS" "$WPOST_RUNS" <<'PY' | tee "$OUT/summary.txt"
import json, statistics, sys
from pathlib import Path
out, runs = Path(sys.argv[1]), {"winning": int(sys.argv[2]), "wpost": int(sys.argv[3])}
for name, n in runs.items():
    recs = []
    for i in range(1, n + 1):
        try:
            recs.append(json.loads((out / f"{name}-{i}.json").read_text()))
        except (OSError, ValueError):
            recs.append({"status": "NO RESULT"})
    ok = [r["latency_ms"] for r in recs if r.get("status") == "COMPLETED"]
    checks = [line for i in range(1, n + 1) if (out / f"{name}-{i}.err").exists()
              for line in (out / f"{name}-{i}.err").read_text().splitlines() if "client verification" in line]
    if n:
        line = f"{name}: {len(ok)} of {n} completed"
        if ok:
            line += f", latency median {statistics.median(ok):,.0f} ms (min {min(ok):,.0f}, max {max(ok):,.0f}); runs " \
                    + ", ".join(f"{x:,.0f}" for x in ok)
        print(line)
        for r in recs:
            if r.get("status") == "COMPLETED":
                print(f"  {name} timings_ms {r.get('timings_ms')}")
            else:
                print(f"  {name} {r.get('status')}: {str(r.get('error', ''))[:300]}")
        print("\n".join(f"  {c}" for c in checks) or f"  {name}: no client verification ran")
PY
echo "total $(ms_since "$T0") ms"
