"""The engine: jobs in, verified proofs out.

    request --plan--> job --> partition 0..n-1, each:
        window slot (lookahead) -> synthesis slot -> worker process (shared memory back)
        -> key WARM (shared by the job) -> GPU worker slot (priority, then same circuit)
        -> key HOT on that lane -> prove_start / prove_finish / assemble (worker thread)
        -> transient fault? retry (tenacity) on the lane, then another lane, then FAILED
    -> batch verification of all partitions -> COMPLETED (never on a failed check)

Every wait (planning, the lookahead window, synthesis, GPU worker) is ordered by (priority, job
age, partition), so a CRITICAL job takes the next free slot of each stage, inside bounds of its
own: HIGH and CRITICAL jobs are admitted beyond [scheduler] max_pending (high_priority_reserve,
critical_reserve), and CRITICAL partitions have a window reserve. Cancelling a job (CancelProof, or its last Prove caller leaving)
cancels its waits at once and kills a key generation it started; a backend call already
running is interrupted (the backend's prove_cancel, through the job's CancelFlag) and its slot
frees as soon as the call returns, within a second.

Everything from a client is checked before it touches a path, a key or a job: request and
circuit ids (bounded, one ASCII form), a repeated request id (attaches only to the same
request; a finished job's id, kept with the job, is refused to any other), key paths (confined to the param cache), key sizes ([srs] max_generated_log2).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import logging
import os
import sys
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt, wait_exponential

from cuzk_plugin.backends.protocol import Backend, HostPinning
from cuzk_plugin.config import Config
from cuzk_plugin.engine.circuits import KeySource, ProviderRegistry, param_cache_dir
from cuzk_plugin.engine.device_key import DeviceKey
from cuzk_plugin.engine.errors import (
    CircuitUnavailable,
    InvalidRequest,
    JobIdInUse,
    JobNotFound,
    QueueFull,
    SelfVerificationFailed,
)
from cuzk_plugin.engine.heap import return_free_memory
from cuzk_plugin.engine.host_blocks import HostBlockPool
from cuzk_plugin.engine.job import Job
from cuzk_plugin.engine.lanes import Lane, PartitionCancelled, build_lanes, device_stages, prove_step
from cuzk_plugin.engine.metrics import EngineMetrics
from cuzk_plugin.engine.residency import ResidencyPlan, circuit_device_bytes
from cuzk_plugin.engine.sched import JobGate, JobTicket, PrioritySemaphore, SlotPool, WorkerSlot, order_key
from cuzk_plugin.engine.srs import TIER_NAMES, SrsManager, SrsSnapshot
from cuzk_plugin.engine.synthesis import SharedPartition, SynthesisPool
from cuzk_plugin.engine.types import (
    JobResult,
    JobStatus,
    Priority,
    ProofKind,
    ProofRequest,
    circuit_id_problem,
    loggable,
    request_id_problem,
)
from cuzk_plugin.engine.workers import reclaim_stale_blocks, run_killable
from cuzk_plugin.errors import BackendError, DeviceOutOfMemory, TransientBackendError
from cuzk_plugin.filecoin.param_files import filecoin_cache_dirs, filecoin_circuit, is_test_key_id
from cuzk_plugin.formats.params import ProvingKey
from cuzk_plugin.formats.partition import WitnessPartition
from cuzk_plugin.formats.pce import pce_path
from cuzk_plugin.formats.proof import Proof, encode_proofs
from cuzk_plugin.groth16.prover import check_shapes
from cuzk_plugin.groth16.verifier import batch_verify, verify

log = logging.getLogger(__name__)
#: Request bytes planned (parsed, expanded) at once: a burst of large requests is planned in turn.
PLANNING_BYTES_AT_ONCE = 256 << 20
#: Requests at least this large are hashed and planned at most LARGE_REQUESTS_AT_ONCE at a time.
LARGE_REQUEST_BYTES = 16 << 20
LARGE_REQUESTS_AT_ONCE = 2
#: Seconds after a large request that the heap's free memory is handed back (engine.heap).
TRIM_AFTER_S = 1.0
#: A CRITICAL request up to this size (a WinningPoSt's is ~100 KB) is planned at once, whatever
#: large plans run meanwhile.
SMALL_PLAN_BYTES = 4 << 20
#: How long stop() waits for jobs, workers and backend calls (each) before it stops waiting.
STOP_WAIT_S = 3.0
#: Partitions in a row a lane gives up on before it is set aside (a dead device would otherwise,
#: always idle, be every partition's first try), and for how long; a success ends the rest.
LANE_STRIKES = 3
LANE_REST_S = 60.0


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


def _workers_ready(t0: float, warming: asyncio.Future) -> None:
    if warming.cancelled() or warming.exception() is not None:  # stopped while they started
        log.debug("synthesis workers did not finish starting: %s", "cancelled" if warming.cancelled()
                  else warming.exception())
        return
    log.info("synthesis workers ready in %.1fs (warmed)", time.monotonic() - t0)


class Engine:
    """Owns the lanes, the synthesis pool, the SRS manager and every job.

    ``backends`` and ``providers`` replace the configured ones (tests inject faulty backends);
    ``synthesis_pool`` lets several engines share one pool of worker processes.
    """

    def __init__(self, config: Config, *, backends: list[Backend] | None = None,
                 providers: ProviderRegistry | None = None, synthesis_pool: SynthesisPool | None = None):
        self.config = config
        self.param_cache = param_cache_dir(config.srs.param_cache)
        self.providers = providers if providers is not None else ProviderRegistry()
        self.lanes, self.backend_summary = build_lanes(config, backends)
        self._lane_by_name = {lane.name: lane for lane in self.lanes}
        #: Lanes of the first backend: a fallback backend's lanes take a partition only after
        #: it failed on every one of these.
        self._primary_lanes = frozenset(lane.name for lane in self.lanes if lane.backend is self.lanes[0].backend)
        #: backend = "auto" found no GPU: every primary lane is a CPU device (PoCL or the cpu backend).
        self.cpu_fallback = config.gpus.backend == "auto" and all(
            lane.device.kind == "cpu" for lane in self.lanes if lane.name in self._primary_lanes)
        if self.cpu_fallback:
            self.backend_summary = f"CPU FALLBACK (no usable GPU; proving on the CPU): {self.backend_summary}"
            log.warning("=" * 20 + " NO GPU: backend auto fell back to the CPU " + "=" * 20)
            log.warning("%s. Filecoin jobs of sectors above %s bytes are refused ([gpus] "
                        "cpu_fallback_max_sector_size); fix the CUDA library or driver, or set backend explicitly",
                        self.backend_summary, f"{config.gpus.cpu_fallback_max_sector_size:,}")
        self._lane_strikes: dict[str, int] = {}
        #: Held while a partition that ran out of device memory gathers every worker of its lane.
        self._alone_on_lane = asyncio.Lock()
        self._lane_rest_until: dict[str, float] = {}
        workers = config.gpus.gpu_workers_per_device
        self.slots = SlotPool([WorkerSlot(lane.name, w) for lane in self.lanes for w in range(workers)],
                              sort_by_type=config.scheduler.sort_by_type, max_batch=config.scheduler.max_batch_size)
        if config.scheduler.max_batch_wait_ms:
            log.warning("[scheduler] max_batch_wait_ms = %d: accepted, but workers never hold a slot idle "
                        "waiting for a batch (priority first)", config.scheduler.max_batch_wait_ms)
        n_slots = len(self.slots.slots)
        window = n_slots + (config.pipeline.synthesis_lookahead if config.pipeline.enabled else 0)
        self._window = PrioritySemaphore(window)
        #: CRITICAL (WinningPoSt) partitions that find the window full take one of these instead, so
        #: they never wait for a long partition to leave it; bounded, so memory stays bounded too.
        self._critical_reserve = PrioritySemaphore(n_slots)
        self._synth_slots = PrioritySemaphore(config.parallel_synthesis())
        #: [pipeline] synthesis_concurrency: jobs with partitions in synthesis at once (cuzk counts proofs).
        self._synth_jobs = JobGate(config.pipeline.synthesis_concurrency)
        self._synth_tickets: dict[Job, JobTicket] = {}
        self._own_pool = synthesis_pool is None
        # No more partitions synthesize at once than the slots and the window (with the CRITICAL
        # reserve) allow: the cores go to those, a witness split across its share of them.
        at_once = min(config.synthesis_workers(), config.parallel_synthesis(), window + n_slots)
        witness = config.synthesis.witness_processes or max(1, (os.cpu_count() or 1) // min(at_once, window))
        self.pool = synthesis_pool or SynthesisPool(at_once, witness, self.providers.worker_warmers(), self.param_cache)
        #: Large partition blocks kept mapped (and pinned for the first backend that pins) between
        #: partitions: at most a window's worth wait zeroed for the next task.
        self.host_blocks = HostBlockPool(
            window, pinner=next((lane.backend for lane in self.lanes if isinstance(lane.backend, HostPinning)), None))
        self._gpu_threads = ThreadPoolExecutor(config.gpus.gpu_threads or 2 * n_slots, thread_name_prefix="cuzk-gpu")
        self._io_threads = ThreadPoolExecutor(4, thread_name_prefix="cuzk-io")
        #: Planning and self-verification of CRITICAL jobs (WinningPoSt): never queued behind a large
        #: PoRep or WindowPoSt plan on the shared threads.
        self._critical_threads = ThreadPoolExecutor(1, thread_name_prefix="cuzk-critical")
        self.srs = SrsManager(
            resolve=self._key_source,
            budget_bytes=config.memory.budget_bytes(), min_idle_s=config.memory.eviction_min_idle,
            run_blocking=self._blocking, generate=self._generate_key,
        )
        self.metrics = EngineMetrics()
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._seq = itertools.count()
        self._counts = {JobStatus.COMPLETED: 0, JobStatus.FAILED: 0, JobStatus.CANCELLED: 0}
        self._started = time.monotonic()
        self._planning_bytes = 0
        self._large_requests = PrioritySemaphore(LARGE_REQUESTS_AT_ONCE)
        self._large_arrivals = itertools.count()
        self._trim_pending = False
        #: Jobs waiting to plan, by priority (a higher priority plans first).
        self._planning_waits: Counter[Priority] = Counter()
        self._planning_changed = asyncio.Condition()
        #: CUZK_TIMING=1: per-partition and per-job timing lines on stderr, as cuzk prints them.
        self.timing_lines = os.environ.get("CUZK_TIMING", "") not in ("", "0")
        log.info("engine: %s; %d GPU worker slot(s), synthesis %d process(es) (%d at once, up to %d for one "
                 "witness), lookahead window %d, key budget %.1f MB, param cache %s", self.backend_summary, n_slots,
                 self.pool.workers, config.parallel_synthesis(), self.pool.task_processes, window,
                 self.srs.budget_bytes / 1e6, self.param_cache)

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        reclaimed = reclaim_stale_blocks()
        if reclaimed:
            log.warning("reclaimed %d shared-memory block(s) left by a daemon that died (%.1f MB)",
                        len(reclaimed), sum(n for _, n in reclaimed) / 1e6)
        if self._own_pool:
            # The workers start (imports, the providers' warmers: ~5 s of compiling where a large
            # PoRep circuit is in the param cache) while the daemon already serves: a key preload
            # runs meanwhile, and a partition submitted before they are ready waits for one.
            warming = asyncio.get_running_loop().run_in_executor(self._io_threads, self.pool.warm_up)
            warming.add_done_callback(partial(_workers_ready, time.monotonic()))

    async def stop(self) -> None:
        """Cancel every unfinished job (killing key generations), then stop the workers; each
        wait is bounded (STOP_WAIT_S), so a stop takes seconds whatever is running."""
        self.cancel_all("daemon stopping")
        tasks = [j.task for j in self._jobs.values() if j.task is not None and not j.task.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=STOP_WAIT_S)
        loop = asyncio.get_running_loop()
        if self._own_pool:
            await loop.run_in_executor(self._io_threads, partial(self.pool.shutdown, STOP_WAIT_S))
        # Backend calls of cancelled jobs may still run: keys are freed only once they returned.
        self._gpu_threads.shutdown(wait=False, cancel_futures=True)
        joined = loop.run_in_executor(None, partial(self._gpu_threads.shutdown, wait=True))
        done, _ = await asyncio.wait([joined], timeout=STOP_WAIT_S)
        await asyncio.to_thread(self.host_blocks.close, STOP_WAIT_S)  # the free blocks now, the others as released
        self._io_threads.shutdown(wait=False, cancel_futures=True)
        self._critical_threads.shutdown(wait=False, cancel_futures=True)
        if done:
            self.srs.close()
        else:
            log.warning("a backend call is still running after %.0fs; keys are left to the process exit", STOP_WAIT_S)

    async def _blocking(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self._io_threads, partial(fn, *args))

    def _key_source(self, circuit_id: str) -> KeySource:
        """The key of ``circuit_id``, refused unless the id is one ASCII file stem and the path
        lies inside the param cache (whatever a provider or a symlink says)."""
        problem = circuit_id_problem(circuit_id)
        if problem:
            raise InvalidRequest(problem)
        source = self.providers.key_source(circuit_id, self.param_cache)
        cache = self.param_cache.resolve()
        # Filecoin's files (named by a fixed table, never by the request) may also sit in $FIL_PROOFS_PARAMETER_CACHE
        roots = [cache] + ([d.resolve() for d in filecoin_cache_dirs(self.param_cache)] if source.filecoin else [])
        if not any(source.path.resolve().is_relative_to(root) for root in roots):
            raise CircuitUnavailable(f"key of '{circuit_id}' resolves outside the param cache {cache}; refused")
        return source

    async def _generate_key(self, generate) -> None:
        """Run a key generation (CPU-heavy setup) in a process of its own, bounded by
        [srs] max_generated_log2 and killed when the waiting caller is cancelled."""
        # The declared size may take a shape pass to compute: off the event loop.
        log2 = await self._blocking(getattr, generate, "log2_constraints", None)
        if log2 is None:
            log.warning("key generation by %s: size not declared (log2_constraints); not bounded by "
                        "[srs] max_generated_log2", type(generate).__name__)
        limit = self.config.srs.max_generated_log2
        if log2 is not None and log2 > limit:
            raise CircuitUnavailable(f"generating a key of 2^{log2} constraints is refused: [srs] max_generated_log2 = {limit}")
        # It takes one synthesis slot for its duration (ahead of partitions: they wait for the key).
        await self._synth_slots.acquire(order_key(Priority.CRITICAL, -1, 0))
        try:
            await run_killable(generate, what=f"key generation ({type(generate).__name__})")
        finally:
            self._synth_slots.release()

    # -- jobs ------------------------------------------------------------------------------
    async def submit(self, request: ProofRequest, *, via_prove: bool = False) -> tuple[Job, bool]:
        """Queue a job (or attach to the running one with this request id): (job, attached).

        The request is planned (parsed, validated, split into partitions) off the event loop,
        so a 50 MB PoRep C1 never stalls other calls. Raises InvalidRequest for a malformed
        request; a request whose circuit is missing becomes a FAILED job (AwaitProof answers
        with the reason)."""
        problem = request_id_problem(request.request_id)
        if problem:
            raise InvalidRequest(problem)
        if request.payload_bytes < LARGE_REQUEST_BYTES:
            return await self._submit(request, via_prove)
        # Large requests are hashed and planned a few at a time (highest priority first): eight
        # 100 MB bodies at once would otherwise take every core from the event loop.
        await self._large_requests.acquire(order_key(request.effective_priority, next(self._large_arrivals), 0))
        try:
            return await self._submit(request, via_prove)
        finally:
            self._large_requests.release()
            self._trim_soon()

    def _trim_soon(self) -> None:
        """Hand the heap's free pages back once the large request just handled is released (its
        body lives until the RPC returns): one trim at a time, on a host thread."""
        if self._trim_pending:
            return
        self._trim_pending = True
        loop = asyncio.get_running_loop()

        def trim() -> None:
            self._trim_pending = False
            loop.run_in_executor(self._io_threads, return_free_memory)

        loop.call_later(TRIM_AFTER_S, trim)

    async def _submit(self, request: ProofRequest, via_prove: bool) -> tuple[Job, bool]:
        job_id = request.request_id or str(uuid.uuid4())
        threads = self._critical_threads if request.effective_priority >= Priority.CRITICAL else self._io_threads
        digest = await asyncio.get_running_loop().run_in_executor(threads, request.digest)
        existing = self._jobs.get(job_id)
        if existing is not None and existing.digest != digest:
            # A finished job's id too: its first client may still AwaitProof it and must never get
            # a stranger's proof (ids are kept as long as the job, [scheduler] keep_finished_jobs).
            state = "has finished" if existing.status.finished else "is running"
            raise JobIdInUse(f"request_id '{loggable(job_id)}': a job with this id {state} and this request "
                             "differs from it (kind, registered proof or inputs); use another id")
        if existing is not None and not existing.status.finished:
            if not via_prove:
                existing.prove_only = False
            log.info("job %s: repeated request id, attached to the running job (%s)", loggable(job_id),
                     existing.status.name.lower())
            await existing.planned.wait()
            if existing.plan_error is not None:
                raise copy.copy(existing.plan_error)  # see below
            return existing, True
        pending = sum(1 for j in self._jobs.values() if not j.status.finished)
        limit, limit_name = self._pending_limit(request.effective_priority)
        if pending >= limit:
            raise QueueFull(f"{pending} jobs queued or running, the limit for priority "
                            f"{request.effective_priority.name} ([scheduler] {limit_name}); retry when one ends")
        if existing is not None:
            del self._jobs[job_id]  # the same request again after its job finished: a new attempt
        job = Job(id=job_id, seq=next(self._seq), request=request, priority=request.effective_priority,
                  plan=None, prove_only=via_prove, digest=digest)
        self._remember(job)
        job.task = asyncio.get_running_loop().create_task(self._run_job(job), name=f"job-{job.id}")
        await job.planned.wait()
        if job.plan_error is not None:
            # A copy: raising the stored one would hang this frame (and the request body it
            # holds) on the job, a cycle that only a full garbage collection frees.
            raise copy.copy(job.plan_error)
        return job, False

    def _pending_limit(self, priority: Priority) -> tuple[int, str]:
        """Jobs that may be queued or running when one of ``priority`` is admitted, and the keys
        that make it: HIGH and CRITICAL have room of their own beyond max_pending."""
        sched = self.config.scheduler
        if priority >= Priority.CRITICAL:
            limit = sched.max_pending + sched.high_priority_reserve + sched.critical_reserve
            return limit, (f"max_pending + high_priority_reserve + critical_reserve = {sched.max_pending} + "
                           f"{sched.high_priority_reserve} + {sched.critical_reserve}")
        if priority >= Priority.HIGH:
            return (sched.max_pending + sched.high_priority_reserve,
                    f"max_pending + high_priority_reserve = {sched.max_pending} + {sched.high_priority_reserve}")
        return sched.max_pending, f"max_pending = {sched.max_pending}"

    def _host_threads(self, job: Job) -> ThreadPoolExecutor:
        """The threads for a job's host work (digest, plan, self-verification)."""
        return self._critical_threads if job.priority >= Priority.CRITICAL else self._io_threads

    async def _plan(self, job: Job) -> bool:
        """Plan the job; False when it ended here (refused, circuit missing, cancelled)."""
        loop = asyncio.get_running_loop()
        size = job.request.payload_bytes
        try:
            async with self._planning_changed:  # a burst of large requests expands one share at a time
                self._planning_waits[job.priority] += 1
                try:
                    await self._planning_changed.wait_for(partial(self._may_plan, job.priority, size))
                finally:
                    self._planning_waits[job.priority] -= 1
                    self._planning_changed.notify_all()  # lower priorities waited for this one
                self._planning_bytes += size
            t0 = time.perf_counter()
            try:
                plan = await loop.run_in_executor(self._host_threads(job), self.providers.plan, job.request,
                                                  self.param_cache)
                plan_s = time.perf_counter() - t0
            finally:
                async with self._planning_changed:
                    self._planning_bytes -= size
                    self._planning_changed.notify_all()
            problem = circuit_id_problem(plan.circuit_id)
            if problem:
                raise CircuitUnavailable(f"the provider of {job.kind.name} named an invalid circuit: {problem}")
            self._refuse_on_cpu_fallback(plan.circuit_id)
            job.planned_as(plan)
        except InvalidRequest as exc:
            # The caller gets INVALID_ARGUMENT; the request never becomes a job. Kept without the
            # traceback and the parser's error behind it: their frames hold the request body.
            exc.__context__ = exc.__cause__ = None
            job.plan_error = exc.with_traceback(None)
            if self._jobs.get(job.id) is job:
                del self._jobs[job.id]
            job.finish(JobStatus.FAILED, error=str(exc))
            return False
        except CircuitUnavailable as exc:
            log.warning("job %s (%s): FAILED at once: %s", loggable(job.id), job.kind.name, exc)
            self._finish(job, JobStatus.FAILED, error=str(exc))
            return False
        except asyncio.CancelledError:
            self._finish(job, JobStatus.CANCELLED, error="cancelled")
            return False
        except Exception as exc:
            log.exception("job %s: planning failed", loggable(job.id))
            self._finish(job, JobStatus.FAILED, error=_describe(exc))
            return False
        finally:
            job.planned.set()
        log.info("job %s: queued (%s, circuit %s, %d partition(s), priority %s; planned in %.3fs)",
                 loggable(job.id), job.kind.name, job.circuit_id, job.partitions, job.priority.name, plan_s)
        return True

    def _refuse_on_cpu_fallback(self, circuit_id: str) -> None:
        """On a CPU fallback, a Filecoin circuit of a sector above [gpus] cpu_fallback_max_sector_size
        is refused at once: it would take minutes to hours and miss its deadline anyway."""
        if not self.cpu_fallback:
            return
        circuit = filecoin_circuit(is_test_key_id(circuit_id) or circuit_id)
        limit = self.config.gpus.cpu_fallback_max_sector_size
        if circuit is not None and circuit.sector_size > limit:
            raise CircuitUnavailable(
                f"circuit {circuit_id}: refused on the CPU fallback (no usable GPU; {self.backend_summary}): a "
                f"{circuit.size_name} sector is above [gpus] cpu_fallback_max_sector_size = {limit:,} bytes; "
                "fix the GPU, or raise that key to prove it on the CPU anyway")

    def _may_plan(self, priority: Priority, size: int) -> bool:
        """A job may start planning: no higher priority waits to plan, and its bytes fit the
        planning budget (a small CRITICAL request always fits: it never waits for a large plan)."""
        if any(n for p, n in self._planning_waits.items() if p > priority):
            return False
        if priority >= Priority.CRITICAL and size <= SMALL_PLAN_BYTES:
            return True
        return self._planning_bytes == 0 or self._planning_bytes + size <= PLANNING_BYTES_AT_ONCE

    def _remember(self, job: Job) -> None:
        self._jobs[job.id] = job
        keep = self.config.scheduler.keep_finished_jobs
        while len(self._jobs) > keep:
            oldest = next((jid for jid, j in self._jobs.items() if j.status.finished), None)
            if oldest is None:
                break
            del self._jobs[oldest]

    def job(self, job_id: str) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise JobNotFound(f"job_id: no job '{loggable(job_id)}' (never submitted, or dropped from the history)")
        return job

    def queue_position(self, job: Job) -> int:
        return sum(1 for j in self._jobs.values()
                   if j is not job and j.status == JobStatus.QUEUED and j.priority >= job.priority and j.seq < job.seq)

    def expected_lane(self) -> str:
        idle = self.slots.idle
        return (idle[0].lane if idle else self.lanes[0].name)

    async def wait(self, job_id: str, timeout_s: float | None = None) -> JobResult:
        """The job's result; TIMEOUT after ``timeout_s`` (the job keeps running)."""
        job = self.job(job_id)
        job.waiters += 1
        try:
            if timeout_s is None:
                await job.done.wait()
            else:
                try:
                    await asyncio.wait_for(job.done.wait(), timeout_s)
                except TimeoutError:
                    return JobResult(job_id=job.id, status=JobStatus.TIMEOUT,
                                     error_message=f"not finished after {timeout_s * 1000:.0f} ms (still {job.status.name.lower()})",
                                     partitions=job.partitions, circuit_id=job.circuit_id,
                                     submitted_unix=job.submitted_unix)
            assert job.result is not None
            return job.result
        finally:
            job.waiters -= 1

    async def prove(self, request: ProofRequest) -> JobResult:
        """Submit and wait. If this caller goes away and nobody else waits, the job is cancelled."""
        if not request.request_id:
            request = replace(request, request_id=str(uuid.uuid4()))
        try:
            job, _ = await self.submit(request, via_prove=True)
            return await self.wait(job.id)
        except asyncio.CancelledError:
            running = self._jobs.get(request.request_id)
            if running is not None and running.prove_only and running.waiters == 0 and not running.status.finished:
                self.cancel(running.id, reason="the caller went away (cancelled or past its deadline)")
            raise

    def cancel(self, job_id: str, *, reason: str = "CancelProof") -> bool:
        """Stop a job; True if it was queued or running."""
        job = self.job(job_id)
        if job.status.finished:
            return False
        job.cancel_requested = True
        job.cancel_flag.set()
        log.info("job %s: cancelling (%s)", loggable(job.id), reason)
        if job.task is not None:
            job.task.cancel()
        else:
            self._finish(job, JobStatus.CANCELLED, error=f"cancelled: {reason}")
        return True

    def cancel_all(self, reason: str) -> int:
        """Cancel every unfinished job; how many."""
        jobs = [job for job in self._jobs.values() if not job.status.finished]
        for job in jobs:
            self.cancel(job.id, reason=reason)
        return len(jobs)

    def _finish(self, job: Job, status: JobStatus, proof: bytes = b"", error: str = "") -> None:
        result = job.finish(status, proof, error)
        self._counts[status] += 1
        self.metrics.jobs.labels(job.kind.label, status.name.lower()).inc()
        self.metrics.job_seconds.labels(job.kind.label).observe(result.timings.total)
        t = result.timings
        log.log(logging.INFO if status == JobStatus.COMPLETED else logging.WARNING,
                "job %s: %s in %.3fs (wall-clock: queue %.3f, srs %.3f, synthesis %.3f, gpu %.3f, verify %.3f; "
                "summed over partitions: synthesis %.3f, gpu %.3f)%s",
                loggable(job.id), status.name, t.total, t.queue_wait, t.srs_load, t.synthesis, t.gpu_compute, t.verify,
                t.synthesis_sum, t.gpu_compute_sum, f": {error}" if error else "")
        if self.timing_lines:
            print(f"CUZK_TIMING: job={loggable(job.id)} kind={job.kind.label} status={status.name.lower()} "
                  f"partitions={job.partitions} queue_wait_ms={t.queue_wait * 1e3:.0f} srs_load_ms={t.srs_load * 1e3:.0f} "
                  f"synthesis_ms={t.synthesis * 1e3:.0f} gpu_ms={t.gpu_compute * 1e3:.0f} verify_ms={t.verify * 1e3:.0f} "
                  f"total_ms={t.total * 1e3:.0f} synthesis_sum_ms={t.synthesis_sum * 1e3:.0f} "
                  f"gpu_sum_ms={t.gpu_compute_sum * 1e3:.0f}", file=sys.stderr, flush=True)

    async def _run_job(self, job: Job) -> None:
        if not await self._plan(job):
            return
        assert job.plan is not None
        self._synth_tickets[job] = self._synth_jobs.ticket(len(job.plan.tasks), exempt=job.priority >= Priority.CRITICAL)
        key_task = asyncio.create_task(self._warm_key(job))
        parts = [asyncio.create_task(self._run_partition(job, p, task, key_task)) for p, task in enumerate(job.plan.tasks)]
        try:
            results = await asyncio.gather(*parts)
            proofs = [proof for proof, _ in results]
            await self._self_verify(job, await key_task, proofs, [inputs for _, inputs in results])
            self._finish(job, JobStatus.COMPLETED, proof=encode_proofs(proofs))
        except asyncio.CancelledError:
            self._cancel_all(parts, key_task)
            if not job.cancel_requested:
                raise
            self._finish(job, JobStatus.CANCELLED, error="cancelled")
        except Exception as exc:
            job.cancel_flag.set()  # the other partitions' running backend calls are of no use now
            self._cancel_all(parts, key_task)
            if not isinstance(exc, (BackendError, SelfVerificationFailed)) and not _is_expected(exc):
                log.exception("job %s: unexpected error", loggable(job.id))
            self._finish(job, JobStatus.FAILED, error=_describe(exc))
        finally:
            self._synth_tickets.pop(job).leave()

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

    async def _run_partition(self, job: Job, p: int, task, key_task: asyncio.Task) -> tuple[Proof, list[int]]:
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
                proof = await self._prove_on_lanes(job, p, shared, key, okey)
                return proof, shared.ref.public_inputs
            finally:
                shared.release()
        finally:
            window.release()

    async def _synthesize(self, job: Job, p: int, task, okey: tuple) -> SharedPartition:
        ticket = self._synth_tickets[job]
        await ticket.enter(okey)
        await self._synth_slots.acquire(okey)
        try:
            t0 = job.synthesizing[p] = time.perf_counter()
            job.mark_started(t0)
            shared = await self.pool.run(task, self.host_blocks, job.circuit_id)
            t1 = time.perf_counter()
        finally:
            job.synthesizing.pop(p, None)
            self._synth_slots.release()
            ticket.partition_done()
        job.timings.synthesis_sum += shared.ref.seconds
        job.event("synthesis", p, f"synth/{shared.ref.pid}", t0, t1)
        self.metrics.stage.labels("synthesis").observe(shared.ref.seconds)
        return shared

    async def _prove_on_lanes(self, job: Job, p: int, shared: SharedPartition, key: ProvingKey | DeviceKey, okey: tuple) -> Proof:
        """Retry transient faults on one lane, then move to the next lane, then give up."""
        excluded: list[str] = []
        failures: list[str] = []
        while True:
            allowed = frozenset(name for name in self.slots.lanes() if name not in excluded)
            healthy = frozenset(name for name in allowed if not self.lane_resting(name))
            # A resting lane only when no other is left; a fallback backend only after the primary.
            allowed = (healthy & self._primary_lanes) or healthy or (allowed & self._primary_lanes) or allowed
            if not allowed:
                raise BackendError(f"partition {p} failed on every lane: " + "; ".join(failures))
            pinned: list[str] = []  # the lane of the first attempt; retries stay on it

            def _log_retry(state: RetryCallState, pinned: list[str] = pinned) -> None:
                exc = state.outcome.exception() if state.outcome else None
                lane = pinned[0] if pinned else "?"
                self.metrics.retries.labels(lane).inc()
                log.warning("job %s partition %d: transient fault on %s (attempt %d): %s; retrying",
                            loggable(job.id), p, lane, state.attempt_number, exc)

            try:
                async for attempt in AsyncRetrying(
                    retry=retry_if_exception_type(TransientBackendError),
                    stop=stop_after_attempt(self.config.gpus.retry_attempts),
                    wait=wait_exponential(multiplier=0.05, max=2.0), before_sleep=_log_retry, reraise=True,
                ):
                    with attempt:
                        lanes = frozenset(pinned) if pinned else allowed
                        n = attempt.retry_state.attempt_number
                        try:
                            return await self._gpu_attempt(job, p, shared, key, okey, lanes, pinned, n)
                        except DeviceOutOfMemory as exc:
                            # Partitions in flight beside it took the memory (a 73 GB WindowPoSt key
                            # leaves room for one 2^27 partition, not two): once more, alone.
                            if self.slots.workers_of(pinned[0]) < 2:
                                raise
                            log.warning("job %s partition %d: out of device memory on %s beside other partitions "
                                        "(%s); retrying it alone on the lane", loggable(job.id), p, pinned[0], exc)
                            self.metrics.retries.labels(pinned[0]).inc()
                            return await self._gpu_attempt(job, p, shared, key, okey, frozenset(pinned), pinned, n,
                                                           alone=True)
            except BackendError as exc:
                lane = pinned[0] if pinned else "?"
                excluded.append(lane)
                failures.append(f"{lane}: {type(exc).__name__}: {exc}")
                self.metrics.lane_failures.labels(lane).inc()
                self._lane_gave_up(lane)
                if len(excluded) < len(self.slots.lanes()):
                    self.metrics.failovers.labels(lane).inc()
                    log.warning("job %s partition %d: giving up on lane %s (%s); moving to another lane",
                                loggable(job.id), p, lane, exc)
        raise AssertionError("unreachable")

    async def _take_workers(self, okey: tuple, circuit_id: str, lanes: frozenset[str], alone: bool) -> list[WorkerSlot]:
        """A worker of one of ``lanes``; ``alone``: every worker of that lane (the first is the
        one to prove with), gathered one by one as they free up, one gatherer at a time (so two
        never hold half a lane each)."""
        if not alone:
            return [await self.slots.acquire(okey, circuit_id, lanes)]
        async with self._alone_on_lane:
            held = [await self.slots.acquire(okey, circuit_id, lanes)]
            try:
                while len(held) < self.slots.workers_of(held[0].lane):
                    held.append(await self.slots.acquire(okey, circuit_id, frozenset({held[0].lane})))
            except BaseException:
                for slot in held:
                    self.slots.release(slot)
                raise
        return held

    async def _gpu_attempt(self, job: Job, p: int, shared: SharedPartition, key: ProvingKey | DeviceKey, okey: tuple,
                           lanes: frozenset[str], pinned: list[str], attempt: int, alone: bool = False) -> Proof:
        slot, *beside = await self._take_workers(okey, job.circuit_id, lanes, alone)
        if not pinned:
            pinned.append(slot.lane)
        lane = self._lane_by_name[slot.lane]
        for held in (slot, *beside):
            held.busy_job, held.busy_kind = job.id, job.kind.label
            held.busy_partition, held.busy_since = p, time.perf_counter()
        self.srs.add_ref(job.circuit_id, slot.lane)
        fut: asyncio.Future | None = None
        try:
            t0 = time.perf_counter()
            _, handle = await self.srs.hot(job.circuit_id, lane.name, self._key_loader(lane, job.circuit_id, shared.partition))
            t1 = time.perf_counter()
            if t1 - t0 > 0.001:
                job.timings.srs_load_sum += t1 - t0
                job.event("srs", p, slot.name, t0, t1, attempt)
            if job.cancel_flag.is_set():  # cancelled while the key loaded: no backend call at all
                raise PartitionCancelled()
            loop = asyncio.get_running_loop()
            shared.hold()
            fut = loop.run_in_executor(self._gpu_threads, _prove_unless_cancelled, lane, handle, shared.partition, key.vk,
                                       job.cancel_flag)
            proof, times = await asyncio.shield(fut)
        except PartitionCancelled:
            raise asyncio.CancelledError() from None
        finally:
            if fut is not None and not fut.done():
                # Cancelled while the backend call runs (the cancel flag interrupts it): its slot,
                # key and partition memory stay taken until the call returns.
                fut.add_done_callback(partial(self._release_after_cancel, slot, job.circuit_id, shared, beside))
            else:
                self._release_gpu(slot, job.circuit_id, shared if fut is not None else None, beside)
        job.lanes_used.add(lane.name)
        job.event("gpu_start", p, slot.name, times.start, times.started, attempt)
        job.event("gpu_finish", p, slot.name, times.started, times.assembled, attempt)
        for stage, t_start, t_end in device_stages(times):
            job.event(stage, p, slot.name, t_start, t_end, attempt)
        job.timings.gpu_compute_sum += times.assembled - times.start
        self.metrics.stage.labels("gpu").observe(times.assembled - times.start)
        if self.timing_lines:
            print(f"CUZK_TIMING: job={loggable(job.id)} partition={p} lane={slot.name} "
                  f"synthesis_ms={shared.ref.seconds * 1e3:.0f} pce={int(shared.ref.pce_path is not None)} "
                  f"host_evaluate_ms={times.evaluate_s * 1e3:.0f} prove_start_ms={(times.started - times.start) * 1e3:.0f} "
                  f"prove_finish_ms={(times.finished - times.started) * 1e3:.0f} "
                  f"assemble_ms={(times.assembled - times.finished) * 1e3:.0f} "
                  f"gpu_total_ms={(times.assembled - times.start) * 1e3:.0f}"
                  + "".join(f" device_{k}_ms={v:.0f}" for k, v in times.device_ms.items()), file=sys.stderr, flush=True)
        self.metrics.partitions.labels(lane.name).inc()
        self._lane_strikes[lane.name] = 0
        self._lane_rest_until.pop(lane.name, None)
        return proof

    def lane_resting(self, lane: str) -> bool:
        """The lane gave up on LANE_STRIKES partitions in a row and rests (LANE_REST_S)."""
        return time.monotonic() < self._lane_rest_until.get(lane, 0.0)

    def _lane_gave_up(self, lane: str) -> None:
        strikes = self._lane_strikes[lane] = self._lane_strikes.get(lane, 0) + 1
        if strikes >= LANE_STRIKES and not self.lane_resting(lane):
            self._lane_rest_until[lane] = time.monotonic() + LANE_REST_S
            log.warning("lane %s: gave up on %d partitions in a row; set aside for %.0fs (used only if no other "
                        "lane is left)", lane, strikes, LANE_REST_S)

    def _release_after_cancel(self, slot: WorkerSlot, circuit_id: str, shared: SharedPartition,
                              beside: list[WorkerSlot], call: asyncio.Future) -> None:
        """A cancelled partition's backend call returned: its slot, key and memory are free. Its
        outcome (the interrupted call's error, as a rule) is of no use: taken, so asyncio does
        not log "Future exception was never retrieved"."""
        if not call.cancelled() and call.exception() is not None:
            log.debug("a cancelled partition's backend call ended with %s", type(call.exception()).__name__)
        self._release_gpu(slot, circuit_id, shared, beside)

    def _release_gpu(self, slot: WorkerSlot, circuit_id: str, shared: SharedPartition | None,
                     beside: list[WorkerSlot]) -> None:
        if shared is not None:
            shared.release()
        self.srs.drop_ref(circuit_id, slot.lane)
        for other in beside:
            self.slots.release(other)
        self.slots.release(slot)

    async def _self_verify(self, job: Job, key: ProvingKey | DeviceKey, proofs: list[Proof], inputs: list[list[int]]) -> None:
        t0 = time.perf_counter()
        loop = asyncio.get_running_loop()
        threads = self._host_threads(job)
        ok = await loop.run_in_executor(threads, batch_verify, key.vk, proofs, inputs)
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

    # -- keys -------------------------------------------------------------------------------
    async def preload(self, circuit_id: str) -> tuple[bool, float]:
        """Make a key HOT on every lane: (already_loaded, seconds)."""
        problem = circuit_id_problem(circuit_id)
        if problem:
            raise InvalidRequest(problem)
        handles = self.srs.lanes_of(circuit_id)
        already = all(lane.name in handles for lane in self.lanes)
        t0 = time.perf_counter()
        if not already:
            try:
                for lane in self.lanes:
                    await self.srs.hot(circuit_id, lane.name, self._key_loader(lane, circuit_id))
            except (CircuitUnavailable, FileNotFoundError) as exc:
                raise CircuitUnavailable(f"circuit_id: {exc}") from None
        return already, time.perf_counter() - t0

    def _key_loader(self, lane: Lane, circuit_id: str, part: Any = None) -> Callable[[Any], Any]:
        """``lane.load_srs`` told the key's circuit id and the device bytes of the circuit its
        partitions load beside it (the partition's own, or the pre-compiled circuit of that name
        in the param cache), so the residency plan leaves room for it."""
        if isinstance(part, WitnessPartition):
            circuit_bytes = circuit_device_bytes(part.circuit.circuit)
        else:
            path = pce_path(self.param_cache, circuit_id)
            circuit_bytes = path.stat().st_size if path.is_file() else 0
        return partial(lane.load_srs, circuit_id=circuit_id, circuit_bytes=circuit_bytes)

    async def evict(self, circuit_id: str) -> tuple[bool, int]:
        problem = circuit_id_problem(circuit_id)
        if problem:
            raise InvalidRequest(problem)
        return await self.srs.evict(circuit_id)

    # -- status ------------------------------------------------------------------------------
    def status(self) -> EngineStatus:
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
                                 resting=self.lane_resting(lane.name), device_budget_bytes=lane.device_budget,
                                 key_residency=tuple(lane.plans.values())))
        queues: dict[str, list[int]] = {}
        for job in self._jobs.values():
            if job.status in (JobStatus.QUEUED, JobStatus.RUNNING):
                q = queues.setdefault(job.kind.label, [0, 0])
                q[0 if job.status == JobStatus.QUEUED else 1] += 1
        try:
            srs = self.srs.snapshot()
        except OSError as exc:  # a key file that went away under us: status must answer anyway
            log.warning("status: key table unreadable (%s)", exc)
            srs = []
        return EngineStatus(
            gpus=gpus, srs=srs,
            queues=[QueueState(k, v[0], v[1]) for k, v in sorted(queues.items())],
            completed=self._counts[JobStatus.COMPLETED], failed=self._counts[JobStatus.FAILED],
            cancelled=self._counts[JobStatus.CANCELLED], uptime_s=time.monotonic() - self._started,
            memory_used_bytes=self.srs.used_bytes, memory_limit_bytes=self.srs.budget_bytes, backend=self.backend_summary,
        )

    def active_jobs(self) -> list[Job]:
        """Jobs queued or running, oldest first."""
        return [j for j in self._jobs.values() if j.status in (JobStatus.QUEUED, JobStatus.RUNNING)]

    def health(self) -> str | None:
        """None when the engine can serve, else why not (for /healthz and the gRPC health service)."""
        try:
            self.status()
        except Exception as exc:
            return f"status fails: {type(exc).__name__}: {exc}"
        return None

    def metrics_text(self) -> str:
        st = self.status()
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


def _prove_unless_cancelled(lane: Lane, handle, partition, vk, cancelled) -> tuple[Proof, object]:
    """prove_step, unless the job was cancelled while the call waited for a thread."""
    if cancelled.is_set():
        raise PartitionCancelled()
    return prove_step(lane, handle, partition, vk, cancelled)


def _consume(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()


def _is_expected(exc: Exception) -> bool:
    from cuzk_plugin.engine.synthesis import SynthesisFailed
    from cuzk_plugin.errors import CuzkError

    return isinstance(exc, (CuzkError, SynthesisFailed, FileNotFoundError))


def _describe(exc: Exception) -> str:
    if isinstance(exc, (SelfVerificationFailed, CircuitUnavailable)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"

