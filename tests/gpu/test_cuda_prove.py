"""Whole partitions on the CUDA backend: the five sums equal the cpu backend's, and proofs verify."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk_plugin.bls12_381.fields import limbs_to_ints
from cuzk_plugin.circuit.examples import CORE_CIRCUITS, filecoin_like
from cuzk_plugin.circuit.r1cs import synthesize
from cuzk_plugin.groth16.bench_circuit import BenchSecrets, check_proof, verifying_key
from cuzk_plugin.groth16.prover import prove
from cuzk_plugin.groth16.setup import setup
from cuzk_plugin.groth16.verifier import verify

pytestmark = pytest.mark.gpu


def keyed_partition(builder, seed=1):
    shape, _, _ = builder(0).finish()
    key = setup(shape)
    r1cs, inputs, aux = builder(seed).finish()
    return key, synthesize(r1cs, inputs, aux), inputs


def assert_cuda_sums_equal_cpu(cuda, cpu, key, part, cuda_part=None):
    """The five sums of ``part`` on the cpu backend, and of ``cuda_part`` (default ``part``) on CUDA."""
    want = cpu.prove_finish(cpu.prove_start(cpu.load_srs(key), part))
    srs = cuda.load_srs(key)
    try:
        got = cuda.prove_finish(cuda.prove_start(srs, part if cuda_part is None else cuda_part))
    finally:
        srs.release()
    for field in ("h", "l", "a", "b_g1", "b_g2"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)


@pytest.mark.parametrize("name", sorted(CORE_CIRCUITS))
def test_sums_match_cpu(cuda, cpu, name):
    key, part, _ = keyed_partition(CORE_CIRCUITS[name])
    assert_cuda_sums_equal_cpu(cuda, cpu, key, part)


def test_filecoin_like_proofs_verify_with_resident_key(cuda):
    def builder(seed):
        return filecoin_like(1 << 11, seed=seed)

    shape, _, _ = builder(0).finish()
    key = setup(shape)
    srs = cuda.load_srs(key)
    try:
        for seed in (3, 4):  # one resident key, two partitions
            r1cs, inputs, aux = builder(seed).finish()
            proof = prove(key, synthesize(r1cs, inputs, aux), cuda, srs=srs)
            assert verify(key.vk, proof, limbs_to_ints(inputs)[1:])
    finally:
        srs.release()


def test_bench_circuit_proofs_verify(cuda_bench):
    """The device-made benchmark instance (the one `cuzk-bench kernels --op prove` times at
    2^27): every proof verifies on the CPU, a tampered one does not."""
    secrets = BenchSecrets.random()
    runs, stages = cuda_bench.bench_prove(12, 2, secrets.limbs())
    assert stages["total"] > 0
    assert runs[0].inputs != runs[1].inputs  # a fresh witness a run
    for run in runs:
        assert run.time_ms > 0 and run.inputs[0] == 1
        check = check_proof(verifying_key(secrets, 12, len(run.inputs), run.w_one), run.sums, run.inputs)
        assert check.verified and check.tampered_rejected


def _above_r(values: np.ndarray) -> np.ndarray:
    """The same field elements written as v + r, or v + 2r where that stays below 2^256."""
    from cuzk_plugin.bls12_381.fields import R, ints_to_limbs

    return ints_to_limbs([v + (2 * R if v + 2 * R < 1 << 256 else R) for v in limbs_to_ints(values)])


def test_values_at_or_above_r_are_reduced_on_the_device(cuda, cpu):
    # the host hands the assignment as written; the upload reduces z below r on the device
    # (the MSMs' signed windows need k < r): the same sums as the canonical partition's
    import dataclasses

    key, part, _ = keyed_partition(CORE_CIRCUITS[sorted(CORE_CIRCUITS)[0]], seed=5)
    above = dataclasses.replace(part, input_assignment=_above_r(part.input_assignment),
                                aux_assignment=_above_r(part.aux_assignment))
    assert not np.array_equal(above.aux_assignment, part.aux_assignment)
    assert_cuda_sums_equal_cpu(cuda, cpu, key, part, above)
