"""Time the vectorized PoRep witness (cuzk_plugin.filecoin.witness.partition_assignment).

    python bench/synthesis/witness-bench.py --c1 c1.json [--partitions K] [--repeat R] [--jobs J]
    python bench/synthesis/witness-bench.py --c1 c1.json --dump w.pickle   # witnesses only
    python bench/synthesis/witness-bench.py --witnesses w.pickle ...       # no C1 parser needed

Prints the one-time layout (SHA-256 templates traced), each partition's wall and CPU seconds
with its phases (one after another, in this process), and with ``--jobs J`` the wall time of
all partitions computed by J forked processes (the layout traced before the fork), from which
a per-partition throughput follows. Peak RSS of this process and of the largest child.
"""

from __future__ import annotations

import argparse
import os
import pickle
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cuzk_plugin.filecoin.porep.witness import partition_assignment
from cuzk_plugin.filecoin.porep.witness_layout import porep_layout


def _load(args) -> tuple:
    if args.witnesses:
        with open(args.witnesses, "rb") as f:
            return pickle.load(f)
    from cuzk_plugin.adapters.curio.porep.job import porep_partitions
    t = time.perf_counter()
    job = porep_partitions(Path(args.c1).read_bytes())
    print(f"parse C1: {time.perf_counter() - t:.2f} s", flush=True)
    return job.params, [job.witness(k) for k in range(job.num_partitions)]


def _one(params, w, k: int) -> tuple[float, float, dict]:
    tm: dict = {}
    c, t = time.process_time(), time.perf_counter()
    inputs, aux = partition_assignment(params, w, partition=k, timings=tm)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    del inputs, aux
    return wall, cpu, tm


def main() -> int:
    ap = argparse.ArgumentParser()
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--c1")
    src.add_argument("--witnesses")
    ap.add_argument("--dump")
    ap.add_argument("--partitions", type=int, default=1, help="partitions timed one after another")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=0, help="also time all partitions in J forked processes")
    args = ap.parse_args()
    params, ws = _load(args)
    if args.dump:
        with open(args.dump, "wb") as f:
            pickle.dump((params, ws), f)
        print(f"wrote {args.dump}: {len(ws)} partition witnesses")
        return 0
    print(f"sector {params.sector_size} B, {len(ws)} partitions, {params.challenges_per_partition} challenges each,"
          f" {os.cpu_count()} CPUs", flush=True)
    t, c = time.perf_counter(), time.process_time()
    lay = porep_layout(params)
    print(f"layout (templates traced, once a process): {time.perf_counter() - t:.2f} s wall, "
          f"{time.process_time() - c:.2f} s CPU; aux {lay.num_aux}, constraints {lay.num_constraints}", flush=True)
    walls = []
    for r in range(args.repeat):
        for k in range(min(args.partitions, len(ws))):
            wall, cpu, tm = _one(params, ws[k], k)
            walls.append(wall)
            phases = ", ".join(f"{a} {b:.2f}" for a, b in tm.items())
            print(f"partition {k} (run {r}): {wall:.2f} s wall, {cpu:.2f} s CPU ({phases})", flush=True)
    if len(walls) > 1:
        print(f"median {statistics.median(walls):.2f} s, min {min(walls):.2f}, max {max(walls):.2f} over {len(walls)}")
    print(f"peak RSS (this process): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB", flush=True)
    if args.jobs:
        t = time.perf_counter()
        pending = list(range(len(ws)))
        running: dict[int, int] = {}
        while pending or running:
            while pending and len(running) < args.jobs:
                k = pending.pop(0)
                pid = os.fork()
                if pid == 0:
                    try:
                        _one(params, ws[k], k)
                    finally:
                        os._exit(0)
                running[pid] = k
            pid, status = os.wait()
            if status:
                print(f"partition {running[pid]}: child failed with status {status}")
            running.pop(pid)
        wall = time.perf_counter() - t
        peak_child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"{len(ws)} partitions in {args.jobs} processes: {wall:.2f} s wall, {wall / len(ws):.2f} s a partition;"
              f" peak RSS of a child {peak_child:.0f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
