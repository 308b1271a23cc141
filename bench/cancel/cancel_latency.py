"""Cancel latency of a running partition: seconds from Backend.prove_cancel until prove_finish
raises ProveCancelled, cancelled at fractions of a full call's duration.

    PYTHONPATH=. .venv/bin/python bench/cancel/cancel_latency.py cpu 13
    PYTHONPATH=. .venv/bin/python bench/cancel/cancel_latency.py opencl 13
"""

from __future__ import annotations

import statistics
import sys
import threading
import time

import numpy as np

from cuzk_plugin.backends.registry import get_backend
from cuzk_plugin.errors import ProveCancelled
from tests.large_partition import random_partition, repeated_key

FRACTIONS = (0.1, 0.3, 0.5, 0.7, 0.85)


def main(name: str, log2: int) -> None:
    backend = get_backend(name)
    srs = backend.load_srs(repeated_key(log2))
    part = random_partition(log2, np.random.default_rng(1))
    t0 = time.perf_counter()
    backend.prove_finish(backend.prove_start(srs, part))
    full = time.perf_counter() - t0
    latencies = []
    for frac in FRACTIONS:
        pending = backend.prove_start(srs, part)
        stamp: list[float] = []

        def cancel_later(delay: float = full * frac, pending=pending, stamp=stamp) -> None:
            time.sleep(delay)
            stamp.append(time.perf_counter())
            backend.prove_cancel(pending)

        th = threading.Thread(target=cancel_later)
        th.start()
        try:
            backend.prove_finish(pending)
            print(f"cancel at {frac:.0%}: finished first")
        except ProveCancelled:
            latencies.append(time.perf_counter() - stamp[0])
            print(f"cancel at {frac:.0%} ({full * frac:.2f}s): returned {latencies[-1] * 1e3:.0f} ms later")
        th.join()
    srs.release()
    print(f"{name} 2^{log2}: full call {full:.2f}s; cancel latency median {statistics.median(latencies) * 1e3:.0f} ms, "
          f"max {max(latencies) * 1e3:.0f} ms over {len(latencies)}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
