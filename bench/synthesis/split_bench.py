"""Time the split of a PoRep C1 as the daemon's planner splits it: the plain envelope's C1
decoded with each partition's list left as text (``decode_json(..., keep_raw=...)``), under the
planner's GC pause. Run from the repository root on a sealed C1 (put in Curio's envelope as
plan_bench.py puts it):

    python bench/synthesis/split_bench.py /tmp/c1.json [RUNS]

Prints the median, min and max of RUNS (default 10) after two warm-ups.
"""

import statistics
import sys
import time
from pathlib import Path

from plan_bench import curio_envelope

from cuzk_plugin.adapters.curio.porep import job
from cuzk_plugin.adapters.curio.porep.c1 import decode_json, plain_envelope
from cuzk_plugin.circuit.fast_cs import gc_paused


def main() -> None:
    plain = plain_envelope(curio_envelope(Path(sys.argv[1]).read_bytes()))
    if plain is None:
        sys.exit(f"{sys.argv[1]}: not a C1")
    c1, runs = plain[1], int(sys.argv[2]) if len(sys.argv) > 2 else 10
    times = []
    for _ in range(runs + 2):
        with gc_paused():
            t = time.perf_counter()
            top = decode_json(c1, keep_raw=job._partition_text)
            times.append(time.perf_counter() - t)
            del top
    times = times[2:]
    print(f"split of a C1 of {len(c1):,} bytes: median {statistics.median(times) * 1e3:.0f} ms "
          f"(min {min(times) * 1e3:.0f}, max {max(times) * 1e3:.0f}, {runs} runs)")


if __name__ == "__main__":
    main()
