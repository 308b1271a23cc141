"""The `cuzk-daemon` process: starts from a TOML file, serves, stops cleanly on SIGTERM;
refuses a bad config naming the key."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
from daemon_helpers import synthetic_request, verify_synthetic
from grpc_health.v1 import health_pb2, health_pb2_grpc

from cuzk_plugin.server.client import aio_channel
from cuzk_plugin.server.proto import cuzk_pb2 as pb
from cuzk_plugin.server.proto import cuzk_pb2_grpc


def _daemon(config: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cuzk_plugin.cli.daemon", "-c", str(config), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


async def _wait_serving(address: str, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    async with aio_channel(address) as ch:
        health = health_pb2_grpc.HealthStub(ch)
        while True:
            assert proc.poll() is None, proc.stdout.read()
            try:
                r = await health.Check(health_pb2.HealthCheckRequest(service="cuzk.v1.ProvingEngine"), timeout=1)
                if r.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            assert time.monotonic() < deadline, "daemon did not start"
            await asyncio.sleep(0.2)


async def test_daemon_process_serves_and_stops(param_cache):
    tmp = Path(tempfile.mkdtemp(prefix="cuzk-cli-"))
    sock = tmp / "cuzk.sock"
    config = tmp / "cuzk.toml"
    config.write_text(f'[daemon]\nlisten = "unix://{sock}"\nstatus_listen = ""\n[srs]\nparam_cache = "{param_cache}"\n'
                      f'state_dir = "{tmp / "state"}"\n'
                      '[gpus]\nbackend = "cpu"\n[synthesis]\nthreads = 1\n[memory]\npinned_budget = "1GiB"\n')
    proc = _daemon(config, "--log-level", "info")
    try:
        await _wait_serving(f"unix://{sock}", proc)
        async with aio_channel(f"unix://{sock}") as ch:
            stub = cuzk_pb2_grpc.ProvingEngineStub(ch)
            res = (await stub.Prove(pb.ProveRequest(submit=synthetic_request("cli-1", log2=4, seed=8)))).result
            assert res.status == pb.AwaitProofResponse.COMPLETED and verify_synthetic(param_cache, 4, 8, res.proof)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        log = proc.stdout.read()
        assert "pinned_budget is deprecated" in log and "serving on unix://" in log and "stopped" in log
        assert f"config: {config} (-c)" in log  # which file it read
        assert f"parameter file checks are remembered in {tmp / 'state' / 'param-checks.json'}" in log
        assert not sock.exists()  # the socket is removed on a clean stop
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_bad_config_stops_startup(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("[gpus]\nbackend = 'cpu'\nworkers = 2\n")
    proc = _daemon(config)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "[gpus] workers: unknown key" in out


def test_listen_flag_overrides_the_file(tmp_path, param_cache):
    """-l wins over [daemon] listen: start on a TCP port given on the command line."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "c.toml"
    config.write_text(f'[daemon]\nlisten = "unix:///nonexistent-dir-{os.getpid()}/x.sock"\nstatus_listen = ""\n'
                      f'[srs]\nparam_cache = "{param_cache}"\n[gpus]\nbackend = "cpu"\n[synthesis]\nthreads = 1\n')
    proc = _daemon(config, "-l", f"127.0.0.1:{port}")
    try:
        asyncio.run(_wait_serving(f"127.0.0.1:{port}", proc))
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0


def test_the_installed_package_prints_its_example_config_and_unit(capsys, tmp_path):
    """The example config and the systemd unit ship inside the package: the printed config is the
    file in examples/ and loads as a valid configuration."""
    from pathlib import Path

    from cuzk_plugin.cli.daemon import main
    from cuzk_plugin.config import load_config

    assert main(["--print-example-config"]) == 0
    text = capsys.readouterr().out
    assert text == (Path(__file__).resolve().parents[2] / "examples" / "cuzk.example.toml").read_text()
    (tmp_path / "cuzk.toml").write_text(text)
    load_config(str(tmp_path / "cuzk.toml"))
    assert main(["--print-systemd-unit"]) == 0
    assert "ExecStart=" in capsys.readouterr().out


def test_cuzk_with_config_and_no_subcommand_is_the_daemon(tmp_path, capsys):
    """Curio's docs run ``cuzk --config /data/zk/cuzk.toml``: the config is read by the daemon."""
    from cuzk_plugin.cli.main import main as cuzk_main

    bad = tmp_path / "cuzk.toml"
    bad.write_text('[memory]\ntotal_budget = "1e999"\n')
    for flags in (["--config", str(bad)], ["-c", str(bad), "--log-level", "warn"]):
        assert cuzk_main(flags) == 2
        assert "cuzk-daemon: config" in capsys.readouterr().err  # the daemon's config check answered


def test_without_c_the_default_path_is_read_when_it_exists(tmp_path, capsys):
    from cuzk_plugin.cli.daemon import config_path

    default = tmp_path / "cuzk.toml"
    path, which = config_path(None, default)
    assert path is None and f"{default} does not exist" in which
    default.write_text('[memory]\ntotal_budget = "1e999"\n')
    path, which = config_path(None, default)
    assert path == default and f"config: {default}" in which
    from cuzk_plugin.cli.daemon import main

    assert main([], default_config=default) == 2  # read: its bad value stops start-up, naming the file
    err = capsys.readouterr().err
    assert str(default) in err and "[memory] total_budget" in err
