"""Time the SnapDeals fast witness on a sparse test update of any sector size. Run from the
repository root:

    python bench/snap/snap_witness.py SIZE [PARTITIONS [RUNS]] [--workers N]

SIZE: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB; PARTITIONS: comma-separated (default 0); RUNS: witness
runs per partition (default 3). Seals a sparse test sector (sparse_seal), updates it with
block-periodic data (sparse_snap_update), then per partition: its vanilla PartitionProof, the
vanilla verifier, and ``update_assignment`` (every equality of the circuit checked) once to warm
up, then RUNS times; prints each phase's wall seconds and the witness's median and spread. With
``--workers N`` the witness is also computed by a SnapWitnessPool of N forked processes (a
warm-up run, then RUNS, each checked equal to the one process's). Timed runs write into a new
shared-memory block each, as the daemon's synthesis worker does.
"""

import argparse
import statistics
import time
from functools import partial
from multiprocessing.shared_memory import SharedMemory

import numpy as np

from cuzk_plugin.filecoin.fixtures.snap_seal import partition_proof, sparse_snap_update
from cuzk_plugin.filecoin.fixtures.sparse_seal import seal_proof_for_size, sparse_seal
from cuzk_plugin.filecoin.snap.circuit import witness_from_proof
from cuzk_plugin.filecoin.snap.params import update_params
from cuzk_plugin.filecoin.snap.vanilla import verify_partition
from cuzk_plugin.filecoin.snap.witness import update_assignment, update_layout
from cuzk_plugin.filecoin.snap.witness_pool import SnapWitnessPool


def _timed(compute, nbytes: int, runs: int, want: tuple[np.ndarray, np.ndarray] | None = None) -> list[float]:
    """Wall seconds of ``compute(into=...)`` into a new zero block per run (the daemon's way), each
    result checked equal to ``want`` where given."""
    times = []
    for _ in range(runs):
        block = SharedMemory(create=True, size=nbytes)
        try:
            t = time.perf_counter()
            inputs, aux = compute(into=block)
            times.append(time.perf_counter() - t)
            if want is not None:
                assert np.array_equal(inputs, want[0]) and np.array_equal(aux, want[1]), "the pool's witness differs"
            del inputs, aux
        finally:
            block.close()
            block.unlink()
    return times


def _line(times: list[float]) -> str:
    return f"median {statistics.median(times):.2f} s (runs: {', '.join(f'{x:.2f}' for x in times)})"


def main(size: str, partitions: list[int], runs: int, workers: int) -> None:
    p = update_params(size)
    t0 = time.perf_counter()
    sector = sparse_seal(seal_proof_for_size(p.sector_size).name, miner_id=1000, sector_id=3)
    t1 = time.perf_counter()
    u = sparse_snap_update(sector, data_seed=5)
    t2 = time.perf_counter()
    lay = update_layout(p)
    print(f"{size}: {lay.num_constraints:,} constraints, {lay.num_aux:,} aux per partition; sparse seal "
          f"{t1 - t0:.1f} s, sparse update {t2 - t1:.1f} s (h = {u.h})", flush=True)
    comm_r_new = int.from_bytes(u.comm_r_new, "little")
    pool = SnapWitnessPool(workers) if workers > 1 else None  # forked after update_layout: warm workers
    try:
        for k in partitions:
            t = time.perf_counter()
            proof = partition_proof(u, k)
            t3 = time.perf_counter()
            verify_partition(p, proof, k, sector.comm_r, u.tree_d_new.root, comm_r_new)
            t4 = time.perf_counter()
            w = witness_from_proof(p, proof, k, sector.comm_r, u.tree_d_new.root, comm_r_new)
            want = update_assignment(p, w, partition=k)  # the warm-up, and the pool's reference
            times = _timed(partial(update_assignment, p, w, partition=k), lay.aux_nbytes, runs)
            print(f"partition {k}: vanilla proof {t3 - t:.2f} s, vanilla verify {t4 - t3:.2f} s, witness in one "
                  f"process {_line(times)}", flush=True)
            if pool is not None:
                timings: dict = {}
                times = _timed(partial(pool.assignment, p, w, partition=k, timings=timings),
                               lay.aux_nbytes, 1 + runs, want)[1:]
                print(f"partition {k}: witness by {workers} processes {_line(times)}, equal to one process's; "
                      f"last run: header {timings['header (beside the runs)']:.2f} s beside the runs, runs {timings['runs (workers)']:.2f} s "
                      f"(slowest {timings['slowest run']:.2f} s)", flush=True)
            del want
    finally:
        if pool is not None:
            pool.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("size")
    ap.add_argument("partitions", nargs="?", default="0")
    ap.add_argument("runs", nargs="?", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1, help="also time a SnapWitnessPool of this many processes")
    args = ap.parse_args()
    main(args.size, [int(x) for x in args.partitions.split(",")], args.runs, args.workers)
