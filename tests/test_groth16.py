"""Groth16 end to end on the core circuit shapes: proofs verify; tampering, wrong inputs and
foreign partitions are refused; fixed r, s give the same bytes on every available backend."""

import random

import numpy as np
import pytest

from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.backends.registry import available_backends, get_backend
from cuzk_plugin.bls12_381.fields import R, limbs_to_ints
from cuzk_plugin.circuit.examples import CORE_CIRCUITS, filecoin_like
from cuzk_plugin.circuit.r1cs import synthesize
from cuzk_plugin.errors import CircuitError, EncodingError
from cuzk_plugin.formats.proof import PROOF_BYTES, Proof, decode_proofs, encode_proofs
from cuzk_plugin.groth16.prover import prove
from cuzk_plugin.groth16.setup import setup
from cuzk_plugin.groth16.verifier import batch_verify, prepare_inputs, verify

cpu = CpuBackend()


@pytest.fixture(scope="module", params=sorted(CORE_CIRCUITS))
def circuit(request):
    """(name, key, builder) per core shape; one setup per shape."""
    build = CORE_CIRCUITS[request.param]
    r1cs, _, _ = build(0).finish()
    return request.param, setup(r1cs), build


def _instance(build, seed):
    cs = build(seed)
    r1cs, inputs, aux = cs.finish()
    return synthesize(r1cs, inputs, aux), limbs_to_ints(inputs)[1:]


def test_proof_verifies_and_wrong_input_does_not(circuit, seed):
    name, key, build = circuit
    part, public = _instance(build, seed)
    proof = prove(key, part, cpu)
    assert verify(key.vk, proof, public), name
    assert verify(key.vk, Proof.from_bytes(proof.to_bytes()), public)
    for i in range(len(public)):
        wrong = list(public)
        wrong[i] = (wrong[i] + 1) % R
        assert not verify(key.vk, proof, wrong), f"{name}: input {i} changed but proof accepted"


def test_any_changed_byte_is_refused(circuit, seed):
    name, key, build = circuit
    part, public = _instance(build, seed)
    blob = prove(key, part, cpu).to_bytes()
    rnd = random.Random(seed)
    for pos in range(PROOF_BYTES):
        bad = bytearray(blob)
        bad[pos] ^= 1 << rnd.randrange(8)
        try:
            accepted = verify(key.vk, Proof.from_bytes(bytes(bad)), public)
        except EncodingError:
            accepted = False
        assert not accepted, f"{name}: proof with byte {pos} changed was accepted"


def test_fixed_randomness_is_deterministic_on_every_backend(circuit, seed):
    _name, key, build = circuit
    part, _public = _instance(build, seed)
    r, s = random.Random(seed).randrange(R), random.Random(seed + 1).randrange(R)
    reference = prove(key, part, cpu, r=r, s=s).to_bytes()
    assert prove(key, part, cpu, r=r, s=s).to_bytes() == reference
    for name in available_backends():
        assert prove(key, part, get_backend(name), r=r, s=s).to_bytes() == reference, name
    assert prove(key, part, cpu).to_bytes() != reference  # fresh r, s differ


def test_batch_verify_and_multi_partition_bytes():
    r1cs, _, _ = filecoin_like(64, seed=0).finish()
    key = setup(r1cs)
    proofs, publics = [], []
    for k in range(3):
        r1cs, inputs, aux = filecoin_like(64, seed=k + 10).finish()
        proofs.append(prove(key, synthesize(r1cs, inputs, aux), cpu))
        publics.append(limbs_to_ints(inputs)[1:])
    blob = encode_proofs(proofs)
    assert len(blob) == 3 * PROOF_BYTES
    decoded = decode_proofs(blob)
    assert batch_verify(key.vk, decoded, publics)
    assert not batch_verify(key.vk, decoded, [publics[0], publics[2], publics[1]])
    assert not batch_verify(key.vk, [decoded[0], decoded[1], decoded[1]], publics)
    # The inputs' sums made ahead (as the engine does while the GPU proves) verify the same way,
    # and bind each proof to its own inputs.
    prepared = [prepare_inputs(key.vk, x) for x in publics]
    assert batch_verify(key.vk, decoded, publics, prepared)
    assert not batch_verify(key.vk, decoded, publics, [prepared[0], prepared[2], prepared[1]])
    with pytest.raises(ValueError, match="3 proofs but 3 input vectors and 2 prepared"):
        batch_verify(key.vk, decoded, publics, prepared[:2])
    with pytest.raises(EncodingError, match="not a positive multiple of 192"):
        decode_proofs(blob[:-1])


def test_malformed_calls_raise():
    r1cs, inputs, aux = CORE_CIRCUITS["with_constants"](0).finish()
    key = setup(r1cs)
    proof = prove(key, synthesize(r1cs, inputs, aux), cpu)
    with pytest.raises(ValueError, match="expects 2 public inputs, got 1"):
        verify(key.vk, proof, [1])
    with pytest.raises(ValueError, match="not a canonical field element"):
        verify(key.vk, proof, [R, 0])
    other, o_in, o_aux = CORE_CIRCUITS["aux_only"](0).finish()
    with pytest.raises(ValueError, match="partition does not match the proving key"):
        prove(key, synthesize(other, o_in, o_aux), cpu)


def test_unsatisfied_witness_names_the_constraint():
    r1cs, inputs, aux = CORE_CIRCUITS["aux_only"](0).finish()
    aux = aux.copy()
    aux[3, 0] ^= np.uint64(1)
    with pytest.raises(CircuitError, match="does not satisfy constraint 2"):
        synthesize(r1cs, inputs, aux)


def test_witness_partitions_are_checked_against_the_key_by_their_circuit():
    """A WitnessPartition's needed counts come from its circuit (summed once per circuit); one of
    another circuit is refused before any work."""
    from cuzk_plugin.circuit.pce_record import precompile_r1cs
    from cuzk_plugin.formats.partition import WitnessPartition
    from cuzk_plugin.formats.pce import MappedCircuit
    from cuzk_plugin.groth16.prover import check_shapes

    r1cs, inputs, aux = CORE_CIRCUITS["with_constants"](0).finish()
    key = setup(r1cs)
    mine = WitnessPartition(MappedCircuit(precompile_r1cs(r1cs, "mine"), "mine.pce"), inputs, aux)
    check_shapes(key, mine)
    check_shapes(key, mine)  # the circuit's counts, now from the cache
    other, o_in, o_aux = CORE_CIRCUITS["aux_only"](0).finish()
    theirs = WitnessPartition(MappedCircuit(precompile_r1cs(other, "theirs"), "theirs.pce"), o_in, o_aux)
    with pytest.raises(ValueError, match="partition does not match the proving key"):
        check_shapes(key, theirs)
