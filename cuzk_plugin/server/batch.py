"""A batch of proofs against a running daemon, client side: send, record, summarize.

Used by ``cuzk-bench single|batch`` and by the daemon demo.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ProofRecord", "record", "format_record", "Progress", "run_batch", "summarize", "print_summary",
           "STATUS_NAMES"]

STATUS_NAMES = {0: "UNKNOWN", 1: "COMPLETED", 2: "FAILED", 3: "CANCELLED", 4: "TIMEOUT"}


# -- results ------------------------------------------------------------------------------------
@dataclass
class ProofRecord:
    """One answered request, client side."""

    job_id: str
    status: str
    proof_bytes: int
    error: str
    submit_s: float  # seconds since the batch started
    latency_ms: float
    timings_ms: dict[str, int]
    timeline: list[dict] = field(default_factory=list)
    seed: int = 0
    proof: bytes = b""
    #: The daemon's wall clock at the job's submission: the zero of ``timeline`` (0: not sent)
    submitted_unix_ms: float = 0.0


def record(res, submit_s: float, latency_ms: float, seed: int = 0) -> ProofRecord:
    return ProofRecord(
        job_id=res.job_id, status=STATUS_NAMES.get(res.status, str(res.status)), proof_bytes=len(res.proof),
        error=res.error_message, submit_s=submit_s, latency_ms=latency_ms,
        timings_ms={"queue": res.queue_wait_ms, "srs": res.srs_load_ms, "synthesis": res.synthesis_ms,
                    "gpu": res.gpu_compute_ms, "total": res.total_ms},
        timeline=[{"stage": e.stage, "partition": e.partition, "lane": e.lane, "start_ms": e.start_ms,
                   "end_ms": e.end_ms, "attempt": e.attempt} for e in res.timeline],
        seed=seed, proof=res.proof, submitted_unix_ms=res.submitted_unix_ms,
    )


def format_record(r: ProofRecord) -> str:
    t = r.timings_ms
    line = (f"{r.job_id}: {r.status}, {r.proof_bytes} proof bytes; queue {t['queue']} ms, srs {t['srs']} ms, "
            f"synthesis {t['synthesis']} ms, gpu {t['gpu']} ms, total {t['total']} ms (client {r.latency_ms:.0f} ms)")
    return line + (f"\n  error: {r.error}" if r.error else "")


class Progress:
    """A one-line progress bar on stderr (only when it is a terminal, unless forced)."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.failed = total, 0, 0
        self.enabled = enabled
        self.t0 = time.perf_counter()

    def step(self, ok: bool) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        if not self.enabled:
            return
        width = 30
        filled = int(width * self.done / max(1, self.total))
        rate = self.done / max(1e-9, time.perf_counter() - self.t0)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                         f"{rate:5.1f} proofs/s, {self.failed} failed")
        if self.done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


async def run_batch(address: str, make_request: Callable[[str, int], Any], count: int, concurrency: int,
                    show_progress: bool) -> tuple[list[ProofRecord], float]:
    """COUNT Prove calls, CONCURRENCY at a time; ``make_request(request_id, index)`` builds each
    SubmitProofRequest. Returns the records and the wall time."""
    from cuzk_plugin.server.client import aio_channel
    from cuzk_plugin.server.proto import cuzk_pb2 as pb
    from cuzk_plugin.server.proto import cuzk_pb2_grpc

    progress = Progress(count, show_progress)
    records: list[ProofRecord] = []
    todo = iter(range(count))
    prefix = f"bench-{os.getpid()}-{int(time.time())}"
    t0 = time.perf_counter()
    async with aio_channel(address) as channel:
        stub = cuzk_pb2_grpc.ProvingEngineStub(channel)

        async def worker() -> None:
            for i in todo:
                req = make_request(f"{prefix}-{i}", i)
                # Built before the clock: wrapping copies the request (108 ms for a 65 MB C1),
                # which is this client's cost, not the daemon's (bench/daemon/README.md).
                prove = pb.ProveRequest(submit=req)
                sent = time.perf_counter()
                res = (await stub.Prove(prove)).result
                done = time.perf_counter()
                records.append(record(res, sent - t0, (done - sent) * 1000, req.synthetic.seed))
                progress.step(res.status == pb.AwaitProofResponse.COMPLETED)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return records, time.perf_counter() - t0


def summarize(records: list[ProofRecord], wall_s: float, partitions: int) -> dict:
    ok = [r for r in records if r.status == "COMPLETED"]
    lat = sorted(r.latency_ms for r in ok)

    def pct(p: float) -> float:
        return lat[min(len(lat) - 1, round(p * (len(lat) - 1)))] if lat else 0.0

    stages = {k: statistics.median([r.timings_ms[k] for r in ok]) if ok else 0 for k in ("queue", "srs", "synthesis", "gpu", "total")}
    return {
        "requests": len(records), "completed": len(ok), "failed": len(records) - len(ok),
        "wall_s": round(wall_s, 3), "proofs_per_s": round(len(ok) / wall_s, 3) if wall_s else 0.0,
        "partitions_per_s": round(len(ok) * partitions / wall_s, 3) if wall_s else 0.0,
        "latency_ms": {"min": round(lat[0], 1) if lat else 0, "median": round(pct(0.5), 1), "p90": round(pct(0.9), 1),
                       "max": round(lat[-1], 1) if lat else 0,
                       "stdev": round(statistics.pstdev(lat), 1) if len(lat) > 1 else 0.0},
        "stage_median_ms": stages,
        "errors": sorted({r.error for r in records if r.error})[:5],
    }


def print_summary(s: dict) -> None:
    lat = s["latency_ms"]
    st = s["stage_median_ms"]
    print(f"{s['completed']}/{s['requests']} completed in {s['wall_s']:.2f} s: {s['proofs_per_s']:.2f} proofs/s "
          f"({s['partitions_per_s']:.2f} partitions/s)")
    print(f"latency ms: min {lat['min']}, median {lat['median']}, p90 {lat['p90']}, max {lat['max']} (stdev {lat['stdev']})")
    print(f"median per proof ms: queue {st['queue']}, srs {st['srs']}, synthesis {st['synthesis']}, gpu {st['gpu']}, "
          f"total {st['total']}")
    for e in s["errors"]:
        print(f"error: {e}")
