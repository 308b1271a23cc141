"""The partition pipeline: a planned job's partitions from synthesis to a verified proof.

    job --> key WARM (shared by the job's partitions)
        --> partition 0..n-1, each: window slot (lookahead) -> synthesis slot -> worker process
            (shared memory back) -> shapes checked against the key -> GPU stage (:mod:`.gpu_stage`)
    --> batch verification of all partitions -> COMPLETED (never on a failed check)

A job that finds synthesis idle starts with its head: its first partitions (one a GPU slot)
split every synthesis process between them, and its other partitions wait for them. The GPU
then starts after the head's witnesses, not after four made at once on a quarter of the cores
each (a 32 GiB PoRep partition's witness on the H200 host: 0.76 s alone in 16 processes, ~2.4 s
in 4 beside three others), and the rest follow while the device proves the head.

Every wait is ordered by (priority, job age, partition): a CRITICAL partition takes the next free
slot of each stage, and one that finds the lookahead window full takes a slot of its own reserve
(bounded, so memory stays bounded too). [pipeline] synthesis_concurrency bounds the jobs with
partitions in synthesis at once. A failed partition fails the job and cancels its others; a
cancelled job cancels its waits at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cuzk_plugin.engine.device_key import DeviceKey
from cuzk_plugin.engine.errors import CircuitUnavailable, SelfVerificationFailed
from cuzk_plugin.engine.gpu_stage import GpuStage
from cuzk_plugin.engine.host_blocks import HostBlockPool
from cuzk_plugin.engine.job import Job
from cuzk_plugin.engine.job_book import JobBook, failure_text
from cuzk_plugin.engine.metrics import EngineMetrics
from cuzk_plugin.engine.sched import JobGate, JobTicket, PrioritySemaphore, order_key
from cuzk_plugin.engine.srs import SrsManager
from cuzk_plugin.engine.synthesis import SharedPartition, SynthesisFailed, SynthesisPool
from cuzk_plugin.engine.types import JobStatus, Priority, loggable
from cuzk_plugin.errors import BackendError, CuzkError
from cuzk_plugin.formats.params import ProvingKey
from cuzk_plugin.formats.proof import Proof, encode_proofs
from cuzk_plugin.groth16.prover import check_shapes
from cuzk_plugin.groth16.verifier import batch_verify, prepare_inputs, verify

if TYPE_CHECKING:
    from py_arkworks_bls12381 import G1Point

log = logging.getLogger(__name__)


@dataclass(eq=False)
class JobHead:
    """A job's first ``size`` partitions and whether they synthesize with every process
    (``shared``: decided when the first of them starts, None before)."""

    size: int
    shared: bool | None = None
    left: int = 0
    #: Set once the rest of the job may synthesize: the head is done, or it was not shared.
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.left = self.size


class PartitionPipeline:
    """Runs planned jobs of ``jobs`` through the lookahead ``window`` (or, for CRITICAL partitions,
    ``critical_reserve``), ``synth_slots`` of ``pool`` and ``gpu``; ``host_threads`` gives the
    threads for a priority's self-verification."""

    def __init__(self, jobs: JobBook, gpu: GpuStage, pool: SynthesisPool, host_blocks: HostBlockPool,
                 srs: SrsManager, metrics: EngineMetrics, *, window: PrioritySemaphore,
                 critical_reserve: PrioritySemaphore, synth_slots: PrioritySemaphore, synth_jobs: JobGate,
                 host_threads: Callable[[Priority], Executor], head_partitions: int = 1):
        self.jobs = jobs
        self.gpu = gpu
        self.pool = pool
        self.host_blocks = host_blocks
        self.srs = srs
        self.metrics = metrics
        self._window = window
        self._critical_reserve = critical_reserve
        self._synth_slots = synth_slots
        self._synth_jobs = synth_jobs
        self._synth_tickets: dict[Job, JobTicket] = {}
        self._host_threads = host_threads
        self._head_partitions = max(1, head_partitions)
        self._heads: dict[Job, JobHead] = {}

    async def run(self, job: Job) -> None:
        """Prove a planned job's partitions, verify them and end the job (COMPLETED, FAILED or,
        when cancelled, CANCELLED)."""
        assert job.plan is not None
        self._synth_tickets[job] = self._synth_jobs.ticket(len(job.plan.tasks), exempt=job.priority >= Priority.CRITICAL)
        self._heads[job] = JobHead(min(len(job.plan.tasks), self._head_partitions))
        key_task = asyncio.create_task(self._warm_key(job))
        parts = [asyncio.create_task(self._run_partition(job, p, task, key_task)) for p, task in enumerate(job.plan.tasks)]
        try:
            results = await asyncio.gather(*parts)
            proofs = [proof for proof, _, _ in results]
            prepared = list(await asyncio.gather(*(acc for _, _, acc in results)))
            await self._self_verify(job, await key_task, proofs, [inputs for _, inputs, _ in results], prepared)
            self.jobs.finish(job, JobStatus.COMPLETED, proof=encode_proofs(proofs))
        except asyncio.CancelledError:
            self._cancel_all(parts, key_task)
            if not job.cancel_requested:
                raise
            self.jobs.finish(job, JobStatus.CANCELLED, error="cancelled")
        except Exception as exc:
            job.cancel_flag.set()  # the other partitions' running backend calls are of no use now
            self._cancel_all(parts, key_task)
            if not isinstance(exc, (BackendError, SelfVerificationFailed)) and not _is_expected(exc):
                log.exception("job %s: unexpected error", loggable(job.id))
            self.jobs.finish(job, JobStatus.FAILED, error=failure_text(exc))
        finally:
            self._synth_tickets.pop(job).leave()
            self._heads.pop(job, None)

    @staticmethod
    def _cancel_all(parts: list[asyncio.Task], key_task: asyncio.Task) -> None:
        for t in [*parts, key_task]:
            t.cancel()
            t.add_done_callback(_consume)  # the job already has its answer; no "never retrieved" noise

    async def _warm_key(self, job: Job) -> ProvingKey | DeviceKey:
        t0 = time.perf_counter()
        key = await self.srs.warm(job.circuit_id)
        t1 = time.perf_counter()
        job.timings.srs_load_sum += t1 - t0
        job.event("srs", -1, "host", t0, t1)
        self.metrics.stage.labels("srs_warm").observe(t1 - t0)
        return key

    async def _run_partition(self, job: Job, p: int, task, key_task: asyncio.Task
                             ) -> tuple[Proof, list[int], asyncio.Future[G1Point]]:
        """The partition's proof, its public inputs, and their sum for the job's
        self-verification, being made on a host thread while the later partitions prove (only
        the last one's is left at the job's end)."""
        okey = order_key(job.priority, job.seq, p)
        window = self._window
        if job.priority >= Priority.CRITICAL and not window.free:
            window = self._critical_reserve
        await window.acquire(okey)  # every priority inside a bounded window; CRITICAL goes first
        try:
            shared = await self._synthesize(job, p, task, okey)
            try:
                key = await asyncio.shield(key_task)
                try:
                    check_shapes(key, shared.partition)
                except ValueError as exc:
                    raise CircuitUnavailable(f"partition {p}: {exc}") from None
                proof = await self.gpu.prove(job, p, shared, key, okey)
                inputs = shared.ref.public_inputs
                # After the proof: a key made on a lane has its verifying key from then on.
                prepared = asyncio.get_running_loop().run_in_executor(
                    self._host_threads(job.priority), prepare_inputs, key.vk, inputs)
                prepared.add_done_callback(_consume)  # a job failed elsewhere never awaits it
                return proof, inputs, prepared
            finally:
                shared.release()
        finally:
            window.release()

    def _head_share(self, job: Job, head: JobHead) -> int | None:
        """Processes for a head partition of ``job`` starting now (None: the workers' own). The
        head shares every process only where no other job is synthesizing (it would take their
        cores) and where that gives each of its partitions more than a worker's own share."""
        share = self.pool.workers * self.pool.task_processes // head.size
        if head.shared is None:
            others = any(j.synthesizing for j in self._heads if j is not job)  # the jobs in the pipeline
            head.shared = not others and share > self.pool.task_processes
            if not head.shared:
                head.done.set()
        return share if head.shared else None

    async def _synthesize(self, job: Job, p: int, task, okey: tuple) -> SharedPartition:
        ticket = self._synth_tickets[job]
        head = self._heads[job]
        if p >= head.size:
            await head.done.wait()
        try:
            await ticket.enter(okey)
            await self._synth_slots.acquire(okey)
            try:
                processes = self._head_share(job, head) if p < head.size else None
                t0 = job.synthesizing[p] = time.perf_counter()
                job.mark_started(t0)
                shared = await self.pool.run(task, self.host_blocks, job.circuit_id, processes)
                t1 = time.perf_counter()
            finally:
                job.synthesizing.pop(p, None)
                self._synth_slots.release()
                ticket.partition_done()
        finally:  # a head partition done, failed or cancelled at any wait: the rest are not held
            if p < head.size:
                head.left -= 1
                if head.left == 0:
                    head.done.set()
        job.timings.synthesis_sum += shared.ref.seconds
        job.event("synthesis", p, f"synth/{shared.ref.pid}", t0, t1)
        self.metrics.stage.labels("synthesis").observe(shared.ref.seconds)
        return shared

    async def _self_verify(self, job: Job, key: ProvingKey | DeviceKey, proofs: list[Proof], inputs: list[list[int]],
                           prepared: list[G1Point]) -> None:
        t0 = time.perf_counter()
        loop = asyncio.get_running_loop()
        threads = self._host_threads(job.priority)
        ok = await loop.run_in_executor(threads, batch_verify, key.vk, proofs, inputs, prepared)
        if not ok:
            bad = [i for i, (pr, x) in enumerate(zip(proofs, inputs, strict=True))
                   if not await loop.run_in_executor(threads, verify, key.vk, pr, x)]
            self.metrics.self_verify_failures.inc()
            raise SelfVerificationFailed(
                f"self-verification failed: the proof of partition(s) {bad or 'unknown'} from lane(s) "
                f"{', '.join(sorted(job.lanes_used))} does not verify against {job.circuit_id}'s key; not returned"
            )
        t1 = time.perf_counter()
        job.timings.verify = t1 - t0
        job.event("verify", -1, "host", t0, t1)
        self.metrics.stage.labels("verify").observe(t1 - t0)


def _consume(task: asyncio.Future) -> None:
    if not task.cancelled():
        task.exception()


def _is_expected(exc: Exception) -> bool:
    return isinstance(exc, (CuzkError, SynthesisFailed, FileNotFoundError))
