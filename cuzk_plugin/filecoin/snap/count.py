"""Count one EmptySectorUpdate partition's constraints with the shape pass.

    python -m cuzk_plugin.filecoin.snap.count --sector-size 32GiB
"""

from __future__ import annotations

import argparse
import resource
import time

from cuzk_plugin.circuit.fast_cs import gc_paused
from cuzk_plugin.filecoin.gadgets.shape import ShapeConstraintSystem
from cuzk_plugin.filecoin.snap.circuit import (
    blank_update_partition,
    synthesize_update_partition,
)
from cuzk_plugin.filecoin.snap.params import update_params

__all__ = ["count_update_partition", "main"]


def count_update_partition(sector_size: str | int, *, memoize: bool = True) -> ShapeConstraintSystem:
    p = update_params(sector_size)
    cs = ShapeConstraintSystem(memoize=memoize)
    synthesize_update_partition(cs, p, blank_update_partition(p))
    return cs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sector-size", default="32GiB", help="2KiB, 8MiB, 512MiB, 32GiB or 64GiB")
    args = ap.parse_args(argv)
    p = update_params(args.sector_size)
    t0 = time.perf_counter()
    with gc_paused():  # millions of acyclic objects; collection back on after (main runs in tests too)
        cs = count_update_partition(p.sector_size)
    dt = time.perf_counter() - t0
    print(f"sector size: {args.sector_size}, partitions {p.partitions}, challenges per partition {p.challenges}, "
          f"apex leaves {p.apex_leaves}")
    print(f"constraints: {cs.num_constraints}")
    print(f"public inputs (ONE included): {cs.num_inputs}")
    print(f"aux variables: {cs.num_aux}")
    print(f"shape pass: {dt:.1f} s, {cs.memo_hits} memoized replays, "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
