"""Admission: a request becomes a planned job, or is refused before it takes a slot.

A request is checked before it touches a path, a key or a job: its id (bounded, one ASCII form),
a repeated id (attaches only to the same request; a finished job's id, kept with the job, is
refused to any other), the jobs already queued or running ([scheduler] max_pending, with room of
their own for HIGH and CRITICAL: high_priority_reserve, critical_reserve). It is then planned
(parsed, validated, split into partitions) off the event loop, so a 50 MB PoRep C1 never stalls
other calls, within a planning budget that a higher priority takes first and a small CRITICAL
request (a WinningPoSt) never waits for. A planned job is handed to the partition pipeline.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import logging
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from functools import partial
from pathlib import Path

from cuzk_plugin.config import Config
from cuzk_plugin.engine.circuits import ProviderRegistry
from cuzk_plugin.engine.errors import CircuitUnavailable, InvalidRequest, JobIdInUse, QueueFull
from cuzk_plugin.engine.heap import return_free_memory
from cuzk_plugin.engine.job import Job
from cuzk_plugin.engine.job_book import JobBook, failure_text
from cuzk_plugin.engine.sched import PrioritySemaphore, order_key
from cuzk_plugin.engine.types import JobStatus, Priority, ProofRequest, circuit_id_problem, loggable, request_id_problem
from cuzk_plugin.filecoin.param_files import filecoin_circuit, is_test_key_id

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


class Admission:
    """Turns requests into planned jobs of ``jobs`` and starts ``run`` on each.

    ``host_threads`` gives the threads for a priority's host work (hashing, planning);
    ``cpu_fallback``: the engine proves on the CPU, so large Filecoin sectors are refused.
    """

    def __init__(self, config: Config, providers: ProviderRegistry, param_cache: Path, jobs: JobBook, *,
                 host_threads: Callable[[Priority], Executor], io_threads: Executor,
                 run: Callable[[Job], Awaitable[None]], cpu_fallback: bool, backend_summary: str):
        self.config = config
        self.providers = providers
        self.param_cache = param_cache
        self.jobs = jobs
        self._host_threads = host_threads
        self._io_threads = io_threads
        self._run = run
        self.cpu_fallback = cpu_fallback
        self.backend_summary = backend_summary
        self._planning_bytes = 0
        self._large_requests = PrioritySemaphore(LARGE_REQUESTS_AT_ONCE)
        self._large_arrivals = itertools.count()
        self._trim_pending = False
        #: Jobs waiting to plan, by priority (a higher priority plans first).
        self._planning_waits: Counter[Priority] = Counter()
        self._planning_changed = asyncio.Condition()

    async def submit(self, request: ProofRequest, *, via_prove: bool = False) -> tuple[Job, bool]:
        """Queue a job (or attach to the running one with this request id): (job, attached).

        Raises InvalidRequest for a malformed request; a request whose circuit is missing
        becomes a FAILED job (AwaitProof answers with the reason)."""
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
        threads = self._host_threads(request.effective_priority)
        digest = await asyncio.get_running_loop().run_in_executor(threads, request.digest)
        existing = self.jobs.get(job_id)
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
        pending = len(self.jobs.unfinished())
        limit, limit_name = self._pending_limit(request.effective_priority)
        if pending >= limit:
            raise QueueFull(f"{pending} jobs queued or running, the limit for priority "
                            f"{request.effective_priority.name} ([scheduler] {limit_name}); retry when one ends")
        if existing is not None:
            self.jobs.forget(existing)  # the same request again after its job finished: a new attempt
        job = Job(id=job_id, seq=self.jobs.next_seq(), request=request, priority=request.effective_priority,
                  plan=None, prove_only=via_prove, digest=digest)
        self.jobs.remember(job)
        job.task = asyncio.get_running_loop().create_task(self._plan_and_run(job), name=f"job-{job.id}")
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

    async def _plan_and_run(self, job: Job) -> None:
        if await self._plan(job):
            await self._run(job)

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
                plan = await loop.run_in_executor(self._host_threads(job.priority), self.providers.plan, job.request,
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
            self.jobs.forget(job)
            job.finish(JobStatus.FAILED, error=str(exc))
            return False
        except CircuitUnavailable as exc:
            log.warning("job %s (%s): FAILED at once: %s", loggable(job.id), job.kind.name, exc)
            self.jobs.finish(job, JobStatus.FAILED, error=str(exc))
            return False
        except asyncio.CancelledError:
            self.jobs.finish(job, JobStatus.CANCELLED, error="cancelled")
            return False
        except Exception as exc:
            log.exception("job %s: planning failed", loggable(job.id))
            self.jobs.finish(job, JobStatus.FAILED, error=failure_text(exc))
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
