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
