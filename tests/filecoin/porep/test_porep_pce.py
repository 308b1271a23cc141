"""The PoRep path on pre-compiled circuits: a partition's witness on the recorded circuit gives
the same a, b, c, assignments and densities as the reference synthesis, the proof made from a
WitnessPartition equals the reference path's proof byte for byte with the same r and s and
verifies, and a corrupted pre-compiled file in the param cache is extracted again."""

from __future__ import annotations

import dataclasses
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from cuzk_plugin.adapters.curio.porep.job import ensure_porep_pce, porep_partitions
from cuzk_plugin.adapters.curio.porep.provider import PorepPartitionTask
from cuzk_plugin.backends.cpu.backend import witness_to_synthesized
from cuzk_plugin.backends.registry import available_backends, get_backend
from cuzk_plugin.circuit.fast_cs import FastConstraintSystem
from cuzk_plugin.circuit.pce_record import record_circuit
from cuzk_plugin.circuit.r1cs import synthesize
from cuzk_plugin.engine.circuits import JobPlan, KeySource, ProviderRegistry
from cuzk_plugin.engine.types import ProofKind
from cuzk_plugin.filecoin.gadgets.boolean import alloc_bit, xor
from cuzk_plugin.filecoin.gadgets.num import alloc_num, inputize, pack_bits
from cuzk_plugin.filecoin.gadgets.poseidon import poseidon_hash
from cuzk_plugin.formats.partition import WitnessPartition
from cuzk_plugin.formats.pce import MappedCircuit, load_pce, pce_path, read_header
from cuzk_plugin.groth16.prover import prove
from cuzk_plugin.groth16.setup import setup
from cuzk_plugin.groth16.verifier import verify


def small_filecoin_circuit(cs, seed: int = 3) -> None:
    """Poseidon hashes (memoized: the second replays the first), bits, xors and a packing, and
    public inputs: a few thousand constraints with Filecoin's coefficient mix."""
    rng = np.random.default_rng(seed)
    nums = [alloc_num(cs, int(rng.integers(0, 1 << 62))) for _ in range(4)]
    h1 = poseidon_hash(cs, nums[:2])
    h2 = poseidon_hash(cs, nums[2:])
    inputize(cs, h1)
    bits = [alloc_bit(cs, bool(b)) for b in rng.integers(0, 2, 64)]
    mixed = [xor(cs, a, b.not_()) for a, b in zip(bits[:32], bits[32:], strict=True)]
    inputize(cs, pack_bits(cs, mixed + bits))
    inputize(cs, h2)


@pytest.mark.parametrize("backend_name", available_backends())
def test_witness_partition_proof_equals_reference_byte_for_byte(tmp_path, backend_name):
    ref_cs = FastConstraintSystem()
    small_filecoin_circuit(ref_cs)
    r1cs, inputs, aux = ref_cs.finish()
    path = tmp_path / "pce-small.pce"
    record_circuit(small_filecoin_circuit, path, "small")
    pce = load_pce(path)
    key = setup(r1cs)
    backend = get_backend(backend_name)
    r, s = 0x1234567, 0x7654321
    reference = prove(key, synthesize(r1cs, inputs, aux), backend, r=r, s=s)
    handle = backend.load_circuit(pce)
    try:
        got = prove(key, WitnessPartition(handle, inputs, aux), backend, r=r, s=s)
    finally:
        handle.release()
    assert got.to_bytes() == reference.to_bytes()
    public = [int.from_bytes(inputs[i].tobytes(), "little") for i in range(1, inputs.shape[0])]
    assert verify(key.vk, got, public)


def _task(c1: bytes, k: int, pce_cache: Path) -> PorepPartitionTask:
    """Partition k's task as the provider's plan makes it."""
    job = porep_partitions(c1)
    return PorepPartitionTask(job.partition(k), job.circuit_id, str(pce_cache))


@pytest.fixture(scope="module")
def reference_2kib_partition(reference_2kib):
    """The reference path's partition (a, b, c, assignments, densities) of the sealed 2 KiB C1:
    ~8 s, made once for both pool sizes (which only read it)."""
    return synthesize(*reference_2kib)


