#!/bin/bash
# The plan of a 32 GiB PoRep C1 in Curio's envelope on a GPU host's CPUs (no GPU used): the split
# (split_bench.py) and the whole plan with 10 planning processes (plan_bench.py), each source
# tree's cuzk_plugin alternated, three rounds. Trees: this checkout ("new") and, where carried,
# .device-carry/base-src and .device-carry/start-src (`git archive <commit> cuzk_plugin | tar x -C DIR`).
# Carry .whl and those folders: bash bench/synthesis/host_plan_ab.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
{ date -u +%FT%TZ; nproc; lscpu | grep "Model name"; echo "commit ${COMMIT:-}"; } | tee "$OUT/host.txt"
/usr/bin/time -f "seal %e s" env PYTHONPATH=/tmp/site:$PWD python3 -m cuzk_plugin.filecoin.fixtures.seal \
    --sector-size 32GiB --sparse --out /tmp/c1.json >"$OUT/seal.txt" 2>&1; tail -1 "$OUT/seal.txt"
trees="new"; for t in base start; do [ -d ".device-carry/$t-src/cuzk_plugin" ] && trees="$t $trees"; done
for r in 1 2 3; do
    for t in $trees; do
        src=$PWD; [ "$t" != new ] && src=$PWD/.device-carry/$t-src
        echo "$t split: $(PYTHONPATH=/tmp/site:$src timeout 120 python3 bench/synthesis/split_bench.py /tmp/c1.json 10 2>&1 | tail -1)"
        echo "$t plan: $(PYTHONPATH=/tmp/site:$src timeout 120 python3 bench/synthesis/plan_bench.py porep /tmp/c1.json 5 --envelope --processes 10 2>&1 | tail -1)"
    done
done | tee "$OUT/plan-ab.txt"
