"""Start and stop the gRPC server (TCP or unix://), its health service and the status page.

A Unix socket is created with mode 0660 whatever the umask, and never taken from a daemon
that still answers on it (a second start with the same config is refused). Directories the
daemon creates for it get 0750: the group (Curio's user) may traverse them to connect, and
only the daemon's user may add or remove files there. A TCP address
other than loopback without TLS is served with a loud warning: Curio speaks plain gRPC, so
TLS and the shared token are for other clients, as the operator chooses ([daemon] tls_cert,
tls_key, auth_token).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from cuzk_plugin.engine.engine import Engine
from cuzk_plugin.server.cuzk_status import status_page
from cuzk_plugin.server.proto import cuzk_pb2
from cuzk_plugin.server.service import ProvingEngineService, method_handlers
from cuzk_plugin.server.status_http import StatusHttpServer

log = logging.getLogger(__name__)

#: Curio's client allows 256 MiB messages; so do we, both ways.
MAX_MESSAGE_BYTES = 256 << 20
SERVICE_NAME = cuzk_pb2.DESCRIPTOR.services_by_name["ProvingEngine"].full_name  # "cuzk.v1.ProvingEngine"
GRPC_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
]
SOCKET_MODE = 0o660
#: Directories created for a Unix socket: group members need the search bit to reach it.
SOCKET_DIR_MODE = 0o750
#: How often the health service re-checks the engine.
HEALTH_PERIOD_S = 2.0


@dataclass(frozen=True)
class Security:
    """What a TCP listener asks of its clients: TLS (PEM files) and/or a shared bearer token."""

    tls_cert: str = ""
    tls_key: str = ""
    auth_token: str = ""


@dataclass
class RunningServer:
    """A started daemon front: the gRPC server, its addresses and the status page."""

    grpc_server: grpc.aio.Server
    addresses: list[str]
    health: health.aio.HealthServicer
    status_http: StatusHttpServer | None
    unix_paths: list[Path]
    service: ProvingEngineService | None = None
    watchers: list[asyncio.Task] = field(default_factory=list)

    @property
    def address(self) -> str:
        return self.addresses[0]

    @property
    def status_port(self) -> int:
        return self.status_http.port if self.status_http else 0

    async def stop(self, grace: float = 5.0) -> None:
        for task in self.watchers:
            task.cancel()
        await self.health.enter_graceful_shutdown()
        if self.status_http:
            await self.status_http.stop()
        await self.grpc_server.stop(grace)
        if self.service:
            self.service.close()
        for path in self.unix_paths:
            if path.is_socket():
                path.unlink()


def socket_answers(path: Path) -> bool:
    """True when a process accepts connections on the Unix socket ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


def _bind_address(listen: str) -> tuple[str, Path | None]:
    """gRPC bind string and, for unix://, the socket path (its directory is created; a stale
    socket left by a crashed daemon is removed, a live one refused)."""
    if listen.startswith("unix://"):
        path = Path(listen.removeprefix("unix://"))
        _make_socket_dir(path.parent)
        if path.is_socket():
            if socket_answers(path):
                raise OSError(f"{listen}: another daemon answers on this socket; stop it first or listen elsewhere")
            path.unlink()
        elif path.exists():
            raise OSError(f"{listen}: {path} exists and is not a socket")
        return f"unix://{path}", path
    return listen, None


def _make_socket_dir(directory: Path) -> None:
    """Create ``directory`` and its missing parents with SOCKET_DIR_MODE, whatever the umask
    (the one in force while binding would leave them without any search bit); existing ones are
    left as the operator made them."""
    missing = []
    for d in (directory, *directory.parents):
        if d.exists():
            break
        missing.append(d)
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            continue  # made meanwhile by someone else: theirs
        os.chmod(d, SOCKET_DIR_MODE)


def is_loopback(listen: str) -> bool:
    """True for unix:// and for TCP addresses on the loopback interface."""
    if listen.startswith("unix:"):
        return True
    host = listen.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name or an empty host (every interface)


