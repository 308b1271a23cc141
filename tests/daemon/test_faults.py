"""Injected backend faults: transient (retried), permanent (FAILED), wrong proofs (caught by
self-verification), and a lane that keeps failing (moved to another backend)."""

from __future__ import annotations

from daemon_helpers import (
    BrokenBackend,
    CountingBackend,
    FlakyBackend,
    TightMemoryBackend,
    WrongProofBackend,
    synthetic_request,
    verify_synthetic,
)
from prometheus_client.parser import text_string_to_metric_families

from cuzk_plugin.server.proto import cuzk_pb2 as pb


def _metric(text: str, name: str, **labels) -> float:
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    return 0.0


async def test_transient_fault_is_retried(make_daemon):
    backend = FlakyBackend(failures=2)
    d = await make_daemon(backends=[backend], gpus={"retry_attempts": 3, "gpu_workers_per_device": 1})
    res = (await d.stub().Prove(pb.ProveRequest(submit=synthetic_request("flaky", log2=4, seed=1)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert verify_synthetic(d.param_cache, 4, 1, res.proof)
    assert backend.calls == 3
    assert max(e.attempt for e in res.timeline if e.stage == "gpu_finish") == 3
    assert _metric(d.engine.metrics_text(), "cuzk_backend_retries_total", lane="flaky:0") == 2.0


async def test_transient_faults_exhausted_then_failed(make_daemon):
    backend = FlakyBackend(failures=100)
    d = await make_daemon(backends=[backend], gpus={"retry_attempts": 2})
    res = (await d.stub().Prove(pb.ProveRequest(submit=synthetic_request("always-flaky", log2=4)))).result
    assert res.status == pb.AwaitProofResponse.FAILED and res.proof == b""
    assert "flaky:0" in res.error_message and "TransientBackendError" in res.error_message
    assert backend.calls == 2


async def test_permanent_fault_fails_with_the_cause(make_daemon):
    d = await make_daemon(backends=[BrokenBackend("injected: device lost")])
    stub = d.stub()
    res = (await stub.Prove(pb.ProveRequest(submit=synthetic_request("broken", log2=4, partitions=2)))).result
    assert res.status == pb.AwaitProofResponse.FAILED and res.proof == b""
    assert "injected: device lost" in res.error_message
    st = await stub.GetStatus(pb.GetStatusRequest())
    assert st.total_proofs_failed == 1 and st.total_proofs_completed == 0


async def test_wrong_proof_is_never_completed(make_daemon):
    liar = WrongProofBackend()
    d = await make_daemon(backends=[liar])
    stub = d.stub()
    res = (await stub.Prove(pb.ProveRequest(submit=synthetic_request("liar", log2=4, partitions=2)))).result
    assert res.status == pb.AwaitProofResponse.FAILED and res.proof == b""
    assert "self-verification failed" in res.error_message and "liar:0" in res.error_message
    assert liar.calls == 2
    assert _metric(d.engine.metrics_text(), "cuzk_self_verification_failures_total") == 1.0


async def test_failing_lane_moves_to_the_fallback_backend(make_daemon):
    bad, good = FlakyBackend(failures=10**6, name="gpu"), CountingBackend("cpu")
    d = await make_daemon(backends=[bad, good], gpus={"retry_attempts": 2})
    res = (await d.stub().Prove(pb.ProveRequest(submit=synthetic_request("failover", log2=4, partitions=2, seed=4)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert verify_synthetic(d.param_cache, 4, 4, res.proof)
    lanes = {e.lane.split("/")[0] for e in res.timeline if e.stage == "gpu_finish"}
    assert lanes == {"cpu:0"}
    assert _metric(d.engine.metrics_text(), "cuzk_lane_failovers_total", from_lane="gpu:0") >= 1.0


async def test_out_of_device_memory_beside_others_waits_and_runs_alone(make_daemon):
    # two workers on a device with room for one partition: a partition that runs out of memory
    # beside another is proved again alone on the lane instead of failing the job
    tight = TightMemoryBackend()
    d = await make_daemon(backends=[tight], gpus={"gpu_workers_per_device": 2, "retry_attempts": 1})
    res = (await d.stub().Prove(pb.ProveRequest(submit=synthetic_request("tight", log2=4, partitions=4, seed=6)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert verify_synthetic(d.param_cache, 4, 6, res.proof)
    assert tight.out_of_memory >= 1 and tight.most_in_flight == 1
    assert _metric(d.engine.metrics_text(), "cuzk_backend_retries_total", lane="tight:0") == tight.out_of_memory
    assert all(not s.busy_job for s in d.engine.slots.slots) and len(d.engine.slots.idle) == 2
