"""Test keys on the OpenCL device (kernels/fixed_base.cl): the fixed-base multiples equal
arkworks' byte for byte in G1 and G2 (0, 1, r - 1 and random scalars; several chunks and
partial inversion slices; both limb widths), and a key made by ``generate_srs`` equals the CPU
reference's and proves what verifies."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from cuzk_plugin.backends.cpu.keygen import proving_key_from_qap, qap_from_pce
from cuzk_plugin.backends.cpu.multiples import raw_multiples
from cuzk_plugin.backends.registry import probe
from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, ints_to_limbs, limbs_to_ints
from cuzk_plugin.circuit.examples import CORE_CIRCUITS, filecoin_like
from cuzk_plugin.circuit.pce_record import precompile_r1cs
from cuzk_plugin.formats.params import SetupSecrets
from cuzk_plugin.formats.partition import WitnessPartition
from cuzk_plugin.groth16.prover import assemble
from cuzk_plugin.groth16.setup import verifying_key_from
from cuzk_plugin.groth16.verifier import verify
from tests.test_setup_pce import assert_same_key

pytestmark = pytest.mark.skipif(probe("opencl") is not None, reason=f"opencl unavailable: {probe('opencl')}")


@pytest.fixture(scope="module")
def opencl():
    from cuzk_plugin.backends.opencl import OpenclBackend

    return OpenclBackend()


def random_scalars(rnd: random.Random, n: int) -> np.ndarray:
    edge = [0, 1, R - 1, 2, 1 << 254]
    return ints_to_limbs(edge + [rnd.randrange(R) for _ in range(n - len(edge))], FR_LIMBS)


@pytest.mark.parametrize("window", [None, 4, 9])
def test_fixed_base_multiples_equal_arkworks(opencl, monkeypatch, window):
    """Chunks of 37 points and inversion slices of 5 (neither divides n), so the chunk seams and
    a partial slice are crossed; the identity (k = 0) comes back as Filecoin's 0x40 flag."""
    from cuzk_plugin.backends.opencl import fixed_base

    monkeypatch.setattr(fixed_base, "CHUNK", 37)
    monkeypatch.setattr(fixed_base, "AFFINE_SLICE", 5)
    rnd = random.Random(window or 0)
    g1, g2 = random_scalars(rnd, 101), random_scalars(rnd, 43)
    got = opencl._key_multiples([("g1", g1), ("g2", g2), ("g1", g1[:7])])
    want = raw_multiples([("g1", g1), ("g2", g2), ("g1", g1[:7])], workers=0)
    for name, a, b in zip(("g1", "g2", "g1 again"), got, want, strict=True):
        bad = np.flatnonzero((a != b).any(axis=1))
        assert bad.size == 0, f"{name}: {bad.size} of {a.shape[0]} points differ, first {bad[:5].tolist()}"
    assert got[0][0, 0] == 0x40 and not got[0][0, 1:].any()


def test_fixed_base_multiples_with_the_other_limb_width():
    from cuzk_plugin.backends.opencl import OpenclBackend

    other = OpenclBackend(limb_bits=96 - OpenclBackend().limb_bits)
    scalars = random_scalars(random.Random(7), 40)
    got = other._key_multiples([("g1", scalars), ("g2", scalars[:9])])
    want = raw_multiples([("g1", scalars), ("g2", scalars[:9])], workers=0)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def test_bad_scalars_are_refused_by_shape(opencl):
    with pytest.raises(ValueError, match=r"\(n, 4\) uint64"):
        opencl._key_multiples([("g1", np.zeros((3, 5), dtype=np.uint64))])


@pytest.mark.parametrize("name", ["unconstrained_aux", "filecoin_like"])
def test_device_key_equals_the_cpu_reference_and_proves(opencl, name):
    """The key's points made on the device give the CPU reference's key byte for byte
    (unconstrained_aux has an identity point in l); ``generate_srs`` proves a partition whose
    proof verifies, and a tampered proof does not."""
    if name == "filecoin_like":
        r1cs, inputs, aux = filecoin_like(300, 9, num_inputs=4).finish()
    else:
        r1cs, inputs, aux = CORE_CIRCUITS[name](3).finish()
    pce = precompile_r1cs(r1cs, name)
    secrets = SetupSecrets.draw()
    qap = qap_from_pce(pce, secrets)
    assert_same_key(proving_key_from_qap(qap, secrets, opencl._key_multiples), proving_key_from_qap(qap, secrets))

    circuit = opencl.load_circuit(pce)
    try:
        srs, sums = opencl.generate_srs(circuit, secrets)
        vk = verifying_key_from(secrets, sums)
        try:
            sums5 = opencl.prove_finish(opencl.prove_start(srs, WitnessPartition(circuit, inputs, aux)))
        finally:
            srs.release()
    finally:
        circuit.release()
    rnd = random.Random(secrets.tau)
    proof = assemble(vk, sums5, rnd.randrange(1, R), rnd.randrange(1, R))
    public = limbs_to_ints(inputs)[1:]
    assert verify(vk, proof, public)
    assert not verify(vk, dataclasses.replace(proof, c=proof.c + proof.c), public)
