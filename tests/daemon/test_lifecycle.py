"""Cancellation (mid-synthesis, mid-GPU), AwaitProof timeouts, client disconnects and
deadlines, repeated request ids."""

from __future__ import annotations

import asyncio
import os
import time

import grpc
from daemon_helpers import SlowBackend, slow_synthesis_registry, synthetic_request, verify_synthetic

from cuzk_plugin.engine.types import JobStatus
from cuzk_plugin.server.proto import cuzk_pb2 as pb


async def _until(predicate, timeout: float = 10.0, step: float = 0.01) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(step)


def _shm_blocks() -> set[str]:
    return {n for n in os.listdir("/dev/shm") if n.startswith("psm_")}


async def test_cancel_mid_synthesis(make_daemon):
    backend = SlowBackend(0.0)
    d = await make_daemon(backends=[backend], providers=slow_synthesis_registry(1.5))
    before = _shm_blocks()
    stub = d.stub()
    await stub.SubmitProof(synthetic_request("syn-cancel", log2=4, partitions=4))
    job = d.engine.job("syn-cancel")
    await _until(lambda: job.status == JobStatus.RUNNING)  # partitions are inside the workers
    t0 = time.monotonic()
    assert (await stub.CancelProof(pb.CancelProofRequest(job_id="syn-cancel"))).was_running
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id="syn-cancel"))
    assert res.status == pb.AwaitProofResponse.CANCELLED
    assert time.monotonic() - t0 < 1.0  # did not wait for the 1.5 s synthesis
    assert not any(e.stage.startswith("gpu") for e in res.timeline)
    assert backend.calls == 0  # nothing reached the backend
    await asyncio.sleep(1.8)  # the workers finish; their late results are discarded and unlinked
    assert _shm_blocks() <= before
    # The daemon keeps serving (the slow provider still applies: one partition, 1.5 s).
    ok = (await stub.Prove(pb.ProveRequest(submit=synthetic_request("after", log2=4)))).result
    assert ok.status == pb.AwaitProofResponse.COMPLETED and backend.calls == 1


async def test_cancel_mid_gpu_frees_the_slot(make_daemon):
    backend = SlowBackend(1.0)
    d = await make_daemon(backends=[backend], gpus={"gpu_workers_per_device": 1})
    stub = d.stub()
    await stub.SubmitProof(synthetic_request("gpu-cancel", log2=4, partitions=3))
    await asyncio.get_running_loop().run_in_executor(None, backend.running.wait, 10)
    assert d.engine.status().gpus[0].current_job_id == "gpu-cancel"
    t0 = time.monotonic()
    assert (await stub.CancelProof(pb.CancelProofRequest(job_id="gpu-cancel"))).was_running
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id="gpu-cancel"))
    assert res.status == pb.AwaitProofResponse.CANCELLED and time.monotonic() - t0 < 0.9
    # The in-flight backend call ends on its own; then the slot is free and no more partitions run.
    await _until(lambda: d.engine.status().gpus[0].current_job_id == "")
    assert backend.calls == 1
    backend.delay = 0.0
    ok = (await stub.Prove(pb.ProveRequest(submit=synthetic_request("next", log2=4)))).result
    assert ok.status == pb.AwaitProofResponse.COMPLETED and backend.calls == 2


async def test_await_timeout_then_completion(make_daemon):
    d = await make_daemon(backends=[SlowBackend(0.6)])
    stub = d.stub()
    await stub.SubmitProof(synthetic_request("slow", log2=4, seed=5))
    t0 = time.monotonic()
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id="slow", timeout_ms=100))
    waited = time.monotonic() - t0
    assert res.status == pb.AwaitProofResponse.TIMEOUT and 0.09 <= waited < 1.0
    assert res.proof == b"" and "100 ms" in res.error_message
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id="slow", timeout_ms=20_000))
    assert res.status == pb.AwaitProofResponse.COMPLETED  # the job kept running
    assert verify_synthetic(d.param_cache, 4, 5, res.proof)


async def test_client_disconnect_cancels_the_job(make_daemon):
    backend = SlowBackend(0.5)
    d = await make_daemon(backends=[backend], gpus={"gpu_workers_per_device": 1})
    stub = d.stub()
    call = stub.Prove(pb.ProveRequest(submit=synthetic_request("gone", log2=4, partitions=6)))
    await _until(lambda: "gone" in d.engine.jobs and d.engine.job("gone").status == JobStatus.RUNNING)
    call.cancel()
    await _until(lambda: d.engine.job("gone").status == JobStatus.CANCELLED, timeout=2)
    await _until(lambda: d.engine.status().gpus[0].current_job_id == "")
    assert backend.calls < 6


async def test_deadline_cancels_the_job(make_daemon):
    d = await make_daemon(backends=[SlowBackend(0.5)], gpus={"gpu_workers_per_device": 1})
    stub = d.stub()
    try:
        await stub.Prove(pb.ProveRequest(submit=synthetic_request("late", log2=4, partitions=6)), timeout=0.4)
        raise AssertionError("the deadline should have passed")
    except grpc.aio.AioRpcError as err:
        assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    await _until(lambda: d.engine.job("late").status == JobStatus.CANCELLED, timeout=2)


async def test_submitted_job_survives_a_dropped_awaiter(make_daemon):
    """SubmitProof jobs belong to nobody's call: a cancelled AwaitProof leaves them running."""
    d = await make_daemon(backends=[SlowBackend(0.3)])
    stub = d.stub()
    await stub.SubmitProof(synthetic_request("kept", log2=4))
    call = stub.AwaitProof(pb.AwaitProofRequest(job_id="kept"))
    await asyncio.sleep(0.1)
    call.cancel()
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id="kept", timeout_ms=20_000))
    assert res.status == pb.AwaitProofResponse.COMPLETED


async def test_repeated_request_id_attaches(make_daemon):
    backend = SlowBackend(0.3)
    d = await make_daemon(backends=[backend])
    stub = d.stub()
    req = synthetic_request("porep-1000-7", log2=4, partitions=2, seed=9)
    first = asyncio.ensure_future(stub.Prove(pb.ProveRequest(submit=req)))
    await _until(lambda: "porep-1000-7" in d.engine.jobs)
    second = asyncio.ensure_future(stub.Prove(pb.ProveRequest(submit=req)))
    sub = await stub.SubmitProof(req)
    assert sub.job_id == "porep-1000-7"
    a, b = (await first).result, (await second).result
    assert a.status == b.status == pb.AwaitProofResponse.COMPLETED
    assert a.proof == b.proof  # one job, one set of proofs
    assert backend.calls == 2  # two partitions, proved once
    assert d.engine.status().completed == 1
    # Once finished, the same id starts a new attempt (Curio's retry after a failure).
    c = (await stub.Prove(pb.ProveRequest(submit=req))).result
    assert c.status == pb.AwaitProofResponse.COMPLETED and c.proof != a.proof and backend.calls == 4
