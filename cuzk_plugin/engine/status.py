"""The engine's status snapshot (GetStatus, the status page, /healthz) and the metrics read from it.

One snapshot reads every lane (its workers, the keys resident on it, what it proved or gave up
on), the key table, the queues by proof kind and the job counts at one instant; the Prometheus
gauges are set from that same snapshot, so /metrics and GetStatus never disagree.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from cuzk_plugin.engine.host_blocks import HostBlockPool
from cuzk_plugin.engine.job_book import JobBook
from cuzk_plugin.engine.lanes import Lane
from cuzk_plugin.engine.metrics import EngineMetrics
from cuzk_plugin.engine.residency import ResidencyPlan
from cuzk_plugin.engine.sched import SlotPool
from cuzk_plugin.engine.srs import TIER_NAMES, SrsManager, SrsSnapshot
from cuzk_plugin.engine.types import JobStatus, ProofKind

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GpuState:
    """One lane (a device of a backend): its work, its memory, the keys resident on it."""

    ordinal: int
    name: str
    lane: str
    vram_total_bytes: int
    vram_free_bytes: int
    current_job_id: str
    current_proof_kind: str
    workers: int = 0
    busy_workers: int = 0
    #: The job of each busy worker (a lane proves partitions of several jobs at once).
    current_job_ids: tuple[str, ...] = ()
    #: Bytes of the key copies resident on this lane (each counted in the memory budget).
    resident_bytes: int = 0
    #: The keys HOT on this lane (size: this lane's copy; ref_count: partitions proving with it).
    resident: tuple[SrsSnapshot, ...] = ()
    partitions_proved: int = 0
    #: Partitions this lane gave up on (moved to another lane or failed).
    partitions_failed: int = 0
    #: Set aside after LANE_STRIKES failures in a row (used only if no other lane is left).
    resting: bool = False
    #: Device bytes the daemon may use on the lane (0: keys not planned on this backend), and the
    #: residency plan of each key loaded there.
    device_budget_bytes: int = 0
    key_residency: tuple[ResidencyPlan, ...] = ()
    #: The lane's host -> device link measured at start, bytes a second (0: not measured).
    link_bytes_per_s: float = 0.0


@dataclass(frozen=True)
class QueueState:
    proof_kind: str
    pending: int
    in_progress: int


@dataclass(frozen=True)
class EngineStatus:
    gpus: list[GpuState]
    srs: list[SrsSnapshot]
    queues: list[QueueState]
    completed: int
    failed: int
    cancelled: int
    uptime_s: float
    memory_used_bytes: int
    memory_limit_bytes: int
    backend: str
    #: The partitions' large host blocks: mapped, of them free, their bytes, the circuit kept ready.
    host_blocks: int = 0
    host_blocks_free: int = 0
    host_block_bytes: int = 0
    host_blocks_kept_for: str = ""


class StatusReport:
    """Reads the engine's parts into an :class:`EngineStatus`; ``resting`` tells a lane set aside
    by the GPU stage."""

    def __init__(self, lanes: list[Lane], slots: SlotPool, srs: SrsManager, metrics: EngineMetrics, jobs: JobBook,
                 host_blocks: HostBlockPool, *, resting: Callable[[str], bool], backend_summary: str, started: float):
        self.lanes = lanes
        self.slots = slots
        self.srs = srs
        self.metrics = metrics
        self.jobs = jobs
        self.host_blocks = host_blocks
        self.lane_resting = resting
        self.backend_summary = backend_summary
        self._started = started

    def status(self) -> EngineStatus:
        """The snapshot now (a key table that cannot be read shows empty: status answers anyway)."""
        gpus = []
        proved, failed = self.metrics.by_lane(self.metrics.partitions), self.metrics.by_lane(self.metrics.lane_failures)
        for i, lane in enumerate(self.lanes):
            slots = [s for s in self.slots.slots if s.lane == lane.name]
            busy = [s for s in slots if s.busy_job]
            total = int(lane.device.memory_bytes)
            resident = tuple(self.srs.resident_on(lane.name))
            held = sum(r.size_bytes for r in resident)
            gpus.append(GpuState(i, f"{lane.name} {lane.device.name}", lane.name, total, max(0, total - held),
                                 busy[0].busy_job if busy else "", busy[0].busy_kind if busy else "",
                                 workers=len(slots), busy_workers=len(busy),
                                 current_job_ids=tuple(dict.fromkeys(s.busy_job for s in busy)),
                                 resident_bytes=held, resident=resident,
                                 partitions_proved=int(proved.get(lane.name, 0)),
                                 partitions_failed=int(failed.get(lane.name, 0)),
                                 resting=self.lane_resting(lane.name), device_budget_bytes=lane.room,
                                 key_residency=lane.key_plans(), link_bytes_per_s=lane.link_bytes_per_s))
        queues: dict[str, list[int]] = {}
        for job in self.jobs:
            if job.status in (JobStatus.QUEUED, JobStatus.RUNNING):
                q = queues.setdefault(job.kind.label, [0, 0])
                q[0 if job.status == JobStatus.QUEUED else 1] += 1
        try:
            srs = self.srs.snapshot()
        except OSError as exc:  # a key file that went away under us: status must answer anyway
            log.warning("status: key table unreadable (%s)", exc)
            srs = []
        mapped, free, block_bytes = self.host_blocks.stats()
        return EngineStatus(
            gpus=gpus, srs=srs,
            queues=[QueueState(k, v[0], v[1]) for k, v in sorted(queues.items())],
            completed=self.jobs.counts[JobStatus.COMPLETED], failed=self.jobs.counts[JobStatus.FAILED],
            cancelled=self.jobs.counts[JobStatus.CANCELLED], uptime_s=time.monotonic() - self._started,
            memory_used_bytes=self.srs.used_bytes, memory_limit_bytes=self.srs.budget_bytes, backend=self.backend_summary,
            host_blocks=mapped, host_blocks_free=free, host_block_bytes=block_bytes,
            host_blocks_kept_for=self.host_blocks.kept_for() or "",
        )

    def metrics_text(self, st: EngineStatus) -> str:
        """The Prometheus text, its gauges set from ``st``."""
        m = self.metrics
        m.queue.clear()
        for kind in ProofKind:
            if kind != ProofKind.UNSPECIFIED:
                q = next((q for q in st.queues if q.proof_kind == kind.label), None)
                m.queue.labels(kind.label, "pending").set(q.pending if q else 0)
                m.queue.labels(kind.label, "in_progress").set(q.in_progress if q else 0)
        m.srs_bytes.clear()
        for s in st.srs:
            m.srs_bytes.labels(s.circuit_id, TIER_NAMES[s.tier]).set(s.size_bytes)
        m.set_lanes(st.gpus)
        m.memory_used.set(st.memory_used_bytes)
        m.memory_budget.set(st.memory_limit_bytes)
        m.uptime.set(st.uptime_s)
        m.gpu_workers.set(len(self.slots.slots))
        m.busy_workers = sum(1 for s in self.slots.slots if s.busy_job)
        mapped, free, nbytes = self.host_blocks.stats()
        m.host_blocks.labels("mapped").set(mapped)
        m.host_blocks.labels("free").set(free)
        m.host_block_bytes.set(nbytes)
        return m.text()

