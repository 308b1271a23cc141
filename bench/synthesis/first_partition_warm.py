"""The first PoRep partition a fresh synthesis worker takes, without and with the PoRep warmer
(`warm_porep_worker`: the partition layout of each size whose pre-compiled circuit is in the
param cache, made as the worker starts). Run from the repository root:

    python bench/synthesis/first_partition_warm.py C1_JSON PARAM_CACHE [--processes N] [--runs K]

PARAM_CACHE must hold the size's pre-compiled circuit (`cuzk pce extract --circuit porep-32g
--param-cache PARAM_CACHE`). Per run: a new one-worker SynthesisPool (its start, warm-up
included, timed as the engine's start awaits it), then partition 0 twice through `run_task` (the
engine's worker entry point, into new blocks), the results discarded.
"""

import argparse
import statistics
import time
from functools import partial
from pathlib import Path

from cuzk_plugin.adapters.curio.porep.job import porep_partitions
from cuzk_plugin.adapters.curio.porep.provider import PorepPartitionTask, warm_porep_worker
from cuzk_plugin.engine.synthesis import SynthesisPool, discard, run_task


def main(c1: Path, cache: Path, processes: int, runs: int) -> None:
    job = porep_partitions(c1.read_bytes())
    task = PorepPartitionTask(job.partition(0), job.circuit_id, str(cache))
    for warm in (False, True):
        first, second, start = [], [], []
        for _ in range(runs):
            pool = SynthesisPool(1, processes, (warm_porep_worker,) if warm else (), cache)
            try:
                t0 = time.perf_counter()
                pool.warm_up()
                t1 = time.perf_counter()
                a = pool.submit_raw(partial(run_task, task)).result()
                t2 = time.perf_counter()
                b = pool.submit_raw(partial(run_task, task)).result()
                t3 = time.perf_counter()
                discard(a)
                discard(b)
            finally:
                pool.shutdown()
            start.append(t1 - t0)
            first.append(t2 - t1)
            second.append(t3 - t2)
        print(f"{job.circuit_id}, {processes} witness processes, warmer {'on ' if warm else 'off'}: worker start "
              f"{statistics.median(start):.2f} s, first partition {statistics.median(first):.2f} s, second "
              f"{statistics.median(second):.2f} s (medians of {runs}; first: {', '.join(f'{x:.2f}' for x in first)})",
              flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("c1", type=Path)
    ap.add_argument("param_cache", type=Path)
    ap.add_argument("--processes", type=int, default=2, help="witness processes of the worker (the engine's witness_processes)")
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    main(args.c1, args.param_cache, args.processes, args.runs)
