"""Groth16 parameter generation for our own circuits, written in Filecoin's `.params` layout.

Not a ceremony: one party samples tau, alpha, beta, gamma, delta (:class:`SetupSecrets`), so
keys made here are for tests, demos and benchmarks. The QAP is evaluated at tau through the
Lagrange basis of the size-N domain and the vectors made by fixed-base multiplication
(:mod:`cuzk_plugin.backends.cpu.keygen`, which makes the same key from a pre-compiled circuit).
"""

from __future__ import annotations

import logging
import time

import numpy as np

from cuzk_plugin.backends.cpu.keygen import (
    QapColumns,
    UnluckySecrets,
    lagrange_at_tau,
    proving_key_from_qap,
    verifying_key,
)
from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.bls12_381.fixed_base import FixedBaseTable
from cuzk_plugin.circuit.r1cs import R1CS
from cuzk_plugin.formats.params import ProvingKey, SetupSecrets, VerifyingKey

__all__ = ["FixedBaseTable", "mat_column_sums", "setup", "verifying_key_from"]

log = logging.getLogger(__name__)

#: Fresh draws before giving up on a circuit (each fails with probability about N / r).
_DRAWS = 8


def setup(r1cs: R1CS, secrets: SetupSecrets | None = None) -> ProvingKey:
    """Generate a proving key (with its verifying key) for ``r1cs``: from ``secrets``, or from
    fresh ones (drawn again in the negligible case that they do not fit the circuit).
    UnluckySecrets when given secrets do not fit."""
    if secrets is None:
        for attempt in range(_DRAWS):
            try:
                return setup(r1cs, SetupSecrets.draw())
            except UnluckySecrets:
                if attempt == _DRAWS - 1:
                    raise
    assert secrets is not None
    t0 = time.perf_counter()
    full = r1cs.with_input_constraints()
    lagrange, n = lagrange_at_tau(secrets.tau, full.num_constraints)
    u, v, w = (mat_column_sums(mat, lagrange, full.num_vars) for mat in (full.a, full.b, full.c))
    a_dense = full.a.column_density(full.num_vars)
    a_dense[: full.num_inputs] = True
    b_dense = full.b.column_density(full.num_vars)
    t1 = time.perf_counter()
    key = proving_key_from_qap(QapColumns(u, v, w, a_dense, b_dense, full.num_inputs, n), secrets)
    log.info("setup: %d constraints (+%d input), domain %d, QAP %.2fs, points %.2fs",
             r1cs.num_constraints, full.num_inputs, n, t1 - t0, time.perf_counter() - t1)
    return key


def verifying_key_from(secrets: SetupSecrets, input_sums: np.ndarray) -> VerifyingKey:
    """The verifying key of a key made from ``secrets`` (on a device, say) whose input columns
    at tau are ``input_sums``: ``(num_inputs, 3, 4)`` uint64 canonical u, v, w."""
    return verifying_key(secrets, input_sums)


def mat_column_sums(mat, lagrange: np.ndarray, num_vars: int) -> np.ndarray:
    """u_i(tau) = sum_j M[j, i] * L_j(tau) for every variable i (vectorised scatter-add)."""
    out = np.zeros(num_vars, dtype=object)
    if mat.rows.size:
        np.add.at(out, mat.cols, mat.coeffs * lagrange[mat.rows])
    return out % R
