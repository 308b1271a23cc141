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

:class:`Engine` builds the stages and shares their slots and threads; each stage is a module:
:mod:`.admission` (request -> planned job), :mod:`.pipeline` (a job's partitions through
synthesis to a verified proof), :mod:`.gpu_stage` (a partition on a lane: retries, failover),
:mod:`.key_supply` (the SRS manager and what feeds it), :mod:`.job_book` (jobs by id: await,
cancel, each ending counted) and :mod:`.status` (the snapshot and the metrics).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import replace
from functools import partial

from cuzk_plugin.backends.protocol import Backend, HostPinning
from cuzk_plugin.config import Config
from cuzk_plugin.engine.admission import Admission
from cuzk_plugin.engine.circuits import ProviderRegistry, param_cache_dir
from cuzk_plugin.engine.gpu_stage import GpuStage
from cuzk_plugin.engine.host_blocks import HostBlockPool
from cuzk_plugin.engine.job import Job
from cuzk_plugin.engine.job_book import JobBook
from cuzk_plugin.engine.key_supply import KeySupply
from cuzk_plugin.engine.lanes import build_lanes
from cuzk_plugin.engine.metrics import EngineMetrics
from cuzk_plugin.engine.pipeline import PartitionPipeline
from cuzk_plugin.engine.sched import JobGate, PrioritySemaphore, SlotPool, WorkerSlot
from cuzk_plugin.engine.status import EngineStatus, StatusReport
from cuzk_plugin.engine.synthesis import SynthesisPool
from cuzk_plugin.engine.types import JobResult, Priority, ProofRequest
from cuzk_plugin.engine.workers import reclaim_stale_blocks

