"""Residency plans (engine/residency.py) and their use by lanes (engine/lanes.py): what stays
on the device for a given memory, refusals with the figures, one host copy per key shared by
the lanes of a host (counted once in the memory budget), circuits evaluated on the host when
their matrices do not fit. The streamed kernels themselves: tests/gpu/test_cuda_residency.py."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field, replace

import numpy as np
import pytest

from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.backends.protocol import DeviceInfo
from cuzk_plugin.bls12_381.fields import limbs_to_ints
from cuzk_plugin.circuit.examples import filecoin_like
from cuzk_plugin.circuit.pce_record import precompile_r1cs
from cuzk_plugin.circuit.r1cs import synthesize
from cuzk_plugin.engine.host_keys import HostKeyCopies
from cuzk_plugin.engine.lanes import Lane, link_bandwidth, on_lane
from cuzk_plugin.engine.residency import (
    CONTEXT_BYTES,
    VECTORS,
    CircuitFootprint,
    DeviceMemoryTooSmall,
    PartitionShape,
    plan_residency,
    vector_bytes,
)
from cuzk_plugin.engine.srs import SrsEntry
from cuzk_plugin.formats.partition import SynthesizedPartition, WitnessPartition
from cuzk_plugin.formats.pce import MappedCircuit, save_pce
from cuzk_plugin.groth16.prover import prove
from cuzk_plugin.groth16.setup import setup
from cuzk_plugin.groth16.verifier import verify

GB = 10**9
#: A 32 GiB PoRep partition's key counts (130,278,541 constraints; densities of the recorded circuit).
POREP_32G = {"ic": 328, "h": (1 << 27) - 1, "l": 130_169_893, "a": 129_753_292 + 328, "b_g1": 33_112_281 + 1,
             "b_g2": 33_112_281 + 1}


def fits(plan) -> bool:
    return CONTEXT_BYTES + plan.resident_bytes + plan.circuit_bytes + plan.working_bytes <= plan.available_bytes


def test_a_large_card_keeps_the_whole_key_and_circuit():
    plan = plan_residency("porep-32g", "cuda:0", POREP_32G, available_bytes=139 * GB, circuit=CircuitFootprint(9_170_000_000))
    assert plan.all_resident and plan.resident == VECTORS and plan.streamed_bytes == 0
    assert plan.resident_bytes == sum(vector_bytes(POREP_32G).values())
    assert not plan.circuit_on_host and plan.circuit_bytes == 9_170_000_000


@pytest.mark.parametrize("gb", [72, 64, 56, 48])
def test_a_smaller_card_streams_only_what_does_not_fit(gb):
    """The plan fits, and no streamed vector would fit in the room the resident ones leave
    (keeping one more resident always saves streaming time)."""
    plan = plan_residency("porep-32g", "cuda:0", POREP_32G, available_bytes=gb * GB, in_flight=1,
                          circuit=CircuitFootprint(9_170_000_000))
    sizes = vector_bytes(POREP_32G)
    assert fits(plan) and plan.streamed and plan.stream_seconds > 0
    assert plan.resident_bytes + plan.streamed_bytes == sum(sizes.values())
    room = plan.available_bytes - CONTEXT_BYTES - plan.circuit_bytes - plan.working_bytes - plan.resident_bytes
    assert all(sizes[v] > room for v in plan.streamed)
    assert "streamed" in plan.describe() and "GB a partition" in plan.describe()
    # the floor the log states: the key's streamed bytes over the link the model assumes,
    # or over the lane's where it was measured; the choice is the same either way
    assert f"copies, {plan.streamed_bytes / 54e9:.1f} s at 54 GB/s (PCIe 5.0 x16 assumed, not measured" in plan.describe()
    slow = plan_residency("porep-32g", "cuda:0", POREP_32G, available_bytes=gb * GB, in_flight=1,
                          circuit=CircuitFootprint(9_170_000_000), link_bytes_per_s=13.1e9)
    assert f"copies, {plan.streamed_bytes / 13.1e9:.1f} s at 13.1 GB/s (this lane's link, measured)" in slow.describe()
    assert replace(slow, link_bytes_per_s=0.0) == plan


def test_the_circuit_goes_to_the_host_before_the_card_is_refused():
    """A circuit whose matrices outweigh the a, b, c its partitions would bring from the host."""
    shape = PartitionShape.of_key(POREP_32G)
    working = 2 * shape.upload_bytes(False) + shape.compute_bytes(1 << 22, True, False)
    plan = plan_residency("porep-32g", "cuda:0", POREP_32G, available_bytes=working + CONTEXT_BYTES + 1 * GB,
                          circuit=CircuitFootprint(60 * GB))
    assert plan.circuit_on_host and plan.circuit_bytes == 0 and fits(plan)


def test_witness_partitions_need_no_room_for_a_b_c_in_flight():
    """a, b, c of a witness partition are made on the device when it computes (and freed after
    H), so only its assignment waits in flight: a 32 GiB PoRep keeps more of its key resident."""
    with_circuit = plan_residency("porep-32g", "l", POREP_32G, available_bytes=64 * GB, circuit=CircuitFootprint(9_170_000_000))
    synthesized = plan_residency("porep-32g", "l", POREP_32G, available_bytes=64 * GB + 9_170_000_000)
    assert with_circuit.working_bytes < synthesized.working_bytes
    assert with_circuit.resident_bytes > synthesized.resident_bytes


#: The 32 GiB PoRep circuit's device bytes: resident (matrices and tables), and streamed by rows
#: (tables, densities and two chunk buffers; about what streamed_circuit_device_bytes gives it).
POREP_32G_CIRCUIT = CircuitFootprint(9_170_000_000, 1_500_000_000)


def test_an_80_gib_card_keeps_the_whole_key_and_streams_the_circuit_rows():
    """Streaming the 9.2 GB of matrices (~0.2 s a partition) costs less than streaming any of
    the key: the whole key stays, two partitions in flight, the MSMs side by side."""
    plan = plan_residency("porep-32g", "cuda:0", POREP_32G, available_bytes=80 << 30, in_flight=2, min_in_flight=1,
                          circuit=POREP_32G_CIRCUIT)
    assert plan.all_resident and plan.circuit_streamed and not plan.circuit_on_host and fits(plan)
    assert plan.circuit_bytes == POREP_32G_CIRCUIT.streamed and plan.in_flight == 2 and not plan.msm_in_turn
    assert "circuit streamed by rows" in plan.describe()


@pytest.mark.parametrize("terms", [722_389_000, 0])
def test_streamed_rows_cost_only_what_their_copies_add_to_the_evaluation(terms):
    """The compact porep-32g circuit (6.2 GB resident, 5.9 GB copied a partition streamed) at
    80 GiB: resident it leaves room for one partition in flight only. Its copies (109 ms) add
    75 ms to the evaluation its 722 M terms cost either way, less than the upload one partition
    in flight leaves bare (78 ms): two in flight with the rows streamed, as measured on an 80 GB
    H100 (bench/residency/README.md). Counting the copies whole (no terms), one in flight wins."""
    circuit = CircuitFootprint(6_160_000_000, 620_000_000, 5_900_000_000, terms)
    plan = plan_residency("porep-32g", "cuda:0", POREP_32G, available_bytes=80 << 30, in_flight=2, min_in_flight=1,
                          circuit=circuit)
    assert plan.all_resident and fits(plan)
    assert (plan.circuit_streamed, plan.in_flight) == ((True, 2) if terms else (False, 1))


def test_a_24_gib_card_streams_everything_with_one_partition_in_flight():
    plan = plan_residency("porep-32g", "cuda:0", POREP_32G, available_bytes=24 << 30, in_flight=2, min_in_flight=1,
                          circuit=POREP_32G_CIRCUIT)
    assert plan.resident == () and plan.circuit_streamed and plan.in_flight == 1 and plan.msm_in_turn and fits(plan)
    assert plan.streamed_bytes == sum(vector_bytes(POREP_32G).values())
    assert not plan.h_lean  # a, b, c and the twiddle tables fit beside one partition's assignment


def test_a_16_gib_card_proves_a_32_gib_porep_with_h_in_two_buffers():
    """Three buffers of 2^27 and the transforms' tables (17.2 GB) do not fit beside a partition's
    assignment (4.4 GB) on a 16 GiB card; two buffers and small tables (8.6 GB) do, so the card
    proves instead of being refused, its MSMs in turn over small chunks."""
    plan = plan_residency("porep-32g", "cuda:0", POREP_32G, available_bytes=16 << 30, in_flight=2, min_in_flight=1,
                          circuit=POREP_32G_CIRCUIT)
    assert plan.h_lean and plan.msm_in_turn and plan.in_flight == 1 and plan.resident == () and fits(plan)
    assert plan.circuit_streamed and plan.stream_chunk < 1 << 24
    assert "H in two buffers" in plan.describe()
    from cuzk_plugin.server.convert import _residency
    from cuzk_plugin.server.proto import cuzk_pb2 as pb

    assert pb.KeyResidency(**_residency(plan)).h_lean  # GetStatus shows it
    shape = PartitionShape.of_key(POREP_32G)
    assert shape.compute_bytes(plan.stream_chunk, True, True, roomy=False, lean=True) < shape.compute_bytes(
        plan.stream_chunk, True, True, roomy=False)
    # A lane that cannot hold fewer partitions in flight (min_in_flight = 2) is refused instead.
    with pytest.raises(DeviceMemoryTooSmall, match=r"2 in flight"):
        plan_residency("porep-32g", "cuda:0", POREP_32G, available_bytes=16 << 30, in_flight=2,
                       circuit=POREP_32G_CIRCUIT)
    # Partitions that bring a, b, c from the host cannot make H in two buffers: refused.
    with pytest.raises(DeviceMemoryTooSmall):
        plan_residency("porep-32g", "cuda:0", POREP_32G, available_bytes=16 << 30, in_flight=1)


def test_a_card_too_small_even_streamed_is_refused_with_the_figures():
    with pytest.raises(DeviceMemoryTooSmall, match=r"cuda:3.*needs [0-9.]+ GB.*may use 16\.0 GB"):
        plan_residency("porep-32g", "cuda:3", POREP_32G, available_bytes=16 * GB, in_flight=2)


def test_fewer_partitions_in_flight_leave_room_for_more_of_the_key_or_the_msms_side_by_side():
    two = plan_residency("porep-32g", "l", POREP_32G, available_bytes=80 * GB, in_flight=2)
    one = plan_residency("porep-32g", "l", POREP_32G, available_bytes=80 * GB, in_flight=1)
    assert one.resident_bytes >= two.resident_bytes
    assert one.resident_bytes > two.resident_bytes or (two.msm_in_turn and not one.msm_in_turn)


def test_the_plan_takes_a_streamed_msms_most_over_every_count_of_large_scalars(rng):
    """A plan knows an MSM's count, not how many of its scalars are large: it takes the most the
    streamed MSM's bound holds over every such number, which is not simply all of them (the
    bound dips where the item length steps up); its window is the whole vector's, at most a
    chunk's own (16 bits at 2^22 points a chunk, 20 at 2^24)."""
    from cuzk_plugin.engine.residency import (
        msm_streamed_scratch_bytes,
        msm_streamed_scratch_most,
        msm_streamed_window,
    )

    below_step, at_step = (9 << 17) - 1, 9 << 17  # item length 8, then 9: 147,455 items, then 131,072
    dip = msm_streamed_scratch_bytes(1 << 25, below_step, 96, 1 << 24) - msm_streamed_scratch_bytes(1 << 25, at_step, 96, 1 << 24)
    assert dip > 0, "the bound no longer dips at an item-length step: msm_streamed_scratch_most can go"
    for _ in range(300):
        count = int(rng.integers(1, 1 << 28))
        point = int(rng.choice((96, 192)))
        chunk = int(rng.integers(1, 1 << 25))
        most = msm_streamed_scratch_most(count, point, chunk)
        assert most >= msm_streamed_scratch_bytes(count, count, point, chunk)
        for large in (int(rng.integers(0, count + 1)), min(count, below_step), min(count, (int(rng.integers(9, 1024)) << 17) - 1)):
            assert msm_streamed_scratch_bytes(count, large, point, chunk) <= most, (count, large, point, chunk)
    assert msm_streamed_window(1 << 27, 1 << 22) == 16 and msm_streamed_window(1 << 27, 1 << 24) == 20
    assert msm_streamed_window(1 << 10, 1 << 24) < 16  # few large scalars: their own window


