"""Several devices in one host, faked on the CPU: a cpu backend that reports 2-4 devices, each
its own lane. Partitions spread over the lanes, a failing lane's partitions move to the others,
each lane holds its own copy of a key (counted in the budget; a lane without room waits or
evicts, never fails), and GetStatus, /status and the metrics list every lane."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from dataclasses import dataclass

import pytest
from daemon_helpers import CountingBackend, daemon_config, synthetic_request, verify_synthetic
from prometheus_client.parser import text_string_to_metric_families

from cuzk_plugin.backends.protocol import DeviceInfo
from cuzk_plugin.config import ConfigError
from cuzk_plugin.engine.lanes import build_lanes
from cuzk_plugin.engine.sched import SlotPool, WorkerSlot, order_key
from cuzk_plugin.errors import BackendError, TransientBackendError
from cuzk_plugin.formats.params import ProvingKey
from cuzk_plugin.server.proto import cuzk_pb2 as pb


@dataclass
class DeviceSrs:
    """The cpu backend's key handle, tagged with the fake device it was loaded on."""

    inner: object
    device: int
    owner: MultiDeviceBackend

    @property
    def nbytes(self) -> int:
        return self.inner.nbytes

    def release(self) -> None:
        self.inner.release()
        self.owner.released(self.device)


class MultiDeviceBackend(CountingBackend):
    """The cpu backend reporting ``n`` devices. ``fail`` maps a device to the fault its every
    prove_start raises; ``barrier`` makes prove_start wait (bounded) until that many calls run at
    once; live key copies are counted per device (and their most at once)."""

    def __init__(self, n: int, name: str = "multi", fail: dict[int, Exception] | None = None, barrier: int = 0,
                 barrier_timeout: float = 5.0):
        super().__init__(name)
        self.n = n
        self.fail = fail or {}
        self.barrier = threading.Barrier(barrier, timeout=barrier_timeout) if barrier else None
        self.calls_by_device = [0] * n
        self.live = [0] * n
        self.max_live_total = 0

    def devices(self) -> list[DeviceInfo]:
        return [DeviceInfo(index=i, name=f"fake device {i}", memory_bytes=(8 + i) << 30, kind="gpu") for i in range(self.n)]

    def load_srs(self, key: ProvingKey, device: int = 0) -> DeviceSrs:
        assert 0 <= device < self.n
        handle = DeviceSrs(super().load_srs(key, device), device, self)
        with self._lock:
            self.live[device] += 1
            self.max_live_total = max(self.max_live_total, sum(self.live))
        return handle

    def released(self, device: int) -> None:
        with self._lock:
            self.live[device] -= 1

    def prove_start(self, srs: DeviceSrs, part):
        self._count()
        with self._lock:
            self.calls_by_device[srs.device] += 1
        if srs.device in self.fail:
            raise self.fail[srs.device]
        if self.barrier is not None:
            with contextlib.suppress(threading.BrokenBarrierError):  # fewer ran at once: the lane assertions say so
                self.barrier.wait()
        return super().prove_start(srs.inner, part)


def _metric(text: str, name: str, **labels) -> float:
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    return 0.0


def _gpu_lanes(res: pb.AwaitProofResponse) -> dict[int, str]:
    """Partition -> the lane its accepted proof came from."""
    return {e.partition: e.lane.split("/")[0] for e in res.timeline if e.stage == "gpu_finish"}


# -- lanes and slots (no daemon) ---------------------------------------------------------------
def test_every_device_is_a_lane_by_default_and_devices_selects(tmp_path):
    lanes, summary = build_lanes(daemon_config(tmp_path), [MultiDeviceBackend(4)])
    assert [ln.name for ln in lanes] == ["multi:0", "multi:1", "multi:2", "multi:3"]
    assert [ln.device.index for ln in lanes] == [0, 1, 2, 3] and "multi:3 (fake device 3)" in summary
    lanes, _ = build_lanes(daemon_config(tmp_path, gpus={"devices": [3, 1]}), [MultiDeviceBackend(4)])
    assert [ln.name for ln in lanes] == ["multi:1", "multi:3"]
    with pytest.raises(ConfigError, match=r"\[gpus\] devices: \[7\]"):
        build_lanes(daemon_config(tmp_path, gpus={"devices": [1, 7]}), [MultiDeviceBackend(4)])


