"""Groth16 test keys on the host: the QAP evaluated at tau, then fixed-base multiplications.

Not a ceremony: one party holds tau, alpha, beta, gamma, delta (:class:`SetupSecrets`), so the
keys are for tests, demos and benchmarks. For a circuit with rows i < m (its constraints and
one ``x_j * 0 = 0`` row per public input) over a domain of size N >= m, a variable j has
u_j = sum_i A[i, j] L_i(tau), v_j and w_j likewise over B and C, with L_i the Lagrange basis
of the domain: L_i(tau) = (tau^N - 1) / N * w^i / (tau - w^i). The key's vectors (see
:class:`~cuzk_plugin.formats.params.ProvingKey`) follow from u, v, w and the secrets.

This is the reference the device key generators are checked against byte for byte, and the
CPU backend's ``generate_srs``: vectorised numpy over Python ints for the QAP, and the points on
every core (:mod:`.multiples`; a 2^21 key in minutes).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk_plugin.backends.cpu.multiples import raw_multiples
from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, ints_to_limbs, limbs_to_ints, limbs_to_objects, root_of_unity
from cuzk_plugin.bls12_381.ntt import powers
from cuzk_plugin.errors import ParamsError
from cuzk_plugin.formats.params import ProvingKey, SetupSecrets, VerifyingKey
from cuzk_plugin.formats.pce import CsrMatrix, PrecompiledCircuit

__all__ = [
    "Multiples",
    "QapColumns",
    "UnluckySecrets",
    "batch_inverse",
    "csr_column_sums",
    "input_sums",
    "lagrange_at_tau",
    "proving_key_from_qap",
    "qap_from_pce",
    "setup_from_pce",
    "verifying_key",
]

log = logging.getLogger(__name__)


class UnluckySecrets(ParamsError):
    """Secrets this circuit cannot use: tau lies in the domain (Z(tau) = 0), or a dense column
    evaluates to 0 at tau (its point would be the identity). Probability about N / r: draw again."""


@dataclass(frozen=True)
class QapColumns:
    """u, v, w at tau of every variable (``(num_vars,)`` object arrays of ints mod r, inputs
    first), the dense columns of the A and B queries, and the domain."""

    u: np.ndarray
    v: np.ndarray
    w: np.ndarray
    #: Every input, and the aux variables some A row uses.
    a_dense: np.ndarray
    #: The variables some B row uses.
    b_dense: np.ndarray
    num_inputs: int
    domain_size: int


_mulmod = np.frompyfunc(lambda x, y: x * y % R, 2, 1)


def batch_inverse(x: np.ndarray) -> np.ndarray:
    """1 / x mod r of every element of an object array of nonzero ints mod r, with one modular
    inversion (Montgomery's trick: running products forward, running inverses back)."""
    n = x.shape[0]
    if n == 0:
        return np.empty(0, dtype=object)
    prefix = _mulmod.accumulate(x)  # x_0 ... x_i
    back = np.empty(n, dtype=object)
    back[0] = pow(int(prefix[-1]), -1, R)
    back[1:] = x[:0:-1]
    inv_prefix = _mulmod.accumulate(back)[::-1]  # 1 / (x_0 ... x_i)
    before = np.empty(n, dtype=object)
    before[0] = 1
    before[1:] = prefix[:-1]
    return inv_prefix * before % R


def lagrange_at_tau(tau: int, num_rows: int) -> tuple[np.ndarray, int]:
    """L_i(tau) for i < num_rows (object array) over the domain of the smallest power of two
    >= num_rows, and that domain's size N. UnluckySecrets when tau lies in the domain."""
    log2n = max(0, (num_rows - 1).bit_length())
    n = 1 << log2n
    z_tau = (pow(tau, n, R) - 1) % R
    if z_tau == 0:
        raise UnluckySecrets(f"tau lies in the domain of size 2^{log2n}: draw other secrets")
    w_pows = powers(root_of_unity(log2n), num_rows)
    inv = batch_inverse((tau - w_pows) % R)
    return (z_tau * pow(n, -1, R) % R) * w_pows % R * inv % R, n


def csr_column_sums(mat: CsrMatrix, coeffs: np.ndarray, lagrange: np.ndarray, num_vars: int) -> np.ndarray:
    """sum_i M[i, j] L_i(tau) for every column j: one vectorised gather, product and scatter-add
    over the matrix's terms. ``coeffs`` the circuit's table as an object array."""
    row_ptr = np.asarray(mat.row_ptr, dtype=np.int64)
    rows = np.repeat(np.arange(row_ptr.shape[0] - 1, dtype=np.int64), np.diff(row_ptr))
    out = np.zeros(num_vars, dtype=object)
    if rows.size:
        terms = coeffs[np.asarray(mat.coeff_idx, dtype=np.int64)] * lagrange[rows]
        np.add.at(out, np.asarray(mat.cols, dtype=np.int64), terms)
    return out % R


def qap_from_pce(pce: PrecompiledCircuit, secrets: SetupSecrets) -> QapColumns:
    """u, v, w at tau of a pre-compiled circuit (its rows include the input rows), with the
    densities it recorded (the ones its prover selects the A and B scalars by)."""
    lagrange, n = lagrange_at_tau(secrets.tau, pce.num_constraints)
    coeffs = limbs_to_objects(np.asarray(pce.coeffs, dtype=np.uint64).reshape(-1, FR_LIMBS))
    u, v, w = (csr_column_sums(mat, coeffs, lagrange, pce.num_vars) for mat in (pce.a, pce.b, pce.c))
    n_in = pce.num_inputs
    a_dense = np.concatenate([np.ones(n_in, dtype=bool), np.asarray(pce.a_aux_density, dtype=bool)])
    b_dense = np.concatenate([np.asarray(pce.b_input_density, dtype=bool), np.asarray(pce.b_aux_density, dtype=bool)])
    return QapColumns(u, v, w, a_dense, b_dense, n_in, n)


def input_sums(qap: QapColumns) -> np.ndarray:
    """``(num_inputs, 3, 4) uint64`` canonical: u, v, w of each input column (what the
    verifying key is made from)."""
    k = qap.num_inputs
    vals = np.stack([qap.u[:k], qap.v[:k], qap.w[:k]], axis=1).reshape(-1)
    return ints_to_limbs(vals, FR_LIMBS).reshape(k, 3, FR_LIMBS)


def verifying_key(secrets: SetupSecrets, sums: np.ndarray) -> VerifyingKey:
    """The verifying key of secrets whose input columns at tau are ``sums`` (``(num_inputs, 3,
    4)`` uint64 canonical u, v, w): ic_j = (beta u_j + alpha v_j + w_j) / gamma * G1."""
    arr = np.ascontiguousarray(sums, dtype=np.uint64)
    if arr.ndim != 3 or arr.shape[1:] != (3, FR_LIMBS) or arr.shape[0] < 1:
        raise ValueError(f"input sums: expected (num_inputs >= 1, 3, 4) uint64, got {arr.shape}")
    vals = limbs_to_ints(arr)
    if any(x >= R for x in vals):
        raise ValueError("input sums: values must be canonical (< r)")
    s = secrets
    gamma_inv = pow(s.gamma, -1, R)
    ic = [G1Point() * Scalar((s.beta * u + s.alpha * v + w) * gamma_inv % R)
          for u, v, w in zip(vals[0::3], vals[1::3], vals[2::3], strict=True)]
    return VerifyingKey(
        alpha_g1=G1Point() * Scalar(s.alpha), beta_g1=G1Point() * Scalar(s.beta),
        beta_g2=G2Point() * Scalar(s.beta), gamma_g2=G2Point() * Scalar(s.gamma),
        delta_g1=G1Point() * Scalar(s.delta), delta_g2=G2Point() * Scalar(s.delta),
        ic=ic,
    )


#: k * G for lists of ``(group, (n, 4) uint64 scalars)``: Filecoin's uncompressed bytes, in order.
Multiples = Callable[[list[tuple[str, np.ndarray]]], list[np.ndarray]]


def proving_key_from_qap(qap: QapColumns, secrets: SetupSecrets, multiples: Multiples = raw_multiples) -> ProvingKey:
    """The key (with its verifying key) from u, v, w at tau. UnluckySecrets when a dense column
    of A or B evaluates to 0. ``multiples``: where the points are made (a backend with a device
    passes its own; the default uses every host core)."""
    s, n, n_in = secrets, qap.domain_size, qap.num_inputs
    for name, vals, dense in (("A", qap.u, qap.a_dense), ("B", qap.v, qap.b_dense)):
        zero = np.flatnonzero(dense & (vals == 0))
        if zero.size:
            raise UnluckySecrets(f"column {int(zero[0])} of {name} evaluates to 0 at tau: draw other secrets")
    t0 = time.perf_counter()
    z_tau = (pow(s.tau, n, R) - 1) % R
    delta_inv = pow(s.delta, -1, R)
    l_scalars = (s.beta * qap.u[n_in:] + s.alpha * qap.v[n_in:] + qap.w[n_in:]) % R * delta_inv % R
    h_scalars = powers(s.tau, n - 1) * (z_tau * delta_inv % R) % R
    a_scalars, b_scalars = qap.u[qap.a_dense], qap.v[qap.b_dense]
    b_limbs = ints_to_limbs(b_scalars, FR_LIMBS)
    h, l, a, b_g1, b_g2 = multiples([("g1", ints_to_limbs(h_scalars, FR_LIMBS)), ("g1", ints_to_limbs(l_scalars, FR_LIMBS)),
                                         ("g1", ints_to_limbs(a_scalars, FR_LIMBS)), ("g1", b_limbs), ("g2", b_limbs)])
    key = ProvingKey(vk=verifying_key(s, input_sums(qap)), h=h, l=l, a=a, b_g1=b_g1, b_g2=b_g2)
    log.info("keygen: %d inputs, %d aux, domain %d, points %.2fs", n_in, len(l_scalars), n, time.perf_counter() - t0)
    return key


def setup_from_pce(pce: PrecompiledCircuit, secrets: SetupSecrets) -> ProvingKey:
    """The proving key of a pre-compiled circuit for ``secrets`` (the same bytes as
    ``groth16.setup.setup`` gives for the circuit's R1CS)."""
    return proving_key_from_qap(qap_from_pce(pce, secrets), secrets)