def test_more_memory_never_streams_more():
    rng = random.Random()
    for _ in range(200):
        counts = {v: rng.randrange(1, 1 << 20) for v in VECTORS} | {"ic": rng.randrange(1, 500)}
        counts["h"] = (1 << rng.randrange(10, 21)) - 1
        shape = PartitionShape.of_key(counts)
        floor = CONTEXT_BYTES + shape.upload_bytes(False) + shape.compute_bytes(1 << 18, True, False)
        budgets = sorted(rng.randrange(floor, floor + 3 * sum(vector_bytes(counts).values()) + 2) for _ in range(2))
        small, large = (plan_residency("c", "l", counts, available_bytes=b, in_flight=1) for b in budgets)
        assert large.stream_seconds <= small.stream_seconds, (counts, budgets)
        assert fits(small) and fits(large)


# -- lanes ------------------------------------------------------------------------------------
@dataclass
class FakeHostCopy:
    key: object
    nbytes: int
    released: bool = False

    def release(self) -> None:
        self.released = True


@dataclass
class FakeSrs:
    inner: object
    nbytes: int
    resident: tuple[str, ...]
    host: FakeHostCopy | None = None
    released: bool = field(default=False)

    def release(self) -> None:
        self.released = True


class FakeStreamingBackend(CpuBackend):
    """The cpu backend proving, with a device of ``free`` bytes that streams keys (as CUDA's
    KeyStreaming): records the host copies it makes and the resident sets it is asked for."""

    name = "fake"

    def __init__(self, free: int):
        super().__init__()
        self.free = free
        self.host_copies: list[FakeHostCopy] = []
        self.limits: list[int] = []
        self.loads: list[bool] = []  # each load_circuit's streamed flag
        self._lock = threading.Lock()

    def devices(self) -> list[DeviceInfo]:
        return [DeviceInfo(index=i, name=f"fake gpu {i}", memory_bytes=self.free, kind="gpu") for i in range(2)]

    def device_memory(self, device: int = 0) -> tuple[int, int]:
        return self.free, self.free

    def set_memory_limit(self, limit_bytes: int, device: int = 0) -> None:
        self.limits.append(limit_bytes)

    #: Device 0's link, bytes a second; device 1's measurement fails (LinkBandwidth).
    LINK = 25.5e9

    def link_bytes_per_s(self, device: int = 0) -> float:
        if device == 1:
            raise RuntimeError("cz_link_bandwidth: out of memory")
        return self.LINK

    def host_key(self, key, device: int = 0) -> FakeHostCopy:
        with self._lock:
            copy = FakeHostCopy(key, key.vectors_nbytes)
            self.host_copies.append(copy)
            return copy

    def load_srs(self, key, device: int = 0, *, resident=None, stream_chunk: int = 1 << 22):
        if isinstance(key, FakeHostCopy):
            assert not key.released
            names = VECTORS if resident is None else tuple(resident)
            sizes = vector_bytes(key.key.counts())
            return FakeSrs(super().load_srs(key.key, device), sum(sizes[v] for v in names), names, key)
        return FakeSrs(super().load_srs(key, device), key.vectors_nbytes, VECTORS)

    def load_circuit(self, pce, device: int = 0, *, streamed: bool = False):
        self.loads.append(streamed)
        return super().load_circuit(pce)

    def prove_start(self, srs, part):
        return super().prove_start(srs.inner, part)


