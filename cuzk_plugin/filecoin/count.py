"""Count one PoRep partition's constraints by synthesizing its shape through the circuit code.

    python -m cuzk_plugin.filecoin.count --sector-size 32GiB
    python -m cuzk_plugin.filecoin.count --sector-size 2KiB --witness

The shape pass uses :class:`ShapeConstraintSystem` (counts only, repeated SHA-256 compressions
and Poseidon hashes replayed from their first synthesis). ``--witness`` (2 KiB only) also
seals a sector, builds its C1 and synthesizes the full witness, checking every constraint.
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time

from cuzk_plugin.circuit.gadgets.shape import ShapeConstraintSystem
from cuzk_plugin.filecoin.circuit import blank_partition, synthesize_partition
from cuzk_plugin.filecoin.params import porep_params

__all__ = ["count_partition", "main"]


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def count_partition(sector_size: str | int, *, memoize: bool = True) -> ShapeConstraintSystem:
    """The shape of one partition of a sector of ``sector_size``."""
    params = porep_params(sector_size)
    cs = ShapeConstraintSystem(memoize=memoize)
    synthesize_partition(cs, params, blank_partition(params))
    return cs


def _witness_pass(out) -> None:
    from cuzk_plugin.adapters.curio.porep import porep_partitions
    from cuzk_plugin.filecoin.seal import c1_json, seal

    t0 = time.perf_counter()
    raw = c1_json(seal("StackedDrg2KiBV1_1"))
    t1 = time.perf_counter()
    job = porep_partitions(raw)
    r1cs, inputs, aux = job.circuit(0)
    t2 = time.perf_counter()
    bad = r1cs.first_unsatisfied(r1cs.assignment(inputs, aux))  # independent re-check on the matrices
    assert bad is None, f"constraint {bad} violated"
    t3 = time.perf_counter()
    tm = job.timings
    print(f"witness pass (2KiB, FastConstraintSystem): seal + C1 {t1 - t0:.1f} s, parse + synthesis with "
          f"per-constraint check + finish {t2 - t1:.1f} s (synthesis and check {tm['synthesize_and_check_s']:.1f} s, "
          f"finish {tm['finish_s']:.1f} s), re-check on the R1CS matrices {t3 - t2:.1f} s, constraints "
          f"{r1cs.num_constraints}, inputs {r1cs.num_inputs}, aux {r1cs.num_aux}, every constraint satisfied", file=out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sector-size", default="32GiB", help="2KiB, 8MiB, 512MiB, 32GiB or 64GiB")
    ap.add_argument("--no-memo", action="store_true", help="synthesize every sub-circuit (slow for 32 GiB)")
    ap.add_argument("--witness", action="store_true", help="also synthesize a sealed 2 KiB witness")
    args = ap.parse_args(argv)
    params = porep_params(args.sector_size)
    gc.disable()
    t0 = time.perf_counter()
    cs = count_partition(params.sector_size, memoize=not args.no_memo)
    dt = time.perf_counter() - t0
    print(f"sector size: {args.sector_size} ({params.sector_size} bytes), layers {params.layers}, "
          f"challenges per partition {params.challenges_per_partition}, partitions {params.partitions}")
    print(f"constraints: {cs.num_constraints}")
    print(f"public inputs (ONE included): {cs.num_inputs}")
    print(f"aux variables: {cs.num_aux}")
    print(f"shape pass: {dt:.1f} s, {cs.memo_hits} memoized replays, peak RSS {_peak_mib():.0f} MiB")
    if args.witness:
        if params.sector_size != 2 << 10:
            ap.error("--witness is for 2KiB sectors")
        _witness_pass(sys.stdout)
        print(f"peak RSS after witness pass: {_peak_mib():.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
