"""R1CS evaluation on the GPU (kernels/r1cs.cu): a, b, c of random Filecoin-like circuits
against Python integers, and a proof from a WitnessPartition (a, b, c never leave the device)
equal to the synthesized partition's proof with the same r, s, and verifying. A streamed circuit
(matrices in page-locked host memory, copied a chunk of rows at a time) gives the resident
circuit's a, b, c and proofs bit for bit, for chunks of one row up to more than the circuit."""

from __future__ import annotations

import dataclasses
import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from cuzk_plugin.backends.cpu.r1cs_eval import unsatisfied_rows
from cuzk_plugin.backends.cuda import CudaBackend
from cuzk_plugin.backends.protocol import (
    resident_circuit_device_bytes,
    streamed_circuit_device_bytes,
    streamed_circuit_host_bytes,
    streamed_coeff_index_bytes,
)
from cuzk_plugin.bls12_381.fields import (
    R,
    ints_to_limbs,
    limbs_to_ints,
    limbs_to_objects,
)
from cuzk_plugin.circuit.examples import filecoin_like
from cuzk_plugin.circuit.pce_record import precompile_r1cs
from cuzk_plugin.circuit.r1cs import R1CS, synthesize
from cuzk_plugin.formats.params import SetupSecrets
from cuzk_plugin.formats.partition import WitnessPartition
from cuzk_plugin.groth16.prover import assemble
from cuzk_plugin.groth16.setup import setup
from cuzk_plugin.groth16.verifier import verify
from tests.conformance.test_r1cs_eval import random_circuit, wide_circuit

pytestmark = pytest.mark.gpu


def reference_abc(r1cs: R1CS, z: np.ndarray) -> list[np.ndarray]:
    return [ints_to_limbs(v) for v in r1cs.with_input_constraints().evaluate(limbs_to_objects(z))]


@pytest.mark.parametrize("shape", [(1, 1, 0), (50, 3, 40), (4000, 17, 3500)], ids=["one-row", "small", "medium"])
def test_random_circuits_match_integers(cuda, rng, shape):
    """Coefficients +-1, +-2^k, sums of powers of two and arbitrary; values 0, 1, r - 1 and
    arbitrary; rows of 0 to 300 terms: every fast path of the row loop and the general one."""
    r1cs, z = random_circuit(rng, *shape)
    handle = cuda.load_circuit(precompile_r1cs(r1cs, "random"))
    try:
        assert handle.nbytes > 0
        got = cuda.evaluate_r1cs(handle, z)
    finally:
        handle.release()
    for name, g, w in zip("abc", got, reference_abc(r1cs, z), strict=True):
        bad = np.flatnonzero((g != w).any(axis=1))
        assert bad.size == 0, f"{name}: {bad.size} rows differ, first {bad[:5].tolist()}"


def test_matches_the_cpu_backend(cuda, cpu, rng):
    r1cs, z = random_circuit(rng, 2000, 5, 1800)
    pce = precompile_r1cs(r1cs, "random")
    gpu, host = cuda.load_circuit(pce), cpu.load_circuit(pce)
    try:
        for g, c in zip(cuda.evaluate_r1cs(gpu, z), cpu.evaluate_r1cs(host, z), strict=True):
            np.testing.assert_array_equal(g, c)
    finally:
        gpu.release()
        host.release()


def test_bad_circuits_and_witnesses_are_refused(cuda, rng):
    r1cs, z = random_circuit(rng, 20, 2, 20)
    pce = precompile_r1cs(r1cs, "bad")
    far = dataclasses.replace(pce.a, cols=np.full_like(np.asarray(pce.a.cols), pce.num_vars))
    if far.cols.size:
        with pytest.raises(ValueError, match="column"):
            cuda.load_circuit(dataclasses.replace(pce, a=far))
    handle = cuda.load_circuit(pce)
    try:
        with pytest.raises(ValueError, match="variables"):
            cuda.evaluate_r1cs(handle, z[:-1])
    finally:
        handle.release()
    with pytest.raises(ValueError, match="released"):
        cuda.evaluate_r1cs(handle, z)


