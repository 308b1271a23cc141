"""Count one PoRep partition's constraints by synthesizing its shape through the circuit code.

    python -m cuzk_plugin.filecoin.porep.count --sector-size 32GiB

The shape pass uses :class:`ShapeConstraintSystem` (counts only, repeated SHA-256 compressions
and Poseidon hashes replayed from their first synthesis).
"""

from __future__ import annotations

import argparse
import resource
import time

from cuzk_plugin.circuit.fast_cs import gc_paused
from cuzk_plugin.filecoin.gadgets.shape import ShapeConstraintSystem
from cuzk_plugin.filecoin.params import porep_params
from cuzk_plugin.filecoin.porep.circuit import blank_partition, synthesize_partition

__all__ = ["count_partition", "main"]


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def count_partition(sector_size: str | int, *, memoize: bool = True) -> ShapeConstraintSystem:
    """The shape of one partition of a sector of ``sector_size``."""
    params = porep_params(sector_size)
    cs = ShapeConstraintSystem(memoize=memoize)
    synthesize_partition(cs, params, blank_partition(params))
    return cs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sector-size", default="32GiB", help="2KiB, 8MiB, 512MiB, 32GiB or 64GiB")
    ap.add_argument("--no-memo", action="store_true", help="synthesize every sub-circuit (slow for 32 GiB)")
    args = ap.parse_args(argv)
    params = porep_params(args.sector_size)
    t0 = time.perf_counter()
    with gc_paused():  # millions of acyclic objects; collection back on after (main runs in tests too)
        cs = count_partition(params.sector_size, memoize=not args.no_memo)
    dt = time.perf_counter() - t0
    print(f"sector size: {args.sector_size} ({params.sector_size} bytes), layers {params.layers}, "
          f"challenges per partition {params.challenges_per_partition}, partitions {params.partitions}")
    print(f"constraints: {cs.num_constraints}")
    print(f"public inputs (ONE included): {cs.num_inputs}")
    print(f"aux variables: {cs.num_aux}")
    print(f"shape pass: {dt:.1f} s, {cs.memo_hits} memoized replays, peak RSS {_peak_mib():.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
