"""Test keys from a pre-compiled circuit (backends/cpu/keygen.py): the same bytes as the R1CS
setup (groth16/setup.py) for the same secrets, proofs that verify with the CPU backend's
generate_srs, and the refusals (secrets outside [1, r), tau in the domain)."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.backends.cpu.keygen import UnluckySecrets, lagrange_at_tau, setup_from_pce
from cuzk_plugin.bls12_381.fields import R, limbs_to_ints
from cuzk_plugin.circuit.examples import CORE_CIRCUITS, filecoin_like
from cuzk_plugin.circuit.pce_record import precompile_r1cs
from cuzk_plugin.circuit.r1cs import R1CS, SparseMatrix
from cuzk_plugin.formats.params import VECTOR_FIELDS, SetupSecrets
from cuzk_plugin.formats.partition import WitnessPartition
from cuzk_plugin.formats.pce import PrecompiledCircuit
from cuzk_plugin.groth16.prover import assemble
from cuzk_plugin.groth16.setup import setup, verifying_key_from
from cuzk_plugin.groth16.verifier import verify


def assert_same_key(got, want) -> None:
    assert got.vk.to_bytes() == want.vk.to_bytes()
    for name, _ in VECTOR_FIELDS:
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)


@pytest.mark.parametrize("name", ["filecoin_like_64", "unconstrained_aux", "with_constants", "repeated_variables"])
def test_pce_key_equals_the_r1cs_key(name):
    """The column sums over the CSR arrays (with the input rows the PCE records) and the
    recorded densities give the R1CS setup's key byte for byte; unconstrained_aux has an
    identity point in l."""
    r1cs, _, _ = CORE_CIRCUITS[name](3).finish()
    secrets = SetupSecrets.draw()
    assert_same_key(setup_from_pce(precompile_r1cs(r1cs, name), secrets), setup(r1cs, secrets))


def test_pce_key_equals_the_r1cs_key_filecoin_like():
    r1cs, _, _ = filecoin_like(700, 5, num_inputs=6).finish()
    secrets = SetupSecrets.draw()
    pce = precompile_r1cs(r1cs, "filecoin-like")
    key = setup_from_pce(pce, secrets)
    assert_same_key(key, setup(r1cs, secrets))
    assert key.counts()["h"] == 1023 and key.counts()["ic"] == pce.num_inputs == r1cs.num_inputs


def test_generate_srs_proves_and_verifies():
    """CpuBackend.generate_srs: the key proves a witness partition whose proof verifies against
    the verifying key made from the input sums; a tampered proof or input does not."""
    r1cs, inputs, aux = filecoin_like(300, 9, num_inputs=4).finish()
    pce = precompile_r1cs(r1cs, "filecoin-like")
    secrets = SetupSecrets.draw()
    cpu = CpuBackend()
    circuit = cpu.load_circuit(pce)
    srs, sums = cpu.generate_srs(circuit, secrets)
    assert sums.shape == (pce.num_inputs, 3, 4) and sums.dtype == np.uint64
    vk = verifying_key_from(secrets, sums)
    assert vk.to_bytes() == setup(r1cs, secrets).vk.to_bytes()
    rnd = random.Random(secrets.tau)
    sums5 = cpu.prove_finish(cpu.prove_start(srs, WitnessPartition(circuit, inputs, aux)))
    proof = assemble(vk, sums5, rnd.randrange(1, R), rnd.randrange(1, R))
    public = limbs_to_ints(inputs)[1:]
    assert verify(vk, proof, public)
    assert not verify(vk, proof, [*public[:-1], (public[-1] + 1) % R])
    assert not verify(vk, dataclasses.replace(proof, a=proof.a + proof.a), public)
    other = verifying_key_from(SetupSecrets.draw(), sums)
    assert not verify(other, proof, public)


def test_secrets_are_checked_and_not_printed():
    with pytest.raises(ValueError, match="tau"):
        SetupSecrets(0, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="delta"):
        SetupSecrets(1, 1, 1, 1, R)
    s = SetupSecrets.draw()
    assert str(s.tau) not in repr(s)
    assert limbs_to_ints(s.limbs()) == [s.tau, s.alpha, s.beta, s.gamma, s.delta]


def test_tau_in_the_domain_is_refused():
    r1cs, _, _ = filecoin_like(40, 1).finish()
    pce = precompile_r1cs(r1cs, "small")
    with pytest.raises(UnluckySecrets, match="tau lies in the domain"):
        setup_from_pce(pce, SetupSecrets(1, 2, 3, 4, 5))  # 1 = w^0 is in every domain
    with pytest.raises(UnluckySecrets, match="tau lies in the domain"):
        setup(r1cs, SetupSecrets(R - 1, 2, 3, 4, 5))  # -1 = w^(N/2)


def zero_column_circuit(tau: int) -> PrecompiledCircuit:
    """Aux x (column 1) in A rows 0 and 1 with coefficients 1 and -L_0(tau) / L_1(tau), so
    u_x(tau) = 0: its a point would be the identity."""
    lag, _ = lagrange_at_tau(tau, 3)  # two constraint rows and the input row: N = 4
    c = (-lag[0] * pow(int(lag[1]), -1, R)) % R
    one, x, y = 0, 1, 2
    a = SparseMatrix.from_terms([0, 1], [x, x], [1, c])
    b = SparseMatrix.from_terms([0, 1], [one, one], [1, 1])
    cm = SparseMatrix.from_terms([0, 1], [y, y], [1, 1])
    return precompile_r1cs(R1CS(1, 2, 2, a, b, cm), "zero-column")


def test_a_dense_column_zero_at_tau_is_refused():
    tau = random.randrange(2, R)
    with pytest.raises(UnluckySecrets, match="column 1 of A evaluates to 0"):
        setup_from_pce(zero_column_circuit(tau), SetupSecrets(tau, 2, 3, 4, 5))
    setup_from_pce(zero_column_circuit(tau), SetupSecrets((tau + 1) % R or 2, 2, 3, 4, 5))  # other secrets fit