def test_witness_partition_proof_equals_the_synthesized_one(cuda, rng):
    """Same key, same r and s: the proof from a WitnessPartition (a, b, c evaluated on the GPU,
    straight into H) is byte for byte the SynthesizedPartition's, and it verifies."""
    seed = int(rng.integers(1 << 30))
    r1cs, inputs, aux = filecoin_like(1500, seed).finish()
    key = setup(r1cs)
    srs = cuda.load_srs(key)
    handle = cuda.load_circuit(precompile_r1cs(r1cs, "filecoin-like"))
    try:
        part = synthesize(r1cs, inputs, aux)
        a, b, c = cuda.evaluate_r1cs(handle, np.concatenate([inputs, aux]))
        for got, want in zip((a, b, c), (part.a, part.b, part.c), strict=True):
            np.testing.assert_array_equal(got, want)
        pending = cuda.prove_start(srs, WitnessPartition(handle, inputs, aux))
        from_witness = cuda.prove_finish(pending)
        assert pending.timings_ms["r1cs"] > 0
        synthesized = cuda.prove_finish(cuda.prove_start(srs, part))
        rnd = random.Random(seed)
        r, s = rnd.randrange(R), rnd.randrange(R)
        proof_w, proof_s = assemble(key.vk, from_witness, r, s), assemble(key.vk, synthesized, r, s)
        assert proof_w.to_bytes() == proof_s.to_bytes()
        public = limbs_to_ints(inputs)[1:]
        assert verify(key.vk, proof_w, public)
    finally:
        handle.release()
        srs.release()


def test_witness_partitions_back_to_back(cuda, rng):
    """Three witness partitions started before any finishes (uploads overlap the proving) give
    the synthesized partitions' sums."""
    r1cs, _, _ = filecoin_like(600, 1).finish()
    key = setup(r1cs)
    srs = cuda.load_srs(key)
    handle = cuda.load_circuit(precompile_r1cs(r1cs, "filecoin-like"))
    try:
        instances = [filecoin_like(600, int(s)).finish() for s in rng.integers(1 << 30, size=3)]
        pending = [cuda.prove_start(srs, WitnessPartition(handle, i, x)) for _, i, x in instances]
        for (r1, i, x), p in zip(instances, pending, strict=True):
            got, want = cuda.prove_finish(p), cuda.prove_finish(cuda.prove_start(srs, synthesize(r1, i, x)))
            for name in ("h", "l", "a", "b_g1", "b_g2"):
                np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    finally:
        handle.release()
        srs.release()


def test_check_r1cs_finds_the_rows_that_fail(cuda, rng):
    """On the device: a satisfying witness of a Filecoin-like circuit has no failing row; one
    changed aux value makes exactly the rows the host check finds fail, the first one named."""
    from cuzk_plugin.cli.pce_check import _violations

    cs = filecoin_like(3000, seed=5)
    r1cs, inputs, aux = cs.finish_witness()
    pce = precompile_r1cs(r1cs, "check")
    z = np.concatenate([inputs, aux])
    handle = cuda.load_circuit(pce)
    try:
        assert cuda.check_r1cs(handle, z) == (0, None)
        bad = z.copy()
        bad[len(inputs) + 40] = ints_to_limbs([7])[0]
        want = unsatisfied_rows(*cuda.evaluate_r1cs(handle, bad))
        assert want.size > 0
        assert cuda.check_r1cs(handle, bad) == (int(want.size), int(want[0]))
        assert _violations(cuda, handle, bad) == (int(want.size), int(want[0]))
    finally:
        handle.release()