async def test_slots_go_to_the_least_busy_lane_first():
    pool = SlotPool([WorkerSlot(f"d:{d}", w) for d in range(3) for w in range(2)])
    got = [await pool.acquire(order_key(0, 0, p), "c") for p in range(6)]
    assert [s.lane for s in got[:3]] == ["d:0", "d:1", "d:2"]  # one a device before any device runs two
    assert sorted(s.lane for s in got[3:]) == ["d:0", "d:1", "d:2"]
    pool.release(got[1])  # d:1 has a free worker again: the next one goes there
    assert (await pool.acquire(order_key(0, 0, 6), "c")).lane == "d:1"


# -- the daemon over fake devices --------------------------------------------------------------
async def test_partitions_of_one_proof_and_of_several_spread_over_every_lane(make_daemon):
    backend = MultiDeviceBackend(4, barrier=4)
    d = await make_daemon(backends=[backend], gpus={"gpu_workers_per_device": 2})
    stub = d.stub()
    res = (await stub.Prove(pb.ProveRequest(submit=synthetic_request("spread-1", log2=4, partitions=4, seed=10)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert verify_synthetic(d.param_cache, 4, 10, res.proof)
    assert sorted(_gpu_lanes(res).values()) == ["multi:0", "multi:1", "multi:2", "multi:3"]
    # Two proofs of two partitions each, at once: again one partition a lane.
    a, b = await asyncio.gather(*(stub.Prove(pb.ProveRequest(submit=synthetic_request(f"spread-{s}", log2=4, partitions=2, seed=s)))
                                  for s in (20, 30)))
    for r, seed in ((a.result, 20), (b.result, 30)):
        assert r.status == pb.AwaitProofResponse.COMPLETED, r.error_message
        assert verify_synthetic(d.param_cache, 4, seed, r.proof)
    used = list(_gpu_lanes(a.result).values()) + list(_gpu_lanes(b.result).values())
    assert sorted(used) == ["multi:0", "multi:1", "multi:2", "multi:3"]
    assert backend.calls_by_device == [2, 2, 2, 2]
    metrics = d.engine.metrics_text()
    assert all(_metric(metrics, "cuzk_partitions_proved_total", lane=f"multi:{i}") == 2.0 for i in range(4))


@pytest.mark.parametrize("fault", [BackendError("injected: device 1 lost"), TransientBackendError("injected: device 1 ECC")],
                         ids=["permanent", "transient"])
async def test_a_failing_lane_moves_its_partitions_to_the_others(make_daemon, fault):
    # The first partition waits on lane 0 until a second runs beside it: the next partition finds
    # lane 0 busy and goes to lane 1 (a loaded machine synthesizes them too far apart otherwise,
    # and each would take lane 0 in turn).
    backend = MultiDeviceBackend(3, fail={1: fault}, barrier=2)
    d = await make_daemon(backends=[backend], gpus={"gpu_workers_per_device": 1, "retry_attempts": 2})
    stub = d.stub()
    res = (await stub.Prove(pb.ProveRequest(submit=synthetic_request("failover-multi", log2=4, partitions=2, seed=40)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert verify_synthetic(d.param_cache, 4, 40, res.proof)
    assert set(_gpu_lanes(res).values()) == {"multi:0", "multi:2"} and len(_gpu_lanes(res)) == 2
    # Device 1 was tried and given up on.
    tries = 1 if isinstance(fault, BackendError) and not isinstance(fault, TransientBackendError) else 2
    assert backend.calls_by_device[1] >= tries
    failed_attempts = [e for e in res.timeline if e.lane.startswith("multi:1")]
    assert not any(e.stage == "gpu_finish" for e in failed_attempts)
    metrics = d.engine.metrics_text()
    assert _metric(metrics, "cuzk_lane_failovers_total", from_lane="multi:1") >= 1.0
    assert _metric(metrics, "cuzk_lane_partition_failures_total", lane="multi:1") >= 1.0
    st = await stub.GetStatus(pb.GetStatusRequest())
    lanes = {g.lane: g for g in st.gpus}
    assert lanes["multi:1"].partitions_failed >= 1 and lanes["multi:1"].partitions_proved == 0
    assert lanes["multi:0"].partitions_proved == lanes["multi:2"].partitions_proved == 1


async def test_a_lane_that_keeps_failing_is_set_aside(make_daemon):
    from cuzk_plugin.engine.gpu_stage import LANE_STRIKES

    backend = MultiDeviceBackend(2, fail={1: BackendError("injected: device 1 lost")})
    d = await make_daemon(backends=[backend], gpus={"gpu_workers_per_device": 1})
    stub = d.stub()

    async def prove(job: int) -> None:
        res = (await stub.Prove(pb.ProveRequest(submit=synthetic_request(f"dead-{job}", log2=4, partitions=2, seed=job)))).result
        assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
        assert set(_gpu_lanes(res).values()) == {"multi:0"}

    for job in range(20):  # the spread sends partitions to the idle dead device until it rests
        await prove(job)
        if d.engine.lane_resting("multi:1"):
            break
    assert d.engine.lane_resting("multi:1") and backend.calls_by_device[1] == LANE_STRIKES
    for job in range(20, 23):
        await prove(job)
    assert backend.calls_by_device[1] == LANE_STRIKES  # no partition sent to it while it rests
    st = await stub.GetStatus(pb.GetStatusRequest())
    assert [(g.lane, g.resting) for g in st.gpus] == [("multi:0", False), ("multi:1", True)]
    assert _metric(d.engine.metrics_text(), "cuzk_lane_resting", lane="multi:1") == 1.0


async def test_every_lane_failing_fails_the_job_naming_each_lane(make_daemon):
    backend = MultiDeviceBackend(2, fail={0: BackendError("injected: lost 0"), 1: BackendError("injected: lost 1")})
    d = await make_daemon(backends=[backend], gpus={"gpu_workers_per_device": 1})
    res = (await d.stub().Prove(pb.ProveRequest(submit=synthetic_request("all-lost", log2=4, seed=50)))).result
    assert res.status == pb.AwaitProofResponse.FAILED and res.proof == b""
    assert "multi:0" in res.error_message and "multi:1" in res.error_message


async def _key_sizes(make_daemon) -> tuple[int, int]:
    """(file bytes, one lane copy's bytes) of synthetic-k4's key (made by a first daemon)."""
    d = await make_daemon(backends=[MultiDeviceBackend(1)])
    res = (await d.stub().Prove(pb.ProveRequest(submit=synthetic_request("sizes", log2=4, seed=60)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    path = d.param_cache / "synthetic-k4.params"
    return path.stat().st_size, ProvingKey.open(path).vectors_nbytes


async def test_a_key_on_two_lanes_counts_twice_and_status_lists_every_lane(make_daemon):
    file_bytes, copy_bytes = await _key_sizes(make_daemon)
    backend = MultiDeviceBackend(3)
    d = await make_daemon(backends=[backend], gpus={"gpu_workers_per_device": 2}, status_listen="127.0.0.1:0")
    stub = d.stub()
    for lane in d.engine.lanes[:2]:  # the key resident on lanes 0 and 1 only
        await d.engine.srs.hot("synthetic-k4", lane.name, lane.load_srs)
    st = await stub.GetStatus(pb.GetStatusRequest())
    assert st.pinned_memory_bytes == file_bytes + 2 * copy_bytes == d.engine.srs.used_bytes
    assert [(g.ordinal, g.lane, g.workers, g.busy_workers) for g in st.gpus] == [
        (0, "multi:0", 2, 0), (1, "multi:1", 2, 0), (2, "multi:2", 2, 0)]
    for g in st.gpus[:2]:
        assert [(s.circuit_id, s.tier, s.size_bytes) for s in g.resident_srs] == [("synthetic-k4", pb.SRSStatus.HOT, copy_bytes)]
        assert g.resident_bytes == copy_bytes and g.vram_free_bytes == g.vram_total_bytes - copy_bytes
    assert not st.gpus[2].resident_srs and st.gpus[2].resident_bytes == 0
    assert st.gpus[2].vram_total_bytes == 10 << 30
    assert sum(backend.live) == 2
    # /status carries the same per-lane facts.
    reader, writer = await asyncio.open_connection("127.0.0.1", d.server.status_port)
    writer.write(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
    raw = await reader.read()
    writer.close()
    page = json.loads(raw.split(b"\r\n\r\n", 1)[1])
    assert [g["lane"] for g in page["gpus"]] == ["multi:0", "multi:1", "multi:2"]
    assert page["gpus"][0]["resident"] == [{"circuit_id": "synthetic-k4", "tier": "HOT", "size_bytes": copy_bytes, "ref_count": 0}]
    assert page["gpus"][2]["resident"] == [] and page["gpus"][1]["workers"] == 2
    metrics = (await stub.GetMetrics(pb.GetMetricsRequest())).prometheus_text
    assert _metric(metrics, "cuzk_lane_resident_bytes", lane="multi:1", circuit_id="synthetic-k4") == copy_bytes
    assert _metric(metrics, "cuzk_lane_workers", lane="multi:2", state="idle") == 2.0
    assert _metric(metrics, "cuzk_lane_memory_total_bytes", lane="multi:2") == float(10 << 30)
    # A busy lane shows its job.
    slow = MultiDeviceBackend(2, barrier=3, barrier_timeout=1.0)  # never 3 at once: each call waits 1 s
    d2 = await make_daemon(backends=[slow], gpus={"gpu_workers_per_device": 1})
    job = asyncio.ensure_future(d2.stub().Prove(pb.ProveRequest(submit=synthetic_request("busy-lanes", log2=4, partitions=2, seed=70))))
    for _ in range(200):
        st2 = d2.engine.status()
        if all(g.busy_workers == 1 for g in st2.gpus):
            break
        await asyncio.sleep(0.02)
    assert [(g.busy_workers, g.current_job_ids) for g in st2.gpus] == [(1, ("busy-lanes",)), (1, ("busy-lanes",))]
    assert (await job).result.status == pb.AwaitProofResponse.COMPLETED


async def test_a_lane_without_room_waits_or_evicts_never_fails(make_daemon):
    file_bytes, copy_bytes = await _key_sizes(make_daemon)
    # Room for the mapping and one lane's copy, not two. The first partition waits on lane 0 (up
    # to 5 s) for a second beside it, so that the next meets a busy lane 0 and takes lane 1
    # (which must wait for lane 0's copy to go, then evict it) however slowly they are synthesized.
    budget = file_bytes + copy_bytes + copy_bytes // 2
    backend = MultiDeviceBackend(2, barrier=2)
    d = await make_daemon(backends=[backend], gpus={"gpu_workers_per_device": 1}, memory={"total_budget": budget, "eviction_min_idle": 0})
    prove = d.stub().Prove(pb.ProveRequest(submit=synthetic_request("tight", log2=4, partitions=4, seed=80)))
    res = (await asyncio.wait_for(prove, 30)).result  # a lane waiting on room that never comes hangs: fail instead
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert verify_synthetic(d.param_cache, 4, 80, res.proof)
    assert set(_gpu_lanes(res).values()) == {"multi:0", "multi:1"}  # both lanes proved, in turn
    assert backend.max_live_total == 1  # never two copies at once: the second lane waited, then evicted
    assert d.engine.srs.used_bytes <= budget
    # With room for both, both lanes keep their copy.
    roomy = MultiDeviceBackend(2, barrier=2)
    d2 = await make_daemon(backends=[roomy], gpus={"gpu_workers_per_device": 1},
                           memory={"total_budget": file_bytes + 2 * copy_bytes})
    res = (await d2.stub().Prove(pb.ProveRequest(submit=synthetic_request("roomy", log2=4, partitions=4, seed=90)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert roomy.live == [1, 1] and d2.engine.srs.used_bytes == file_bytes + 2 * copy_bytes


# -- OpenCL: one OpenclBackend a device, each device a lane --------------------------------------
async def test_opencl_devices_prove_on_every_lane(make_daemon):
    try:
        from cuzk_plugin.backends.opencl.backend import OpenclBackend
        from cuzk_plugin.backends.opencl.multi import OpenclDevices

        if OpenclBackend.probe() is not None:
            pytest.skip(OpenclBackend.probe())
    except ImportError as exc:
        pytest.skip(f"pyopencl: {exc}")
    # Two backends on the one device PoCL offers stand for two GPUs (two contexts, two lanes).
    first = OpenclBackend()
    assert first.every_device().devices()[0].name == first.devices()[0].name
    devices = OpenclDevices([first, OpenclBackend()])
    d = await make_daemon(backends=[devices], gpus={"gpu_workers_per_device": 1})
    assert [ln.name for ln in d.engine.lanes] == ["opencl:0", "opencl:1"]
    res = (await d.stub().Prove(pb.ProveRequest(submit=synthetic_request("ocl-lanes", log2=4, partitions=2, seed=100)))).result
    assert res.status == pb.AwaitProofResponse.COMPLETED, res.error_message
    assert verify_synthetic(d.param_cache, 4, 100, res.proof)
    assert sorted(_gpu_lanes(res).values()) == ["opencl:0", "opencl:1"]
    devices.close()
    # Configured by name, the daemon's backend is every device (here PoCL's one CPU device).
    lanes, _ = build_lanes(daemon_config(d.param_cache, gpus={"backend": "opencl"}))
    assert [ln.name for ln in lanes] == ["opencl:0"] and isinstance(lanes[0].backend, OpenclDevices)
    lanes[0].backend.close()
