"""R1CS evaluation on the GPU (kernels/r1cs.cu): a, b, c of random Filecoin-like circuits
against Python integers, and a proof from a WitnessPartition (a, b, c never leave the device)
equal to the synthesized partition's proof with the same r, s, and verifying."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from cuzk_plugin.bls12_381.fields import (
    R,
    ints_to_limbs,
    limbs_to_ints,
    limbs_to_objects,
)
from cuzk_plugin.circuit.examples import filecoin_like
from cuzk_plugin.circuit.pce_record import precompile_r1cs
from cuzk_plugin.circuit.r1cs import R1CS, synthesize
from cuzk_plugin.formats.partition import WitnessPartition
from cuzk_plugin.groth16.prover import assemble
from cuzk_plugin.groth16.setup import setup
from cuzk_plugin.groth16.verifier import verify
from tests.conformance.test_r1cs_eval import random_circuit

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
    from cuzk_plugin.backends.cpu.r1cs_eval import unsatisfied_rows
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
