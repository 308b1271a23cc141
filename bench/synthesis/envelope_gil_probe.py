"""How long the plan of a hostile body holds the GIL: a thread that sleeps 1 ms at a time records
its longest wait while ``porep_partitions`` refuses a flat JSON object of MB megabytes (what
``tests/daemon/test_large_body.py`` sends four at a time while it times GetStatus).
Run from the repository root:

    python bench/synthesis/envelope_gil_probe.py [MB] [RUNS]

Prints each run's seconds, the probe's longest wait and the waits over 20 ms.
"""

import sys
import threading
import time

from cuzk_plugin.adapters.curio.porep.job import porep_partitions


def probe_once(body: bytes) -> tuple[float, float, list[float]]:
    gaps: list[tuple[float, float]] = []
    stop = threading.Event()

    def probe() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            gaps.append((now - last, now))
            last = now

    thread = threading.Thread(target=probe)
    thread.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    try:
        porep_partitions(body)
    except Exception as exc:  # the refusal is what is timed
        refusal = f"{type(exc).__name__}: {str(exc)[:100]}"
    else:
        refusal = "accepted"
    t1 = time.perf_counter()
    time.sleep(0.05)
    stop.set()
    thread.join()
    inside = [g for g, at in gaps if t0 <= at <= t1 + 0.01]
    print(refusal)
    return t1 - t0, max(inside, default=0.0), [g for g in inside if g > 0.02]


def main() -> None:
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    members = (mb << 20) // 2
    body = b'{"SectorNum": [' + b"1," * (members - 1) + b"1]}"
    for _ in range(runs):
        seconds, worst, long_waits = probe_once(body)
        print(f"{mb} MB flat object: {seconds:.3f} s, longest wait {worst * 1e3:.0f} ms, "
              f"waits over 20 ms: {[round(g * 1e3) for g in long_waits]}")


if __name__ == "__main__":
    main()
