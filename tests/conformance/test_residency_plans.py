"""Every backend that streams keys (KeyStreaming: cuda, opencl) proves the all-resident key's five
sums with any vectors streamed from its host copy: each vector alone, all of them, chunks that
split every vector unevenly; synthesized and witness partitions; and the proof verifies."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk_plugin.backends.protocol import KeyStreaming
from cuzk_plugin.bls12_381.fields import limbs_to_ints
from cuzk_plugin.circuit.examples import filecoin_like
from cuzk_plugin.circuit.pce_record import precompile_r1cs
from cuzk_plugin.circuit.r1cs import synthesize
from cuzk_plugin.engine.residency import VECTORS
from cuzk_plugin.formats.partition import WitnessPartition
from cuzk_plugin.groth16.prover import prove
from cuzk_plugin.groth16.setup import setup
from cuzk_plugin.groth16.verifier import verify

#: All resident, each vector alone streamed, none resident.
PLANS = [VECTORS] + [tuple(v for v in VECTORS if v != s) for s in VECTORS] + [()]


@pytest.fixture(scope="module")
def keyed():
    r1cs, inputs, aux = filecoin_like(300, seed=3).finish()
    return setup(r1cs), r1cs, inputs, aux


def streaming(backend) -> KeyStreaming:
    if not isinstance(backend, KeyStreaming):
        pytest.skip(f"backend {backend.name} keeps keys resident only (no device memory to plan)")
    return backend


def sums(backend, srs, part):
    return backend.prove_finish(backend.prove_start(srs, part))


def test_every_plan_proves_the_resident_sums(backend, keyed):
    key, r1cs, inputs, aux = keyed
    stream = streaming(backend)
    part = synthesize(r1cs, inputs, aux)
    whole = backend.load_srs(key)
    host = stream.host_key(key)
    try:
        want = sums(backend, whole, part)
        for resident in PLANS:
            srs = stream.load_srs(host, resident=resident, stream_chunk=37)  # 300 points: 9 chunks a vector
            try:
                got = sums(backend, srs, part)
            finally:
                srs.release()
            for name in VECTORS:
                np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=f"{resident}: {name}")
    finally:
        whole.release()
        host.release()


def test_a_streamed_key_proves_witness_partitions_that_verify(backend, keyed):
    key, r1cs, inputs, aux = keyed
    stream = streaming(backend)
    load_circuit = getattr(backend, "load_circuit", None)
    if load_circuit is None:
        pytest.skip(f"backend {backend.name} evaluates no circuit")
    circuit = load_circuit(precompile_r1cs(r1cs, "residency"))
    srs = stream.load_srs(key, resident=("a",), stream_chunk=64)  # a host copy of its own
    try:
        proof = prove(key, WitnessPartition(circuit, inputs, aux), backend, srs=srs)
        assert verify(key.vk, proof, limbs_to_ints(inputs)[1:])
    finally:
        srs.release()
        circuit.release()
