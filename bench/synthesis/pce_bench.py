"""Pre-compiled circuit benchmark: extraction of a PoRep circuit, then for one partition of a
sealed 2 KiB sector the witness, a, b, c per backend, and witness + a, b, c (median, min, max).

    python bench/synthesis/pce_bench.py --param-cache /tmp/pce --backends cpu opencl --runs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from cuzk_plugin.adapters.curio.porep.job import ensure_porep_pce, porep_partitions
from cuzk_plugin.backends.registry import get_backend
from cuzk_plugin.formats.pce import load_pce, pce_path


def stats(xs: list[float]) -> str:
    return f"median {statistics.median(xs):.3f} s (min {min(xs):.3f}, max {max(xs):.3f}, n={len(xs)})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--param-cache", required=True)
    ap.add_argument("--backends", nargs="*", default=["cpu", "opencl"])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--c1", help="a 2 KiB C1 JSON (default: seal one)")
    ap.add_argument("--extract", nargs="*", default=["porep-2k"], help="circuits to extract first, timed")
    ap.add_argument("--reference", action="store_true", help="also time the reference synthesis once")
    args = ap.parse_args()
    for cid in args.extract:
        pce_path(args.param_cache, cid).unlink(missing_ok=True)
        t0 = time.perf_counter()
        path = ensure_porep_pce(cid, args.param_cache)
        print(f"extract {cid}: {time.perf_counter() - t0:.1f} s, {os.path.getsize(path) / 1e6:.1f} MB")
    if args.c1:
        c1 = open(args.c1, "rb").read()
    else:
        from cuzk_plugin.filecoin.fixtures.seal import c1_json, seal

        c1 = c1_json(seal("StackedDrg2KiBV1_1", miner_id=1000, sector_id=7, data_seed=1))
    pce = load_pce(ensure_porep_pce("porep-2k", args.param_cache))
    job = porep_partitions(c1)
    if args.reference:
        t0 = time.perf_counter()
        job.synthesize(0)
        print(f"reference synthesis (FastConstraintSystem, a, b, c on the host): {time.perf_counter() - t0:.1f} s")
    wit = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        inputs, aux = job.assignment(0)
        wit.append(time.perf_counter() - t0)
    print(f"witness (filecoin.witness.partition_assignment, checked): {stats(wit)}")
    z = np.concatenate([inputs, aux])
    for name in args.backends:
        be = get_backend(name)
        t0 = time.perf_counter()
        h = be.load_circuit(pce)
        load = time.perf_counter() - t0
        be.evaluate_r1cs(h, z)  # warm-up (kernel build, first touch)
        ev, cpu = [], []
        for _ in range(args.runs):
            t0, p0 = time.perf_counter(), time.process_time()
            be.evaluate_r1cs(h, z)
            ev.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - p0)
        tot = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            i2, a2 = job.assignment(0)
            be.evaluate_r1cs(h, np.concatenate([i2, a2]))
            tot.append(time.perf_counter() - t0)
        print(f"{name}: load_circuit {load:.2f} s; a, b, c {stats(ev)}, process CPU {stats(cpu)}")
        print(f"{name}: witness + a, b, c {stats(tot)}")
        h.release()


if __name__ == "__main__":
    main()