@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 3])
def test_porep_2k_witness_on_the_pce_equals_reference_synthesis(c1_bytes, reference_2kib_partition, porep_2k_pce_cache,
                                                                  processes, monkeypatch):
    # as a synthesis worker runs it: the witness (one process, or a forked pool of 3) written
    # straight into the block the engine maps, the small inputs copied into a second one
    from multiprocessing import shared_memory

    from cuzk_plugin.engine import workers
    from cuzk_plugin.engine.synthesis import SharedPartition, run_task

    monkeypatch.setattr(workers, "_task_processes", processes)
    ref_part = run_task(_task(c1_bytes, 0, porep_2k_pce_cache))
    assert [(name, block, offset) for name, block, offset, *_ in ref_part.layout] == [
        ("input_assignment", 1, 0), ("aux_assignment", 0, 0)]
    shared = SharedPartition(ref_part)
    part, public = shared.partition, ref_part.public_inputs
    assert isinstance(part, WitnessPartition) and isinstance(part.circuit, MappedCircuit)
    assert part.circuit.path == str(pce_path(porep_2k_pce_cache, "porep-2k"))
    ref = reference_2kib_partition
    assert public == porep_partitions(c1_bytes).public_inputs(0)
    from cuzk_plugin.backends.cpu.r1cs_eval import evaluate_r1cs, unsatisfied_rows

    got = witness_to_synthesized(part, *evaluate_r1cs(part.pce, part.z()))
    assert unsatisfied_rows(got.a, got.b, got.c).size == 0  # every recorded constraint holds
    for name in ("a", "b", "c", "input_assignment", "aux_assignment", "a_aux_density", "b_input_density",
                 "b_aux_density"):
        assert np.array_equal(np.asarray(getattr(got, name)), np.asarray(getattr(ref, name))), name
    del part, got
    shared.release()
    for name in ref_part.blocks:  # both blocks gone with the partition
        with pytest.raises(FileNotFoundError):
            shared_memory.SharedMemory(name=name)


@pytest.mark.parametrize("processes", [1, 2])
async def test_a_failing_task_is_reported_and_leaves_no_block_behind(c1_dict, porep_2k_pce_cache, processes):
    # a C1 whose Merkle path is corrupted fails in the witness, in a synthesis worker, after its
    # output block was made: the error crosses back naming the partition, challenge and part of
    # the circuit (it once broke the pool instead: the error did not unpickle), and the block goes
    import json

    from cuzk_plugin.engine.synthesis import SynthesisPool
    from cuzk_plugin.engine.workers import SHM_PREFIX
    from cuzk_plugin.filecoin.porep.witness_parts import WitnessMismatch

    proof = c1_dict["vanilla_proofs"]["StackedDrg2KiBV1"][0][1]
    proof["comm_d_proofs"]["data"]["Single"]["path"]["path"][0]["hashes"][0][4] ^= 0x10
    before = {p.name for p in Path("/dev/shm").glob(f"{SHM_PREFIX}*")}
    task = _task(json.dumps(c1_dict).encode(), 0, porep_2k_pce_cache)
    pool = SynthesisPool(1, processes)
    try:
        for _ in range(2):  # the same worker answers again: the pool was not broken
            with pytest.raises(WitnessMismatch, match=r"partition 0: .*challenge 1 .*comm_d inclusion") as err:
                await pool.run(task)
            assert err.value.partition == 0 and err.value.challenge == 1
    finally:
        pool.shutdown()
    assert {p.name for p in Path("/dev/shm").glob(f"{SHM_PREFIX}*")} == before


def test_the_key_supply_sizes_a_partitions_witness_block_ahead_from_the_circuits_header(c1_bytes, porep_2k_pce_cache):
    """The block PreloadSRS makes ahead (engine.host_blocks.prepare) is the one a partition
    writes its aux into: same size, or the pool would keep blocks nobody takes."""
    from concurrent.futures import ThreadPoolExecutor
    from multiprocessing import shared_memory

    from cuzk_plugin.adapters import builtin_providers
    from cuzk_plugin.config import load_config
    from cuzk_plugin.engine.key_supply import KeySupply
    from cuzk_plugin.engine.sched import PrioritySemaphore
    from cuzk_plugin.engine.synthesis import SharedPartition, run_task

    config = load_config(None, {"srs": {"param_cache": str(porep_2k_pce_cache)}, "gpus": {"backend": "cpu"}})
    with ThreadPoolExecutor(1) as io:
        keys = KeySupply(config, ProviderRegistry(builtin_providers(), load_plugins=False), porep_2k_pce_cache, [],
                         io_threads=io, synth_slots=PrioritySemaphore(1))
        ref = run_task(_task(c1_bytes, 0, porep_2k_pce_cache))
        aux_block = shared_memory.SharedMemory(name=ref.blocks[0])
        written = aux_block.size
        aux_block.close()
        SharedPartition(ref).release()
        assert keys.partition_blocks("porep-2k-test-key") == (written,)
        assert keys.partition_blocks("porep-2k") == (written,)
        assert keys.partition_blocks("porep-8m-test-key") == ()  # no circuit recorded: nothing made ahead


