#!/bin/bash
# SnapDeals 32 GiB on the H200 machine's host CPU (device tool `run`, carry [".whl"]): the
# snap-32g pre-compiled circuit's extraction (time, size, peak RSS), then snap_witness.py
# (sparse test update, vanilla verifier and fast witness of partitions 0 and 15, 3 runs each).
set -o pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; R=$OUT/snap-h200.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
(date -u; echo "commit ${COMMIT:-?}"; nproc; lscpu | grep 'Model name'; free -g | head -2; python3 --version) 2>&1 | tee $R
/usr/bin/time -f "extract snap-32g: %e s wall, %U s user, %M KB peak RSS" \
    python3 -m cuzk_plugin.cli.main pce extract --circuit snap-32g --param-cache /tmp/pce 2>&1 | tee -a $R
rm -f /tmp/pce/pce-snap-32g.pce
/usr/bin/time -f "witness bench: %e s wall, %U s user, %M KB peak RSS" \
    python3 bench/snap/snap_witness.py 32GiB 0,15 3 2>&1 | tee -a $R
