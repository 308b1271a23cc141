"""How long the plan of a hostile body holds the GIL: the longest wait of a 1 ms sleeper thread
(bench/daemon/body_parse.py's GilGaps) while ``porep_partitions`` refuses a flat JSON object of
MB megabytes, handed over as the server does (a memoryview into the request; what
``tests/daemon/test_large_body.py`` sends four at a time while it times GetStatus). Run from the
repository root:

    python bench/synthesis/envelope_gil_probe.py [MB] [RUNS]

Prints each run's seconds and the sleeper's longest wait.
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "daemon"))
from body_parse import GilGaps

from cuzk_plugin.adapters.curio.porep.c1 import C1Error
from cuzk_plugin.adapters.curio.porep.job import porep_partitions


def main() -> None:
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    members = (mb << 20) // 2
    body = memoryview(b'{"SectorNum": [' + b"1," * (members - 1) + b"1]}")
    for _ in range(runs):
        with GilGaps() as gaps:
            t0 = time.perf_counter()
            try:
                porep_partitions(body)
            except C1Error as exc:  # the refusal is what is timed
                refusal = str(exc)[:100]
            else:
                raise SystemExit("the flat body was accepted")
            seconds = time.perf_counter() - t0
        print(f"{mb} MB flat object: {seconds:.3f} s, longest wait {gaps.worst * 1e3:.0f} ms ({refusal})")


if __name__ == "__main__":
    main()