@pytest.fixture
def kilobyte_keys(monkeypatch):
    """A streamed MSM's fixed room (128 MiB for CUB's scratch and the pool's rounding) outweighs
    a key of a few kilobytes, which the planner then never streams: these tests, which stream
    such keys to check the lanes' plumbing, plan without it (beside the real gigabyte keys it
    decides nothing)."""
    from cuzk_plugin.engine import residency

    monkeypatch.setattr(residency, "STREAMED_MSM_MARGIN", 0)


@pytest.fixture(scope="module")
def small_key():
    def builder(seed):
        return filecoin_like(1 << 9, seed=seed)

    shape, _, _ = builder(0).finish()
    r1cs, inputs, aux = builder(3).finish()
    return setup(shape), r1cs, inputs, aux


@pytest.fixture
def small_pce(small_key, tmp_path):
    """The small key's circuit pre-compiled into a file: its path."""
    _, r1cs, _, _ = small_key
    path = tmp_path / "small.pce"
    save_pce(path, precompile_r1cs(r1cs, "small"))
    return path


#: Points a streamed chunk of the lanes below: small beside the small key, so streaming pays.
TEST_CHUNK = 16


def lanes_of(backend, budget: int) -> list[Lane]:
    copies = HostKeyCopies()
    return [Lane(f"fake:{d.index}", backend, d, device_budget=budget, in_flight=1, host_keys=copies,
                 stream_chunk=TEST_CHUNK) for d in backend.devices()]


