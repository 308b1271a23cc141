"""Test keys made on the lanes from a pre-compiled circuit (engine/device_key.py): never written
to disk, one set of secrets for every lane, proofs that verify against the key's verifying key,
and the refusals (a lane whose copy differs, a host-made key above [srs] max_generated_log2)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cuzk_plugin.backends.cpu.backend import CpuBackend
from cuzk_plugin.backends.registry import probe
from cuzk_plugin.bls12_381.fields import limbs_to_ints
from cuzk_plugin.circuit.fast_cs import FastConstraintSystem
from cuzk_plugin.circuit.pce_record import record_circuit
from cuzk_plugin.config import load_config
from cuzk_plugin.engine.circuits import JobPlan, KeySource, ProviderRegistry
from cuzk_plugin.engine.device_key import DeviceKey
from cuzk_plugin.engine.engine import Engine
from cuzk_plugin.engine.types import JobStatus, ProofKind, ProofRequest
from cuzk_plugin.errors import ParamsError
from cuzk_plugin.formats.params import VerifyingKey
from cuzk_plugin.formats.pce import MappedCircuit
from cuzk_plugin.formats.proof import decode_proofs
from cuzk_plugin.groth16.verifier import batch_verify, verify
from tests.filecoin.porep.test_porep_pce import PceTask, small_filecoin_circuit

CIRCUIT_ID = "pce-small-test-key"


@dataclasses.dataclass(frozen=True)
class FixedPath:
    path: str

    def __call__(self) -> str:
        return self.path


class DeviceKeyProvider:
    kinds = (ProofKind.SYNTHETIC,)

    def __init__(self, pce_path, key_path):
        self.pce_path, self.key_path = str(pce_path), key_path

    def plan(self, request, param_cache):
        return JobPlan(CIRCUIT_ID, tuple(PceTask(self.pce_path, s) for s in (11, 12, 13)))

    def key_source(self, circuit_id, param_cache):
        if circuit_id != CIRCUIT_ID:
            return None
        return KeySource(CIRCUIT_ID, self.key_path, test_key=True, device_key=FixedPath(self.pce_path))


@pytest.fixture(scope="module")
def pce_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("pce") / "pce-small.pce"
    record_circuit(small_filecoin_circuit, path, "small")
    return path


def _engine(tmp_path, pce_file, backends, **srs):
    config = load_config(None, {"srs": {"param_cache": str(tmp_path), "allow_test_keys": True, **srs},
                                "daemon": {"status_listen": ""}, "synthesis": {"threads": 2},
                                "memory": {"total_budget": "4GiB", "safety_margin": 0}})
    key_path = tmp_path / f"{CIRCUIT_ID}.params"
    provider = DeviceKeyProvider(pce_file, key_path)
    return Engine(config, backends=backends, providers=ProviderRegistry([provider], load_plugins=False)), key_path


def _publics():
    out = []
    for seed in (11, 12, 13):
        cs = FastConstraintSystem()
        small_filecoin_circuit(cs, seed)
        out.append(limbs_to_ints(cs.finish()[1])[1:])
    return out


def _two_lanes(name: str) -> list:
    """Two lanes of a backend as the daemon builds them (OpenCL: one OpenclDevices of a backend
    a device; PoCL's one device stands for two GPUs)."""
    if name == "cpu":
        return [CpuBackend(), CpuBackend()]
    from cuzk_plugin.backends.opencl.backend import OpenclBackend
    from cuzk_plugin.backends.opencl.multi import OpenclDevices

    return [OpenclDevices([OpenclBackend(), OpenclBackend()])]


@pytest.mark.parametrize("backend", ["cpu", pytest.param("opencl", marks=pytest.mark.skipif(
    probe("opencl") is not None, reason=f"opencl unavailable: {probe('opencl')}"))])
async def test_engine_proves_with_a_key_made_on_each_lane(tmp_path, pce_file, backend):
    """Two lanes make their own copies from the same secrets; the proofs verify against the
    key's verifying key, a tampered one does not, and no key file is ever written."""
    engine, key_path = _engine(tmp_path, pce_file, _two_lanes(backend))
    await engine.start()
    try:
        await engine.preload(CIRCUIT_ID)  # a copy on both lanes
        res = await engine.prove(ProofRequest("device-key-1", ProofKind.SYNTHETIC))
        entry = engine.srs._entries[CIRCUIT_ID]
        key = entry.key
        assert isinstance(key, DeviceKey) and len(entry.handles) == 2
    finally:
        await engine.stop()
    assert res.status == JobStatus.COMPLETED, res.error_message
    assert not key_path.exists()
    assert VerifyingKey.load(key_path.with_suffix(".vk")).to_bytes() == key.vk.to_bytes()  # for clients
    proofs, publics = decode_proofs(res.proof), _publics()
    assert batch_verify(key.vk, proofs, publics)
    assert not verify(key.vk, proofs[0], publics[1])
    tampered = [*publics[0][:-1], publics[0][-1] + 1]
    assert not verify(key.vk, proofs[0], tampered)


def test_a_lane_whose_copy_differs_is_refused(pce_file):
    key = DeviceKey.draw(CIRCUIT_ID, MappedCircuit.open(pce_file))
    with pytest.raises(ParamsError, match="no lane has made it yet"):
        _ = key.vk
    _srs, sums = CpuBackend().generate_srs(CpuBackend().load_circuit(key.mapped.circuit), key.secrets)
    key.accept(sums, "cpu:0")
    key.accept(sums.copy(), "cpu:1")  # the same copy: accepted
    bad = sums.copy()
    bad[0, 0, 0] ^= 1
    with pytest.raises(ParamsError, match="differs from the other lanes"):
        key.accept(bad, "cpu:2")
    assert key.counts()["ic"] == key.mapped.circuit.num_inputs
    assert np.array_equal(key._input_sums, sums)


async def test_a_host_made_key_above_the_limit_is_refused(tmp_path, pce_file):
    engine, _key_path = _engine(tmp_path, pce_file, [CpuBackend()], max_generated_log2=4)
    await engine.start()
    try:
        res = await engine.prove(ProofRequest("device-key-2", ProofKind.SYNTHETIC))
    finally:
        await engine.stop()
    assert res.status == JobStatus.FAILED
    assert "max_generated_log2 = 4" in res.error_message and "made on the host" in res.error_message
