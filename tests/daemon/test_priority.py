"""A CRITICAL (WinningPoSt-priority) job overtakes a queue of long NORMAL jobs."""

from __future__ import annotations

import asyncio

from daemon_helpers import SlowBackend, synthetic_request, verify_synthetic

from cuzk_plugin.server.proto import cuzk_pb2 as pb

GPU_S = 0.25


async def test_critical_job_overtakes_queued_partitions(make_daemon):
    d = await make_daemon(backends=[SlowBackend(GPU_S)], gpus={"gpu_workers_per_device": 1})
    stub = d.stub()
    long_ids = [f"porep-{i}" for i in range(4)]
    for i, job_id in enumerate(long_ids):  # 4 jobs x 4 partitions: ~4 s of GPU work queued
        await stub.SubmitProof(synthetic_request(job_id, log2=4, partitions=4, seed=100 * i, priority=pb.NORMAL))
    await asyncio.sleep(GPU_S)  # the first partition is on the device
    critical = await stub.SubmitProof(synthetic_request("winpost-critical", log2=4, seed=42, priority=pb.CRITICAL))
    assert critical.queue_position == 0  # nothing queued at its priority
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id="winpost-critical", timeout_ms=30_000))
    assert res.status == pb.AwaitProofResponse.COMPLETED
    assert verify_synthetic(d.param_cache, 4, 42, res.proof)
    # It waited at most for the partitions already on the device / synthesized ahead, never the queue.
    assert res.total_ms < 4 * GPU_S * 1000, res.total_ms
    finished_before = [j for j in long_ids if d.engine.job(j).status.finished]
    assert finished_before == [], f"long jobs finished before the critical one: {finished_before}"
    results = [await stub.AwaitProof(pb.AwaitProofRequest(job_id=j, timeout_ms=60_000)) for j in long_ids]
    assert all(r.status == pb.AwaitProofResponse.COMPLETED for r in results)
    crit_gpu = min(e.start_ms for e in res.timeline if e.stage == "gpu_start")
    crit_abs = d.engine.job("winpost-critical").submitted * 1000 + crit_gpu
    later = [d.engine.job(j).submitted * 1000 + e.start_ms for j, r in zip(long_ids, results, strict=False)
             for e in r.timeline if e.stage == "gpu_start"]
    overtaken = sum(1 for t in later if t > crit_abs)
    assert overtaken >= 12, f"only {overtaken} of 16 long partitions ran after the critical one"


async def test_default_priorities_follow_the_kind():
    from cuzk_plugin.engine.types import Priority, ProofKind, ProofRequest

    def eff(kind):
        return ProofRequest("x", kind).effective_priority

    assert eff(ProofKind.WINNING_POST) == Priority.CRITICAL
    assert eff(ProofKind.WINDOW_POST_PARTITION) == Priority.HIGH
    assert eff(ProofKind.POREP_SEAL_COMMIT) == Priority.NORMAL == eff(ProofKind.SNAP_DEALS_UPDATE)
    assert ProofRequest("x", ProofKind.POREP_SEAL_COMMIT, priority=Priority.LOW).effective_priority == Priority.LOW


async def test_critical_planning_never_waits_behind_slow_plans(make_daemon):
    """Planning (a PoRep C1 parse, a 2,349-sector WindowPoSt decode) takes seconds on the shared
    host threads; a CRITICAL job is planned on its own thread and finishes while they still run."""
    import threading

    from cuzk_plugin.adapters.synthetic import SyntheticProvider
    from cuzk_plugin.engine.circuits import ProviderRegistry
    from cuzk_plugin.engine.types import Priority

    release = threading.Event()

    class SlowPlans(SyntheticProvider):
        def plan(self, request, param_cache):
            if request.effective_priority < Priority.CRITICAL:
                release.wait(20)
            return super().plan(request, param_cache)

    d = await make_daemon(providers=ProviderRegistry([SlowPlans()], load_plugins=False))
    stub = d.stub()
    await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-k4"))  # WinningPoSt's key stays resident
    slow = [asyncio.ensure_future(stub.SubmitProof(synthetic_request(f"slow-{i}", log2=4, seed=i))) for i in range(6)]
    await asyncio.sleep(0.3)  # every shared host thread is busy planning
    try:
        res = (await asyncio.wait_for(stub.Prove(pb.ProveRequest(
            submit=synthetic_request("winpost-now", log2=4, seed=7, priority=pb.CRITICAL))), 15)).result
        assert res.status == pb.AwaitProofResponse.COMPLETED and verify_synthetic(d.param_cache, 4, 7, res.proof)
        assert not any(t.done() for t in slow)
    finally:
        release.set()
    await asyncio.gather(*slow)


