"""How long planning a 32 GiB PoRep C1 (49 MB of JSON) holds the GIL: json.loads alone (what
the daemon called before) against porep_partitions now (json_pieces under a counted GC pause),
on the raw C1 and on Curio's envelope (65 MB: the C1 as base64 in Phase1Out).
A sleeper thread measures the longest gap (bench/daemon/body_parse.py's GilGaps); medians of
REPEAT runs after a warm-up.

    .venv/bin/python bench/daemon/c1_parse.py [REPEAT]
"""

from __future__ import annotations

import base64
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from body_parse import GilGaps

from cuzk_plugin.adapters.curio.porep.job import porep_partitions
from cuzk_plugin.filecoin.fixtures.seal import c1_json
from cuzk_plugin.filecoin.fixtures.sparse_seal import seal_proof_for_size, sparse_seal


def main() -> None:
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    raw = c1_json(sparse_seal(seal_proof_for_size(32 << 30).name, sector_id=3))
    print(f"sparse 32 GiB C1: {len(raw) / 1e6:.1f} MB; {repeat} runs after one warm-up; medians (min-max)")
    envelope = json.dumps({"SectorNum": 3, "Phase1Out": base64.b64encode(raw).decode(),
                           "SectorSize": 32 << 30}).encode()
    for name, parse, doc in (("json.loads only (before)", json.loads, raw),
                             ("porep_partitions (now)", porep_partitions, raw),
                             ("envelope, porep_partitions", porep_partitions, envelope)):
        totals, gaps = [], []
        for i in range(repeat + 1):
            with GilGaps() as g:
                t0 = time.perf_counter()
                parse(doc)
                total = time.perf_counter() - t0
            if i:
                totals.append(total * 1e3)
                gaps.append(g.worst * 1e3)
        print(f"{name:26s} total {statistics.median(totals):7.0f} ms ({min(totals):.0f}-{max(totals):.0f}), "
              f"longest GIL hold {statistics.median(gaps):6.0f} ms ({min(gaps):.0f}-{max(gaps):.0f})")


if __name__ == "__main__":
    main()
