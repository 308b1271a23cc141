"""Keys streamed from a page-locked host copy: every residency plan proves the same five sums as
the all-resident key (so the same proof bytes for the same r, s), on synthesized and witness
partitions, with chunks that split every vector unevenly, under a memory limit that forces the
MSMs in turn; host copies made from a file's raw vectors or from a device-made key."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from cuzk_plugin.backends.cuda.backend import SRS_VECTORS
from cuzk_plugin.bls12_381.fields import limbs_to_ints
from cuzk_plugin.circuit.examples import filecoin_like
from cuzk_plugin.circuit.pce_record import precompile_r1cs
from cuzk_plugin.circuit.r1cs import synthesize
from cuzk_plugin.errors import EncodingError
from cuzk_plugin.formats.params import ProvingKey, SetupSecrets
from cuzk_plugin.formats.partition import WitnessPartition
from cuzk_plugin.groth16.bench_circuit import BenchSecrets, check_proof, verifying_key
from cuzk_plugin.groth16.prover import prove
from cuzk_plugin.groth16.setup import setup
from cuzk_plugin.groth16.verifier import verify

pytestmark = pytest.mark.gpu

#: Plans forced below: all resident, each vector alone streamed, all streamed.
PLANS = [SRS_VECTORS] + [tuple(v for v in SRS_VECTORS if v != s) for s in SRS_VECTORS] + [()]


@pytest.fixture(scope="module")
def keyed():
    def builder(seed):
        return filecoin_like(1 << 10, seed=seed)

    shape, _, _ = builder(0).finish()
    key = setup(shape)
    r1cs, inputs, aux = builder(7).finish()
    return key, synthesize(r1cs, inputs, aux), inputs


def sums_of(cuda, srs, part):
    got = cuda.prove_finish(pending := cuda.prove_start(srs, part))
    return got, pending.timings_ms


def assert_same_sums(got, want):
    for field in SRS_VECTORS:
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)


@pytest.mark.parametrize("resident", PLANS, ids=lambda r: "+".join(r) or "none")
def test_every_plan_proves_the_resident_sums(cuda, keyed, resident):
    key, part, _ = keyed
    want_srs = cuda.load_srs(key)
    host = cuda.host_key(key)
    # 97 points a chunk: every vector splits into several chunks and a short last one.
    srs = cuda.load_srs(host, resident=resident, stream_chunk=97)
    try:
        assert srs.resident == resident
        assert srs.nbytes == sum(getattr(key, v).nbytes for v in resident)
        want, _ = sums_of(cuda, want_srs, part)
        got, _ = sums_of(cuda, srs, part)
        assert_same_sums(got, want)
    finally:
        srs.release()
        want_srs.release()
        host.release()


def test_streamed_proofs_verify_and_a_host_copy_serves_two_keys(cuda, keyed):
    key, part, inputs = keyed
    host = cuda.host_key(key)
    assert host.nbytes == key.vectors_nbytes  # the device layout is as large as the raw one
    one = cuda.load_srs(host, resident=("h", "b_g2"), stream_chunk=1 << 8)
    two = cuda.load_srs(host, resident=(), stream_chunk=1 << 12)
    try:
        for srs in (one, two):
            proof = prove(key, part, cuda, srs=srs)
            assert verify(key.vk, proof, limbs_to_ints(inputs)[1:])
        for name in SRS_VECTORS:  # a streamed vector reads back from the host copy as the file has it
            np.testing.assert_array_equal(two.read(name), key.vector_limbs(name), err_msg=name)
    finally:
        one.release()
        two.release()
        host.release()


def test_a_key_loaded_with_streamed_vectors_owns_its_host_copy(cuda, keyed):
    key, part, _ = keyed
    want_srs = cuda.load_srs(key)
    srs = cuda.load_srs(key, resident=("a",), stream_chunk=50)
    try:
        assert srs.owns_host and srs.host is not None and not srs.host.released
        assert_same_sums(sums_of(cuda, srs, part)[0], sums_of(cuda, want_srs, part)[0])
    finally:
        srs.release()
        want_srs.release()
    assert srs.host.released


def test_memory_limit_runs_the_msms_in_turn_with_the_same_sums(cuda, keyed):
    key, part, _ = keyed
    host = cuda.host_key(key)
    srs = cuda.load_srs(host, resident=("l",), stream_chunk=64)
    try:
        want, times = sums_of(cuda, srs, part)
        assert times["msm_in_turn"] == 0
        cuda.set_memory_limit(1)  # no room beside what the process holds: one MSM at a time
        got, times = sums_of(cuda, srs, part)
        assert times["msm_in_turn"] == 1 and times["msm_paired"] == 0
        assert_same_sums(got, want)
    finally:
        cuda.set_memory_limit(0)
        srs.release()
        host.release()


def _device_used(cuda) -> int:
    """Device bytes in use now (every process's): a limit is set relative to it."""
    free, total = cuda.device_memory()
    return total - free


class _OtherAllocation:
    """Device memory taken behind the library's back through the driver API (the primary
    context the runtime shares): to the library, a process that started after it."""

    def __init__(self, device: int, nbytes: int):
        self.drv = ctypes.CDLL("libcuda.so.1")
        self.ptr = ctypes.c_uint64(0)
        ctx = ctypes.c_void_p()
        for name, args in (
            ("cuInit", (0,)),
            ("cuDevicePrimaryCtxRetain", (ctypes.byref(ctx), device)),
            ("cuCtxPushCurrent_v2", (ctx,)),
            ("cuMemAlloc_v2", (ctypes.byref(self.ptr), ctypes.c_size_t(nbytes))),
        ):
            assert getattr(self.drv, name)(*args) == 0, f"{name} failed"
        self.device = device

    def free(self) -> None:
        assert self.drv.cuMemFree_v2(self.ptr) == 0
        ctx = ctypes.c_void_p()
        self.drv.cuCtxPopCurrent_v2(ctypes.byref(ctx))
        self.drv.cuDevicePrimaryCtxRelease_v2(self.device)


def test_another_process_growth_is_not_counted_as_ours(cuda, keyed):
    """Another process that takes 5 GiB of the device after the library started costs the
    library at most 1 GiB of its limit's room: just above the least limit at which the five MSMs
    run side by side, plus 1 GiB, they still do (same sums). Before, all of the device's growth
    counted as the library's, and every partition ran in the narrowest plan. The limit still
    binds what the library holds itself (1 byte: in turn)."""
    key, part, _ = keyed
    host = cuda.host_key(key)
    srs = cuda.load_srs(host, resident=("a",), stream_chunk=300)
    other_bytes = 5 << 30
    free, _ = cuda.device_memory()
    if free < other_bytes + (8 << 30):
        pytest.skip(f"{free / 2**30:.1f} GiB free: the test takes {other_bytes >> 30} GiB and leaves room")
    other = None
    try:
        want, _ = sums_of(cuda, srs, part)
        hi, _, _ = _bisect_limit(cuda, srs, part, want)
        cuda.set_memory_limit(hi + (1 << 30) + (64 << 20))
        other = _OtherAllocation(cuda.device, other_bytes)
        got, times = sums_of(cuda, srs, part)
        assert_same_sums(got, want)
        assert times["msm_in_turn"] == 0, f"another process's 5 GiB took more than 1 GiB of a {hi} B limit's room"
        cuda.set_memory_limit(1)
        got, times = sums_of(cuda, srs, part)
        assert times["msm_in_turn"] == 1
        assert_same_sums(got, want)
    finally:
        if other is not None:
            other.free()
        cuda.set_memory_limit(0)
        srs.release()
        host.release()


def _bisect_limit(cuda, srs, part, want, stop=None) -> tuple[int, int | None, dict[int, tuple[int, int]]]:
    """Memory limits bisected between 1 byte (the MSMs all alone, in turn) and one where all five
    run side by side, to 1 MiB, every proof on the way giving ``want``: the least limit seen
    side by side, the first limit whose timings ``stop`` accepts (None: none did, or no
    ``stop``), and (msm_in_turn, msm_paired) at each limit tried."""
    seen: dict[int, tuple[int, int]] = {}
    lo, hi = 1, _device_used(cuda) + (4 << 30)  # in turn at lo; side by side at hi
    while hi - lo > (1 << 20):
        mid = (lo + hi) // 2
        cuda.set_memory_limit(mid)
        got, times = sums_of(cuda, srs, part)
        assert_same_sums(got, want)
        seen[mid] = in_turn, _ = int(times["msm_in_turn"]), int(times["msm_paired"])
        if stop is not None and stop(times):
            return hi, mid, seen
        lo, hi = (mid, hi) if in_turn else (lo, mid)
    return hi, None, seen


def _pairing_limit(cuda, srs, part, want) -> int:
    """A memory limit at which one partition in flight runs its MSMs in turn but two of them
    together (_bisect_limit)."""
    _, paired_at, seen = _bisect_limit(cuda, srs, part, want,
                                       stop=lambda times: times["msm_in_turn"] and times["msm_paired"])
    assert paired_at is not None, f"no limit paired two MSMs: {seen}"
    return paired_at


def test_msms_pair_where_two_fit_but_not_five(cuda, keyed):
    """One partition in flight, a limit with room for two MSMs but not five: in turn, the H and
    L MSMs still run together (then B in G2 beside the last G1 ones where that fits too), the
    same sums. With two in flight they pair too where the room also holds the next partition's
    upload (this one's size, a few kB here)."""
    key, part, _ = keyed
    host = cuda.host_key(key)
    srs = cuda.load_srs(host, resident=("a",), stream_chunk=300)
    try:
        want, times = sums_of(cuda, srs, part)
        assert times["msm_in_turn"] == 0
        cuda.set_partitions_in_flight(1)
        paired_at = _pairing_limit(cuda, srs, part, want)
        cuda.set_partitions_in_flight(2)
        cuda.set_memory_limit(paired_at + (1 << 20))
        got, times = sums_of(cuda, srs, part)
        assert_same_sums(got, want)
        assert int(times["msm_in_turn"]) == 1 and int(times["msm_paired"]) >= 1
    finally:
        cuda.set_memory_limit(0)
        cuda.set_partitions_in_flight(2)
        srs.release()
        host.release()


def test_next_upload_goes_beside_the_h_msm_where_it_fits(cuda, keyed):
    """One partition in flight, room for the H and L MSMs together and the next partition's
    upload (a few kB here) but not for all five MSMs: each of four partitions started together
    hands the upload lock on beside its H MSM (2), not after its G1 MSMs (1), and all prove the
    sums of a roomy device. At 1 byte there is no such room: after the G1 MSMs."""
    key, part, _ = keyed
    host = cuda.host_key(key)
    srs = cuda.load_srs(host, resident=("a",), stream_chunk=300)
    try:
        want, _ = sums_of(cuda, srs, part)
        cuda.set_partitions_in_flight(1)
        for limit, handed_on in ((_pairing_limit(cuda, srs, part, want) + (1 << 20), 2), (1, 1)):
            cuda.set_memory_limit(limit)
            pending = [cuda.prove_start(srs, part) for _ in range(4)]
            for p in pending:
                assert_same_sums(cuda.prove_finish(p), want)
                assert p.timings_ms["msm_in_turn"] == 1, limit
                assert p.timings_ms["upload_handed_on"] == handed_on, (limit, p.timings_ms)
                assert p.timings_ms["upload_wait"] >= 0 and p.timings_ms["queue"] >= 0
    finally:
        cuda.set_memory_limit(0)
        cuda.set_partitions_in_flight(2)
        srs.release()
        host.release()


def test_a_bad_point_is_named_when_the_host_copy_is_made(cuda, keyed):
    key, _, _ = keyed
    b_g1 = np.array(key.b_g1)
    b_g1[5, 95] ^= 1  # y's last byte: off the curve
    bad = ProvingKey(vk=key.vk, h=key.h, l=key.l, a=key.a, b_g1=b_g1, b_g2=key.b_g2)
    with pytest.raises(EncodingError, match=r"b_g1\[5\]: not on the curve"):
        cuda.host_key(bad)


def test_witness_partitions_prove_with_a_streamed_key(cuda, keyed):
    """The witness path (a, b, c evaluated from the resident circuit) with the key streamed."""
    key, _, _ = keyed
    r1cs, inputs, aux = filecoin_like(1 << 10, seed=11).finish()
    pce = precompile_r1cs(r1cs, "residency-test")
    circuit = cuda.load_circuit(pce)
    host = cuda.host_key(key)
    resident, streamed = cuda.load_srs(key), cuda.load_srs(host, resident=(), stream_chunk=100)
    try:
        part = WitnessPartition(circuit, inputs, aux)
        assert_same_sums(sums_of(cuda, streamed, part)[0], sums_of(cuda, resident, part)[0])
    finally:
        streamed.release()
        resident.release()
        host.release()
        circuit.release()


def test_a_small_device_proves_one_partition_at_a_time_in_turn(cuda, keyed):
    """No room beside what the process holds (limit 1 byte) and one partition in flight: H first,
    in two buffers (C evaluated in B's room), the scalars after H, the MSMs in turn and in
    pieces; two witness partitions started together prove the sums of a roomy device."""
    key, _, _ = keyed
    r1cs, inputs, aux = filecoin_like(1 << 10, seed=13).finish()
    circuit = cuda.load_circuit(precompile_r1cs(r1cs, "small-device-test"))
    host = cuda.host_key(key)
    srs = cuda.load_srs(host, resident=("h", "a"), stream_chunk=200)
    try:
        part = WitnessPartition(circuit, inputs, aux)
        want, times = sums_of(cuda, srs, part)
        assert times["msm_in_turn"] == 0 and times["upload_handed_on"] == 0  # two in flight
        cuda.set_memory_limit(1)
        cuda.set_partitions_in_flight(1)
        pending = [cuda.prove_start(srs, part) for _ in range(2)]
        for p in pending:
            assert_same_sums(cuda.prove_finish(p), want)
            assert p.timings_ms["msm_in_turn"] == 1 and p.timings_ms["h_lean"] == 1
            assert p.timings_ms["upload_handed_on"] == 1  # B in G2 streams: the next one uploads beside it
    finally:
        cuda.set_memory_limit(0)
        cuda.set_partitions_in_flight(2)
        srs.release()
        host.release()
        circuit.release()


def test_device_made_key_moves_to_the_host_and_streams(cuda):
    """A key made on the device (a TEST key) copied to the host: the same sums streamed."""
    r1cs, inputs, aux = filecoin_like(1 << 10, seed=5).finish()
    circuit = cuda.load_circuit(precompile_r1cs(r1cs, "residency-keygen"))
    made, _ = cuda.generate_srs(circuit, SetupSecrets.draw())
    host = cuda.host_key(made)
    streamed = cuda.load_srs(host, resident=("h",), stream_chunk=33)
    try:
        part = synthesize(r1cs, inputs, aux)
        assert_same_sums(sums_of(cuda, streamed, part)[0], sums_of(cuda, made, part)[0])
    finally:
        streamed.release()
        host.release()
        made.release()
        circuit.release()


def test_bench_circuit_streamed_proofs_verify(cuda_bench):
    """The benchmark instance `kernels --op prove --resident ...` times, with its key streamed."""
    secrets = BenchSecrets.random()
    runs, _ = cuda_bench.bench_prove(12, 1, secrets.limbs(), resident=("h",), stream_chunk=1000)
    for run in runs:
        check = check_proof(verifying_key(secrets, 12, len(run.inputs), run.w_one), run.sums, run.inputs)
        assert check.verified and check.tampered_rejected
