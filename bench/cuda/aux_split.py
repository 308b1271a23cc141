"""Issue 27, item 2: how a PoRep partition's aux values split into 0, 1 and the rest, which is
how the MSMs route them (scalars 0 skipped, 1 summed directly, the rest through Pippenger;
kernels/msm.cuh). The witness is made on the CPU from a C1 as the daemon makes it.

    python -m cuzk_plugin.filecoin.fixtures.seal --sector-size 32GiB --sparse --out /tmp/c1.json
    python bench/cuda/aux_split.py /tmp/c1.json [PARTITION ...]      (default: partition 0)
"""

import sys
import time
from pathlib import Path

from cuzk_plugin.adapters.curio.porep.job import porep_partitions
from cuzk_plugin.filecoin.porep.witness import partition_assignment

job = porep_partitions(Path(sys.argv[1]).read_bytes())
for k in [int(a) for a in sys.argv[2:]] or [0]:
    part = job.partition(k)
    t0 = time.perf_counter()
    _, aux = partition_assignment(part.params, part.witness, partition=k, workers=2)
    seconds = time.perf_counter() - t0
    small = ~aux[:, 1:].any(axis=1)  # (n, 4) canonical limbs: below 2^64
    zeros, ones = int((small & (aux[:, 0] == 0)).sum()), int((small & (aux[:, 0] == 1)).sum())
    n = aux.shape[0]
    print(f"{job.circuit_id} partition {k}: {n:,} aux values (witness {seconds:.1f} s): zeros {zeros:,} "
          f"({zeros / n:.1%}), ones {ones:,} ({ones / n:.1%}), others {n - zeros - ones:,} ({(n - zeros - ones) / n:.2%})")
    del aux
