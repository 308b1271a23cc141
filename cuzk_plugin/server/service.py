"""The cuzk.v1 ProvingEngine service: parse, translate, call the engine, map errors to status codes.

Requests arrive as raw bytes (see :func:`method_handlers`): the service parses them itself, so
a malformed message is INVALID_ARGUMENT naming the message (not gRPC's INTERNAL "Exception
deserializing request"), and a large body (a 50-200 MB PoRep or WindowPoSt request) is parsed
on a thread while the event loop keeps answering GetStatus.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from google.protobuf.message import DecodeError, Message

from cuzk_plugin.engine.engine import Engine
from cuzk_plugin.engine.errors import (
    CircuitUnavailable,
    InvalidRequest,
    JobIdInUse,
    JobNotFound,
    QueueFull,
    SrsBudgetExceeded,
    SrsInUse,
)
from cuzk_plugin.engine.residency import DeviceMemoryTooSmall
from cuzk_plugin.engine.types import loggable
from cuzk_plugin.errors import ParamsError
from cuzk_plugin.server import convert
from cuzk_plugin.server.proto import cuzk_pb2 as pb

log = logging.getLogger(__name__)

#: Engine error -> gRPC status code (anything else: INTERNAL).
ERROR_CODES: tuple[tuple[type[Exception], grpc.StatusCode], ...] = (
    (InvalidRequest, grpc.StatusCode.INVALID_ARGUMENT),
    (JobNotFound, grpc.StatusCode.NOT_FOUND),
    (JobIdInUse, grpc.StatusCode.ALREADY_EXISTS),
    (QueueFull, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (CircuitUnavailable, grpc.StatusCode.NOT_FOUND),
    (SrsInUse, grpc.StatusCode.FAILED_PRECONDITION),
    (SrsBudgetExceeded, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (DeviceMemoryTooSmall, grpc.StatusCode.RESOURCE_EXHAUSTED),  # a key no lane's memory can prove, with figures
    (ParamsError, grpc.StatusCode.FAILED_PRECONDITION),  # a key file refused (digest, pin, sizes)
    (FileNotFoundError, grpc.StatusCode.NOT_FOUND),
)
#: Bodies larger than this are parsed on a thread, not on the event loop.
PARSE_OFF_LOOP_BYTES = 1 << 20
#: The most any message but a proof request may take (ids and flags: a few hundred bytes);
#: larger bodies are refused before they are parsed. Proof requests are bounded by the
#: transport's limit (app.MAX_MESSAGE_BYTES).
SMALL_BODY_BYTES = 64 << 10
LARGE_BODY_MESSAGES = (pb.SubmitProofRequest, pb.ProveRequest)
SERVICE = pb.DESCRIPTOR.services_by_name["ProvingEngine"]


#: The longest error text sent back or logged (a message may quote a client's input).
MAX_DETAILS = 1000


class _Refusal(Exception):
    """An RPC answered with a non-OK status. Set on the context by :func:`method_handlers`, not
    raised through gRPC's ``abort``: gRPC keeps that exception on the call's state, which ties
    the handler's frames (and a request body of up to 256 MB with them) into a reference cycle
    that only a full garbage collection frees."""

    def __init__(self, code: grpc.StatusCode, details: str):
        super().__init__(code, details)
        self.code, self.details = code, details


async def _abort(context: grpc.aio.ServicerContext, rpc: str, exc: Exception, engine: Engine | None = None) -> None:
    code = next((c for t, c in ERROR_CODES if isinstance(exc, t)), grpc.StatusCode.INTERNAL)
    if engine is not None:
        engine.metrics.refused.labels(rpc, code.name).inc()
    details = loggable(str(exc), MAX_DETAILS)
    if code == grpc.StatusCode.INTERNAL:
        log.error("%s: internal error: %s", rpc, details, exc_info=exc)
    else:
        log.info("%s: %s: %s", rpc, code.name, details)
    raise _Refusal(code, details)


class ProvingEngineService:
    """Thin: every method is parse -> translate -> engine -> translate."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self._parsers = ThreadPoolExecutor(2, thread_name_prefix="cuzk-parse")

    async def _parse(self, raw: bytes, cls: type[Message], context, parse: Callable[[bytes], Any] | None = None):
        """``parse(raw)`` (``cls.FromString`` by default); large bodies on a thread, oversized
        ones refused unparsed. Refusals name the message."""
        if len(raw) > SMALL_BODY_BYTES and cls not in LARGE_BODY_MESSAGES:
            await _abort(context, cls.__name__, InvalidRequest(
                f"{cls.__name__}: {len(raw)} bytes, more than the {SMALL_BODY_BYTES} this message may take"), self.engine)
        run = parse or cls.FromString
        try:
            if len(raw) > PARSE_OFF_LOOP_BYTES:
                return await asyncio.get_running_loop().run_in_executor(self._parsers, run, raw)
            return run(raw)
        except DecodeError as exc:
            await _abort(context, cls.__name__, InvalidRequest(f"{cls.__name__}: not a valid message ({exc})"), self.engine)
        except InvalidRequest as exc:
            await _abort(context, cls.__name__, exc, self.engine)
        raise AssertionError("unreachable")

    async def _call(self, rpc: str, context, work: Awaitable):
        try:
            return await work
        except Exception as exc:
            await _abort(context, rpc, exc, self.engine)
            raise AssertionError("unreachable") from None

    async def SubmitProof(self, raw: bytes, context) -> pb.SubmitProofResponse:
        request = await self._parse(raw, pb.SubmitProofRequest, context, convert.submit_from_body)
        job, _attached = await self._call("SubmitProof", context, self.engine.submit(request))
        return pb.SubmitProofResponse(job_id=job.id, queue_position=self.engine.queue_position(job),
                                      assigned_gpu=self.engine.expected_lane())

    async def AwaitProof(self, raw: bytes, context) -> pb.AwaitProofResponse:
        request = await self._parse(raw, pb.AwaitProofRequest, context)
        timeout = request.timeout_ms / 1000.0 if request.timeout_ms else None
        result = await self._call("AwaitProof", context, self.engine.wait(request.job_id, timeout))
        return convert.result_to_proto(result)

    async def Prove(self, raw: bytes, context) -> pb.ProveResponse:
        request = await self._parse(raw, pb.ProveRequest, context, convert.prove_from_body)
        result = await self._call("Prove", context, self.engine.prove(request))
        return pb.ProveResponse(result=convert.result_to_proto(result))

    async def CancelProof(self, raw: bytes, context) -> pb.CancelProofResponse:
        request = await self._parse(raw, pb.CancelProofRequest, context)

        async def cancel() -> bool:
            return self.engine.cancel(request.job_id)

        return pb.CancelProofResponse(was_running=await self._call("CancelProof", context, cancel()))

    async def GetStatus(self, raw: bytes, context) -> pb.GetStatusResponse:
        await self._parse(raw, pb.GetStatusRequest, context)

        async def status():
            return convert.status_to_proto(self.engine.status())

        return await self._call("GetStatus", context, status())

    async def GetMetrics(self, raw: bytes, context) -> pb.GetMetricsResponse:
        await self._parse(raw, pb.GetMetricsRequest, context)

        async def metrics():
            return pb.GetMetricsResponse(prometheus_text=self.engine.metrics_text())

        return await self._call("GetMetrics", context, metrics())

    async def PreloadSRS(self, raw: bytes, context) -> pb.PreloadSrsResponse:
        request = await self._parse(raw, pb.PreloadSrsRequest, context)
        already, seconds = await self._call("PreloadSRS", context, self.engine.preload(request.circuit_id))
        return pb.PreloadSrsResponse(already_loaded=already, load_time_ms=int(seconds * 1000))

    async def EvictSRS(self, raw: bytes, context) -> pb.EvictSrsResponse:
        request = await self._parse(raw, pb.EvictSrsRequest, context)
        was_loaded, freed = await self._call("EvictSRS", context, self.engine.evict(request.circuit_id))
        return pb.EvictSrsResponse(was_loaded=was_loaded, freed_bytes=freed)

    def close(self) -> None:
        self._parsers.shutdown(wait=False, cancel_futures=True)


def _answering(method: Callable[[bytes, Any], Awaitable[Message]], response_cls: type[Message]):
    """``method``, a refusal answered as a status set on the context (gRPC then sends the status
    and discards the empty response)."""

    async def handle(raw: bytes, context: grpc.aio.ServicerContext) -> Message:
        try:
            return await method(raw, context)
        except _Refusal as refusal:
            context.set_code(refusal.code)
            context.set_details(refusal.details)
            return response_cls()

    return handle


def method_handlers(service: ProvingEngineService) -> dict[str, grpc.RpcMethodHandler]:
    """Every RPC of cuzk.v1.ProvingEngine, taking the request's raw bytes (no deserializer)."""
    handlers = {}
    for method in SERVICE.methods:
        response_cls = getattr(pb, method.output_type.name)
        handlers[method.name] = grpc.unary_unary_rpc_method_handler(
            _answering(getattr(service, method.name), response_cls), request_deserializer=None,
            response_serializer=response_cls.SerializeToString)
    return handlers
