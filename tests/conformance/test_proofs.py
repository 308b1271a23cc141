"""Full proofs on the core circuit shapes: byte-identical to the cpu backend with fixed r, s;
valid with fresh r, s; the SRS handle reused across partitions; bad keys refused on load; a
WitnessPartition on a streamed circuit proves what it does on the resident circuit."""

from __future__ import annotations

import dataclasses
import inspect
import random

import numpy as np
import pytest

from cuzk_plugin.bls12_381.fields import R, limbs_to_ints
from cuzk_plugin.circuit.examples import CORE_CIRCUITS, filecoin_like
from cuzk_plugin.circuit.pce_record import precompile_r1cs
from cuzk_plugin.circuit.r1cs import synthesize
from cuzk_plugin.errors import EncodingError
from cuzk_plugin.formats.partition import WitnessPartition
from cuzk_plugin.groth16.prover import assemble, prove
from cuzk_plugin.groth16.setup import setup
from cuzk_plugin.groth16.verifier import verify
from tests.conformance.checks import check_proof_bytes
from tests.conformance.test_r1cs_eval import load_streamed

CIRCUITS = dict(CORE_CIRCUITS)
#: Large enough for a 2^10 domain and an MSM window width above the minimum.
CIRCUITS["filecoin_like_1000"] = lambda seed=0: filecoin_like(1000, seed)
_KEYS: dict[str, object] = {}


def _key(name: str):
    """One setup per circuit shape for the session (setup is the slow part)."""
    if name not in _KEYS:
        r1cs, _, _ = CIRCUITS[name](0).finish()
        _KEYS[name] = setup(r1cs)
    return _KEYS[name]


def _instance(name: str, seed: int):
    r1cs, inputs, aux = CIRCUITS[name](seed).finish()
    return synthesize(r1cs, inputs, aux), limbs_to_ints(inputs)[1:]


@pytest.mark.parametrize("circuit", sorted(CIRCUITS))
def test_proof_bytes_match_cpu_with_fixed_randomness(backend, seed, circuit):
    part, _ = _instance(circuit, seed)
    rnd = random.Random(seed)
    check_proof_bytes(backend, _key(circuit), part, rnd.randrange(R), rnd.randrange(R))


@pytest.mark.parametrize("circuit", sorted(CIRCUITS))
def test_proof_with_fresh_randomness_verifies(backend, seed, circuit):
    key = _key(circuit)
    part, public = _instance(circuit, seed)
    proof = prove(key, part, backend)
    assert verify(key.vk, proof, public), f"{backend.name}: proof of {circuit} does not verify"
    if public:
        wrong = [(public[0] + 1) % R, *public[1:]]
        assert not verify(key.vk, proof, wrong), f"{backend.name}: {circuit} proof accepted a wrong input"


def test_resident_srs_serves_several_partitions(backend, seed):
    """load_srs once, then prove_start for two partitions before finishing either."""
    key = _key("filecoin_like_1000")
    srs = backend.load_srs(key)
    try:
        instances = [_instance("filecoin_like_1000", seed + k) for k in range(2)]
        pending = [backend.prove_start(srs, part) for part, _ in instances]
        sums = [backend.prove_finish(p) for p in pending]
    finally:
        srs.release()
    for (_part, public), s in zip(instances, sums, strict=True):
        proof = assemble(key.vk, s, random.Random(seed).randrange(R), random.Random(seed + 7).randrange(R))
        assert verify(key.vk, proof, public)


def test_load_srs_refuses_a_point_off_the_curve(backend):
    key = _key("aux_only")
    h = np.array(key.h, copy=True)
    h[0, -1] ^= 1  # last byte of y: still below p, no longer on the curve
    broken = dataclasses.replace(key, h=h)
    with pytest.raises(EncodingError, match=r"h\[0\]"):
        backend.load_srs(broken).release()


def test_witness_partition_on_a_streamed_circuit_proves_the_resident_proof(backend, seed):
    """The same assignment as a WitnessPartition of the circuit loaded resident, loaded
    streamed in chunks of 7 rows (~150 chunks) and, where the backend takes a chunk size,
    resident in chunks of 7 (a, b, c made chunk by chunk into the NTT's rows, zero-padded to
    the domain): the same proof bytes with the same r and s, and the proof verifies."""
    key = _key("filecoin_like_1000")
    r1cs, inputs, aux = CIRCUITS["filecoin_like_1000"](seed).finish()
    pce = precompile_r1cs(r1cs, "filecoin_like_1000")
    assert pce.num_constraints % 7
    rnd = random.Random(seed)
    r, s = rnd.randrange(R), rnd.randrange(R)
    loads = [lambda: backend.load_circuit(pce), lambda: load_streamed(backend, pce, 7)[0]]
    if "chunk_rows" in inspect.signature(backend.load_circuit).parameters:
        loads.append(lambda: backend.load_circuit(pce, chunk_rows=7))
    proofs = []
    for load in loads:
        handle = load()
        try:
            proofs.append(prove(key, WitnessPartition(handle, inputs, aux), backend, r=r, s=s))
        finally:
            handle.release()
    for other in proofs[1:]:
        assert other.to_bytes() == proofs[0].to_bytes()
    assert verify(key.vk, proofs[-1], limbs_to_ints(inputs)[1:])
