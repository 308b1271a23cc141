"""``GET /status`` as cuzk answers it, beside our own fields: dashboards and scripts made for
cuzk's status page (``uptime_secs``, ``memory``, ``synthesis``, ``pipelines``, ``gpu_workers``,
``allocations``, ``counters``) read ours unchanged. Every value is read from the engine at the
time of the request."""

from __future__ import annotations

import time
from typing import Any

from cuzk_plugin.engine.engine import Engine
from cuzk_plugin.engine.job import Job
from cuzk_plugin.engine.status import EngineStatus
from cuzk_plugin.engine.types import JobStatus
from cuzk_plugin.server.convert import status_to_json

__all__ = ["status_page", "cuzk_fields"]


def status_page(engine: Engine) -> dict[str, Any]:
    """Our GetStatus facts and cuzk's status fields in one JSON object."""
    st = engine.status()
    return {**status_to_json(st), **cuzk_fields(engine, st)}


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds * 1000)


def _pipeline(engine: Engine, job: Job, now: float) -> dict[str, Any]:
    synth = {e.partition: e for e in job.events if e.stage == "synthesis"}
    proved = {e.partition: e for e in job.events if e.stage == "gpu_finish"}
    on_gpu = {s.busy_partition: s.busy_since for s in engine.slots.slots if s.busy_job == job.id}
    parts = []
    gpu_ms: int | None
    for p in range(job.partitions):
        if p in proved:
            state, gpu_ms = "done", int(proved[p].end_ms - min(e.start_ms for e in job.events
                                                                  if e.partition == p and e.stage == "gpu_start"))
        elif p in on_gpu:
            state, gpu_ms = "gpu", _ms(now - on_gpu[p])
        else:
            state, gpu_ms = ("synth_done" if p in synth else "synthesizing" if p in job.synthesizing else "pending"), None
        synth_ms = (int(synth[p].end_ms - synth[p].start_ms) if p in synth
                    else _ms(now - job.synthesizing[p]) if p in job.synthesizing else None)
        parts.append({"index": p, "state": state, "synth_ms": synth_ms, "gpu_ms": gpu_ms})
    return {"job_id": job.id, "proof_kind": job.kind.label, "started_secs_ago": now - job.submitted,
            "total_partitions": job.partitions, "partitions_done": len(proved), "partitions": parts}


def cuzk_fields(engine: Engine, st: EngineStatus) -> dict[str, Any]:
    """cuzk's ``StatusSnapshot`` fields, from the engine now."""
    now = time.perf_counter()
    jobs = engine.active_jobs()
    lane_ordinal = {g.lane: g.ordinal for g in st.gpus}
    workers = [{"worker_id": i, "gpu_ordinal": lane_ordinal.get(s.lane, 0), "state": "proving" if s.busy_job else "idle",
                "current_job": s.busy_job or None, "current_partition": s.busy_partition if s.busy_job else None,
                "busy_secs": now - s.busy_since if s.busy_job else None}
               for i, s in enumerate(engine.slots.slots)]
    done, failed = engine.metrics.finished_by_kind()
    return {
        "uptime_secs": st.uptime_s,
        "memory": {"total_bytes": st.memory_limit_bytes, "used_bytes": st.memory_used_bytes,
                   "available_bytes": max(0, st.memory_limit_bytes - st.memory_used_bytes)},
        "synthesis": {"max_concurrent": engine.config.parallel_synthesis(),
                      "active": sum(len(j.synthesizing) for j in jobs)},
        "pipelines": [_pipeline(engine, j, now) for j in jobs if j.status == JobStatus.RUNNING],
        "gpu_workers": workers,
        "allocations": {"srs": [{"circuit_id": cid, "bytes": size, "last_used_secs_ago": idle, "evictable": evictable}
                                for cid, size, idle, evictable in engine.srs.allocations()]},
        "counters": {"total_completed": st.completed, "total_failed": st.failed,
                     "completed_by_kind": {k: int(v) for k, v in done.items()},
                     "failed_by_kind": {k: int(v) for k, v in failed.items()},
                     "queue_depth": sum(q.pending for q in st.queues)},
    }
