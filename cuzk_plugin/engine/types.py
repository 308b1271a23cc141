"""Small value types of the engine: kinds, priorities, statuses, the request and the result.

The numbers of :class:`ProofKind`, :class:`Priority` and :class:`JobStatus` are the wire
numbers of cuzk.v1, so the server converts by value.
"""

from __future__ import annotations

import enum
import hashlib
import re
import struct
from dataclasses import dataclass, field, replace

#: The longest request id accepted (Curio's are under 100 characters).
REQUEST_ID_MAX = 256
#: A circuit id: one ASCII form, a file stem in the param cache (no '/', no '..', <= 128 characters).
CIRCUIT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", re.ASCII)


def loggable(text: str, limit: int = 96) -> str:
    """A client's string as it may appear in a log line: control characters escaped, bounded."""
    short = text if len(text) <= limit else text[:limit]
    out = short if short.isprintable() else short.encode("unicode_escape").decode("ascii")
    return out if len(text) <= limit else f"{out}...({len(text)} chars)"


def request_id_problem(request_id: str) -> str | None:
    """Why ``request_id`` is refused, or None."""
    if len(request_id) > REQUEST_ID_MAX:
        return f"request_id: {len(request_id)} characters, more than {REQUEST_ID_MAX}"
    if not request_id.isprintable():
        return f"request_id: {loggable(request_id)!r} holds control or non-printable characters"
    return None


def circuit_id_problem(circuit_id: str, field_name: str = "circuit_id") -> str | None:
    """Why ``circuit_id`` is refused (not one ASCII file stem), or None."""
    if CIRCUIT_ID.fullmatch(circuit_id) and ".." not in circuit_id:
        return None
    return (f"{field_name}: {loggable(circuit_id)!r} is not a circuit id (ASCII letters, digits, '.', '_', '-'; "
            "at most 128; e.g. porep-32g, synthetic-k10)")


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
        """Short name used in queues, metrics and logs: cuzk's ``proof_kind`` label values for
        its four kinds, so dashboards made for cuzk read ours."""
        return _KIND_LABELS[self]


_KIND_LABELS = {
    ProofKind.UNSPECIFIED: "unspecified",
    ProofKind.POREP_SEAL_COMMIT: "porep_c2",
    ProofKind.SNAP_DEALS_UPDATE: "snap_update",
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
    #: PoRep's C1 envelope; from the daemon, a view of the request body (never copied).
    vanilla_proof: bytes | memoryview = b""
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

    @property
    def payload_bytes(self) -> int:
        """Bytes the client sent as proof inputs (what planning may expand)."""
        n = len(self.vanilla_proof) + sum(len(v) for v in self.vanilla_proofs)
        return n + (sum(len(w) for w in self.registered.witnesses) if self.registered else 0)

    def digest(self) -> bytes:
        """SHA-256 of what is proved (kind, registered proof, every input; not the id or priority):
        a repeated request id attaches to a running job only when this matches."""
        h = hashlib.sha256()

        def put(b: bytes | memoryview) -> None:
            h.update(struct.pack("<Q", len(b)))
            h.update(b)

        h.update(struct.pack("<QQQQQQ", int(self.kind), self.sector_size, self.registered_proof,
                             self.sector_number, self.miner_id, self.partition_index))
        for b in (self.vanilla_proof, self.randomness, self.comm_r_old, self.comm_r_new, self.comm_d_new):
            put(b)
        put(struct.pack("<Q", len(self.vanilla_proofs)))
        for b in self.vanilla_proofs:
            put(b)
        if self.registered is not None:
            put(self.registered.circuit_id.encode())
            put(struct.pack("<Q", len(self.registered.witnesses)))
            for b in self.registered.witnesses:
                put(b)
        if self.synthetic is not None:
            s = self.synthetic
            put(struct.pack("<QQQ", s.log2_constraints, s.partitions, s.seed))
        return h.digest()

    def without_payload(self) -> ProofRequest:
        """The request minus its inputs (what a finished job keeps)."""
        registered = RegisteredInput(self.registered.circuit_id, ()) if self.registered else None
        return replace(self, vanilla_proof=b"", vanilla_proofs=(), registered=registered)


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
    """Per-job stage times in seconds.

    ``srs_load``, ``synthesis``, ``gpu_compute`` are wall-clock spans: the time during which at
    least one partition was in that stage (never more than ``total``). The ``*_sum`` fields add
    the partitions' own times (work: partitions in parallel count each)."""

    queue_wait: float = 0.0
    srs_load: float = 0.0
    synthesis: float = 0.0
    gpu_compute: float = 0.0
    verify: float = 0.0
    total: float = 0.0
    srs_load_sum: float = 0.0
    synthesis_sum: float = 0.0
    gpu_compute_sum: float = 0.0


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
    submitted_unix: float = 0.0  # wall clock of the timeline's zero
