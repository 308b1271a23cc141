"""The benchmark circuit the CUDA backend makes on the device, built here on the CPU at small
sizes: its verifying key (from the secrets) accepts the cpu backend's proofs of it, and only
with the right w(ONE)."""

from __future__ import annotations

from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.groth16 import bench_circuit as bc

LOG_N, N_INPUTS = 4, 3


def random_instance(rng):
    inputs = [1] + [int(rng.integers(1 << 62)) * 7 % R for _ in range(N_INPUTS - 1)]
    n_aux = (1 << LOG_N) - N_INPUTS
    # Mostly bits, like Filecoin witnesses, and a few full-width values.
    aux = [int(rng.integers(2)) if rng.random() < 0.7 else int.from_bytes(rng.bytes(32), "little") % R
           for _ in range(n_aux)]
    return inputs, aux


def test_lagrange_basis_sums_to_one(rng):
    tau = int.from_bytes(rng.bytes(32), "little") % R
    assert sum(bc.lagrange_at(tau, LOG_N, 1 << LOG_N)) % R == 1


def test_cpu_proofs_of_the_bench_circuit_verify(rng):
    secrets = bc.BenchSecrets.random()
    key = bc.proving_key(secrets, LOG_N, N_INPUTS)
    cpu = CpuBackend()
    for _ in range(2):  # one key, two witnesses (w(ONE) differs between them)
        inputs, aux = random_instance(rng)
        part = bc.partition(inputs, aux)
        sums = cpu.prove_finish(cpu.prove_start(cpu.load_srs(key), part))
        c = [y * y % R for y in aux]
        w_one = bc.w_one(secrets, LOG_N, [0] * N_INPUTS + c)
        check = bc.check_proof(bc.verifying_key(secrets, LOG_N, N_INPUTS, w_one), sums, inputs)
        assert check.verified and check.tampered_rejected
        wrong = bc.check_proof(bc.verifying_key(secrets, LOG_N, N_INPUTS, (w_one + 1) % R), sums, inputs)
        assert not wrong.verified


def test_secrets_limbs_round_trip():
    from cuzk_plugin.bls12_381.fields import limbs_to_ints

    k = bc.BenchSecrets.random()
    assert limbs_to_ints(k.limbs()) == [k.tau, k.alpha, k.beta, k.gamma, k.delta]