def test_disable_pce_takes_the_reference_path(c1_bytes, tmp_path, monkeypatch):
    monkeypatch.setenv("CUZK_DISABLE_PCE", "1")
    calls = []
    monkeypatch.setattr("cuzk_plugin.adapters.curio.porep.job.PorepPartition.synthesize",
                        lambda self: calls.append(self.index) or ("reference", []))
    part, _ = _task(c1_bytes, 0, tmp_path).synthesize()
    assert part == "reference" and calls == [0]
    assert not pce_path(tmp_path, "porep-2k").exists()


@pytest.mark.slow
def test_corrupted_pce_in_the_param_cache_is_extracted_again(porep_2k_pce_cache, tmp_path, caplog):
    # a copy of the shared recording (what ensure_porep_pce left there), then corrupted in place
    shutil.copyfile(pce_path(porep_2k_pce_cache, "porep-2k"), pce_path(tmp_path, "porep-2k"))
    path = ensure_porep_pce("porep-2k", tmp_path)
    assert path == str(pce_path(tmp_path, "porep-2k"))
    digest = read_header(path).digest
    raw = bytearray(Path(path).read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    Path(path).write_bytes(bytes(raw))
    with caplog.at_level(logging.INFO):
        again = ensure_porep_pce("porep-2k", tmp_path)
    assert again == path and load_pce(path).digest == digest
    assert any("digest" in r.getMessage() and "recording it again" in r.getMessage() for r in caplog.records)


def test_lane_loads_the_circuit_once_beside_its_srs(tmp_path):
    """A lane's key handle loads a WitnessPartition's circuit on first use only, counts it in
    its nbytes (the SRS budget) and releases it with the key; the proofs verify."""
    import threading

    from cuzk_plugin.backends.cpu.backend import CpuBackend
    from cuzk_plugin.engine.lanes import Lane, prove_step

    ref_cs = FastConstraintSystem()
    small_filecoin_circuit(ref_cs)
    r1cs, inputs, aux = ref_cs.finish()
    path = tmp_path / "pce-small.pce"
    record_circuit(small_filecoin_circuit, path, "small")
    key = setup(r1cs)
    backend = CpuBackend()
    loads = []
    real_load = backend.load_circuit
    backend.load_circuit = lambda pce, device=0: loads.append(pce.digest) or real_load(pce, device)
    lane = Lane("cpu:0", backend, backend.devices()[0])
    handle = lane.load_srs(key)
    srs_bytes = handle.nbytes
    part = WitnessPartition(MappedCircuit.open(path), inputs, aux)
    public = [int.from_bytes(inputs[i].tobytes(), "little") for i in range(1, inputs.shape[0])]
    for _ in range(2):
        proof, times = prove_step(lane, handle, part, key.vk, threading.Event())
        assert verify(key.vk, proof, public) and times.evaluate_s == 0.0
    assert len(loads) == 1 and handle.nbytes > srs_bytes
    handle.release()
    assert handle.nbytes == srs_bytes  # the circuit went with the key


def test_backend_without_load_circuit_gets_a_b_c_from_the_host(tmp_path):
    import threading

    from cuzk_plugin.backends.cpu.backend import CpuBackend
    from cuzk_plugin.engine.lanes import Lane, prove_step

    ref_cs = FastConstraintSystem()
    small_filecoin_circuit(ref_cs)
    r1cs, inputs, aux = ref_cs.finish()
    path = tmp_path / "pce-small.pce"
    record_circuit(small_filecoin_circuit, path, "small")
    key = setup(r1cs)

    class OldBackend(CpuBackend):
        load_circuit = None  # a backend that cannot evaluate matrices

    backend = OldBackend()
    lane = Lane("old:0", backend, backend.devices()[0])
    part = WitnessPartition(MappedCircuit.open(path), inputs, aux)
    handle = lane.load_srs(key)
    srs_bytes = handle.nbytes
    public = [int.from_bytes(inputs[i].tobytes(), "little") for i in range(1, inputs.shape[0])]
    for _ in range(2):
        proof, times = prove_step(lane, handle, part, key.vk, threading.Event())
        assert verify(key.vk, proof, public) and times.evaluate_s > 0
    assert handle.nbytes > srs_bytes  # the host copy, prepared once, counts with the key


def test_witness_partition_crosses_shared_memory(tmp_path):
    """A worker's WitnessPartition travels as its assignment alone; the engine side maps the
    circuit from the file the ref names (digest checked) and unlinks the block on release."""
    from multiprocessing import shared_memory

    from cuzk_plugin.engine.synthesis import SharedPartition, export_partition

    ref_cs = FastConstraintSystem()
    small_filecoin_circuit(ref_cs)
    _, inputs, aux = ref_cs.finish()
    path = tmp_path / "pce-small.pce"
    digest = record_circuit(small_filecoin_circuit, path, "small")
    ref = export_partition(WitnessPartition(MappedCircuit.open(path), inputs, aux), [7], 0.5)
    assert ref.pce_path == str(path) and ref.pce_digest == digest
    assert [name for name, *_ in ref.layout] == ["input_assignment", "aux_assignment"]
    shared = SharedPartition(ref)
    part = shared.partition
    assert isinstance(part, WitnessPartition) and part.pce.digest == digest
    assert np.array_equal(part.input_assignment, inputs) and np.array_equal(part.aux_assignment, aux)
    del part
    shared.release()
    with pytest.raises(FileNotFoundError):
        shared_memory.SharedMemory(name=ref.blocks[0])


# -- through the engine: worker processes, shared memory, a lane ---------------------------------
@dataclasses.dataclass(frozen=True)
class PceTask:
    """A partition of the small circuit as a witness on its pre-compiled file (runs in a worker)."""

    pce_path: str
    seed: int

    def synthesize(self):
        from cuzk_plugin.bls12_381.fields import limbs_to_ints

        cs = FastConstraintSystem()
        small_filecoin_circuit(cs, self.seed)
        _, inputs, aux = cs.finish()
        return WitnessPartition(MappedCircuit.open(self.pce_path), inputs, aux), limbs_to_ints(inputs)[1:]


class PceProvider:
    kinds = (ProofKind.SYNTHETIC,)

    def __init__(self, pce_path: Path, key_path: Path):
        self.pce_path, self.key_path = pce_path, key_path

    def plan(self, request, param_cache):
        return JobPlan("pce-small", tuple(PceTask(str(self.pce_path), s) for s in (11, 12, 13)))

    def key_source(self, circuit_id, param_cache):
        return KeySource("pce-small", self.key_path) if circuit_id == "pce-small" else None


@pytest.mark.parametrize("backend_name", available_backends())
async def test_engine_proves_witness_partitions(tmp_path, backend_name, caplog):
    """Three partitions computed in worker processes as WitnessPartitions reach the lane through
    shared memory; the lane loads the circuit once and the engine's self-verified proofs verify."""
    from cuzk_plugin.bls12_381.fields import limbs_to_ints
    from cuzk_plugin.config import load_config
    from cuzk_plugin.engine.engine import Engine
    from cuzk_plugin.engine.types import JobStatus, ProofRequest
    from cuzk_plugin.formats.proof import decode_proofs
    from cuzk_plugin.groth16.verifier import batch_verify

    ref_cs = FastConstraintSystem()
    small_filecoin_circuit(ref_cs)
    r1cs, _, _ = ref_cs.finish()
    pce_file = tmp_path / "pce-small.pce"
    record_circuit(small_filecoin_circuit, pce_file, "small")
    key_path = tmp_path / "pce-small.params"
    key = setup(r1cs)
    key.save(key_path)
    config = load_config(None, {"srs": {"param_cache": str(tmp_path)}, "daemon": {"status_listen": ""},
                                "synthesis": {"threads": 2}, "gpus": {"backend": backend_name},
                                "memory": {"total_budget": "4GiB", "safety_margin": 0}})
    engine = Engine(config, backends=[get_backend(backend_name)],
                    providers=ProviderRegistry([PceProvider(pce_file, key_path)], load_plugins=False))
    await engine.start()
    try:
        with caplog.at_level(logging.INFO, logger="cuzk_plugin.engine.lanes"):
            res = await engine.prove(ProofRequest("pce-engine-1", ProofKind.SYNTHETIC))
    finally:
        await engine.stop()
    assert res.status == JobStatus.COMPLETED, res.error_message
    loads = [r.getMessage() for r in caplog.records if r.getMessage().startswith("pce small: loaded for")]
    assert len(loads) == 1, loads  # once for the three partitions
    publics = []
    for seed in (11, 12, 13):
        cs = FastConstraintSystem()
        small_filecoin_circuit(cs, seed)
        publics.append(limbs_to_ints(cs.finish()[1])[1:])
    assert batch_verify(key.vk, decode_proofs(res.proof), publics)