class _TokenCheck(grpc.aio.ServerInterceptor):
    """Refuses cuzk.v1 calls without ``authorization: Bearer <token>`` (UNAUTHENTICATED)."""

    def __init__(self, token: str):
        self._expected = f"Bearer {token}".encode()

    async def intercept_service(self, continuation, details):
        if not details.method.startswith(f"/{SERVICE_NAME}/"):
            return await continuation(details)  # the health service stays open
        sent = dict(details.invocation_metadata or ()).get("authorization", "")
        if hmac.compare_digest(sent.encode() if isinstance(sent, str) else sent, self._expected):
            return await continuation(details)

        async def refuse(_request, context):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "authorization: missing or wrong bearer token")

        return grpc.unary_unary_rpc_method_handler(refuse)


def _credentials(security: Security) -> grpc.ServerCredentials | None:
    if not security.tls_cert:
        return None
    return grpc.ssl_server_credentials([(Path(security.tls_key).read_bytes(), Path(security.tls_cert).read_bytes())])


async def _watch_health(engine: Engine, servicer: health.aio.HealthServicer) -> None:
    """Keep the gRPC health status equal to the engine's real health."""
    last = None
    while True:
        problem = engine.health()
        if problem != last:
            status = health_pb2.HealthCheckResponse.SERVING if problem is None else health_pb2.HealthCheckResponse.NOT_SERVING
            for name in ("", SERVICE_NAME):
                await servicer.set(name, status)
            if problem:
                log.error("health: NOT_SERVING: %s", problem)
            last = problem
        await asyncio.sleep(HEALTH_PERIOD_S)


async def start_server(engine: Engine, listen: str | list[str], status_listen: str = "",
                       security: Security = Security()) -> RunningServer:
    """Serve ``engine`` on ``listen``: one address or several (``host:port``, port 0 picks one;
    ``unix:///path``)."""
    interceptors = [_TokenCheck(security.auth_token)] if security.auth_token else []
    server = grpc.aio.server(options=GRPC_OPTIONS, interceptors=interceptors)
    service = ProvingEngineService(engine)
    handlers = method_handlers(service)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    credentials = _credentials(security)
    addresses, unix_paths = [], []
    old_umask = os.umask(0o117)  # the socket file is born 0660, not world-accessible for an instant
    try:
        for one in [listen] if isinstance(listen, str) else listen:
            bind, unix_path = _bind_address(one)
            try:
                if unix_path is None and credentials is not None:
                    port = server.add_secure_port(bind, credentials)
                else:
                    port = server.add_insecure_port(bind)
            except RuntimeError:  # grpc.aio's "Failed to bind": a port in use, an address not ours
                port = 0
            if port == 0:
                raise OSError(f"cannot listen on {one}: the address is in use (another daemon?) or not this host's")
            if unix_path is not None:
                unix_paths.append(unix_path)
            elif credentials is None and not is_loopback(one):
                log.warning("!!! %s: gRPC on a non-loopback TCP address WITHOUT TLS%s: anyone who reaches this port "
                            "can submit, cancel and read proofs. Prefer unix:// or 127.0.0.1 next to Curio; else set "
                            "[daemon] tls_cert/tls_key and/or auth_token, or firewall the port. !!!",
                            one, "" if security.auth_token else " OR A TOKEN")
            addresses.append(f"unix://{unix_path}" if unix_path else f"{bind.rpartition(':')[0]}:{port}")
        await server.start()
    finally:
        os.umask(old_umask)
    for path in unix_paths:
        os.chmod(path, SOCKET_MODE)
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    watchers = [asyncio.create_task(_watch_health(engine, health_servicer), name="cuzk-health")]
    status_http = None
    if status_listen:
        host, _, sport = status_listen.rpartition(":")
        status_http = StatusHttpServer(lambda: status_page(engine), engine.metrics_text, engine.health)
        await status_http.start(host.strip("[]") or "0.0.0.0", int(sport))
    log.info("cuzk.v1 ProvingEngine serving on %s (pid %d, messages up to %d MiB)",
             ", ".join(addresses), os.getpid(), MAX_MESSAGE_BYTES >> 20)
    return RunningServer(server, addresses, health_servicer, status_http, unix_paths, service, watchers)
