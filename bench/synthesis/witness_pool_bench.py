"""Time one PoRep partition's witness with N worker processes (cuzk_plugin.filecoin.porep.witness_pool).

    python bench/synthesis/witness_pool_bench.py --c1 c1.json --workers 1 4 8 16 [--repeat 3] [--partition K] [--recycled]

For each N: one warm-up (its assignment's digest must equal the one-process result's), then
``--repeat`` timed runs, median, min and max; the peak memory of the partition in flight is
the largest sum of Pss (proportional set size: shared pages split among the processes that
map them) over this process and its workers, sampled every 10 ms, minus what this process held
before the run (the parsed C1 and the traced layout). ``--recycled`` writes every run into one
shared-memory block whose pages exist (zeroed between runs, untimed), as the daemon's recycled
partition blocks (engine/host_blocks.py) are; else each run gets a fresh memfd.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cuzk_plugin.filecoin.porep.witness import partition_assignment
from cuzk_plugin.filecoin.porep.witness_layout import porep_layout
from cuzk_plugin.filecoin.porep.witness_pool import WitnessPool


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


class _PeakPss:
    """Peak of Pss(this process + its children), sampled in a thread."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            total = _pss_kib(me) + sum(_pss_kib(c) for c in _children(me))
            self.peak = max(self.peak, total)
            time.sleep(0.01)

    def __enter__(self) -> _PeakPss:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _digest(inputs, aux) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(inputs.tobytes())
    h.update(memoryview(aux).cast("B"))
    return h.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--c1", required=True)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 4, 8, 16])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--partition", type=int, default=0)
    ap.add_argument("--recycled", action="store_true")
    args = ap.parse_args()

    from cuzk_plugin.adapters.curio.porep.job import porep_partitions
    t = time.perf_counter()
    job = porep_partitions(Path(args.c1).read_bytes())
    params, w = job.params, job.witness(args.partition)
    print(f"parse C1: {time.perf_counter() - t:.2f} s; sector {params.sector_size} B, partition {args.partition}, "
          f"{params.challenges_per_partition} challenges, {os.cpu_count()} CPUs", flush=True)
    t = time.perf_counter()
    lay = porep_layout(params)
    print(f"layout (templates traced, once a process): {time.perf_counter() - t:.2f} s; aux {lay.num_aux} "
          f"({lay.num_aux * 32 / 1e9:.2f} GB)", flush=True)

    block = None
    if args.recycled:
        import ctypes
        from multiprocessing.shared_memory import SharedMemory
        block = SharedMemory(create=True, size=lay.aux_nbytes)
        address = np.ndarray((block.size,), np.uint8, buffer=block.buf).__array_interface__["data"][0]

        def zero() -> None:
            ctypes.memset(address, 0, block.size)
        zero()
    want: str | None = None
    for n in args.workers:
        pool = WitnessPool(params, n) if n > 1 else None
        base = _pss_kib(os.getpid()) + sum(_pss_kib(c) for c in _children(os.getpid()))
        walls, phases = [], []
        with _PeakPss() as mem:
            for r in range(args.repeat + 1):
                tm: dict = {}
                if block is not None:
                    zero()
                t = time.perf_counter()
                if pool is None:
                    inputs, aux = partition_assignment(params, w, partition=args.partition, timings=tm, into=block)
                else:
                    inputs, aux = pool.assignment(w, partition=args.partition, timings=tm, into=block)
                wall = time.perf_counter() - t
                if r == 0:
                    got = _digest(inputs, aux)
                    want = want or got
                    print(f"workers {n}: warm-up {wall:.2f} s, assignment {got}"
                          f" ({'equal to the first' if got == want else 'DIFFERS from the first'})", flush=True)
                    if got != want:
                        return 1
                else:
                    walls.append(wall)
                    phases.append(tm)
                del inputs, aux
        if pool is not None:
            pool.close()
        peak = (mem.peak - base) / 2**20
        last = ", ".join(f"{k} {v:.2f}" for k, v in phases[-1].items())
        print(f"workers {n}: median {statistics.median(walls):.3f} s (min {min(walls):.3f}, max {max(walls):.3f},"
              f" {len(walls)} runs); peak Pss of the partition in flight {peak:.2f} GiB; last run: {last}", flush=True)
    if block is not None:
        block.close()
        block.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
