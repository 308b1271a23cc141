"""Small value types of the engine: kinds, priorities, statuses, the request and the result.

The numbers of :class:`ProofKind`, :class:`Priority` and :class:`JobStatus` are the wire
numbers of cuzk.v1, so the server converts by value.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class ProofKind(enum.IntEnum):
    """What is proved (cuzk.v1 ProofKind; 100 and up are our additions)."""

    UNSPECIFIED = 0
    POREP_SEAL_COMMIT = 1
    SNAP_DEALS_UPDATE = 2
    WINDOW_POST_PARTITION = 3
    WINNING_POST = 4
    REGISTERED_CIRCUIT = 100
    SYNTHETIC = 101

    @property
    def label(self) -> str:
        """Short name used in queues, metrics and logs."""
        return _KIND_LABELS[self]


_KIND_LABELS = {
    ProofKind.UNSPECIFIED: "unspecified",
    ProofKind.POREP_SEAL_COMMIT: "porep",
    ProofKind.SNAP_DEALS_UPDATE: "snap",
    ProofKind.WINDOW_POST_PARTITION: "window_post",
    ProofKind.WINNING_POST: "winning_post",
    ProofKind.REGISTERED_CIRCUIT: "registered",
    ProofKind.SYNTHETIC: "synthetic",
}


class Priority(enum.IntEnum):
    """Scheduling priority (cuzk.v1 Priority): higher runs first, at every stage."""

    UNSPECIFIED = 0
    LOW = 1
    NORMAL = 2
    HIGH = 3
    CRITICAL = 4

    @classmethod
    def default_for(cls, kind: ProofKind) -> Priority:
        """The kind's default: WinningPoSt CRITICAL, WindowPoSt HIGH, everything else NORMAL."""
        return {ProofKind.WINNING_POST: cls.CRITICAL, ProofKind.WINDOW_POST_PARTITION: cls.HIGH}.get(kind, cls.NORMAL)


class JobStatus(enum.IntEnum):
    """A job's state; the finished ones are the wire's AwaitProofResponse.Status numbers."""

    UNKNOWN = 0
    COMPLETED = 1
    FAILED = 2
    CANCELLED = 3
    TIMEOUT = 4  # only ever an answer to AwaitProof; the job itself keeps running
    QUEUED = 10
    RUNNING = 11

    @property
    def finished(self) -> bool:
        return self in (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED)


@dataclass(frozen=True)
class SyntheticInput:
    """Synthetic Filecoin-shaped partitions: 2^log2_constraints constraints each."""

    log2_constraints: int
    partitions: int = 1
    seed: int = 0


@dataclass(frozen=True)
class RegisteredInput:
    """A circuit in the param cache and one circom witness (.wtns bytes) per partition."""

    circuit_id: str
    witnesses: tuple[bytes, ...]


@dataclass(frozen=True)
class ProofRequest:
    """A proof request as the engine sees it (the server fills it from SubmitProofRequest)."""

    request_id: str
    kind: ProofKind
    priority: Priority = Priority.UNSPECIFIED
    sector_size: int = 0
    registered_proof: int = 0
    vanilla_proof: bytes = b""
    vanilla_proofs: tuple[bytes, ...] = ()
    sector_number: int = 0
    miner_id: int = 0
    randomness: bytes = b""
    partition_index: int = 0
    comm_r_old: bytes = b""
    comm_r_new: bytes = b""
    comm_d_new: bytes = b""
    registered: RegisteredInput | None = None
    synthetic: SyntheticInput | None = None

    @property
    def effective_priority(self) -> Priority:
        return self.priority if self.priority != Priority.UNSPECIFIED else Priority.default_for(self.kind)


@dataclass(frozen=True)
class StageEvent:
    """One stage of one partition (partition -1: the whole job), ms since the job's submission."""

    stage: str
    partition: int
    lane: str
    start_ms: float
    end_ms: float
    attempt: int = 1


@dataclass
class JobTimings:
    """Per-job stage totals in seconds (sums over partitions: work, not wall time)."""

    queue_wait: float = 0.0
    srs_load: float = 0.0
    synthesis: float = 0.0
    gpu_compute: float = 0.0
    verify: float = 0.0
    total: float = 0.0


@dataclass(frozen=True)
class JobResult:
    """What AwaitProof answers."""

    job_id: str
    status: JobStatus
    proof: bytes = b""
    error_message: str = ""
    timings: JobTimings = field(default_factory=JobTimings)
    timeline: tuple[StageEvent, ...] = ()
    partitions: int = 0
    circuit_id: str = ""
