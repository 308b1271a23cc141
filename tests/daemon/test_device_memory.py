"""[gpus] device_memory_limit through the daemon: a limit below what a key's partitions need is
refused at PreloadSRS with the figures (RESOURCE_EXHAUSTED, nothing left loaded); a limit that
holds only part of the key proves with the rest streamed from one host copy shared by the
lanes, and GetStatus shows each lane's plan."""

from __future__ import annotations

import grpc
import pytest
from daemon_helpers import synthetic_request

from cuzk_plugin.engine.residency import CONTEXT_BYTES, PartitionShape, vector_bytes
from cuzk_plugin.server.proto import cuzk_pb2 as pb
from tests.daemon.test_bench_cli import _bench
from tests.test_residency import FakeStreamingBackend, kilobyte_keys  # noqa: F401 (a fixture)


async def _counts(make_daemon, circuit_id: str) -> dict[str, int]:
    probe = await make_daemon()
    await probe.stub().PreloadSRS(pb.PreloadSrsRequest(circuit_id=circuit_id))
    return probe.engine.srs._entries[circuit_id].key.counts()


async def test_a_limit_below_the_floor_is_refused_at_preload_with_the_figures(make_daemon):
    d = await make_daemon(backends=[FakeStreamingBackend(free=1 << 40)], gpus={"device_memory_limit": "64MiB"})
    stub = d.stub()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-k6"))
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "cannot be proved on fake:0" in err.value.details() and "may use 0.1 GB" in err.value.details()
    status = await stub.GetStatus(pb.GetStatusRequest())
    assert [g.device_budget_bytes for g in status.gpus] == [64 << 20, 64 << 20]
    # each lane's link as measured at start: fake:1's measurement failed, which costs no lane
    assert [g.link_bytes_per_s for g in status.gpus] == [FakeStreamingBackend.LINK, 0.0]
    rc, out = await _bench("status", "-a", d.tcp)
    assert rc == 0 and out.count("device memory the daemon may use: 0.1 GB") == 2
    assert out.count("host -> device link") == 1  # fake:1's: not measured, not shown
    assert "host -> device link: 25.5 GB/s from page-locked memory (measured at start)" in out
    assert not any(g.key_residency or g.resident_srs for g in status.gpus)  # nothing on a device
    assert all(s.tier != pb.SRSStatus.HOT for s in status.loaded_srs)


@pytest.mark.usefixtures("kilobyte_keys")
async def test_a_key_streamed_on_two_lanes_proves_and_shows_its_plan(make_daemon):
    counts = await _counts(make_daemon, "synthetic-k6")
    shape, sizes = PartitionShape.of_key(counts), vector_bytes(counts)
    chunk = 16  # points a streamed chunk (the lanes' 2^22 would hold this small key whole)
    # Room for one partition in flight beside h and l: a, b_g1 and b_g2 stream.
    limit = CONTEXT_BYTES + shape.upload_bytes(False) + shape.compute_bytes(chunk, True, False, roomy=False) + sizes["h"] + sizes["l"]
    backend = FakeStreamingBackend(free=1 << 40)
    d = await make_daemon(backends=[backend], gpus={"device_memory_limit": limit, "gpu_workers_per_device": 1})
    for lane in d.engine.lanes:
        object.__setattr__(lane, "stream_chunk", chunk)
    stub = d.stub()
    await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="synthetic-k6"))
    res = (await stub.Prove(pb.ProveRequest(submit=synthetic_request("k6", log2=6)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED  # the daemon verified it before answering
    status = await stub.GetStatus(pb.GetStatusRequest())
    plans = [list(g.key_residency) for g in status.gpus]
    assert all(len(p) == 1 and p[0].circuit_id == "synthetic-k6" for p in plans)
    assert all(list(p[0].resident) == ["h", "l"] and list(p[0].streamed) == ["a", "b_g1", "b_g2"] for p in plans)
    assert plans[0][0].streamed_bytes_per_partition == sizes["a"] + sizes["b_g1"] + sizes["b_g2"]
    assert len(backend.host_copies) == 1  # one host copy for both lanes
    # each plan states its copies' floor at its lane's measured link (fake:1's failed: assumed)
    assert [lane.plans["synthetic-k6"].link_bytes_per_s for lane in d.engine.lanes] == [FakeStreamingBackend.LINK, 0.0]
    assert [g.link_bytes_per_s for g in status.gpus] == [FakeStreamingBackend.LINK, 0.0]
    (loaded,) = status.loaded_srs
    entry = d.engine.srs._entries["synthetic-k6"]
    # The host copy once (the lanes' resident h and l are device memory, shown per lane); the
    # .params file's mapping not again while the host copy serves the lanes.
    assert entry.warm_bytes == 0 and entry.path.stat().st_size > 0
    assert loaded.size_bytes == sum(sizes.values()) == status.pinned_memory_bytes


@pytest.mark.usefixtures("kilobyte_keys")
async def test_a_partition_out_of_memory_under_its_plan_is_proved_again_under_a_tighter_one(make_daemon, monkeypatch):
    """A plan too generous for its device (the planner's estimates short of what the device
    really needs): the partition's first run fails out of device memory with the lane to
    itself; the lane then plans with less room, the key's copy there is planned again with h
    streamed, and the same partition proves. The job completes, and status shows the room."""
    from cuzk_plugin.engine import lanes as lanes_module
    from cuzk_plugin.errors import DeviceOutOfMemory

    counts = await _counts(make_daemon, "synthetic-k6")
    shape, sizes = PartitionShape.of_key(counts), vector_bytes(counts)
    chunk = 16
    limit = CONTEXT_BYTES + shape.upload_bytes(False) + shape.compute_bytes(chunk, True, False, roomy=False) + sizes["h"] + sizes["l"]
    monkeypatch.setattr(lanes_module, "SHRINK_MIN_BYTES", sizes["h"])  # this small key's scale
    monkeypatch.setattr(lanes_module, "SHRINK_FRACTION", 0.0)

    class ShortWithHResident(FakeStreamingBackend):
        """This device runs out of memory whenever h is resident (more than the plan knew)."""

        def __init__(self, free: int):
            super().__init__(free)
            self.runs: list[tuple[str, ...]] = []

        def prove_start(self, srs, part):
            self.runs.append(srs.resident)
            if "h" in srs.resident:
                raise DeviceOutOfMemory("cz_prove_start: out of memory (cudaErrorMemoryAllocation, 2)")
            return super().prove_start(srs, part)

    backend = ShortWithHResident(free=1 << 40)
    d = await make_daemon(backends=[backend], gpus={"device_memory_limit": limit, "gpu_workers_per_device": 1})
    for lane in d.engine.lanes:
        object.__setattr__(lane, "stream_chunk", chunk)
    stub = d.stub()
    res = (await stub.Prove(pb.ProveRequest(submit=synthetic_request("k6-short", log2=6)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message  # verified by the daemon
    assert backend.runs[0] == ("h", "l") and "h" not in backend.runs[-1]
    status = await stub.GetStatus(pb.GetStatusRequest())
    (used,) = [g for g in status.gpus if g.key_residency]
    assert used.device_budget_bytes == limit - sizes["h"] and "h" in used.key_residency[0].streamed
