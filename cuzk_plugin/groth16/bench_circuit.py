"""The benchmark circuit whose key and witnesses the CUDA backend makes on the device
(``kernels/instance.cuh``), so that a full-size (2^27) benchmark proof is checked by the CPU
verifier afterwards. The key comes from secrets we choose, so the verifying key is built
here from them instead of being read back from the device.

The circuit: m public inputs x_0 = ONE, x_1..x_{m-1}, and N - m aux values y_j;
constraint i < m is ``x_i * 0 = 0`` (the input constraints), constraint m + j is
``y_j * y_j = (y_j^2) ONE``. With L_i the Lagrange basis of the size-N domain:
u(x_i) = L_i(tau), v(x_i) = w(x_i) = 0 except w(ONE) = sum_i c_i L_i(tau); u(y_j) = v(y_j) =
L_{m+j}(tau), w(y_j) = 0. w(ONE) depends on the witness (the C coefficients are y_j^2), so
every run returns it.

:func:`proving_key` and :func:`witness` build the same instance on the CPU at small sizes, so
the verifying-key math here is tested without a GPU.
"""

from __future__ import annotations

import secrets as _secrets
from dataclasses import dataclass

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk_plugin.backends.protocol import ProofSums
from cuzk_plugin.bls12_381.fields import R, ints_to_limbs, root_of_unity
from cuzk_plugin.formats.params import ProvingKey, VerifyingKey
from cuzk_plugin.formats.partition import SynthesizedPartition
from cuzk_plugin.formats.proof import Proof
from cuzk_plugin.groth16.prover import assemble, random_fr
from cuzk_plugin.groth16.setup import FixedBaseTable
from cuzk_plugin.groth16.verifier import verify


@dataclass(frozen=True)
class BenchSecrets:
    """The toxic waste of a benchmark key (known to us: benchmark keys prove nothing)."""

    tau: int
    alpha: int
    beta: int
    gamma: int
    delta: int

    @classmethod
    def random(cls) -> BenchSecrets:
        return cls(*(_secrets.randbelow(R - 1) + 1 for _ in range(5)))

    def limbs(self) -> np.ndarray:
        """``(5, 4) uint64`` canonical limbs, the library's order."""
        return ints_to_limbs([self.tau, self.alpha, self.beta, self.gamma, self.delta])


def _inv(x: int) -> int:
    return pow(x, R - 2, R)


def lagrange_at(tau: int, log_n: int, count: int) -> list[int]:
    """L_i(tau) = (tau^N - 1) / N * w^i / (tau - w^i) for i < count."""
    n = 1 << log_n
    omega = root_of_unity(log_n)
    z_over_n = (pow(tau, n, R) - 1) * _inv(n) % R
    out, w_i = [], 1
    for _ in range(count):
        out.append(z_over_n * w_i % R * _inv((tau - w_i) % R) % R)
        w_i = w_i * omega % R
    return out


def verifying_key(k: BenchSecrets, log_n: int, n_inputs: int, w_one: int) -> VerifyingKey:
    """IC_0 = (beta L_0(tau) + w(ONE)) / gamma, IC_i = beta L_i(tau) / gamma (i >= 1)."""
    lag = lagrange_at(k.tau, log_n, n_inputs)
    gamma_inv = _inv(k.gamma)
    ic = [(k.beta * lag[0] + w_one) * gamma_inv % R] + [k.beta * x * gamma_inv % R for x in lag[1:]]
    g1, g2 = G1Point(), G2Point()
    return VerifyingKey(
        alpha_g1=g1 * Scalar(k.alpha), beta_g1=g1 * Scalar(k.beta), beta_g2=g2 * Scalar(k.beta),
        gamma_g2=g2 * Scalar(k.gamma), delta_g1=g1 * Scalar(k.delta), delta_g2=g2 * Scalar(k.delta),
        ic=[g1 * Scalar(x) for x in ic],
    )


@dataclass(frozen=True)
class ProofCheck:
    """What the CPU verifier said of one benchmark proof."""

    verified: bool
    #: The same proof with C moved by the generator: must not verify.
    tampered_rejected: bool

    @property
    def ok(self) -> bool:
        return self.verified and self.tampered_rejected


def check_proof(vk: VerifyingKey, sums: ProofSums, inputs: list[int]) -> ProofCheck:
    """Assemble a proof from the five sums with fresh r, s and verify it (inputs: ONE first);
    the same proof with C moved by G must fail."""
    proof = assemble(vk, sums, random_fr(), random_fr())
    public = list(inputs[1:])
    tampered = Proof(a=proof.a, b=proof.b, c=proof.c + G1Point())
    return ProofCheck(verify(vk, proof, public), not verify(vk, tampered, public))


# -- the same instance on the CPU (small sizes: a Python loop a point) -------------------------

def proving_key(k: BenchSecrets, log_n: int, n_inputs: int) -> ProvingKey:
    """The key the device makes (instance.cuh), with the verifying key's IC for w(ONE) = 0
    (the verifying key proper depends on the witness: :func:`verifying_key`)."""
    n = 1 << log_n
    lag = lagrange_at(k.tau, log_n, n)
    delta_inv = _inv(k.delta)
    z_over_delta = (pow(k.tau, n, R) - 1) * delta_inv % R
    h = [pow(k.tau, i, R) * z_over_delta % R for i in range(n - 1)]
    aux_lag = lag[n_inputs:]
    l_scalars = [(k.alpha + k.beta) * x * delta_inv % R for x in aux_lag]
    g1 = FixedBaseTable(G1Point(), 3 * n)
    g2 = FixedBaseTable(G2Point(), n)
    return ProvingKey(
        vk=verifying_key(k, log_n, n_inputs, 0),
        h=g1.raw_vector(h, 96), l=g1.raw_vector(l_scalars, 96), a=g1.raw_vector(lag, 96),
        b_g1=g1.raw_vector(aux_lag, 96), b_g2=g2.raw_vector(aux_lag, 192, reorder_g2=True),
    )


def partition(inputs: list[int], aux: list[int]) -> SynthesizedPartition:
    """a = (x, y), b = (0, y), c = (0, y^2): the rows of the circuit above (inputs ONE first)."""
    m = len(inputs)
    zeros = [0] * m
    a, b, c = inputs + aux, zeros + aux, zeros + [y * y % R for y in aux]
    return SynthesizedPartition(
        a=ints_to_limbs(a), b=ints_to_limbs(b), c=ints_to_limbs(c),
        input_assignment=ints_to_limbs(inputs), aux_assignment=ints_to_limbs(aux),
        a_aux_density=np.ones(len(aux), dtype=bool), b_input_density=np.zeros(m, dtype=bool),
        b_aux_density=np.ones(len(aux), dtype=bool),
    )


def w_one(k: BenchSecrets, log_n: int, c: list[int]) -> int:
    """w(ONE) at tau = sum_i c_i L_i(tau)."""
    return sum(ci * li for ci, li in zip(c, lagrange_at(k.tau, log_n, len(c)), strict=True)) % R

