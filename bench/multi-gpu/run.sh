#!/usr/bin/env bash
# Throughput scaling of cuzk-daemon over the GPUs of one host. For each lane count N in LANES
# ("all": every device the backend reports) a daemon proves with [gpus] devices = [0..N-1];
# per shape it preloads the key (on every lane), proves one warm-up job, then runs
# `cuzk-bench batch` REPEAT times with COUNT and CONCURRENCY scaled by N, and once with
# concurrency 1 (one proof's latency with its partitions spread over the N lanes).
#   bench/multi-gpu/run.sh > scaling.jsonl        (env: PY BACKEND LANES SHAPES REPEAT OUT)
# SHAPES: log2:partitions:count_per_gpu:concurrency_per_gpu. One JSON line a run on stdout;
# the daemon's per-lane GetStatus after each N goes to $OUT/status-N.json, its log to $OUT/daemon-N.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
BACKEND=${BACKEND:-cuda}
LANES=${LANES:-"1 2 all"}
SHAPES=${SHAPES:-"14:10:6:2 16:10:3:1"}
REPEAT=${REPEAT:-3}
OUT=${OUT:-$(mktemp -d)}
PARAMS=${CUZK_BENCH_PARAMS:-$HOME/.cache/cuzk-plugin/params}
mkdir -p "$OUT" "$PARAMS"
ndev=$($PY -c "from cuzk_plugin.backends.registry import get_backend; print(len(get_backend('$BACKEND').devices()))")
echo "backend $BACKEND: $ndev device(s); lanes $LANES; shapes $SHAPES" >&2
done_lanes=" "
for n in $LANES; do
  [ "$n" = all ] && n=$ndev
  if [ "$n" -gt "$ndev" ]; then echo "skip N=$n: only $ndev device(s)" >&2; continue; fi
  case "$done_lanes" in *" $n "*) continue ;; esac
  done_lanes="$done_lanes$n "
  work=$(mktemp -d)
  cat > "$work/cuzk.toml" <<TOML
[daemon]
listen = "unix://$work/cuzk.sock"
status_listen = ""
[srs]
param_cache = "$PARAMS"
max_generated_log2 = 20
[gpus]
backend = "$BACKEND"
devices = [$(seq -s, 0 $((n - 1)))]
TOML
  $PY -m cuzk_plugin.cli.daemon -c "$work/cuzk.toml" --log-level info > "$OUT/daemon-$n.log" 2>&1 &
  pid=$!
  for _ in $(seq 240); do [ -S "$work/cuzk.sock" ] && break; sleep 0.5; done
  addr="unix://$work/cuzk.sock"
  for shape in $SHAPES; do
    IFS=: read -r log2 parts per_gpu conc_per_gpu <<< "$shape"
    $PY -m cuzk_plugin.cli.bench preload -a "$addr" "synthetic-k$log2" --timeout 3600 > /dev/null
    $PY -m cuzk_plugin.cli.bench single -a "$addr" --log2 "$log2" --partitions "$parts" > /dev/null  # warm-up
    for run in $(seq "$REPEAT") latency; do
      if [ "$run" = latency ]; then count=3 conc=1; else count=$((per_gpu * n)) conc=$((conc_per_gpu * n)); fi
      $PY -m cuzk_plugin.cli.bench batch -a "$addr" --log2 "$log2" --partitions "$parts" -c "$count" -j "$conc" \
          --seed $((1000 + ${run/latency/0} * 100000)) --json \
        | $PY -c "import json,sys; d=json.load(sys.stdin); d.pop('records', None); d.update(backend='$BACKEND', gpus=$n, log2=$log2, partitions=$parts, count=$count, concurrency=$conc, run='$run'); print(json.dumps(d))"
    done
  done
  $PY -m cuzk_plugin.cli.bench status -a "$addr" --json > "$OUT/status-$n.json" || true
  kill -TERM "$pid"; wait "$pid" || true
  rm -rf "$work"
done