@pytest.mark.parametrize("chunk_rows", [1, 3, 64, 1 << 20])
@pytest.mark.parametrize("shape", [(1, 1, 0), (50, 3, 40), (2000, 5, 1800)], ids=["one-row", "small", "medium"])
def test_streamed_evaluation_equals_the_resident_one(cuda, cpu, rng, shape, chunk_rows):
    r1cs, z = random_circuit(rng, *shape)
    pce = precompile_r1cs(r1cs, "random")
    resident, host = cuda.load_circuit(pce), cpu.load_circuit(pce)
    streamed = cuda.load_circuit(pce, streamed=True, chunk_rows=chunk_rows)
    try:
        assert streamed.nbytes == streamed_circuit_device_bytes(pce, chunk_rows)
        assert streamed.host_bytes == streamed_circuit_host_bytes(pce, chunk_rows)
        assert resident.host_bytes == 0 and not resident.streamed
        assert resident.nbytes == resident_circuit_device_bytes(pce)
        want = cuda.evaluate_r1cs(resident, z)
        for w, c in zip(want, cpu.evaluate_r1cs(host, z), strict=True):
            np.testing.assert_array_equal(w, c)
        for w, c in zip(want, reference_abc(r1cs, z), strict=True):
            np.testing.assert_array_equal(w, c)
        for _ in range(2):  # the second evaluation reuses the chunk buffers
            for name, g, w in zip("abc", cuda.evaluate_r1cs(streamed, z), want, strict=True):
                bad = np.flatnonzero((g != w).any(axis=1))
                assert bad.size == 0, f"{name}: {bad.size} rows differ, first {bad[:5].tolist()}"
        assert cuda.check_r1cs(streamed, z) == cuda.check_r1cs(resident, z)
    finally:
        resident.release()
        streamed.release()
        host.release()


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "resident"])
@pytest.mark.parametrize("chunk_rows", [7, 1 << 20])
def test_four_byte_coefficient_indices(cuda, cpu, rng, chunk_rows, streamed):
    pce, z = wide_circuit(rng, 60, 3, 500)
    assert streamed_coeff_index_bytes(pce) == 4
    host = cpu.load_circuit(pce)
    want = cpu.evaluate_r1cs(host, z)
    host.release()
    handle = cuda.load_circuit(pce, streamed=streamed, chunk_rows=chunk_rows)
    try:
        if streamed:
            assert handle.nbytes == streamed_circuit_device_bytes(pce, chunk_rows)
            assert handle.host_bytes == streamed_circuit_host_bytes(pce, chunk_rows)
        else:
            assert (handle.nbytes, handle.host_bytes) == (resident_circuit_device_bytes(pce, chunk_rows), 0)
        for name, g, w in zip("abc", cuda.evaluate_r1cs(handle, z), want, strict=True):
            bad = np.flatnonzero((g != w).any(axis=1))
            assert bad.size == 0, f"{name}: {bad.size} rows differ, first {bad[:5].tolist()}"
    finally:
        handle.release()


@pytest.mark.parametrize("chunk_rows", [1, 5, 64])
def test_resident_chunks_that_split_the_rows_unevenly(cuda, rng, chunk_rows):
    """The resident form is the streamed one's chunks all on the device: chunks of one row and
    ones that do not divide the rows give the integers' a, b, c, and the check agrees."""
    r1cs, z = random_circuit(rng, 300, 4, 250)
    pce = precompile_r1cs(r1cs, "random")
    handle = cuda.load_circuit(pce, streamed=False, chunk_rows=chunk_rows)
    try:
        assert (handle.nbytes, handle.host_bytes) == (resident_circuit_device_bytes(pce, chunk_rows), 0)
        want = reference_abc(r1cs, z)
        for name, g, w in zip("abc", cuda.evaluate_r1cs(handle, z), want, strict=True):
            bad = np.flatnonzero((g != w).any(axis=1))
            assert bad.size == 0, f"{name}: {bad.size} rows differ, first {bad[:5].tolist()}"
        want_bad = unsatisfied_rows(*want)
        assert cuda.check_r1cs(handle, z) == (int(want_bad.size), int(want_bad[0]) if want_bad.size else None)
    finally:
        handle.release()


def test_load_circuit_streamed_takes_the_protocol_chunk(cuda, rng):
    r1cs, z = random_circuit(rng, 300, 4, 250)
    pce = precompile_r1cs(r1cs, "random")
    handle = cuda.load_circuit(pce, streamed=True)
    try:
        assert handle.streamed and "streamed=True" in repr(handle)
        assert handle.nbytes == streamed_circuit_device_bytes(pce)
        assert handle.host_bytes == streamed_circuit_host_bytes(pce)
        for g, w in zip(cuda.evaluate_r1cs(handle, z), reference_abc(r1cs, z), strict=True):
            np.testing.assert_array_equal(g, w)
    finally:
        handle.release()
    with pytest.raises(ValueError, match="at least one row"):
        cuda.load_circuit(pce, streamed=True, chunk_rows=0)


def test_streamed_evaluations_through_two_contexts_at_once(cuda, rng):
    """Two contexts on one device hold no common lock: their evaluations of one streamed circuit
    take turns on its chunk buffers and each gets its own z's a, b, c."""
    r1cs, z = random_circuit(rng, 3000, 5, 2500)
    zs = [z] + [random_circuit(rng, 1, 5, 2500)[1] for _ in range(3)]  # other assignments of as many variables
    pce = precompile_r1cs(r1cs, "random")
    other = CudaBackend(cuda.device)
    resident, streamed = cuda.load_circuit(pce), cuda.load_circuit(pce, streamed=True, chunk_rows=97)
    try:
        want = [cuda.evaluate_r1cs(resident, zi) for zi in zs]
        with ThreadPoolExecutor(4) as pool:
            jobs = [(i, pool.submit(backend.evaluate_r1cs, streamed, zs[i]))
                    for _ in range(3) for i, backend in enumerate((cuda, other, cuda, other))]
            for i, job in jobs:
                for g, w in zip(job.result(), want[i], strict=True):
                    np.testing.assert_array_equal(g, w)
    finally:
        resident.release()
        streamed.release()
        other.close()


