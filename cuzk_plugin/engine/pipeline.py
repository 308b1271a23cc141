"""The partition pipeline: a planned job's partitions from synthesis to a verified proof.

    job --> key WARM (shared by the job's partitions)
        --> partition 0..n-1, each: window slot (lookahead) -> synthesis slot -> worker process
            (shared memory back) -> shapes checked against the key -> GPU stage (:mod:`.gpu_stage`)
    --> batch verification of all partitions -> COMPLETED (never on a failed check)

A job that finds synthesis idle starts with its head: its first partition alone with every
synthesis process, then the next ones (one a GPU slot) splitting every process between them,
and its other partitions wait for the head. The GPU starts after one witness made in all the
cores, not after two made side by side or four at once on a quarter of the cores each (a 32 GiB
PoRep partition's witness on the H200 host: 0.76 s alone in 16 processes, 1.2 s in 8, ~2.4 s in
4 beside three others), and the rest follow while the device proves the head: the next two are
ready before the first's ~1.2 s of device time ends.

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
    (``shared``: decided when the first of them starts, None before): partition 0 alone, then
    the others side by side."""

    size: int
    shared: bool | None = None
    left: int = 0
    #: Set once the head's other partitions may synthesize: partition 0 is done, or the head is
    #: not shared.
    first_done: asyncio.Event = field(default_factory=asyncio.Event)
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
                 host_threads: Callable[[Priority], Executor], gpu_slots: int = 1):
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
        self._head_partitions = max(1, gpu_slots) + 1  # partition 0, then one a GPU slot
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

    def _head_share(self, job: Job, head: JobHead, p: int) -> int | None:
        """Processes for head partition ``p`` of ``job`` starting now (None: the workers' own):
        every process for partition 0, an even split for the others. The head shares every
        process only where no other job is synthesizing (it would take their cores) and where
        that gives partition 0 more than a worker's own share."""
        every = self.pool.workers * self.pool.task_processes
        if head.shared is None:
            others = any(j.synthesizing for j in self._heads if j is not job)  # the jobs in the pipeline
            head.shared = not others and every > self.pool.task_processes
            if not head.shared:
                head.first_done.set()
                head.done.set()
        if not head.shared:
            return None
        return every if p == 0 else max(self.pool.task_processes, every // (head.size - 1))

    async def _synthesize(self, job: Job, p: int, task, okey: tuple) -> SharedPartition:
        ticket = self._synth_tickets[job]
        head = self._heads[job]
        if p >= head.size:
            await head.done.wait()
        elif p > 0:
            await head.first_done.wait()
        try:
            await ticket.enter(okey)
            await self._synth_slots.acquire(okey)
            try:
                processes = self._head_share(job, head, p) if p < head.size else None
                t0 = job.synthesizing[p] = time.perf_counter()
                job.mark_started(t0)
                shared = await self.pool.run(task, self.host_blocks, job.circuit_id, processes)
                t1 = time.perf_counter()
            finally:
                job.synthesizing.pop(p, None)
                self._synth_slots.release()
                ticket.partition_done()
        finally:  # a head partition done, failed or cancelled at any wait: the rest are not held
            if p == 0:
                head.first_done.set()
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
