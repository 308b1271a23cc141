"""A job: one request on its way through the engine, its stage events and its result."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from cuzk_plugin.engine.circuits import JobPlan
from cuzk_plugin.engine.lanes import CancelFlag
from cuzk_plugin.engine.types import JobResult, JobStatus, JobTimings, Priority, ProofKind, ProofRequest, StageEvent


@dataclass(eq=False)
class Job:
    """Mutable state of one job; only the engine's event loop touches it."""

    id: str
    seq: int
    request: ProofRequest
    priority: Priority
    plan: JobPlan | None
    submitted: float = field(default_factory=time.perf_counter)
    #: The same instant on the wall clock (the timeline's zero, for clients lining jobs up).
    submitted_unix: float = field(default_factory=time.time)
    status: JobStatus = JobStatus.QUEUED
    result: JobResult | None = None
    timings: JobTimings = field(default_factory=JobTimings)
    events: list[StageEvent] = field(default_factory=list)
    lanes_used: set[str] = field(default_factory=set)
    #: Callers blocked in Prove/AwaitProof on this job.
    waiters: int = 0
    #: Submitted only through Prove: cancelled when its last caller goes away.
    prove_only: bool = False
    cancel_requested: bool = False
    #: Seen by backend threads between prove_start and assembly; setting it interrupts the
    #: job's running backend calls (prove_cancel).
    cancel_flag: CancelFlag = field(default_factory=CancelFlag)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    #: Set once the request is planned (or refused: then plan_error says why).
    planned: asyncio.Event = field(default_factory=asyncio.Event)
    plan_error: Exception | None = None
    task: asyncio.Task | None = None
    first_start: float | None = None
    #: SHA-256 of what the request proves (see ProofRequest.digest); a repeated id must match it.
    digest: bytes = b""
    partitions: int = 0
    circuit_id: str = ""
    #: Partitions in synthesis now: partition -> when it started (perf_counter), for the status page.
    synthesizing: dict[int, float] = field(default_factory=dict)

    @property
    def kind(self) -> ProofKind:
        return self.request.kind

    def planned_as(self, plan: JobPlan) -> None:
        self.plan = plan
        self.partitions = len(plan.tasks)
        self.circuit_id = plan.circuit_id

    def ms(self, t: float) -> float:
        """A perf_counter stamp as ms since submission."""
        return (t - self.submitted) * 1000.0

    def event(self, stage: str, partition: int, lane: str, start: float, end: float, attempt: int = 1) -> None:
        self.events.append(StageEvent(stage, partition, lane, self.ms(start), self.ms(end), attempt))

    def mark_started(self, t: float) -> None:
        if self.first_start is None:
            self.first_start = t
            self.status = JobStatus.RUNNING
            self.timings.queue_wait = t - self.submitted
            self.event("queue", -1, "", self.submitted, t)

    def finish(self, status: JobStatus, proof: bytes = b"", error: str = "") -> JobResult:
        self.status = status
        self.timings.total = time.perf_counter() - self.submitted
        self.timings.srs_load = _span(self.events, ("srs",))
        self.timings.synthesis = _span(self.events, ("synthesis",))
        self.timings.gpu_compute = _span(self.events, ("gpu_start", "gpu_finish"))
        # The inputs (tens of MB for a PoRep) are not needed any more: only the answer is kept.
        self.request = self.request.without_payload()
        self.plan = None
        self.result = JobResult(
            job_id=self.id, status=status, proof=proof, error_message=error, timings=self.timings,
            timeline=tuple(sorted(self.events, key=lambda e: (e.start_ms, e.partition))),
            partitions=self.partitions, circuit_id=self.circuit_id, submitted_unix=self.submitted_unix,
        )
        self.done.set()
        return self.result


def _span(events: list[StageEvent], stages: tuple[str, ...]) -> float:
    """Seconds during which at least one partition was in one of ``stages`` (union of intervals)."""
    spans = sorted((e.start_ms, e.end_ms) for e in events if e.stage in stages)
    total, end = 0.0, float("-inf")
    for a, b in spans:
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total / 1000.0