async def test_critical_is_admitted_when_max_pending_low_jobs_are_queued(make_daemon):
    """Issue 28 item 9: max_pending LOW jobs queued on a slow device; a CRITICAL job (and a HIGH
    one) is still accepted, inside reserves of their own, and the CRITICAL one finishes before
    the queued LOW jobs. One more LOW job, and one more HIGH past its reserve, are refused."""
    import grpc
    import pytest

    d = await make_daemon(backends=[SlowBackend(GPU_S)], gpus={"gpu_workers_per_device": 1},
                          scheduler={"max_pending": 3, "high_priority_reserve": 1, "critical_reserve": 1})
    stub = d.stub()
    low_ids = [f"porep-low-{i}" for i in range(3)]
    for i, job_id in enumerate(low_ids):
        await stub.SubmitProof(synthetic_request(job_id, log2=4, partitions=2, seed=200 + i, priority=pb.LOW))

    async def refused(req) -> str:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.SubmitProof(req)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        return err.value.details()

    assert "max_pending = 3" in await refused(synthetic_request("porep-low-3", log2=4, seed=9, priority=pb.LOW))
    await stub.SubmitProof(synthetic_request("wdpost-high", log2=4, seed=50, priority=pb.HIGH))
    assert "high_priority_reserve" in await refused(synthetic_request("wdpost-high-2", log2=4, seed=51,
                                                                      priority=pb.HIGH))
    await stub.SubmitProof(synthetic_request("winpost-critical", log2=4, seed=43, priority=pb.CRITICAL))
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id="winpost-critical", timeout_ms=30_000))
    assert res.status == pb.AwaitProofResponse.COMPLETED and verify_synthetic(d.param_cache, 4, 43, res.proof)
    unfinished = [j for j in low_ids if not d.engine.job(j).status.finished]
    assert len(unfinished) >= 2, f"queued LOW jobs finished before the CRITICAL one: {set(low_ids) - set(unfinished)}"
    for job_id in [*low_ids, "wdpost-high"]:
        await stub.CancelProof(pb.CancelProofRequest(job_id=job_id))


async def test_planning_budget_serves_higher_priorities_first(make_daemon, monkeypatch):
    """While large plans fill the planning budget, a small CRITICAL request is planned at once
    and a HIGH one before the NORMAL one that waited longer."""
    import threading

    from cuzk_plugin.adapters.synthetic import SyntheticProvider
    from cuzk_plugin.engine import admission
    from cuzk_plugin.engine.circuits import ProviderRegistry

    monkeypatch.setattr(admission, "PLANNING_BYTES_AT_ONCE", 1000)
    release = threading.Event()
    order: list[str] = []

    class RecordedPlans(SyntheticProvider):
        def plan(self, request, param_cache):
            order.append(request.request_id)
            if request.request_id == "big-first":
                release.wait(20)
            return super().plan(request, param_cache)

    d = await make_daemon(providers=ProviderRegistry([RecordedPlans()], load_plugins=False))
    stub = d.stub()

    def padded(job_id: str, seed: int, priority: int) -> pb.SubmitProofRequest:
        req = synthetic_request(job_id, log2=4, seed=seed, priority=priority)
        req.vanilla_proofs.append(b"\x01" * 900)  # ignored by the provider; counts as planning bytes
        return req

    first = asyncio.ensure_future(stub.SubmitProof(padded("big-first", 1, pb.NORMAL)))
    await asyncio.sleep(0.2)
    normal = asyncio.ensure_future(stub.SubmitProof(padded("big-normal", 2, pb.NORMAL)))
    await asyncio.sleep(0.2)
    high = asyncio.ensure_future(stub.SubmitProof(padded("big-high", 3, pb.HIGH)))
    await asyncio.sleep(0.2)
    try:
        critical = await asyncio.wait_for(stub.SubmitProof(padded("small-critical", 4, pb.CRITICAL)), 10)
        assert critical.job_id == "small-critical" and order == ["big-first", "small-critical"]
    finally:
        release.set()
    await asyncio.gather(first, normal, high)
    assert order == ["big-first", "small-critical", "big-high", "big-normal"]
