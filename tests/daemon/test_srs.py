"""The key manager: one budget (LRU eviction of keys idle past eviction_min_idle, only under
pressure), keys kept loaded otherwise, in-use keys kept."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from daemon_helpers import SlowBackend, synthetic_request

from cuzk_plugin.engine.srs import COLD, HOT
from cuzk_plugin.server.proto import cuzk_pb2 as pb


def _tiers(engine) -> dict[str, int]:
    return {s.circuit_id: s.tier for s in engine.srs.snapshot()}


async def test_budget_evicts_the_least_recently_used_idle_key(make_daemon, param_cache):
    # Make sure both keys exist, then size the budget for one of the larger pair only.
    probe = await make_daemon()
    for k in (5, 6):
        await probe.stub().PreloadSRS(pb.PreloadSrsRequest(circuit_id=f"synthetic-k{k}"))
    sizes = {s.circuit_id: s.size_bytes for s in probe.engine.srs.snapshot()}
    budget = sizes["synthetic-k6"] + sizes["synthetic-k5"] // 2
    d = await make_daemon(memory={"total_budget": budget, "eviction_min_idle": 0})
    stub = d.stub()
    await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-k5"))
    assert _tiers(d.engine) == {"synthetic-k5": HOT}
    res = (await stub.Prove(pb.ProveRequest(submit=synthetic_request("k6", log2=6)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED
    assert _tiers(d.engine) == {"synthetic-k5": COLD, "synthetic-k6": HOT}
    assert d.engine.srs.used_bytes <= budget
    too_small = await make_daemon(memory={"total_budget": 1000})
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await too_small.stub().PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-k5"))
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "budget" in err.value.details()


async def test_idle_keys_stay_loaded_without_pressure(make_daemon):
    d = await make_daemon(memory={"eviction_min_idle": "100ms"})
    await d.stub().PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-k4"))
    await asyncio.sleep(1.2)  # many times eviction_min_idle: still HOT, nothing needed the room
    assert _tiers(d.engine)["synthetic-k4"] == HOT and d.engine.srs.used_bytes > 0


async def test_under_pressure_a_key_is_evicted_only_after_eviction_min_idle(make_daemon, param_cache):
    probe = await make_daemon()
    for k in (5, 6):
        await probe.stub().PreloadSRS(pb.PreloadSrsRequest(circuit_id=f"synthetic-k{k}"))
    sizes = {s.circuit_id: s.size_bytes for s in probe.engine.srs.snapshot()}
    d = await make_daemon(memory={"total_budget": sizes["synthetic-k6"] + sizes["synthetic-k5"] // 2,
                                  "eviction_min_idle": "1s"})
    stub = d.stub()
    await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-k5"))
    t0 = asyncio.get_running_loop().time()
    await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-k6"))  # needs k5's room
    waited = asyncio.get_running_loop().time() - t0
    assert _tiers(d.engine) == {"synthetic-k5": COLD, "synthetic-k6": HOT}
    assert 0.7 <= waited < 5  # k5 went only once it had been idle for eviction_min_idle


async def test_a_key_in_use_is_not_evicted(make_daemon):
    backend = SlowBackend(0.8)
    d = await make_daemon(backends=[backend])
    stub = d.stub()
    await stub.SubmitProof(synthetic_request("busy", log2=4))
    await asyncio.get_running_loop().run_in_executor(None, backend.running.wait, 10)
    st = await stub.GetStatus(pb.GetStatusRequest())
    assert [s.ref_count for s in st.loaded_srs if s.circuit_id == "synthetic-k4"] == [1]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.EvictSRS(pb.EvictSrsRequest(circuit_id="synthetic-k4"))
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "in use" in err.value.details()
    res = await stub.AwaitProof(pb.AwaitProofRequest(job_id="busy"))
    assert res.status == pb.AwaitProofResponse.COMPLETED
    ev = await stub.EvictSRS(pb.EvictSrsRequest(circuit_id="synthetic-k4"))
    assert ev.was_loaded and ev.freed_bytes > 0


async def test_a_key_another_daemon_is_making_is_waited_for_and_used(make_daemon, tmp_path):
    """Issue 28 item 13c: two daemons sharing a param cache both generated a missing key, each
    replacing the other's file and pin, and one job failed. The key file is locked while it is
    made: the second daemon waits, then maps the first's key instead of making its own."""
    import fcntl

    d = await make_daemon(srs={"param_cache": str(tmp_path)})
    key = tmp_path / "synthetic-k5.params"
    with open(tmp_path / "synthetic-k5.params.lock", "w") as other_daemon:
        fcntl.flock(other_daemon, fcntl.LOCK_EX)
        preload = asyncio.ensure_future(d.stub().PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-k5")))
        await asyncio.sleep(1.0)
        assert not preload.done() and not key.exists(), "generated a key while another process held its lock"
        generate = d.engine.keys.source("synthetic-k5").generate
        await asyncio.get_running_loop().run_in_executor(None, generate)  # the other daemon's key
        made = key.read_bytes()
    res = await asyncio.wait_for(preload, 30)
    assert not res.already_loaded and key.read_bytes() == made


async def test_a_refused_preload_leaves_no_key_in_status(make_daemon, tmp_path):
    """Issue 28 item 13f: a PreloadSRS refused (no key file, no budget) left a COLD 0-byte key
    in GetStatus; nothing of it is left now, and a key that did load stays listed."""
    d = await make_daemon(srs={"param_cache": str(tmp_path)}, memory={"total_budget": 1000})
    stub = d.stub()
    refused = {}
    for circuit_id in ("porep-32g", "wpost-32g", "synthetic-k4"):  # no Filecoin file; over the budget
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id=circuit_id))
        refused[circuit_id] = err.value.code()
    assert refused == {"porep-32g": grpc.StatusCode.NOT_FOUND, "wpost-32g": grpc.StatusCode.NOT_FOUND,
                       "synthetic-k4": grpc.StatusCode.RESOURCE_EXHAUSTED}
    status = await stub.GetStatus(pb.GetStatusRequest())
    assert [e.circuit_id for e in status.loaded_srs] == [] and d.engine.srs.snapshot() == []