def test_witness_partitions_prove_with_a_streamed_circuit(cuda, rng):
    """Same key, same r and s: proofs of witness partitions with the circuit streamed (three
    started before any finishes, so their evaluations follow one another on the chunk buffers)
    are byte for byte the resident circuit's, and verify."""
    seed = int(rng.integers(1 << 30))
    r1cs, _, _ = filecoin_like(1500, seed).finish_witness()
    key = setup(r1cs)
    pce = precompile_r1cs(r1cs, "filecoin-like")
    srs = cuda.load_srs(key)
    resident, streamed = cuda.load_circuit(pce), cuda.load_circuit(pce, streamed=True, chunk_rows=61)
    try:
        instances = [filecoin_like(1500, int(s)).finish_witness()[1:] for s in rng.integers(1 << 30, size=3)]
        pending = [cuda.prove_start(srs, WitnessPartition(streamed, i, x)) for i, x in instances]
        rnd = random.Random(seed)
        for (inputs, aux), p in zip(instances, pending, strict=True):
            got = cuda.prove_finish(p)
            assert p.timings_ms["r1cs"] > 0
            want = cuda.prove_finish(cuda.prove_start(srs, WitnessPartition(resident, inputs, aux)))
            r, s = rnd.randrange(R), rnd.randrange(R)
            proof = assemble(key.vk, got, r, s)
            assert proof.to_bytes() == assemble(key.vk, want, r, s).to_bytes()
            assert verify(key.vk, proof, limbs_to_ints(inputs)[1:])
    finally:
        resident.release()
        streamed.release()
        srs.release()


def test_a_test_key_is_not_made_from_a_streamed_circuit(cuda):
    r1cs, _, _ = filecoin_like(200, 1).finish_witness()
    handle = cuda.load_circuit(precompile_r1cs(r1cs, "keygen"), streamed=True)
    try:
        with pytest.raises(ValueError, match="a TEST key is made from a resident circuit"):
            cuda.generate_srs(handle, SetupSecrets.draw())
    finally:
        handle.release()


@pytest.mark.parametrize("streamed", [False, True], ids=["resident", "streamed"])
def test_h_in_two_buffers_gives_the_roomy_proof(cuda, rng, streamed):
    """A device without room for a, b, c and the twiddle tables (a 1-byte limit) makes a witness
    partition's H in two buffers: A and B evaluated and multiplied first, C evaluated (copied by
    rows where streamed) into B's room, the twiddles from two small tables, h combined over C and
    bit-reversed in place. Same r and s: byte for byte the roomy proof, and it verifies; after
    the limit is lifted the roomy path runs again. Domains 2^11 and 2^12 (the two twiddle tables
    of equal and of unequal size)."""
    for constraints in (1500, 3000):
        seed = int(rng.integers(1 << 30))
        r1cs, inputs, aux = filecoin_like(constraints, seed).finish_witness()
        key = setup(r1cs)
        pce = precompile_r1cs(r1cs, "filecoin-like")
        srs = cuda.load_srs(key)
        circuit = cuda.load_circuit(pce, streamed=True, chunk_rows=61) if streamed else cuda.load_circuit(pce)
        try:
            part = WitnessPartition(circuit, inputs, aux)
            runs = []
            for limit in (0, 1, 0):
                cuda.set_memory_limit(limit)
                pending = cuda.prove_start(srs, part)
                runs.append((cuda.prove_finish(pending), pending.timings_ms))
            assert [t["h_lean"] for _, t in runs] == [0, 1, 0]
            assert runs[1][1]["msm_in_turn"] == 1
            rnd = random.Random(seed)
            r, s = rnd.randrange(R), rnd.randrange(R)
            proofs = [assemble(key.vk, sums, r, s) for sums, _ in runs]
            assert proofs[1].to_bytes() == proofs[0].to_bytes() == proofs[2].to_bytes()
            assert verify(key.vk, proofs[1], limbs_to_ints(inputs)[1:])
        finally:
            cuda.set_memory_limit(0)
            circuit.release()
            srs.release()
