"""Where one PoRep partition's witness time goes, one thread, no overlap.

    python bench/synthesis/witness_profile.py --c1 c1.json [--partition K] [--top 25]

Times the aux allocation and each piece of ``compute_part`` for all the partition's challenges
one after another (comm_d paths, labels with the encoded node's paths, parent columns), each
after a warm-up, then prints cProfile's top functions (CPU clock) of one such sequential pass.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cuzk_plugin.filecoin.porep.witness_layout import porep_layout
from cuzk_plugin.filecoin.porep.witness_parts import Part, _header, compute_part, zeroed_aux


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--c1", required=True)
    ap.add_argument("--partition", type=int, default=0)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    from cuzk_plugin.adapters.curio.porep.job import porep_partitions
    job = porep_partitions(Path(args.c1).read_bytes())
    params, w = job.params, job.witness(args.partition)
    cpp = params.challenges_per_partition
    lay = porep_layout(params)
    print(f"sector {params.sector_size} B, {cpp} challenges, aux {lay.num_aux}, {os.cpu_count()} CPUs", flush=True)
    h = _header(w)
    chs = list(w.challenges)
    parts = [Part("comm_d", 0, cpp), Part("labels", 0, cpp), Part("parents", 0, cpp)]
    t = time.perf_counter()
    aux = zeroed_aux(lay)
    print(f"allocate and zero the aux (first touch): {time.perf_counter() - t:.2f} s", flush=True)
    t = time.perf_counter()
    aux.fill(0)
    print(f"zero the aux again (pages mapped): {time.perf_counter() - t:.2f} s", flush=True)
    for p in parts:
        compute_part(params, aux, h, chs, p)
        c, t = time.process_time(), time.perf_counter()
        compute_part(params, aux, h, chs, p)
        print(f"{p.kind} (all challenges): {time.perf_counter() - t:.2f} s wall, {time.process_time() - c:.2f} s CPU",
              flush=True)
    for one in (Part("comm_d", 0, 1), Part("labels", 0, 1), Part("parents", 0, 1)):
        t = time.perf_counter()
        compute_part(params, aux, h, chs[:1], one)
        print(f"{one.kind} (one challenge): {time.perf_counter() - t:.2f} s wall", flush=True)
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    for p in parts:
        compute_part(params, aux, h, chs, p)
    prof.disable()
    st = pstats.Stats(prof)
    st.sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