def budget_streaming_all_but(key, keep: tuple[str, ...]) -> int:
    """A device budget that holds exactly the vectors ``keep`` beside a partition."""
    counts = key.counts()
    shape = PartitionShape.of_key(counts)
    sizes = vector_bytes(counts)
    return CONTEXT_BYTES + shape.upload_bytes(False) + shape.compute_bytes(TEST_CHUNK, True, False, roomy=False) + sum(sizes[v] for v in keep)


def test_two_lanes_share_one_host_copy_counted_once(small_key, kilobyte_keys):
    key, r1cs, inputs, aux = small_key
    backend = FakeStreamingBackend(free=1 << 40)
    lanes = lanes_of(backend, budget_streaming_all_but(key, ("h",)))
    entry = SrsEntry("small", path=None)  # type: ignore[arg-type]
    handles = [lane.load_srs(key, circuit_id="small") for lane in lanes]
    entry.handles = {lane.name: h for lane, h in zip(lanes, handles, strict=True)}
    assert len(backend.host_copies) == 1, "one host copy for both lanes"
    assert entry.host_bytes == key.vectors_nbytes  # counted once
    assert all(h.srs.resident == ("h",) and h.device_bytes == key.counts()["h"] * 96 for h in handles)
    assert entry.hot_bytes == 0  # the resident h of each lane is device memory: not the [memory] budget's
    assert all(lane.plans["small"].streamed == ("l", "a", "b_g1", "b_g2") for lane in lanes)
    proof = prove(key, synthesize(r1cs, inputs, aux), backend, srs=handles[0].srs)
    assert verify(key.vk, proof, limbs_to_ints(inputs)[1:])
    handles[0].release()
    assert not backend.host_copies[0].released  # the other lane still streams from it
    handles[1].release()
    assert backend.host_copies[0].released and not lanes[0].plans


