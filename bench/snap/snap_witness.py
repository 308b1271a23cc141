"""Time the SnapDeals fast witness on a sparse test update of any sector size. Run from the
repository root:

    python bench/snap/snap_witness.py SIZE [PARTITIONS [RUNS]]

SIZE: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB; PARTITIONS: comma-separated (default 0); RUNS: witness
runs per partition (default 3). Seals a sparse test sector (sparse_seal), updates it with
block-periodic data (sparse_snap_update), then per partition: its vanilla PartitionProof, the
vanilla verifier, and ``update_assignment`` (every equality of the circuit checked) RUNS times;
prints each phase's wall seconds and the witness's median and spread.
"""

import statistics
import sys
import time

from cuzk_plugin.filecoin.snap.circuit import witness_from_proof
from cuzk_plugin.filecoin.snap.params import update_params
from cuzk_plugin.filecoin.snap.vanilla import verify_partition
from cuzk_plugin.filecoin.snap_seal import partition_proof, sparse_snap_update
from cuzk_plugin.filecoin.sparse_seal import seal_proof_for_size, sparse_seal
from cuzk_plugin.filecoin.witness.snap import update_assignment, update_layout


def main(size: str, partitions: list[int], runs: int) -> None:
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
    for k in partitions:
        t = time.perf_counter()
        proof = partition_proof(u, k)
        t3 = time.perf_counter()
        verify_partition(p, proof, k, sector.comm_r, u.tree_d_new.root, comm_r_new)
        t4 = time.perf_counter()
        w = witness_from_proof(p, proof, k, sector.comm_r, u.tree_d_new.root, comm_r_new)
        times = []
        for _ in range(runs):
            t5 = time.perf_counter()
            update_assignment(p, w, partition=k)
            times.append(time.perf_counter() - t5)
        print(f"partition {k}: vanilla proof {t3 - t:.2f} s, vanilla verify {t4 - t3:.2f} s, witness median "
              f"{statistics.median(times):.2f} s (runs: {', '.join(f'{x:.2f}' for x in times)})", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], [int(x) for x in sys.argv[2].split(",")] if len(sys.argv) > 2 else [0],
         int(sys.argv[3]) if len(sys.argv) > 3 else 3)
