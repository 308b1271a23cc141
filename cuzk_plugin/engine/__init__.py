"""The proving engine: priority scheduling, the per-partition pipeline, keys, self-verification.

Modules: ``types`` (kinds, priorities, request/result), ``circuits`` (providers: request ->
partitions), ``synthesis`` (worker processes, shared-memory handoff), ``sched`` (priority
admission), ``lanes`` (backend devices, the GPU step), ``srs`` (keys and the memory budget),
``job``, ``metrics`` and ``engine`` (the pipeline itself).
"""

from cuzk_plugin.engine.engine import Engine, EngineStatus
from cuzk_plugin.engine.errors import CircuitUnavailable, InvalidRequest, JobNotFound, SrsInUse
from cuzk_plugin.engine.types import JobResult, JobStatus, Priority, ProofKind, ProofRequest, RegisteredInput, SyntheticInput

__all__ = [
    "Engine", "EngineStatus", "CircuitUnavailable", "InvalidRequest", "JobNotFound", "SrsInUse",
    "JobResult", "JobStatus", "Priority", "ProofKind", "ProofRequest", "RegisteredInput", "SyntheticInput",
]
