"""Client side helpers: dial a daemon by ``host:port`` or ``unix:///path`` with Curio's limits."""

from __future__ import annotations

import grpc

from cuzk_plugin.server.app import GRPC_OPTIONS
from cuzk_plugin.server.proto import cuzk_pb2_grpc


def target(address: str) -> str:
    """gRPC target for ``address``: unix:///path as is, host:port through the DNS resolver."""
    if address.startswith(("unix://", "unix:", "dns:", "ipv4:", "ipv6:")):
        return address
    if ":" not in address:
        raise ValueError(f"address {address!r} is neither host:port nor unix:///path")
    return f"dns:///{address}"


def aio_channel(address: str) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(target(address), options=GRPC_OPTIONS)


def sync_channel(address: str) -> grpc.Channel:
    return grpc.insecure_channel(target(address), options=GRPC_OPTIONS)


def aio_stub(channel: grpc.aio.Channel) -> cuzk_pb2_grpc.ProvingEngineStub:
    return cuzk_pb2_grpc.ProvingEngineStub(channel)