def test_every_vector_resident_where_it_fits_makes_no_host_copy(small_key):
    key, *_ = small_key
    backend = FakeStreamingBackend(free=1 << 40)
    (lane, _) = lanes_of(backend, 1 << 40)
    handle = lane.load_srs(key, circuit_id="small")
    assert handle.plan is not None and handle.plan.all_resident and not backend.host_copies
    assert handle.host_copy is None
    handle.release()


def test_a_lane_too_small_refuses_before_loading(small_key):
    key, *_ = small_key
    backend = FakeStreamingBackend(free=1 << 40)
    (lane, _) = lanes_of(backend, 1 << 20)
    with pytest.raises(DeviceMemoryTooSmall, match="fake:0"):
        lane.load_srs(key, circuit_id="small")
    assert not backend.host_copies and not lane._keys


def test_a_circuit_that_does_not_fit_is_evaluated_on_the_host(small_key, small_pce, kilobyte_keys):
    """A key planned without its circuit (a preload) with no room left: the circuit's partitions
    reach the backend as a, b, c evaluated on the host, and the proof verifies."""
    key, r1cs, inputs, aux = small_key
    mapped = MappedCircuit.open(small_pce)
    backend = FakeStreamingBackend(free=1 << 40)
    (lane, _) = lanes_of(backend, budget_streaming_all_but(key, ()))
    handle = lane.load_srs(key, circuit_id="small")
    assert handle.plan is not None and handle.plan.resident == ()
    part = on_lane(lane, handle, WitnessPartition(mapped, inputs, aux))
    assert isinstance(part, SynthesizedPartition) and handle.device_bytes == 0
    want = synthesize(r1cs, inputs, aux)
    for got, exp in zip((part.a, part.b, part.c), (want.a, want.b, want.c), strict=True):
        np.testing.assert_array_equal(got, exp)
    proof = prove(key, part, backend, srs=handle.srs)
    assert verify(key.vk, proof, limbs_to_ints(inputs)[1:])
    handle.release()


def test_a_circuit_streamed_by_rows_and_one_partition_in_flight_reach_the_backend(small_key, small_pce):
    """Room for the key and a streamed circuit, not for the circuit's matrices or a second
    partition: the lane loads the circuit with streamed=True, tells the backend one partition
    at a time, and goes back to two once the key is released."""
    key, _, inputs, aux = small_key
    mapped = MappedCircuit.open(small_pce)

    class StreamsCircuits(FakeStreamingBackend):
        def __init__(self, free: int):
            super().__init__(free)
            self.in_flight: list[int] = []

        def set_partitions_in_flight(self, count: int, device: int = 0) -> None:
            self.in_flight.append(count)

    counts = key.counts()
    shape, sizes = PartitionShape.of_key(counts), vector_bytes(counts)
    footprint = CircuitFootprint(resident=50 << 20, streamed=1 << 20)  # matrices far beyond the room
    budget = (CONTEXT_BYTES + shape.upload_bytes(True) + shape.compute_bytes(TEST_CHUNK, False, True, roomy=False)
              + sum(sizes.values()) + footprint.streamed)
    backend = StreamsCircuits(free=1 << 40)
    lane = Lane("fake:0", backend, backend.devices()[0], device_budget=budget, in_flight=2, stream_chunk=TEST_CHUNK)
    handle = lane.load_srs(key, circuit_id="small", circuit=footprint)
    plan = handle.plan
    assert plan is not None and plan.all_resident and plan.circuit_streamed and plan.in_flight == 1 and fits(plan)
    assert backend.in_flight == [1]
    part = on_lane(lane, handle, WitnessPartition(mapped, inputs, aux))
    assert backend.loads == [True] and isinstance(part, WitnessPartition)
    proof = prove(key, part, backend, srs=handle.srs)
    assert verify(key.vk, proof, limbs_to_ints(inputs)[1:])
    handle.release()
    assert backend.in_flight == [1, 2] and not lane.plans


def test_device_memory_limit_caps_the_lane_and_reaches_the_backend(tmp_path):
    from cuzk_plugin.config import Config
    from cuzk_plugin.engine.lanes import build_lanes

    backend = FakeStreamingBackend(free=80 * GB)
    config = Config(gpus={"device_memory_limit": "24GiB"})
    lanes, _ = build_lanes(config, [backend])
    assert [lane.device_budget for lane in lanes] == [24 << 30, 24 << 30]
    assert backend.limits == [24 << 30, 24 << 30]
    assert lanes[0].host_keys is lanes[1].host_keys
    free, _ = build_lanes(Config(), [FakeStreamingBackend(free=80 * GB)])
    assert free[0].device_budget == 80 * GB