log = logging.getLogger(__name__)
#: How long stop() waits for jobs, workers and backend calls (each) before it stops waiting.
STOP_WAIT_S = 3.0


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
        #: Lanes of the first backend: a fallback backend's lanes take a partition only after
        #: it failed on every one of these.
        primary_lanes = frozenset(lane.name for lane in self.lanes if lane.backend is self.lanes[0].backend)
        #: backend = "auto" found no GPU: every primary lane is a CPU device (PoCL or the cpu backend).
        self.cpu_fallback = config.gpus.backend == "auto" and all(
            lane.device.kind == "cpu" for lane in self.lanes if lane.name in primary_lanes)
        if self.cpu_fallback:
            self.backend_summary = f"CPU FALLBACK (no usable GPU; proving on the CPU): {self.backend_summary}"
            log.warning("=" * 20 + " NO GPU: backend auto fell back to the CPU " + "=" * 20)
            log.warning("%s. Filecoin jobs of sectors above %s bytes are refused ([gpus] "
                        "cpu_fallback_max_sector_size); fix the CUDA library or driver, or set backend explicitly",
                        self.backend_summary, f"{config.gpus.cpu_fallback_max_sector_size:,}")
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
        #: Partitions in synthesis at once; a key generation takes one too.
        self._synth_slots = PrioritySemaphore(config.parallel_synthesis())
        self._own_pool = synthesis_pool is None
        # No more partitions synthesize at once than the slots and the window (with the CRITICAL
        # reserve) allow: the cores go to those, a witness split across its share of them.
        at_once = min(config.synthesis_workers(), config.parallel_synthesis(), window + n_slots)
        witness = config.synthesis.witness_processes or max(1, (os.cpu_count() or 1) // min(at_once, window))
        self.pool = synthesis_pool or SynthesisPool(at_once, witness, self.providers.worker_warmers(), self.param_cache)
        #: Large partition blocks kept mapped (and pinned for the first backend that pins) between
        #: partitions: a window's worth, and one a GPU slot more for those still being zeroed when
        #: the next partition starts (a slot's partition done frees its window place at once).
        self.host_blocks = HostBlockPool(
            window + n_slots, pinner=next((lane.backend for lane in self.lanes if isinstance(lane.backend, HostPinning)), None))
        self._gpu_threads = ThreadPoolExecutor(config.gpus.gpu_threads or 2 * n_slots, thread_name_prefix="cuzk-gpu")
        self._io_threads = ThreadPoolExecutor(4, thread_name_prefix="cuzk-io")
        #: Planning and self-verification of CRITICAL jobs (WinningPoSt): never queued behind a large
        #: PoRep or WindowPoSt plan on the shared threads.
        self._critical_threads = ThreadPoolExecutor(1, thread_name_prefix="cuzk-critical")
        self.keys = KeySupply(config, self.providers, self.param_cache, self.lanes,
                              io_threads=self._io_threads, synth_slots=self._synth_slots)
        self.srs = self.keys.srs
        self.metrics = EngineMetrics()
        self.jobs = JobBook(config, self.metrics)
        self.gpu = GpuStage(config, self.lanes, primary_lanes, self.slots, self.keys, self.metrics, self._gpu_threads)
        # [pipeline] synthesis_concurrency: jobs with partitions in synthesis at once (cuzk counts proofs).
        synth_jobs = JobGate(config.pipeline.synthesis_concurrency)
        self.pipeline = PartitionPipeline(
            self.jobs, self.gpu, self.pool, self.host_blocks, self.srs, self.metrics,
            window=self._window, critical_reserve=self._critical_reserve, synth_slots=self._synth_slots,
            synth_jobs=synth_jobs, host_threads=self._host_threads, gpu_slots=n_slots)
        self.admission = Admission(config, self.providers, self.param_cache, self.jobs,
                                   host_threads=self._host_threads, io_threads=self._io_threads, run=self.pipeline.run,
                                   cpu_fallback=self.cpu_fallback, backend_summary=self.backend_summary)
        self.report = StatusReport(self.lanes, self.slots, self.srs, self.metrics, self.jobs, self.host_blocks,
                                   resting=self.gpu.lane_resting, backend_summary=self.backend_summary,
                                   started=time.monotonic())
        self.timing_lines = os.environ.get("CUZK_TIMING", "") not in ("", "0")
        log.info("engine: %s; %d GPU worker slot(s), synthesis %d process(es) (%d at once, up to %d for one "
                 "witness), lookahead window %d, key budget %.1f MB, param cache %s", self.backend_summary, n_slots,
                 self.pool.workers, config.parallel_synthesis(), self.pool.task_processes, window,
                 self.srs.budget_bytes / 1e6, self.param_cache)

    @property
    def timing_lines(self) -> bool:
        """CUZK_TIMING=1: per-partition and per-job timing lines on stderr, as cuzk prints them."""
        return self.jobs.timing_lines

    @timing_lines.setter
    def timing_lines(self, on: bool) -> None:
        self.jobs.timing_lines = self.gpu.timing_lines = on

    def _host_threads(self, priority: Priority) -> Executor:
        """The threads for a job's host work (digest, plan, self-verification)."""
        return self._critical_threads if priority >= Priority.CRITICAL else self._io_threads

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
        await asyncio.get_running_loop().run_in_executor(self._io_threads, self.providers.start, self.param_cache)

    async def stop(self) -> None:
        """Cancel every unfinished job (killing key generations), then stop the workers; each
        wait is bounded (STOP_WAIT_S), so a stop takes seconds whatever is running."""
        self.cancel_all("daemon stopping")
        tasks = [j.task for j in self.jobs if j.task is not None and not j.task.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=STOP_WAIT_S)
        loop = asyncio.get_running_loop()
        if self._own_pool:
            await loop.run_in_executor(self._io_threads, partial(self.pool.shutdown, STOP_WAIT_S))
        self.providers.close()  # returns at once: planning processes are not waited for
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

    # -- jobs ------------------------------------------------------------------------------
    async def submit(self, request: ProofRequest, *, via_prove: bool = False) -> tuple[Job, bool]:
        """Queue a job (or attach to the running one with this request id): (job, attached).

        The request is planned (parsed, validated, split into partitions) off the event loop,
        so a 50 MB PoRep C1 never stalls other calls. Raises InvalidRequest for a malformed
        request; a request whose circuit is missing becomes a FAILED job (AwaitProof answers
        with the reason)."""
        return await self.admission.submit(request, via_prove=via_prove)

    async def prove(self, request: ProofRequest) -> JobResult:
        """Submit and wait. If this caller goes away and nobody else waits, the job is cancelled."""
        if not request.request_id:
            request = replace(request, request_id=str(uuid.uuid4()))
        try:
            job, _ = await self.submit(request, via_prove=True)
            return await self.wait(job.id)
        except asyncio.CancelledError:
            running = self.jobs.get(request.request_id)
            if running is not None and running.prove_only and running.waiters == 0 and not running.status.finished:
                self.cancel(running.id, reason="the caller went away (cancelled or past its deadline)")
            raise

    async def wait(self, job_id: str, timeout_s: float | None = None) -> JobResult:
        """The job's result; TIMEOUT after ``timeout_s`` (the job keeps running)."""
        return await self.jobs.wait(job_id, timeout_s)

    def cancel(self, job_id: str, *, reason: str = "CancelProof") -> bool:
        """Stop a job; True if it was queued or running."""
        return self.jobs.cancel(job_id, reason=reason)

    def cancel_all(self, reason: str) -> int:
        """Cancel every unfinished job; how many."""
        return self.jobs.cancel_all(reason)

    def job(self, job_id: str) -> Job:
        return self.jobs.job(job_id)

    def queue_position(self, job: Job) -> int:
        return self.jobs.queue_position(job)

    def active_jobs(self) -> list[Job]:
        """Jobs queued or running, oldest first."""
        return self.jobs.active()

    def expected_lane(self) -> str:
        idle = self.slots.idle
        return (idle[0].lane if idle else self.lanes[0].name)

    def lane_resting(self, lane: str) -> bool:
        """The lane gave up on LANE_STRIKES partitions in a row and rests (LANE_REST_S)."""
        return self.gpu.lane_resting(lane)

    # -- keys -------------------------------------------------------------------------------
    async def preload(self, circuit_id: str) -> tuple[bool, float]:
        """Make a key HOT on every lane, and its partitions' large host blocks ready (pinned:
        the first proof uploads no partition from pageable memory): (already_loaded, seconds)."""
        t0 = time.perf_counter()
        already, _ = await self.keys.preload(circuit_id)
        sizes = await asyncio.to_thread(self.keys.partition_blocks, circuit_id)
        await asyncio.to_thread(self.host_blocks.prepare, circuit_id, sizes)
        return already, time.perf_counter() - t0

    async def evict(self, circuit_id: str) -> tuple[bool, int]:
        self.host_blocks.forget(circuit_id)
        return await self.keys.evict(circuit_id)

    # -- status ------------------------------------------------------------------------------
    def status(self) -> EngineStatus:
        return self.report.status()

    def health(self) -> str | None:
        """None when the engine can serve, else why not (for /healthz and the gRPC health service)."""
        try:
            self.status()
        except Exception as exc:
            return f"status fails: {type(exc).__name__}: {exc}"
        return None

    def metrics_text(self) -> str:
        return self.report.metrics_text(self.status())
