"""A minimal HTTP endpoint beside gRPC: ``GET /status`` (JSON), ``GET /metrics`` (Prometheus
text) and ``GET /healthz`` (200 "ok", or 503 with the reason when the engine cannot serve).
Plain asyncio streams: one request per connection, GET only. Every answer carries
``Access-Control-Allow-Origin: *``, as cuzk's does, so a browser dashboard on another origin
can poll it (the pages only report; nothing here changes state)."""

from __future__ import annotations

import asyncio
import errno
import json
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)
_MAX_HEADER = 16 << 10


class StatusHttpServer:
    """Serves the three pages from callables evaluated per request."""

    def __init__(self, status: Callable[[], dict], metrics: Callable[[], str],
                 health: Callable[[], str | None] = lambda: None):
        self._status = status
        self._metrics = metrics
        self._health = health
        self._server: asyncio.base_events.Server | None = None
        self.port = 0

    async def start(self, host: str, port: int) -> None:
        """Listen on host:port. A port already taken (another daemon, a second instance) is
        logged and the daemon goes on without the page (``port`` stays 0): the page only
        reports, proving must not depend on it."""
        try:
            self._server = await asyncio.start_server(self._handle, host, port)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            log.warning("status page: %s:%d is already in use; serving without /status, /metrics and /healthz "
                        "(set [daemon] status_listen to a free port, or \"\" to turn the page off)", host, port)
            return
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("status page on http://%s:%d/status", host, self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            method, path, *_ = head[:_MAX_HEADER].decode("latin-1").split("\r\n", 1)[0].split(" ")
            code, ctype, body = self._route(method, path.split("?", 1)[0])
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            code, ctype, body = 400, "text/plain", b"bad request\n"
        except Exception:
            log.exception("status page failed")
            code, ctype, body = 500, "text/plain", b"internal error\n"
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error",
                  503: "Service Unavailable"}[code]
        writer.write(f"HTTP/1.1 {code} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                     "Access-Control-Allow-Origin: *\r\nConnection: close\r\n\r\n".encode() + body)
        try:
            await writer.drain()
        finally:
            writer.close()

    def _route(self, method: str, path: str) -> tuple[int, str, bytes]:
        if method != "GET":
            return 405, "text/plain", b"GET only\n"
        if path == "/status":
            return 200, "application/json", (json.dumps(self._status(), indent=2) + "\n").encode()
        if path == "/metrics":
            return 200, "text/plain; version=0.0.4", self._metrics().encode()
        if path == "/healthz":
            problem = self._health()
            return (200, "text/plain", b"ok\n") if problem is None else (503, "text/plain", f"{problem}\n".encode())
        return 404, "text/plain", b"try /status, /metrics or /healthz\n"
