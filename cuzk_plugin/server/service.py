"""The cuzk.v1 ProvingEngine service: translate, call the engine, map errors to status codes."""

from __future__ import annotations

import logging

import grpc

from cuzk_plugin.engine.engine import Engine
from cuzk_plugin.engine.errors import CircuitUnavailable, InvalidRequest, JobNotFound, SrsBudgetExceeded, SrsInUse
from cuzk_plugin.server import convert
from cuzk_plugin.server.proto import cuzk_pb2 as pb
from cuzk_plugin.server.proto import cuzk_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

#: Engine error -> gRPC status code (anything else: INTERNAL).
ERROR_CODES: tuple[tuple[type[Exception], grpc.StatusCode], ...] = (
    (InvalidRequest, grpc.StatusCode.INVALID_ARGUMENT),
    (JobNotFound, grpc.StatusCode.NOT_FOUND),
    (CircuitUnavailable, grpc.StatusCode.NOT_FOUND),
    (SrsInUse, grpc.StatusCode.FAILED_PRECONDITION),
    (SrsBudgetExceeded, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (FileNotFoundError, grpc.StatusCode.NOT_FOUND),
)


async def _abort(context: grpc.aio.ServicerContext, rpc: str, exc: Exception) -> None:
    code = next((c for t, c in ERROR_CODES if isinstance(exc, t)), grpc.StatusCode.INTERNAL)
    if code == grpc.StatusCode.INTERNAL:
        log.exception("%s: internal error", rpc)
    else:
        log.info("%s: %s: %s", rpc, code.name, exc)
    await context.abort(code, str(exc))


class ProvingEngineService(pb_grpc.ProvingEngineServicer):
    """Thin: every method is translate -> engine -> translate."""

    def __init__(self, engine: Engine):
        self.engine = engine

    async def SubmitProof(self, request: pb.SubmitProofRequest, context) -> pb.SubmitProofResponse:
        try:
            job, _attached = await self.engine.submit(convert.request_from_proto(request))
        except Exception as exc:
            await _abort(context, "SubmitProof", exc)
            raise AssertionError("unreachable")
        return pb.SubmitProofResponse(job_id=job.id, queue_position=self.engine.queue_position(job),
                                      assigned_gpu=self.engine.expected_lane())

    async def AwaitProof(self, request: pb.AwaitProofRequest, context) -> pb.AwaitProofResponse:
        timeout = request.timeout_ms / 1000.0 if request.timeout_ms else None
        try:
            result = await self.engine.wait(request.job_id, timeout)
        except Exception as exc:
            await _abort(context, "AwaitProof", exc)
            raise AssertionError("unreachable")
        return convert.result_to_proto(result)

    async def Prove(self, request: pb.ProveRequest, context) -> pb.ProveResponse:
        try:
            result = await self.engine.prove(convert.request_from_proto(request.submit))
        except Exception as exc:
            await _abort(context, "Prove", exc)
            raise AssertionError("unreachable")
        return pb.ProveResponse(result=convert.result_to_proto(result))

    async def CancelProof(self, request: pb.CancelProofRequest, context) -> pb.CancelProofResponse:
        try:
            was_running = self.engine.cancel(request.job_id)
        except Exception as exc:
            await _abort(context, "CancelProof", exc)
            raise AssertionError("unreachable")
        return pb.CancelProofResponse(was_running=was_running)

    async def GetStatus(self, request: pb.GetStatusRequest, context) -> pb.GetStatusResponse:
        return convert.status_to_proto(self.engine.status())

    async def GetMetrics(self, request: pb.GetMetricsRequest, context) -> pb.GetMetricsResponse:
        return pb.GetMetricsResponse(prometheus_text=self.engine.metrics_text())

    async def PreloadSRS(self, request: pb.PreloadSrsRequest, context) -> pb.PreloadSrsResponse:
        try:
            already, seconds = await self.engine.preload(request.circuit_id)
        except Exception as exc:
            await _abort(context, "PreloadSRS", exc)
            raise AssertionError("unreachable")
        return pb.PreloadSrsResponse(already_loaded=already, load_time_ms=int(seconds * 1000))

    async def EvictSRS(self, request: pb.EvictSrsRequest, context) -> pb.EvictSrsResponse:
        try:
            was_loaded, freed = await self.engine.evict(request.circuit_id)
        except Exception as exc:
            await _abort(context, "EvictSRS", exc)
            raise AssertionError("unreachable")
        return pb.EvictSrsResponse(was_loaded=was_loaded, freed_bytes=freed)
