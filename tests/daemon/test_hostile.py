"""Issue 15, section 2: each finding as the request sequence that reproduced it, with the fixed
behaviour asserted (hijack, key generation, ids that broke status, path traversal, memory,
queue and priority bounds, cancel, log injection, second start, orphaned workers, health)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
import pytest
from daemon_helpers import SlowBackend, slow_synthesis_registry, synthetic_request, verify_synthetic
from grpc_health.v1 import health_pb2, health_pb2_grpc

from cuzk_plugin.engine.workers import ChildFailed, reclaim_stale_blocks, run_killable
from cuzk_plugin.server.app import Security, socket_answers, start_server
from cuzk_plugin.server.client import aio_channel
from cuzk_plugin.server.proto import cuzk_pb2 as pb
from cuzk_plugin.server.proto import cuzk_pb2_grpc


async def _refused(call, code: grpc.StatusCode) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    assert err.value.code() == code, err.value.details()
    return err.value.details()


# -- request-id hijack ---------------------------------------------------------------------------
async def test_repeated_id_attaches_only_to_the_same_request(make_daemon):
    d = await make_daemon(providers=slow_synthesis_registry(0.5))
    stub = d.stub()
    rid = "winpost-1000-0102030405060708"
    first = await stub.SubmitProof(synthetic_request(rid, log2=4, seed=21))
    again = await stub.SubmitProof(synthetic_request(rid, log2=4, seed=21, priority=pb.HIGH))  # a retry: attaches
    assert again.job_id == first.job_id == rid
    other_inputs = await _refused(stub.SubmitProof(synthetic_request(rid, log2=4, seed=22)), grpc.StatusCode.ALREADY_EXISTS)
    assert rid in other_inputs and "request_id" in other_inputs
    other_kind = pb.SubmitProofRequest(request_id=rid, proof_kind=pb.WINNING_POST, vanilla_proofs=[b"\x01" * 64],
                                       randomness=b"\x07" * 32, miner_id=1000)
    await _refused(stub.Prove(pb.ProveRequest(submit=other_kind)), grpc.StatusCode.ALREADY_EXISTS)
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id=rid, timeout_ms=60_000))
    assert res.status == pb.AwaitProofResponse.COMPLETED and verify_synthetic(d.param_cache, 4, 21, res.proof)


async def test_a_finished_jobs_id_is_not_given_to_another_request(make_daemon):
    """Issue 28 item 12: once a job finished, a different request under its id is refused (the
    first client's AwaitProof must never return a stranger's proof); the same request again
    is a new attempt, as before."""
    d = await make_daemon()
    stub = d.stub()
    rid = "porep-1000-finished"
    first = (await stub.Prove(pb.ProveRequest(submit=synthetic_request(rid, log2=4, seed=31)))).result
    assert first.status == pb.AwaitProofResponse.COMPLETED
    details = await _refused(stub.SubmitProof(synthetic_request(rid, log2=4, seed=32)), grpc.StatusCode.ALREADY_EXISTS)
    assert rid in details and "has finished" in details
    await _refused(stub.Prove(pb.ProveRequest(submit=synthetic_request(rid, log2=4, seed=32))),
                   grpc.StatusCode.ALREADY_EXISTS)
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id=rid, timeout_ms=10_000))
    assert res.proof == first.proof and verify_synthetic(d.param_cache, 4, 31, res.proof)
    again = (await stub.Prove(pb.ProveRequest(submit=synthetic_request(rid, log2=4, seed=31)))).result
    assert again.status == pb.AwaitProofResponse.COMPLETED and verify_synthetic(d.param_cache, 4, 31, again.proof)


# -- key generation: bounded, cancellable, one name a circuit ------------------------------------
async def test_key_generation_is_bounded_by_config(make_daemon, tmp_path):
    d = await make_daemon(srs={"param_cache": str(tmp_path), "max_generated_log2": 5})
    stub = d.stub()
    t0 = time.monotonic()
    res = (await stub.Prove(pb.ProveRequest(submit=synthetic_request("big-key", log2=12)))).result
    assert res.status == pb.AwaitProofResponse.FAILED and "max_generated_log2 = 5" in res.error_message
    details = await _refused(stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-k12")), grpc.StatusCode.NOT_FOUND)
    assert "max_generated_log2" in details
    assert time.monotonic() - t0 < 5 and list(tmp_path.glob("*.params")) == []


def _sleep_and_record(pid_file: str) -> None:  # run in a child process (module level: picklable)
    Path(pid_file).write_text(str(os.getpid()))
    time.sleep(60)


def _fail() -> None:
    raise RuntimeError("setup exploded")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/status").read_text().find("State:\tZ") >= 0


async def test_cancelled_key_generation_kills_its_process(tmp_path):
    from functools import partial

    pid_file = tmp_path / "pid"
    task = asyncio.create_task(run_killable(partial(_sleep_and_record, str(pid_file)), what="test generation"))
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text():
            break
        await asyncio.sleep(0.05)
    pid = int(pid_file.read_text())
    t0 = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _gone(pid) and time.monotonic() - t0 < 2.5
    with pytest.raises(ChildFailed, match="RuntimeError: setup exploded"):
        await run_killable(_fail, what="failing generation")


async def test_stop_while_generating_a_key_takes_seconds(make_daemon, tmp_path):
    d = await make_daemon(srs={"param_cache": str(tmp_path), "max_generated_log2": 20})
    stub = d.stub()
    await stub.SubmitProof(synthetic_request("gen-stop", log2=15))
    await asyncio.sleep(1.0)  # planning done, generation running in its own process
    t0 = time.monotonic()
    await d.engine.stop()
    assert time.monotonic() - t0 < 5
    assert d.engine.job("gen-stop").status.name == "CANCELLED"
    assert not (tmp_path / "synthetic-k15.params").exists()


# -- ids that broke status for good; path traversal -----------------------------------------------
BAD_CIRCUIT_IDS = ["synthetic-k\u0668", "synthetic-k\uff18", "synthetic-k" + "0" * 300 + "4",
                   "porep-x/../../../outside-cache/evil", "..", "", "a\nERROR forged", "x" * 129]


@pytest.mark.parametrize("rpc", ["PreloadSRS", "EvictSRS"])
async def test_bad_circuit_ids_are_refused_before_the_file_system(make_daemon, rpc):
    d = await make_daemon()
    stub = d.stub()
    before = sorted(p.name for p in d.param_cache.iterdir())
    msg = pb.PreloadSrsRequest if rpc == "PreloadSRS" else pb.EvictSrsRequest
    for cid in BAD_CIRCUIT_IDS:
        details = await _refused(getattr(stub, rpc)(msg(circuit_id=cid)), grpc.StatusCode.INVALID_ARGUMENT)
        assert details.startswith("circuit_id:") and "\n" not in details
    if rpc == "PreloadSRS":  # an alias with leading zeros is not a second name of synthetic-k4
        await _refused(stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-k04")), grpc.StatusCode.NOT_FOUND)
    assert sorted(p.name for p in d.param_cache.iterdir()) == before
    # Nothing a request did breaks another RPC.
    await stub.GetStatus(pb.GetStatusRequest())
    await stub.GetMetrics(pb.GetMetricsRequest())
    assert d.engine.health() is None


async def test_key_outside_the_cache_is_refused(make_daemon, tmp_path):
    d = await make_daemon()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.params").write_bytes(b"\0" * 64)
    (outside / "evil.r1cs").write_bytes(b"r1cs")
    link = d.param_cache / "evil-link.params"
    link.symlink_to(outside / "evil.params")
    try:
        details = await _refused(d.stub().PreloadSRS(pb.PreloadSrsRequest(circuit_id="evil-link")), grpc.StatusCode.NOT_FOUND)
        assert "outside the param cache" in details
    finally:
        link.unlink()


# -- memory ---------------------------------------------------------------------------------------
async def test_finished_jobs_drop_their_payload(make_daemon):
    d = await make_daemon()
    stub = d.stub()
    req = synthetic_request("fat-1", log2=4, seed=5)
    req.vanilla_proofs.extend([b"\xab" * (1 << 20)] * 4)  # ignored by the synthetic provider, held while queued
    res = (await stub.Prove(pb.ProveRequest(submit=req))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED
    job = d.engine.job("fat-1")
    assert job.request.payload_bytes == 0 and job.plan is None and job.partitions == 1


async def test_a_large_body_does_not_stall_get_status(make_daemon):
    d = await make_daemon()
    stub = d.stub()
    req = synthetic_request("huge-1", log2=4, seed=6)
    req.vanilla_proof = b"\x5a" * (96 << 20)
    submit = asyncio.ensure_future(stub.SubmitProof(req))
    worst = 0.0
    while not submit.done():
        t0 = time.monotonic()
        await stub.GetStatus(pb.GetStatusRequest(), timeout=5)
        worst = max(worst, time.monotonic() - t0)
        await asyncio.sleep(0.02)
    await submit
    assert worst < 2.5, f"GetStatus took {worst:.2f}s while a 96 MB body was parsed (Curio gives it 5 s)"


# -- queue and priority ------------------------------------------------------------------------------
async def test_max_pending_refuses_with_resource_exhausted(make_daemon):
    d = await make_daemon(providers=slow_synthesis_registry(0.5), scheduler={"max_pending": 2})
    stub = d.stub()
    for i in range(2):
        await stub.SubmitProof(synthetic_request(f"q-{i}", log2=4, seed=i))
    details = await _refused(stub.SubmitProof(synthetic_request("q-2", log2=4)), grpc.StatusCode.RESOURCE_EXHAUSTED)
    assert "max_pending = 2" in details
    await stub.SubmitProof(synthetic_request("q-0", log2=4, seed=0))  # a retry of a queued job still attaches
    for i in range(2):
        await stub.CancelProof(pb.CancelProofRequest(job_id=f"q-{i}"))


async def test_critical_stays_inside_the_lookahead_window(make_daemon):
    """CRITICAL never waits for the window to drain (it has a reserve of one window slot a GPU
    worker), and neither the window nor the reserve is ever overdrawn."""
    d = await make_daemon(backends=[SlowBackend(0.05)], gpus={"gpu_workers_per_device": 1},
                          pipeline={"synthesis_lookahead": 0})
    stub = d.stub()
    normal = asyncio.ensure_future(stub.Prove(pb.ProveRequest(submit=synthetic_request("n-1", log2=4, partitions=3))))
    await asyncio.sleep(0.2)
    critical = asyncio.ensure_future(stub.Prove(pb.ProveRequest(
        submit=synthetic_request("c-1", log2=4, partitions=3, priority=pb.CRITICAL))))
    lowest = lowest_reserve = 1
    while not (normal.done() and critical.done()):
        lowest = min(lowest, d.engine._window._value)
        lowest_reserve = min(lowest_reserve, d.engine._critical_reserve._value)
        await asyncio.sleep(0.005)
    assert lowest >= 0, "a partition was synthesized past the window"
    assert lowest_reserve >= 0, "CRITICAL partitions past the bounded reserve"
    assert lowest_reserve == 0, "CRITICAL waited for the full window instead of taking its reserve"
    results = [(await t).result for t in (normal, critical)]
    assert all(r.status == pb.AwaitProofResponse.COMPLETED for r in results)


# -- cancel ----------------------------------------------------------------------------------------
async def test_cancel_frees_the_gpu_slot_within_a_second(make_daemon):
    backend = SlowBackend(0.4)
    d = await make_daemon(backends=[backend], gpus={"gpu_workers_per_device": 1})
    stub = d.stub()
    await stub.SubmitProof(synthetic_request("cx-1", log2=4, partitions=3))
    while not backend.running.is_set():
        await asyncio.sleep(0.01)
    t0 = time.monotonic()
    assert (await stub.CancelProof(pb.CancelProofRequest(job_id="cx-1"))).was_running
    while len(d.engine.slots.idle) < 1:
        await asyncio.sleep(0.01)
    assert time.monotonic() - t0 <= 1.0
    await asyncio.sleep(0.3)
    assert backend.calls == 1  # no further partition entered the backend after the cancel


# -- log injection ----------------------------------------------------------------------------------
async def test_ids_are_bounded_and_logged_on_one_line(make_daemon, caplog):
    d = await make_daemon()
    stub = d.stub()
    forged = "x\n2026-12-03 08:00:00 ERROR cuzk: forged"
    details = await _refused(stub.SubmitProof(synthetic_request(forged, log2=4)), grpc.StatusCode.INVALID_ARGUMENT)
    assert details.startswith("request_id:")
    details = await _refused(stub.SubmitProof(synthetic_request("y" * 10_000, log2=4)), grpc.StatusCode.INVALID_ARGUMENT)
    assert "request_id: 10000 characters" in details and len(details) < 200
    with caplog.at_level(logging.INFO):
        await _refused(stub.AwaitProof(pb.AwaitProofRequest(job_id=forged)), grpc.StatusCode.NOT_FOUND)
        await _refused(stub.CancelProof(pb.CancelProofRequest(job_id="z" * 1_000)), grpc.StatusCode.NOT_FOUND)
        # A body larger than a cancel can need is refused before it is parsed, naming the message.
        too_big = await _refused(stub.CancelProof(pb.CancelProofRequest(job_id="z" * 100_000)),
                                 grpc.StatusCode.INVALID_ARGUMENT)
        assert too_big.startswith("CancelProofRequest: 100004 bytes")
    for record in caplog.records:
        text = record.getMessage()
        assert "\n" not in text and len(text) < 1000


# -- second start, socket mode, plain TCP, token -----------------------------------------------------
async def test_second_start_is_refused_and_socket_is_0660(make_daemon):
    d = await make_daemon()
    sock = Path(d.unix.removeprefix("unix://"))
    assert sock.stat().st_mode & 0o777 == 0o660
    with pytest.raises(OSError, match="another daemon answers"):
        await start_server(d.engine, d.unix)
    assert socket_answers(sock)
    await d.stub("unix").GetStatus(pb.GetStatusRequest())  # the first daemon is still reachable


async def test_stale_socket_is_replaced_with_mode_0660(make_daemon):
    import socket as so

    d = await make_daemon()
    path = Path(tempfile.mkdtemp(prefix="cuzk-stale-")) / "s.sock"
    with so.socket(so.AF_UNIX) as s:
        s.bind(str(path))  # a socket file nobody listens on: a crashed daemon's
    old = os.umask(0)
    try:
        server = await start_server(d.engine, f"unix://{path}")
    finally:
        os.umask(old)
    try:
        assert path.stat().st_mode & 0o777 == 0o660 and socket_answers(path)
    finally:
        await server.stop(0)


async def test_socket_directories_the_daemon_creates_let_the_group_connect(make_daemon, tmp_path):
    """Issue 28 item 13a: the directories made for a socket were born under the binding umask
    (0117) as 0660, with no search bit: nobody but root could reach the socket. Now 0750."""
    d = await make_daemon()
    top = tmp_path / "run"
    path = top / "curio" / "cuzk.sock"
    server = await start_server(d.engine, f"unix://{path}")
    try:
        assert {p.name: oct(p.stat().st_mode & 0o777) for p in (top, path.parent)} == {"run": "0o750", "curio": "0o750"}
        assert path.stat().st_mode & 0o777 == 0o660 and socket_answers(path)
    finally:
        await server.stop(0)


async def test_plain_tcp_off_loopback_warns_and_token_is_checked(make_daemon, caplog):
    d = await make_daemon()
    with caplog.at_level(logging.WARNING):
        server = await start_server(d.engine, "0.0.0.0:0", security=Security(auth_token="s3cret"))
    try:
        assert "WITHOUT TLS" in caplog.text
        port = server.address.rpartition(":")[2]
        async with aio_channel(f"127.0.0.1:{port}") as ch:
            stub = cuzk_pb2_grpc.ProvingEngineStub(ch)
            await _refused(stub.GetStatus(pb.GetStatusRequest()), grpc.StatusCode.UNAUTHENTICATED)
            await _refused(stub.GetStatus(pb.GetStatusRequest(), metadata=[("authorization", "Bearer nope")]),
                           grpc.StatusCode.UNAUTHENTICATED)
            await stub.GetStatus(pb.GetStatusRequest(), metadata=[("authorization", "Bearer s3cret")])
            health = health_pb2_grpc.HealthStub(ch)  # open without the token (probes)
            assert (await health.Check(health_pb2.HealthCheckRequest())).status == health_pb2.HealthCheckResponse.SERVING
    finally:
        await server.stop(0)


# -- health reflects the engine ------------------------------------------------------------------------
async def test_healthz_and_grpc_health_follow_the_engine(make_daemon, monkeypatch):
    d = await make_daemon(status_listen="127.0.0.1:0")

    async def get(path: str) -> tuple[int, str]:
        reader, writer = await asyncio.open_connection("127.0.0.1", d.server.status_port)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = await reader.read()
        writer.close()
        head, _, body = data.decode().partition("\r\n\r\n")
        return int(head.split(" ")[1]), body

    assert await get("/healthz") == (200, "ok\n")

    def broken():
        raise RuntimeError("key table corrupt")

    monkeypatch.setattr(d.engine, "status", broken)
    code, body = await get("/healthz")
    assert code == 503 and "key table corrupt" in body
    health = health_pb2_grpc.HealthStub(d.channel())
    for _ in range(50):
        r = await health.Check(health_pb2.HealthCheckRequest(service="cuzk.v1.ProvingEngine"))
        if r.status == health_pb2.HealthCheckResponse.NOT_SERVING:
            break
        await asyncio.sleep(0.1)
    assert r.status == health_pb2.HealthCheckResponse.NOT_SERVING


# -- workers die with the daemon; stale blocks reclaimed -----------------------------------------------
_ORPHAN_SCRIPT = """
import os, signal, sys
from cuzk_plugin.engine.synthesis import SynthesisPool
pool = SynthesisPool(2)
pool.warm_up()
print(" ".join(str(p) for p in pool._executor._processes), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_synthesis_workers_die_with_a_killed_daemon():
    proc = subprocess.run([sys.executable, "-c", _ORPHAN_SCRIPT], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    pids = [int(p) for p in proc.stdout.split()]
    assert pids
    deadline = time.monotonic() + 5
    while not all(_gone(p) for p in pids):
        assert time.monotonic() < deadline, f"orphaned workers {pids}"
        time.sleep(0.05)


def test_stale_blocks_of_a_dead_daemon_are_reclaimed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout
    stale = tmp_path / f"cuzk_{int(dead)}_00ff"
    stale.write_bytes(b"\0" * 4096)
    mine = tmp_path / f"cuzk_{os.getpid()}_00ff"
    mine.write_bytes(b"\0")
    other = tmp_path / "psm_1234"
    other.write_bytes(b"\0")
    assert reclaim_stale_blocks(tmp_path) == [(stale.name, 4096)]
    assert not stale.exists() and mine.exists() and other.exists()


# -- per-job timings ------------------------------------------------------------------------------------
async def test_stage_times_are_wall_clock_spans_with_sums_apart(make_daemon, capsys):
    d = await make_daemon(backends=[SlowBackend(0.2)], gpus={"gpu_workers_per_device": 2})
    d.engine.timing_lines = True
    res = (await d.stub().Prove(pb.ProveRequest(submit=synthetic_request("t-1", log2=4, partitions=4, seed=2)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED
    # Spans are wall-clock (the synthesis span includes the hand-over from the worker process).
    assert 0 < res.synthesis_ms <= res.total_ms and 0 < res.gpu_compute_ms <= res.total_ms
    assert res.gpu_compute_sum_ms >= 4 * 200 and res.gpu_compute_ms < res.gpu_compute_sum_ms  # two slots in parallel
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("CUZK_TIMING: job=t-1")]
    assert len(lines) == 5 and "gpu_total_ms=" in lines[0] and "total_ms=" in lines[-1]


class TimedBackend(SlowBackend):
    """A backend whose calls keep their own stage times, as the CUDA library's do."""

    def prove_start(self, srs, part):
        pending = super().prove_start(srs, part)
        return TimedPending(pending)

    def prove_finish(self, pending):
        out = super().prove_finish(pending.inner)
        pending.timings_ms = {"upload": 12.0, "total": 34.0}
        return out


@dataclasses.dataclass
class TimedPending:
    inner: object
    timings_ms: dict | None = None


async def test_timing_lines_carry_the_backends_stage_times(make_daemon, capsys):
    d = await make_daemon(backends=[TimedBackend(0.0)])
    d.engine.timing_lines = True
    res = (await d.stub().Prove(pb.ProveRequest(submit=synthetic_request("t-2", log2=4, seed=3)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED
    (line,) = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("CUZK_TIMING: job=t-2 partition=0")]
    assert line.endswith("device_upload_ms=12 device_total_ms=34")


@pytest.mark.slow
async def test_sigterm_during_key_generation_stops_in_seconds(tmp_path, param_cache):
    """The finding: a 30-byte request made the daemon generate a 2^20 key; SIGTERM then took
    5 min 43 s. Now: the generation is bounded, and a stop kills it and leaves no process."""
    from test_daemon_cli import _daemon, _wait_serving

    sock = tmp_path / "d.sock"
    config = tmp_path / "c.toml"
    config.write_text(f'[daemon]\nlisten = "unix://{sock}"\nstatus_listen = ""\n[srs]\nparam_cache = "{tmp_path}"\n'
                      'max_generated_log2 = 20\n[gpus]\nbackend = "cpu"\n[synthesis]\nthreads = 1\n')
    proc = _daemon(config)
    try:
        await _wait_serving(f"unix://{sock}", proc, timeout=90)  # start-up is slow on a loaded 2-core machine
        async with aio_channel(f"unix://{sock}") as ch:
            await cuzk_pb2_grpc.ProvingEngineStub(ch).SubmitProof(synthetic_request("gen-1", log2=18))
        deadline = time.monotonic() + 30
        while not (workers := [p for p, cmd in _children(proc.pid).items() if "resource_tracker" not in cmd]):
            assert time.monotonic() < deadline, "the key generation process never started"
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # it runs
        children = _children(proc.pid)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        took = time.monotonic() - t0
        # The daemon killed and reaped its workers before it exited.
        assert all(_gone(p) for p in workers), [children[p] for p in workers if not _gone(p)]
        # multiprocessing's resource tracker ends by itself once it reads EOF from the exited
        # daemon (asynchronously: it may still be running at this instant, which made this test flaky).
        deadline = time.monotonic() + 5
        while not all(_gone(p) for p in children) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert took < 10, f"stop took {took:.1f}s"
    assert all(_gone(p) for p in children), [children[p] for p in children if not _gone(p)]
    assert not (tmp_path / "synthetic-k18.params").exists()


def _children(pid: int) -> dict[int, str]:
    """Every child of ``pid`` (those of each of its threads: the key generation process is
    started from a worker thread) -> its command line."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            kids = (task / "children").read_text().split()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        for kid in map(int, kids):
            try:
                out[kid] = Path(f"/proc/{kid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except FileNotFoundError:
                continue
    return out


def test_daemon_log_records_stay_one_line():
    import json

    from cuzk_plugin.cli.logs import JsonFormatter, SafeFormatter

    record = logging.LogRecord("cuzk", logging.INFO, __file__, 1, "job %s: queued", ("x\n2026 ERROR forged\r",), None)
    line = SafeFormatter("%(levelname)s %(message)s").format(record)
    assert "\n" not in line and "\r" not in line and "x\\n2026 ERROR forged\\r" in line
    assert json.loads(JsonFormatter().format(record))["msg"] == "job x\n2026 ERROR forged\r: queued"


async def test_tls_listener_serves_tls_clients_only(make_daemon, tmp_path):
    import shutil

    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    key, cert = tmp_path / "k.pem", tmp_path / "c.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
                   check=True, capture_output=True)
    d = await make_daemon()
    server = await start_server(d.engine, "127.0.0.1:0", security=Security(str(cert), str(key)))
    port = server.address.rpartition(":")[2]
    try:
        creds = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        async with grpc.aio.secure_channel(f"localhost:{port}", creds) as ch:
            await cuzk_pb2_grpc.ProvingEngineStub(ch).GetStatus(pb.GetStatusRequest(), timeout=10)
        async with aio_channel(f"127.0.0.1:{port}") as ch:  # plain text is not served
            await _refused(cuzk_pb2_grpc.ProvingEngineStub(ch).GetStatus(pb.GetStatusRequest(), timeout=3),
                           grpc.StatusCode.UNAVAILABLE)
    finally:
        await server.stop(0)