def test_a_test_key_too_large_to_make_on_the_lane_is_refused_with_the_way_out(small_pce):
    """The library refuses a key generation that does not fit (DeviceOutOfMemory, with its
    figures): the lane answers DeviceMemoryTooSmall (RESOURCE_EXHAUSTED, not INTERNAL), naming
    `cuzk params write-test-key`, and keeps nothing on the device."""
    from cuzk_plugin.engine.device_key import DeviceKey
    from cuzk_plugin.errors import DeviceOutOfMemory

    key = DeviceKey.draw("small-test-key", MappedCircuit.open(small_pce))

    class NoRoomToMake(FakeStreamingBackend):
        def generate_srs(self, circuit, secrets):
            raise DeviceOutOfMemory("key generation needs up to 100.5 GB; the device has 75.3 of 85.0 GB free")

    (lane, _) = lanes_of(NoRoomToMake(free=1 << 40), 1 << 40)
    with pytest.raises(DeviceMemoryTooSmall, match=r"100\.5 GB.*cuzk params write-test-key"):
        lane.load_srs(key)
    assert lane.resident_bytes() == 0


def test_a_key_made_on_the_lane_plans_with_its_circuit(small_key, small_pce):
    """A TEST key made on the lane loads its circuit first: the plan counts that circuit (and
    witness partitions), so it never promises the circuit's room to the key."""
    from cuzk_plugin.engine.device_key import DeviceKey
    from cuzk_plugin.formats.params import SetupSecrets

    key, *_ = small_key
    made = DeviceKey.draw("small-test-key", MappedCircuit.open(small_pce))

    class MakesKeys(FakeStreamingBackend):
        def load_circuit(self, pce, device: int = 0):
            circuit = CpuBackend.load_circuit(self, pce)
            circuit.nbytes = 10 << 20  # as a device copy would hold it
            return circuit

        def generate_srs(self, circuit, secrets: SetupSecrets):
            from cuzk_plugin.backends.cpu.keygen import input_sums, qap_from_pce

            return FakeSrs(None, key.vectors_nbytes, VECTORS), input_sums(qap_from_pce(circuit.circuit, secrets))

    (lane, _) = lanes_of(MakesKeys(free=1 << 40), 1 << 40)
    handle = lane.load_srs(made)
    assert handle.plan is not None and handle.plan.circuit_bytes == CircuitFootprint.of(made.mapped.circuit).resident > 0
    assert not handle.plan.circuit_on_host and not handle.plan.circuit_streamed
    handle.release()


def test_a_test_key_made_where_its_circuit_streams_drops_keygens_resident_circuit(small_key, small_pce, monkeypatch):
    """Keygen reads the circuit's matrices on the device; where the plan streams the circuit by
    rows (its matrices do not fit beside the key), that resident copy is freed once the key is
    made and the first partition loads the circuit streamed, as for a key read from a file."""
    from cuzk_plugin.backends.cpu.keygen import input_sums, qap_from_pce
    from cuzk_plugin.engine.device_key import DeviceKey

    key, _, inputs, aux = small_key
    mapped = MappedCircuit.open(small_pce)
    footprint = CircuitFootprint(resident=50 << 20, streamed=1 << 20)  # matrices far beyond the room
    monkeypatch.setattr(CircuitFootprint, "of", classmethod(lambda cls, pce: footprint))

    class MakesKeys(FakeStreamingBackend):
        def __init__(self, free: int):
            super().__init__(free)
            self.released: list[bool] = []

        def load_circuit(self, pce, device: int = 0, *, streamed: bool = False):
            circuit = super().load_circuit(pce, device, streamed=streamed)
            release = circuit.release
            circuit.release = lambda: (self.released.append(streamed), release())  # type: ignore[method-assign]
            return circuit

        def generate_srs(self, circuit, secrets):
            return FakeSrs(key, key.vectors_nbytes, VECTORS), input_sums(qap_from_pce(circuit.circuit, secrets))

    counts = key.counts()
    shape = PartitionShape.of_key(counts)
    budget = (CONTEXT_BYTES + shape.upload_bytes(True) + shape.compute_bytes(TEST_CHUNK, False, True, roomy=False)
              + sum(vector_bytes(counts).values()) + footprint.streamed)
    backend = MakesKeys(free=1 << 40)
    (lane, _) = lanes_of(backend, budget)
    made = DeviceKey.draw("small-test-key", mapped)
    handle = lane.load_srs(made)
    plan = handle.plan
    assert plan is not None and plan.circuit_streamed and plan.all_resident and fits(plan)
    assert backend.loads == [False] and backend.released == [False]  # keygen's copy, freed
    part = on_lane(lane, handle, WitnessPartition(mapped, inputs, aux))
    assert backend.loads == [False, True] and isinstance(part, WitnessPartition)
    handle.release()


