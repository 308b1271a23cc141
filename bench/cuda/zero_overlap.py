"""Which aux positions of a 32 GiB PoRep partition hold 0 in every partition and every sector:
the points of L (and of A and B through their densities) that a streamed key need never copy,
were the positions fixed by the circuit rather than by the data. Partitions of one C1 and of
C1s of other sectors (other sector ids and data), each made on the CPU as the daemon makes it:

    python -m cuzk_plugin.filecoin.fixtures.seal --sector-size 32GiB --sparse --out /tmp/a.json
    python -m cuzk_plugin.filecoin.fixtures.seal --sector-size 32GiB --sparse --sector-id 7 \\
        --data-seed 5 --out /tmp/b.json
    python bench/cuda/zero_overlap.py /tmp/a.json:0 /tmp/a.json:9 /tmp/b.json:3

Prints each partition's share of zeros, then the share of positions zero in all of them beside
what independent positions would give (the product of the shares).
"""

import sys
import time
from pathlib import Path

import numpy as np

from cuzk_plugin.adapters.curio.porep.job import porep_partitions
from cuzk_plugin.filecoin.porep.witness import partition_assignment

jobs: dict[str, object] = {}
all_zero: np.ndarray | None = None
all_one: np.ndarray | None = None
shares = []
for spec in sys.argv[1:]:
    path, k = spec.rsplit(":", 1)
    if path not in jobs:
        jobs[path] = porep_partitions(Path(path).read_bytes())
    part = jobs[path].partition(int(k))
    t0 = time.perf_counter()
    _, aux = partition_assignment(part.params, part.witness, partition=int(k), workers=2)
    small = ~aux[:, 1:].any(axis=1)  # (n, 4) canonical limbs: below 2^64
    zero, one = small & (aux[:, 0] == 0), small & (aux[:, 0] == 1)
    del aux, small
    shares.append(float(zero.mean()))
    all_zero = zero if all_zero is None else all_zero & zero
    all_one = one if all_one is None else all_one & one
    print(f"{spec}: {zero.size:,} aux, zeros {shares[-1]:.2%}, ones {float(one.mean()):.2%} "
          f"(witness {time.perf_counter() - t0:.1f} s)", flush=True)
assert all_zero is not None and all_one is not None
print(f"zero in all {len(shares)}: {float(all_zero.mean()):.2%} of the aux (independent positions: "
      f"{float(np.prod(shares)):.2%}); one in all: {float(all_one.mean()):.2%}")
