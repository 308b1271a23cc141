"""Fixtures of the daemon suite: one shared pool of synthesis processes and param cache per
session, and an in-process daemon (engine + gRPC on loopback TCP and a Unix socket) per test."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from daemon_helpers import daemon_config

from cuzk_plugin.adapters import builtin_providers
from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.engine.circuits import ProviderRegistry
from cuzk_plugin.engine.engine import Engine
from cuzk_plugin.engine.synthesis import SynthesisPool
from cuzk_plugin.filecoin import param_files
from cuzk_plugin.server.app import RunningServer, start_server
from cuzk_plugin.server.client import aio_channel
from cuzk_plugin.server.proto import cuzk_pb2_grpc


@pytest.fixture(scope="session")
def synth_pool() -> SynthesisPool:
    pool = SynthesisPool(2)
    pool.warm_up()
    yield pool
    pool.shutdown()


@pytest.fixture(scope="session")
def param_cache() -> Path:
    path = Path(tempfile.mkdtemp(prefix="cuzk-params-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@dataclass
class Daemon:
    engine: Engine
    server: RunningServer
    tcp: str
    unix: str
    param_cache: Path
    channels: list

    def stub(self, transport: str = "tcp") -> cuzk_pb2_grpc.ProvingEngineStub:
        ch = aio_channel(self.tcp if transport == "tcp" else self.unix)
        self.channels.append(ch)
        return cuzk_pb2_grpc.ProvingEngineStub(ch)

    def channel(self, transport: str = "tcp") -> grpc.aio.Channel:
        ch = aio_channel(self.tcp if transport == "tcp" else self.unix)
        self.channels.append(ch)
        return ch


@pytest.fixture
async def make_daemon(synth_pool, param_cache) -> AsyncIterator[Callable]:
    """``await make_daemon(backends=[...], providers=..., synthesis_pool=..., **config sections)`` -> Daemon
    (the session's pool of two one-process workers unless another is given)."""
    made: list[Daemon] = []
    sockdir = Path(tempfile.mkdtemp(prefix="cuzk-sock-"))

    async def make(backends=None, providers: ProviderRegistry | None = None, status_listen: str = "",
                   synthesis_pool: SynthesisPool | None = None, **sections) -> Daemon:
        config = daemon_config(param_cache, **sections)
        # This package's providers only: installed plug-ins must not change what this suite checks.
        providers = providers or ProviderRegistry(builtin_providers(), load_plugins=False)
        engine = Engine(config, backends=backends or [CpuBackend()], providers=providers, synthesis_pool=synthesis_pool or synth_pool)
        await engine.start()
        unix = f"unix://{sockdir}/d{len(made)}.sock"
        server = await start_server(engine, ["127.0.0.1:0", unix], status_listen)
        daemon = Daemon(engine, server, server.addresses[0], server.addresses[1], param_cache, [])
        made.append(daemon)
        return daemon

    yield make
    for d in made:
        for ch in d.channels:
            await ch.close()
        await d.server.stop(0.5)
        await d.engine.stop()
    shutil.rmtree(sockdir, ignore_errors=True)


@pytest.fixture
def fil_dir(tmp_path, monkeypatch) -> Path:
    """An empty $FIL_PROOFS_PARAMETER_CACHE (no Filecoin file is found) and fresh check verdicts."""
    fil = tmp_path / "filecoin-proof-parameters"
    fil.mkdir()
    monkeypatch.setenv(param_files.FIL_CACHE_ENV, str(fil))
    monkeypatch.setattr(param_files, "VERDICTS", param_files.VerdictCache())
    return fil
