"""A job: one request on its way through the engine, its stage events and its result."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

from cuzk_plugin.engine.circuits import JobPlan
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
    #: Seen by backend threads between prove_start and assembly.
    cancel_flag: threading.Event = field(default_factory=threading.Event)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    #: Set once the request is planned (or refused: then plan_error says why).
    planned: asyncio.Event = field(default_factory=asyncio.Event)
    plan_error: Exception | None = None
    task: asyncio.Task | None = None
    first_start: float | None = None

    @property
    def kind(self) -> ProofKind:
        return self.request.kind

    @property
    def partitions(self) -> int:
        return len(self.plan.tasks) if self.plan else 0

    @property
    def circuit_id(self) -> str:
        return self.plan.circuit_id if self.plan else ""

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
        self.result = JobResult(
            job_id=self.id, status=status, proof=proof, error_message=error, timings=self.timings,
            timeline=tuple(sorted(self.events, key=lambda e: (e.start_ms, e.partition))),
            partitions=self.partitions, circuit_id=self.circuit_id,
        )
        self.done.set()
        return self.result
