"""TEST keys made on the GPU (kernels/keygen.cu): every vector and the input columns equal the
CPU reference (backends/cpu/keygen.py) byte for byte, proofs made with the key verify, the
refusals (tau in the domain, a dense column that is 0 at tau, secrets outside [1, r)), and the
generation time of a synthetic 2^22-row circuit."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from cuzk_plugin.backends.cpu.keygen import input_sums, proving_key_from_qap, qap_from_pce
from cuzk_plugin.backends.cuda.backend import SRS_VECTORS
from cuzk_plugin.backends.cuda.keygen_timing import synthetic_pce
from cuzk_plugin.bls12_381.fields import R, ints_to_limbs, limbs_to_ints
from cuzk_plugin.circuit.examples import filecoin_like, unconstrained_aux
from cuzk_plugin.circuit.pce_record import precompile_r1cs
from cuzk_plugin.formats.params import SetupSecrets
from cuzk_plugin.formats.partition import WitnessPartition
from cuzk_plugin.groth16.prover import assemble
from cuzk_plugin.groth16.setup import verifying_key_from
from cuzk_plugin.groth16.verifier import verify
from tests.conformance.test_r1cs_eval import random_circuit
from tests.test_setup_pce import zero_column_circuit

pytestmark = pytest.mark.gpu


def assert_device_key_equals_reference(cuda, pce, secrets: SetupSecrets, *, to_host: bool = False) -> None:
    handle = cuda.load_circuit(pce)
    try:
        srs, sums = cuda.generate_srs(handle, secrets, to_host=to_host, stream_chunk=97)
    finally:
        handle.release()
    try:
        qap = qap_from_pce(pce, secrets)
        key = proving_key_from_qap(qap, secrets)
        np.testing.assert_array_equal(sums, input_sums(qap), err_msg="input sums")
        assert verifying_key_from(secrets, sums).to_bytes() == key.vk.to_bytes()
        counts = key.counts()
        assert srs.counts() == {name: counts[name] for name in SRS_VECTORS}
        assert srs.nbytes == (0 if to_host else key.vectors_nbytes)
        # An empty vector (no L for a one-row circuit) has nothing to stream: resident either way.
        assert srs.resident == (tuple(v for v in SRS_VECTORS if counts[v] == 0) if to_host else SRS_VECTORS)
        for name in SRS_VECTORS:
            got, want = srs.read(name), key.vector_limbs(name)
            assert got.shape == want.shape, name
            bad = np.flatnonzero((got != want).any(axis=tuple(range(1, got.ndim))))
            assert bad.size == 0, f"{name}: {bad.size} of {got.shape[0]} points differ, first {bad[:5].tolist()}"
        np.testing.assert_array_equal(srs.read("h", 3, 9), key.vector_limbs("h", 3, 9))
        assert set(srs.keygen_ms) >= {"lagrange", "columns_a", "h", "total"} and srs.keygen_ms["total"] > 0
    finally:
        srs.release()


@pytest.mark.parametrize("shape", [(1, 1, 0), (60, 3, 50), (3000, 17, 2600)], ids=["one-row", "small", "medium"])
def test_random_circuits_equal_the_cpu_reference(cuda, rng, shape):
    """Coefficients +-1, +-2^k and arbitrary, rows of 0 to 300 terms, unused variables (identity
    points in l), columns dense in one matrix only."""
    r1cs, _ = random_circuit(rng, *shape)
    assert_device_key_equals_reference(cuda, precompile_r1cs(r1cs, "random"), SetupSecrets.draw())


def test_example_circuits_equal_the_cpu_reference(cuda):
    for r1cs in (unconstrained_aux(2).finish()[0], filecoin_like(2500, 4, num_inputs=9).finish()[0]):
        assert_device_key_equals_reference(cuda, precompile_r1cs(r1cs, "example"), SetupSecrets.draw())


def test_synthetic_circuit_equals_the_cpu_reference(cuda):
    assert_device_key_equals_reference(cuda, synthetic_pce(12, 40, seed=7), SetupSecrets.draw())


@pytest.mark.parametrize("shape", [(1, 1, 0), (3000, 17, 2600)], ids=["one-row", "medium"])
def test_a_key_made_into_host_memory_equals_the_cpu_reference(cuda, rng, shape):
    """write-test-key's generation: every vector moved to page-locked host memory as it is made
    (the device holds one at a time), read back from there, equal to the reference."""
    r1cs, _ = random_circuit(rng, *shape)
    assert_device_key_equals_reference(cuda, precompile_r1cs(r1cs, "random"), SetupSecrets.draw(), to_host=True)


def test_a_key_made_into_host_memory_proves_streamed(cuda, rng):
    """The same key made on the device and into host memory: a witness partition proves the same
    five sums with either (the host one streaming every vector in chunks of 97 points)."""
    r1cs, inputs, aux = filecoin_like(1500, int(rng.integers(1 << 30)), num_inputs=5).finish()
    secrets = SetupSecrets.draw()
    handle = cuda.load_circuit(precompile_r1cs(r1cs, "filecoin-like"))
    keys = []
    try:
        keys = [cuda.generate_srs(handle, secrets, to_host=to_host, stream_chunk=97)[0] for to_host in (False, True)]
        part = WitnessPartition(handle, inputs, aux)
        on_device, on_host = (cuda.prove_finish(cuda.prove_start(k, part)) for k in keys)
        for name in SRS_VECTORS:
            np.testing.assert_array_equal(getattr(on_host, name), getattr(on_device, name), err_msg=name)
        # Its host copy handed over (as a lane does): the key released first, the copy serves on.
        host = cuda.host_key(keys[1])
        assert host is keys[1].host and not keys[1].owns_host
        keys[1].release()
        attached = cuda.load_srs(host, resident=("h",), stream_chunk=97)
        try:
            got = cuda.prove_finish(cuda.prove_start(attached, part))
            for name in SRS_VECTORS:
                np.testing.assert_array_equal(getattr(got, name), getattr(on_device, name), err_msg=name)
        finally:
            attached.release()
            host.release()
    finally:
        for k in keys:
            k.release()
        handle.release()


def test_a_key_made_on_the_gpu_proves(cuda, rng):
    """A witness partition proved with the device key verifies against the verifying key made
    from the returned input columns; a tampered proof or input does not."""
    seed = int(rng.integers(1 << 30))
    r1cs, inputs, aux = filecoin_like(1500, seed, num_inputs=5).finish()
    secrets = SetupSecrets.draw()
    handle = cuda.load_circuit(precompile_r1cs(r1cs, "filecoin-like"))
    try:
        srs, sums = cuda.generate_srs(handle, secrets)
        try:
            vk = verifying_key_from(secrets, sums)
            proof_sums = cuda.prove_finish(cuda.prove_start(srs, WitnessPartition(handle, inputs, aux)))
        finally:
            srs.release()
    finally:
        handle.release()
    rnd = random.Random(seed)
    proof = assemble(vk, proof_sums, rnd.randrange(1, R), rnd.randrange(1, R))
    public = limbs_to_ints(inputs)[1:]
    assert verify(vk, proof, public)
    assert not verify(vk, proof, [*public[:-1], (public[-1] + 1) % R])
    assert not verify(vk, dataclasses.replace(proof, c=proof.c + proof.c), public)


@dataclasses.dataclass(frozen=True)
class RawSecrets:
    """Secrets as limbs, unchecked (SetupSecrets refuses these before they reach the library)."""

    values: tuple[int, ...]

    def limbs(self) -> np.ndarray:
        return ints_to_limbs(self.values)


def test_refusals(cuda):
    r1cs, _, _ = filecoin_like(100, 1).finish()
    handle = cuda.load_circuit(precompile_r1cs(r1cs, "small"))
    try:
        with pytest.raises(ValueError, match="tau lies in the domain"):
            cuda.generate_srs(handle, SetupSecrets(1, 2, 3, 4, 5))
        with pytest.raises(ValueError, match="secret gamma must lie in"):
            cuda.generate_srs(handle, RawSecrets((5, 2, 3, R, 5)))
        with pytest.raises(ValueError, match="secret alpha must lie in"):
            cuda.generate_srs(handle, RawSecrets((5, 0, 3, 4, 5)))
    finally:
        handle.release()
    with pytest.raises(ValueError, match="not a live CUDA circuit"):
        cuda.generate_srs(handle, SetupSecrets.draw())


def test_a_dense_column_zero_at_tau_is_refused(cuda):
    """A column of A whose value at tau is 0 (its a point would be the identity): refused as
    the CPU reference refuses it."""
    tau = random.randrange(2, R)
    handle = cuda.load_circuit(zero_column_circuit(tau))
    try:
        with pytest.raises(ValueError, match="column 1 of A evaluates to 0"):
            cuda.generate_srs(handle, SetupSecrets(tau, 2, 3, 4, 5))
    finally:
        handle.release()


@pytest.mark.slow
def test_generation_time_2_22(cuda):
    """A synthetic 2^22-row circuit (Filecoin's shape, 328 inputs): stage times and memory."""
    pce = synthetic_pce(22)
    handle = cuda.load_circuit(pce)
    try:
        srs, _ = cuda.generate_srs(handle, SetupSecrets.draw())
    finally:
        handle.release()
    try:
        counts = srs.counts()
        assert counts["h"] == (1 << 22) - 1 and counts["l"] == pce.num_aux
        before, peak = srs.keygen_memory
        print(f"\nkeygen 2^22 ({pce.num_constraints} rows, nnz {pce.a.nnz + pce.b.nnz + pce.c.nnz}): "
              + ", ".join(f"{k} {v:.1f} ms" for k, v in srs.keygen_ms.items())
              + f"; key {srs.nbytes / 1e9:.2f} GB, device in use {before / 1e9:.2f} -> peak {peak / 1e9:.2f} GB")
        assert srs.read("h", 0, 1).any()
    finally:
        srs.release()