def test_a_test_key_preloaded_plans_with_its_filecoin_circuit_and_loads_it(small_key, tmp_path):
    """PreloadSRS of `porep-32g-test-key` plans with the pre-compiled `porep-32g` circuit (the
    one its partitions bring), not with no circuit at all, and loads that circuit on the lane
    then, so that the first proof does not wait for it; a partition's load leaves it to the
    partition."""
    from types import SimpleNamespace

    from cuzk_plugin.engine.key_supply import KeySupply

    _, r1cs, _, _ = small_key
    pce = precompile_r1cs(r1cs, "porep-32g")
    save_pce(tmp_path / "pce-porep-32g.pce", pce)
    seen, loaded = [], []
    handle = SimpleNamespace(circuit=lambda mapped: loaded.append(mapped.circuit.digest), release=lambda: None)
    lane = SimpleNamespace(load_srs=lambda key, circuit_id, circuit: (seen.append((circuit_id, circuit)), handle)[1])
    supply = SimpleNamespace(param_cache=tmp_path)
    assert KeySupply.loader(supply, lane, "porep-32g-test-key")(object()) is handle  # type: ignore[arg-type]
    assert seen == [("porep-32g-test-key", CircuitFootprint.of(pce))] and loaded == [pce.digest]
    KeySupply.loader(supply, lane, "porep-32g-test-key", part=object())(object())  # type: ignore[arg-type]
    assert loaded == [pce.digest]


def test_the_budget_counts_one_copy_of_a_streamed_key(small_key, tmp_path, kilobyte_keys):
    """While lanes stream a key from its page-locked host copy, the .params file's mapping is not
    counted again, nor the lanes' device copies; dropping the last lane's copy frees the host
    copy, and the mapping counts once more."""
    from cuzk_plugin.engine.srs import SrsManager
    from cuzk_plugin.formats.params import ProvingKey

    key, *_ = small_key
    path = tmp_path / "small.params"
    key.save(path)
    mapped = ProvingKey.open(path)
    backend = FakeStreamingBackend(free=1 << 40)
    lanes = lanes_of(backend, budget_streaming_all_but(key, ("h",)))
    entry = SrsEntry("small", path=path, key=mapped)
    assert entry.warm_bytes == path.stat().st_size
    entry.handles = {lane.name: lane.load_srs(mapped, circuit_id="small") for lane in lanes}
    assert entry.warm_bytes == 0 and entry.host_bytes == mapped.vectors_nbytes and entry.hot_bytes == 0
    manager = SrsManager(lambda cid: None, budget_bytes=1 << 40, min_idle_s=0, run_blocking=None, generate=None)  # type: ignore[arg-type]
    assert manager._drop_copy(entry, lanes[0].name) == 0  # a device copy: no host memory freed
    assert manager._drop_copy(entry, lanes[1].name) == mapped.vectors_nbytes - path.stat().st_size
    assert entry.warm_bytes == path.stat().st_size and entry.host_bytes == 0


def test_a_test_key_the_plan_streams_is_made_into_host_memory(small_key, small_pce, kilobyte_keys):
    """A TEST key made on a lane too small to hold it whole is made straight into host memory
    (generate_srs to_host: the device then holds one vector at a time) and its copy handed to the
    lanes; on a lane that holds it whole it is made on the device."""
    from cuzk_plugin.backends.cpu.keygen import input_sums, qap_from_pce
    from cuzk_plugin.engine.device_key import DeviceKey

    key, *_ = small_key

    class MakesIntoHost(FakeStreamingBackend):
        keygen_into_host = True

        def __init__(self, free: int):
            super().__init__(free)
            self.to_host: list[bool] = []

        def generate_srs(self, circuit, secrets, *, to_host: bool = False):
            self.to_host.append(to_host)
            return FakeSrs(key, key.vectors_nbytes, VECTORS), input_sums(qap_from_pce(circuit.circuit, secrets))

        def host_key(self, k, device: int = 0):
            return super().host_key(k.inner if isinstance(k, FakeSrs) else k, device)

    shape = PartitionShape.of_key(key.counts())
    footprint = CircuitFootprint.of(MappedCircuit.open(small_pce).circuit)
    whole = (CONTEXT_BYTES + key.vectors_nbytes + min(footprint.resident, footprint.streamed) + shape.upload_bytes(True)
             + shape.compute_bytes(TEST_CHUNK, False, True, roomy=False))
    for budget, streams in ((1 << 40, False), (whole - 1, True)):
        backend = MakesIntoHost(free=1 << 40)
        (lane, _) = lanes_of(backend, budget)
        handle = lane.load_srs(DeviceKey.draw("small-test-key", MappedCircuit.open(small_pce)))
        assert handle.plan is not None and (not handle.plan.all_resident) == streams
        assert backend.to_host == [streams] and len(backend.host_copies) == int(streams)
        handle.release()


