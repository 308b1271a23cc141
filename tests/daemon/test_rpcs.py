"""Every RPC of cuzk.v1, over loopback TCP and over a Unix socket, with real results."""

from __future__ import annotations

import asyncio
import json

import grpc
import pytest
from daemon_helpers import synthetic_request, verify_synthetic
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from cuzk_plugin.server.proto import cuzk_pb2 as pb

pytestmark = pytest.mark.parametrize("transport", ["tcp", "unix"])


async def test_submit_then_await(make_daemon, transport):
    d = await make_daemon()
    stub = d.stub(transport)
    sub = await stub.SubmitProof(synthetic_request(f"sub-{transport}", log2=5, partitions=3, seed=7))
    assert sub.job_id == f"sub-{transport}"
    assert sub.assigned_gpu.startswith("cpu:")
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id=sub.job_id, timeout_ms=60_000))
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert res.job_id == sub.job_id and len(res.proof) == 3 * 192 and res.partitions == 3
    assert res.circuit_id == "synthetic-k5"
    assert verify_synthetic(d.param_cache, 5, 7, res.proof)
    assert res.total_ms >= res.queue_wait_ms
    stages = {e.stage for e in res.timeline}
    assert {"queue", "srs", "synthesis", "gpu_start", "gpu_finish", "verify"} <= stages
    assert sorted({e.partition for e in res.timeline if e.stage == "gpu_finish"}) == [0, 1, 2]
    # A finished job can be awaited again; an unknown one is NOT_FOUND.
    again = await stub.AwaitProof(pb.AwaitProofRequest(job_id=sub.job_id))
    assert again.proof == res.proof
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.AwaitProof(pb.AwaitProofRequest(job_id="never-submitted"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


async def test_prove_and_empty_request_id(make_daemon, transport):
    d = await make_daemon()
    stub = d.stub(transport)
    out = await stub.Prove(pb.ProveRequest(submit=synthetic_request("", log2=4, partitions=2, seed=3)))
    res = out.result
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert len(res.job_id) == 36  # a UUID was assigned
    assert verify_synthetic(d.param_cache, 4, 3, res.proof)
    assert res.synthesis_ms >= 0 and res.gpu_compute_ms > 0 and res.total_ms > 0


async def test_cancel(make_daemon, transport):
    d = await make_daemon()
    stub = d.stub(transport)
    done = await stub.Prove(pb.ProveRequest(submit=synthetic_request("c-done")))
    assert done.result.status == pb.AwaitProofResponse.COMPLETED
    assert (await stub.CancelProof(pb.CancelProofRequest(job_id="c-done"))).was_running is False
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.CancelProof(pb.CancelProofRequest(job_id="nope"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    await stub.SubmitProof(synthetic_request("c-run", log2=6, partitions=16))
    assert (await stub.CancelProof(pb.CancelProofRequest(job_id="c-run"))).was_running is True
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id="c-run"))
    assert res.status == pb.AwaitProofResponse.CANCELLED and res.proof == b""


async def test_status_metrics_health(make_daemon, transport):
    d = await make_daemon(status_listen="127.0.0.1:0")
    stub = d.stub(transport)
    await stub.Prove(pb.ProveRequest(submit=synthetic_request("s1", log2=4)))
    st = await stub.GetStatus(pb.GetStatusRequest())
    assert st.total_proofs_completed == 1 and st.total_proofs_failed == 0
    assert [g.ordinal for g in st.gpus] == [0] and st.gpus[0].vram_total_bytes > 0
    assert st.gpus[0].name.startswith("cpu:0")
    srs = {s.circuit_id: s for s in st.loaded_srs}
    assert srs["synthetic-k4"].tier == pb.SRSStatus.HOT and srs["synthetic-k4"].size_bytes > 0
    assert srs["synthetic-k4"].ref_count == 0
    assert st.pinned_memory_bytes > 0 and st.pinned_memory_limit_bytes == 4 << 30
    assert "cpu" in st.backend
    metrics = (await stub.GetMetrics(pb.GetMetricsRequest())).prometheus_text
    families = {f.name: f for f in text_string_to_metric_families(metrics)}
    jobs = {tuple(s.labels.values()): s.value for s in families["cuzk_jobs"].samples if s.name == "cuzk_jobs_total"}
    assert jobs[("synthetic", "completed")] == 1.0
    assert "cuzk_stage_seconds" in families and "cuzk_srs_bytes" in families
    health = health_pb2_grpc.HealthStub(d.channel(transport))
    for service in ("", "cuzk.v1.ProvingEngine"):
        h = await health.Check(health_pb2.HealthCheckRequest(service=service))
        assert h.status == health_pb2.HealthCheckResponse.SERVING
    reader, writer = await asyncio.open_connection("127.0.0.1", d.server.status_port)
    writer.write(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
    raw = await reader.read()
    writer.close()
    head, body = raw.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200") and b"application/json" in head
    page = json.loads(body)
    assert page["total_proofs_completed"] == 1 and page["loaded_srs"][0]["tier"] == "HOT"


async def test_preload_and_evict(make_daemon, transport):
    d = await make_daemon()
    stub = d.stub(transport)
    first = await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-k5"))
    assert first.already_loaded is False
    second = await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-k5"))
    assert second.already_loaded is True
    st = await stub.GetStatus(pb.GetStatusRequest())
    assert any(s.circuit_id == "synthetic-k5" and s.tier == pb.SRSStatus.HOT for s in st.loaded_srs)
    used = st.pinned_memory_bytes
    ev = await stub.EvictSRS(pb.EvictSrsRequest(circuit_id="synthetic-k5"))
    assert ev.was_loaded is True and ev.freed_bytes > 0
    st = await stub.GetStatus(pb.GetStatusRequest())
    assert all(s.tier == pb.SRSStatus.COLD for s in st.loaded_srs if s.circuit_id == "synthetic-k5")
    assert st.pinned_memory_bytes == used - ev.freed_bytes
    again = await stub.EvictSRS(pb.EvictSrsRequest(circuit_id="synthetic-k5"))
    assert again.was_loaded is False and again.freed_bytes == 0
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="porep-32g"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND and "porep-32g" in err.value.details()
    # Proving after an eviction loads the key again.
    res = (await stub.Prove(pb.ProveRequest(submit=synthetic_request("after-evict", log2=5)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED
