"""Groth16 parameter generation for our own circuits, written in Filecoin's `.params` layout.

Not a ceremony: one party samples tau, alpha, beta, gamma, delta, so keys made here are for
tests, demos and benchmarks. The QAP is evaluated at tau through the Lagrange basis of the
size-N domain: L_j(tau) = (tau^N - 1) / N * w^j / (tau - w^j).
"""

from __future__ import annotations

import logging
import secrets
import time

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk_plugin.bls12_381.fields import R, root_of_unity
from cuzk_plugin.bls12_381.ntt import powers
from cuzk_plugin.bls12_381.points import FLAG_INFINITY
from cuzk_plugin.circuit.r1cs import R1CS
from cuzk_plugin.formats.params import ProvingKey, VerifyingKey

log = logging.getLogger(__name__)


class FixedBaseTable:
    """k * G for many k with one precomputed table: T[w][d] = d * 2^(c w) * G, then
    k * G = sum_w T[w][digit_w(k)] (about 255/c additions instead of a scalar multiplication)."""

    def __init__(self, base, count: int):
        # Choose c minimising count * windows + windows * 2^c additions.
        self.c = min(range(2, 17), key=lambda c: (count + (1 << c)) * -(-255 // c))
        self.windows = -(-255 // self.c)
        self.identity = type(base).identity()
        self.table = []
        start = base
        for _ in range(self.windows):
            row = [self.identity, start]
            for _ in range((1 << self.c) - 2):
                row.append(row[-1] + start)
            self.table.append(row)
            start = row[-1] + start  # 2^c * start
        self.mask = (1 << self.c) - 1

    def mul(self, k: int):
        acc = self.identity
        w = 0
        while k:
            d = k & self.mask
            if d:
                acc = acc + self.table[w][d]
            k >>= self.c
            w += 1
        return acc

    def raw_vector(self, scalars, width: int, reorder_g2: bool = False, what: str = "") -> np.ndarray:
        """Uncompressed Filecoin bytes ``(n, width)`` of k_i * G for each scalar."""
        t0 = time.perf_counter()
        raw = b"".join(self.mul(int(k)).to_xy_bytes_be() for k in scalars)
        if what:
            log.info("setup: %s, %d points, %.2fs", what, len(scalars), time.perf_counter() - t0)
        arr = np.frombuffer(raw, dtype=np.uint8).reshape(-1, width).copy()
        arr[~arr.any(axis=1), 0] = FLAG_INFINITY  # arkworks writes the identity as zeros
        if reorder_g2:  # arkworks c0-first -> Filecoin c1-first
            arr = arr.reshape(-1, 4, 48)[:, [1, 0, 3, 2]].reshape(-1, width)
        return np.ascontiguousarray(arr)


def _nonzero_fr() -> int:
    return secrets.randbelow(R - 1) + 1


def _inv(x: np.ndarray) -> np.ndarray:
    """Element-wise inverse mod r of an object array (Fermat)."""
    return np.frompyfunc(lambda v: pow(int(v), R - 2, R), 1, 1)(x)


def setup(r1cs: R1CS) -> ProvingKey:
    """Generate a proving key (with its verifying key) for ``r1cs``."""
    t0 = time.perf_counter()
    full = r1cs.with_input_constraints()
    m, n_in = full.num_constraints, full.num_inputs
    log2n = max(0, (m - 1).bit_length())
    n = 1 << log2n
    tau, alpha, beta, gamma, delta = (_nonzero_fr() for _ in range(5))
    omega = root_of_unity(log2n)
    w_pows = powers(omega, n)
    z_tau = (pow(tau, n, R) - 1) % R
    if z_tau == 0:  # tau in the domain: probability ~ n / r
        return setup(r1cs)
    lagrange = (z_tau * pow(n, R - 2, R) % R) * w_pows[:m] % R * _inv((tau - w_pows[:m]) % R) % R
    u, v, w = (mat_column_sums(mat, lagrange, full.num_vars) for mat in (full.a, full.b, full.c))
    gamma_inv, delta_inv = pow(gamma, R - 2, R), pow(delta, R - 2, R)
    k = (beta * u + alpha * v + w) % R
    ic_scalars = k[:n_in] * gamma_inv % R
    l_scalars = k[n_in:] * delta_inv % R
    a_dense = full.a.column_density(full.num_vars)
    a_dense[:n_in] = True
    b_dense = full.b.column_density(full.num_vars)
    h_scalars = powers(tau, n - 1) * (z_tau * delta_inv % R) % R
    if (u[a_dense] == 0).any() or (v[b_dense] == 0).any():
        return setup(r1cs)  # a dense column evaluating to 0 at tau would write the identity
    t1 = time.perf_counter()

    g1_count = len(h_scalars) + len(l_scalars) + int(a_dense.sum()) + int(b_dense.sum()) + n_in
    g1 = FixedBaseTable(G1Point(), g1_count)
    g2 = FixedBaseTable(G2Point(), int(b_dense.sum()))
    vk = VerifyingKey(
        alpha_g1=G1Point() * Scalar(alpha), beta_g1=G1Point() * Scalar(beta),
        beta_g2=G2Point() * Scalar(beta), gamma_g2=G2Point() * Scalar(gamma),
        delta_g1=G1Point() * Scalar(delta), delta_g2=G2Point() * Scalar(delta),
        ic=[g1.mul(int(x)) for x in ic_scalars],
    )
    key = ProvingKey(
        vk=vk,
        h=g1.raw_vector(h_scalars, 96, what="h"),
        l=g1.raw_vector(l_scalars, 96, what="l"),
        a=g1.raw_vector(u[a_dense], 96, what="a"),
        b_g1=g1.raw_vector(v[b_dense], 96, what="b_g1"),
        b_g2=g2.raw_vector(v[b_dense], 192, reorder_g2=True, what="b_g2"),
    )
    log.info("setup: %d constraints (+%d input), domain 2^%d, QAP %.2fs, points %.2fs",
             r1cs.num_constraints, n_in, log2n, t1 - t0, time.perf_counter() - t1)
    return key


def mat_column_sums(mat, lagrange: np.ndarray, num_vars: int) -> np.ndarray:
    """u_i(tau) = sum_j M[j, i] * L_j(tau) for every variable i (vectorised scatter-add)."""
    out = np.zeros(num_vars, dtype=object)
    if mat.rows.size:
        np.add.at(out, mat.cols, mat.coeffs * lagrange[mat.rows])
    return out % R
