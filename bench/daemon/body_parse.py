"""How long parsing a large SubmitProofRequest body holds the GIL (every other RPC waits that
long): protobuf's parse then ProofRequest (what the daemon did before 4ef8074) against the
in-place split (``convert.submit_from_body``). A ticker thread sleeping 1 ms measures the
longest gap; medians of REPEAT runs after a warm-up.

    .venv/bin/python bench/daemon/body_parse.py [MB] [REPEAT]
"""

from __future__ import annotations

import statistics
import sys
import threading
import time

from cuzk_plugin.server import convert
from cuzk_plugin.server.proto import cuzk_pb2 as pb


class GilGaps:
    """The longest interval in which a 1 ms sleeper could not run."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = time.perf_counter()
        while not self._stop:
            time.sleep(0.001)
            now = time.perf_counter()
            self.worst = max(self.worst, now - last)
            last = now

    def __enter__(self) -> GilGaps:
        self._thread.start()
        time.sleep(0.01)
        self.worst = 0.0
        return self

    def __exit__(self, *exc) -> None:
        self._stop = True
        self._thread.join()


def protobuf_path(raw: bytes):
    return convert.request_from_proto(pb.SubmitProofRequest.FromString(raw))


def main() -> None:
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    raw = pb.SubmitProofRequest(request_id="big", proof_kind=pb.POREP_SEAL_COMMIT,
                                vanilla_proof=b"\x5a" * (mb << 20)).SerializeToString()
    print(f"body {len(raw) / 1e6:.0f} MB, {repeat} runs after one warm-up; medians (min-max)")
    for name, parse in (("protobuf parse + ProofRequest", protobuf_path), ("split in place", convert.submit_from_body)):
        totals, gaps = [], []
        for i in range(repeat + 1):
            with GilGaps() as g:
                t0 = time.perf_counter()
                request = parse(raw)
                total = time.perf_counter() - t0
            assert len(request.vanilla_proof) == mb << 20
            del request
            if i:
                totals.append(total * 1e3)
                gaps.append(g.worst * 1e3)
        print(f"{name:32s} total {statistics.median(totals):6.1f} ms ({min(totals):.1f}-{max(totals):.1f}), "
              f"longest GIL hold {statistics.median(gaps):6.1f} ms ({min(gaps):.1f}-{max(gaps):.1f})")


if __name__ == "__main__":
    main()
