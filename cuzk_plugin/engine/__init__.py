"""The proving engine: priority scheduling, the per-partition pipeline, keys, self-verification.

Modules: ``types`` (kinds, priorities, request/result), ``circuits`` (providers: request ->
partitions), ``synthesis`` (worker processes, shared-memory handoff), ``sched`` (priority
admission), ``lanes`` (backend devices, the GPU step), ``srs`` (keys and the memory budget),
``job``, ``metrics``; the engine's stages: ``admission`` (request -> planned job),
``pipeline`` (a job's partitions to a verified proof), ``gpu_stage`` (a partition on a lane:
retries, failover), ``key_supply`` (where keys come from: the SRS manager, preload, evict),
``job_book`` (jobs by id: await, cancel, endings), ``status`` (snapshot, metrics) and
``engine`` (the facade that builds and joins them).
"""

from cuzk_plugin.engine.engine import Engine
from cuzk_plugin.engine.errors import CircuitUnavailable, InvalidRequest, JobNotFound, SrsInUse
from cuzk_plugin.engine.status import EngineStatus
from cuzk_plugin.engine.types import JobResult, JobStatus, Priority, ProofKind, ProofRequest, RegisteredInput, SyntheticInput

__all__ = [
    "Engine", "EngineStatus", "CircuitUnavailable", "InvalidRequest", "JobNotFound", "SrsInUse",
    "JobResult", "JobStatus", "Priority", "ProofKind", "ProofRequest", "RegisteredInput", "SyntheticInput",
]