def test_a_refusal_says_whether_the_key_would_fit_without_the_other_keys_copies():
    """The planner's refusal carries its figures: freeing other keys' copies helps only where
    the key fits the lane alone."""
    alone = plan_residency("porep-32g", "l", POREP_32G, available_bytes=26 * GB, in_flight=2, min_in_flight=1)
    assert alone.resident == () and fits(alone)
    with pytest.raises(DeviceMemoryTooSmall) as beside:
        plan_residency("porep-32g", "l", POREP_32G, available_bytes=26 * GB, in_flight=2, min_in_flight=1,
                       other_resident_bytes=10 * GB)
    assert beside.value.fits_alone and beside.value.other_resident_bytes == 10 * GB
    with pytest.raises(DeviceMemoryTooSmall) as small:
        plan_residency("porep-32g", "l", POREP_32G, available_bytes=16 * GB, in_flight=2, min_in_flight=1,
                       other_resident_bytes=1 * GB)
    assert not small.value.fits_alone and small.value.need_bytes > 16 * GB


async def test_a_key_without_room_beside_other_keys_copies_frees_the_idle_one_or_waits(small_key, tmp_path):
    """A key whose plan finds no room on a lane beside another key's copy there, where it would
    fit alone, has that copy released once it is idle (waiting while a partition proves with
    it); a key too large for the lane alone is refused without touching the other copy."""
    import asyncio

    from cuzk_plugin.engine.circuits import KeySource
    from cuzk_plugin.engine.srs import SrsManager

    key, *_ = small_key
    for name in ("a", "b", "c"):
        key.save(tmp_path / f"{name}.params")
    released: list[str] = []

    class Copy:
        nbytes = 1

        def __init__(self, name: str):
            self.name = name

        def release(self) -> None:
            released.append(self.name)

    def load_of(name: str, need: int):
        def load(_key):  # a lane of 10 bytes; another key's copy there holds 5
            others = 5 if manager.resident_on("cuda:0") else 0
            if need + others > 10:
                raise DeviceMemoryTooSmall(f"no room for {name}", need_bytes=need + others, available_bytes=10,
                                           other_resident_bytes=others)
            return Copy(name)
        return load

    async def run_blocking(fn, *args):
        return fn(*args)

    manager = SrsManager(lambda cid: KeySource(cid, tmp_path / f"{cid}.params"), budget_bytes=1 << 40, min_idle_s=0,
                         run_blocking=run_blocking, generate=None)  # type: ignore[arg-type]
    await manager.hot("a", "cuda:0", load_of("a", 8))
    manager.add_ref("a", "cuda:0")  # a partition proves with a's copy: b waits for it
    waiting = asyncio.create_task(manager.hot("b", "cuda:0", load_of("b", 8)))
    await asyncio.sleep(0.05)
    assert not waiting.done() and released == []
    manager.drop_ref("a", "cuda:0")
    _, copy = await asyncio.wait_for(waiting, 5)
    assert copy.name == "b" and released == ["a"] and [s.circuit_id for s in manager.resident_on("cuda:0")] == ["b"]
    with pytest.raises(DeviceMemoryTooSmall, match="no room for c"):
        await manager.hot("c", "cuda:0", load_of("c", 20))
    assert released == ["a"]


def test_a_lane_measures_its_link_and_a_failed_measurement_costs_nothing(caplog):
    """The link is measured once a lane (LinkBandwidth); a backend without the measure, or one
    whose measurement fails, gives 0 (not measured) and a warning, never a lost lane."""
    fake, devices = FakeStreamingBackend(free=1 << 40), FakeStreamingBackend(free=1 << 40).devices()
    with caplog.at_level("INFO", logger="cuzk_plugin.engine.lanes"):
        assert link_bandwidth(fake, devices[0]) == FakeStreamingBackend.LINK
        assert link_bandwidth(fake, devices[1]) == 0.0
        assert link_bandwidth(CpuBackend(), devices[0]) == 0.0
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert ("INFO", "lane fake:0: host -> device link 25.5 GB/s from page-locked memory (measured)") in lines
    assert ("WARNING", "lane fake:1: the host -> device link could not be measured (cz_link_bandwidth: out of memory); "
                       "plans assume 54 GB/s") in lines
    assert len(lines) == 2  # the cpu backend has no link to measure: nothing said
    caplog.clear()
    with caplog.at_level("INFO", logger="cuzk_plugin.engine.lanes"):
        for nonsense in (0.0, float("nan")):
            fake.LINK = nonsense
            assert link_bandwidth(fake, devices[0]) == 0.0
    assert [r.levelname for r in caplog.records] == ["WARNING", "WARNING"]
    assert "the measure gave nan bytes a second" in caplog.records[1].getMessage()
