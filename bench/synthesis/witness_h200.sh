#!/bin/bash
# One 32 GiB PoRep partition's witness with 1, 4, 8, 16 worker processes (issue 12's target:
# from a parsed C1 to a, b, c on the device <= 1.5 s a partition, the witness <= ~1.2 s).
# Run from the repository root:  bash bench/synthesis/witness_h200.sh   ($OUT: where the log goes)
# Makes its own sparse 32 GiB C1 (test fixture) unless $C1 names one; WORKERS, REPEAT override;
# BENCH_ARGS adds flags (--recycled: every run into one existing block, as the daemon does).
# Needs python3 with numpy (and the wheels in /tmp/site if bench/e2e installed them).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site:$PYTHONPATH
PY=${PY:-python3}
C1=${C1:-/tmp/witness-c1-32g.json}
{
    date -u +%Y-%m-%dT%H:%M:%SZ; echo "commit $(git rev-parse --short HEAD 2>/dev/null || cat .device-carry/commit.txt 2>/dev/null)"
    nproc; free -g | head -2; $PY -c 'import sys, numpy; print(sys.version.split()[0], "numpy", numpy.__version__)'
    if [ ! -s "$C1" ]; then
        /usr/bin/time -f "seal: %e s wall, %M KiB peak" $PY -m cuzk_plugin.filecoin.fixtures.seal --sector-size 32GiB --sparse \
            --out "$C1" || exit 1
    fi
    # shellcheck disable=SC2086  # BENCH_ARGS: more flags, e.g. --recycled
    $PY bench/synthesis/witness_pool_bench.py --c1 "$C1" --workers ${WORKERS:-1 4 8 16} --repeat "${REPEAT:-3}" ${BENCH_ARGS:-}
    echo "rc=$?"
} 2>&1 | tee "$OUT/witness_h200.txt"
