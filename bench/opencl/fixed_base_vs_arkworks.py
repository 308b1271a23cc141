"""Test-key points on the OpenCL device (kernels/fixed_base.cl) against the host's arkworks
path (backends/cpu/multiples.py, every core): the same random scalars, bytes compared, medians.

    .venv/bin/python bench/opencl/fixed_base_vs_arkworks.py --g1 200000 --g2 50000 --repeat 3
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

from cuzk_plugin.backends.cpu.multiples import raw_multiples
from cuzk_plugin.backends.opencl import OpenclBackend
from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, ints_to_limbs


def timed(fn, repeat: int) -> tuple[list[float], object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--g1", type=int, default=200_000)
    ap.add_argument("--g2", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rnd = random.Random(1)
    vectors = [(g, ints_to_limbs([rnd.randrange(R) for _ in range(n)], FR_LIMBS))
               for g, n in (("g1", args.g1), ("g2", args.g2))]
    backend = OpenclBackend()
    backend._key_multiples([(g, s[:64]) for g, s in vectors])  # warm-up: programs built
    print(backend)
    for g, scalars in vectors:
        dev_t, dev = timed(lambda g=g, s=scalars: backend._key_multiples([(g, s)])[0], args.repeat)
        ark_t, ark = timed(lambda g=g, s=scalars: raw_multiples([(g, s)])[0], args.repeat)
        n = scalars.shape[0]
        print(f"{g} n={n}: device {statistics.median(dev_t):.2f} s ({min(dev_t):.2f}-{max(dev_t):.2f}), "
              f"{statistics.median(dev_t) / n * 1e6:.1f} us a point; arkworks {statistics.median(ark_t):.2f} s "
              f"({min(ark_t):.2f}-{max(ark_t):.2f}), {statistics.median(ark_t) / n * 1e6:.1f} us a point; "
              f"ratio {statistics.median(dev_t) / statistics.median(ark_t):.2f}; "
              f"bytes equal: {np.array_equal(dev, ark)}")


if __name__ == "__main__":
    main()
