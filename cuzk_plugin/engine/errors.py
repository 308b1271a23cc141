"""Engine errors: each maps to one gRPC status code in the server."""

from __future__ import annotations

from cuzk_plugin.errors import CuzkError


class InvalidRequest(CuzkError, ValueError):
    """The request itself is malformed (names the field); gRPC INVALID_ARGUMENT."""


class CircuitUnavailable(CuzkError):
    """No circuit (provider, `.r1cs` or `.params`) for the request; the job answers FAILED."""


class JobNotFound(CuzkError, KeyError):
    """No job with this id (never submitted, or dropped from the finished-job history)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "job not found"


class SrsInUse(CuzkError):
    """EvictSRS on a key that partitions are proving with right now."""


class SrsBudgetExceeded(CuzkError):
    """A key that does not fit in [memory] total_budget - safety_margin even with everything else evicted."""


class SelfVerificationFailed(CuzkError):
    """A proof the backend produced does not verify; never returned as COMPLETED."""


class JobIdInUse(CuzkError):
    """A request reuses the id of a running job but asks for something else; gRPC ALREADY_EXISTS."""


class QueueFull(CuzkError):
    """[scheduler] max_pending jobs are queued or running; gRPC RESOURCE_EXHAUSTED (retry later)."""
