"""The jobs the engine knows, by id: waited on, cancelled, and each ending counted once.

A job is here from its submission until [scheduler] keep_finished_jobs newer ones push it out;
a finished job keeps its id (so a repeated id is checked against the request it proved, and its
first client can still AwaitProof it). Admission adds jobs; planning, the partition pipeline
and cancellation end them, all through :meth:`JobBook.finish`: one place sets the result,
counts the ending, and logs the job's line (and its CUZK_TIMING line).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
from collections import OrderedDict
from collections.abc import Iterator

from cuzk_plugin.config import Config
from cuzk_plugin.engine.errors import CircuitUnavailable, JobNotFound, SelfVerificationFailed
from cuzk_plugin.engine.job import Job
from cuzk_plugin.engine.metrics import EngineMetrics
from cuzk_plugin.engine.types import JobResult, JobStatus, loggable

log = logging.getLogger(__name__)


class JobBook:
    """Every job by id, oldest first; ``counts``: jobs ended per final status since the start."""

    def __init__(self, config: Config, metrics: EngineMetrics):
        self.config = config
        self.metrics = metrics
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._seq = itertools.count()
        self.counts = {JobStatus.COMPLETED: 0, JobStatus.FAILED: 0, JobStatus.CANCELLED: 0}
        #: CUZK_TIMING=1: a timing line on stderr for each job that ends (the engine sets it).
        self.timing_lines = False

    def __contains__(self, job_id: str) -> bool:
        return job_id in self._jobs

    def __iter__(self) -> Iterator[Job]:
        return iter(self._jobs.values())

    def get(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def next_seq(self) -> int:
        """The next job's age rank (lower: submitted earlier)."""
        return next(self._seq)

    def remember(self, job: Job) -> None:
        self._jobs[job.id] = job
        keep = self.config.scheduler.keep_finished_jobs
        while len(self._jobs) > keep:
            oldest = next((jid for jid, j in self._jobs.items() if j.status.finished), None)
            if oldest is None:
                break
            del self._jobs[oldest]

    def forget(self, job: Job) -> None:
        """Drop ``job`` from the book (if its id still names it)."""
        if self._jobs.get(job.id) is job:
            del self._jobs[job.id]

    def unfinished(self) -> list[Job]:
        return [job for job in self._jobs.values() if not job.status.finished]

    def job(self, job_id: str) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise JobNotFound(f"job_id: no job '{loggable(job_id)}' (never submitted, or dropped from the history)")
        return job

    def active(self) -> list[Job]:
        """Jobs queued or running, oldest first."""
        return [j for j in self._jobs.values() if j.status in (JobStatus.QUEUED, JobStatus.RUNNING)]

    def queue_position(self, job: Job) -> int:
        return sum(1 for j in self._jobs.values()
                   if j is not job and j.status == JobStatus.QUEUED and j.priority >= job.priority and j.seq < job.seq)

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
            self.finish(job, JobStatus.CANCELLED, error=f"cancelled: {reason}")
        return True

    def cancel_all(self, reason: str) -> int:
        """Cancel every unfinished job; how many."""
        jobs = self.unfinished()
        for job in jobs:
            self.cancel(job.id, reason=reason)
        return len(jobs)

    def finish(self, job: Job, status: JobStatus, proof: bytes = b"", error: str = "") -> None:
        result = job.finish(status, proof, error)
        self.counts[status] += 1
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


def failure_text(exc: Exception) -> str:
    """The error message a job that failed with ``exc`` carries."""
    if isinstance(exc, (SelfVerificationFailed, CircuitUnavailable)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
