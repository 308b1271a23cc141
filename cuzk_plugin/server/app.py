"""Start and stop the gRPC server (TCP or unix://), its health service and the status page."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from cuzk_plugin.engine.engine import Engine
from cuzk_plugin.server import convert
from cuzk_plugin.server.proto import cuzk_pb2, cuzk_pb2_grpc
from cuzk_plugin.server.service import ProvingEngineService
from cuzk_plugin.server.status_http import StatusHttpServer

log = logging.getLogger(__name__)

#: Curio's client allows 256 MiB messages; so do we, both ways.
MAX_MESSAGE_BYTES = 256 << 20
SERVICE_NAME = cuzk_pb2.DESCRIPTOR.services_by_name["ProvingEngine"].full_name  # "cuzk.v1.ProvingEngine"
GRPC_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
]


@dataclass
class RunningServer:
    """A started daemon front: the gRPC server, its addresses and the status page."""

    grpc_server: grpc.aio.Server
    addresses: list[str]
    health: health.aio.HealthServicer
    status_http: StatusHttpServer | None
    unix_paths: list[Path]

    @property
    def address(self) -> str:
        return self.addresses[0]

    @property
    def status_port(self) -> int:
        return self.status_http.port if self.status_http else 0

    async def stop(self, grace: float = 5.0) -> None:
        await self.health.enter_graceful_shutdown()
        if self.status_http:
            await self.status_http.stop()
        await self.grpc_server.stop(grace)
        for path in self.unix_paths:
            if path.is_socket():
                path.unlink()


def _bind_address(listen: str) -> tuple[str, Path | None]:
    """gRPC bind string and, for unix://, the socket path (its directory is created; a stale
    socket file left by a crashed daemon is removed)."""
    if listen.startswith("unix://"):
        path = Path(listen.removeprefix("unix://"))
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_socket():
            path.unlink()
        return f"unix://{path}", path
    return listen, None


async def start_server(engine: Engine, listen: str | list[str], status_listen: str = "") -> RunningServer:
    """Serve ``engine`` on ``listen``: one address or several (``host:port``, port 0 picks one;
    ``unix:///path``)."""
    server = grpc.aio.server(options=GRPC_OPTIONS)
    cuzk_pb2_grpc.add_ProvingEngineServicer_to_server(ProvingEngineService(engine), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    addresses, unix_paths = [], []
    for one in [listen] if isinstance(listen, str) else listen:
        bind, unix_path = _bind_address(one)
        port = server.add_insecure_port(bind)
        if unix_path is None and port == 0:
            raise OSError(f"cannot listen on {one}")
        if unix_path is not None:
            unix_paths.append(unix_path)
        addresses.append(f"unix://{unix_path}" if unix_path else f"{bind.rpartition(':')[0]}:{port}")
    await server.start()
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    status_http = None
    if status_listen:
        host, _, sport = status_listen.rpartition(":")
        status_http = StatusHttpServer(lambda: convert.status_to_json(engine.status()), engine.metrics_text)
        await status_http.start(host.strip("[]") or "0.0.0.0", int(sport))
    log.info("cuzk.v1 ProvingEngine serving on %s (pid %d, messages up to %d MiB)",
             ", ".join(addresses), os.getpid(), MAX_MESSAGE_BYTES >> 20)
    return RunningServer(server, addresses, health_servicer, status_http, unix_paths)
