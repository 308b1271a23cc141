#!/usr/bin/env bash
# Batch throughput/latency of cuzk-daemon on this machine: starts a daemon per backend on a
# temporary unix socket, warms the key, runs each batch shape REPEAT times with --json.
#   bench/daemon-bench.sh [backend ...]      (default: cpu)   -> JSON lines on stdout
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
REPEAT=${REPEAT:-3}
SHAPES=${SHAPES:-"10:2:20:4 6:1:200:16 12:1:6:2"}   # log2:partitions:count:concurrency
for backend in "${@:-cpu}"; do
  work=$(mktemp -d)
  cat > "$work/cuzk.toml" <<TOML
[daemon]
listen = "unix://$work/cuzk.sock"
status_listen = ""
[srs]
param_cache = "${CUZK_BENCH_PARAMS:-$HOME/.cache/cuzk-plugin/params}"
[gpus]
backend = "$backend"
TOML
  $PY -m cuzk_plugin.cli.daemon -c "$work/cuzk.toml" --log-level warning > "$work/daemon.log" 2>&1 &
  pid=$!
  for _ in $(seq 120); do [ -S "$work/cuzk.sock" ] && break; sleep 0.5; done
  for shape in $SHAPES; do
    IFS=: read -r log2 parts count conc <<< "$shape"
    $PY -m cuzk_plugin.cli.bench preload -a "unix://$work/cuzk.sock" "synthetic-k$log2" --timeout 600 > /dev/null
    $PY -m cuzk_plugin.cli.bench single -a "unix://$work/cuzk.sock" --log2 "$log2" --partitions "$parts" > /dev/null  # warm-up
    for run in $(seq "$REPEAT"); do
      $PY -m cuzk_plugin.cli.bench batch -a "unix://$work/cuzk.sock" --log2 "$log2" --partitions "$parts" \
          -c "$count" -j "$conc" --seed $((run * 100000)) --json \
        | $PY -c "import json,sys; d=json.load(sys.stdin); d.pop('records'); d.update(backend='$backend', log2=$log2, partitions=$parts, count=$count, concurrency=$conc, run=$run); print(json.dumps(d))"
    done
  done
  kill -TERM "$pid"; wait "$pid" || true
  rm -rf "$work"
done
