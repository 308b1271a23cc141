"""Rank-1 constraint systems as sparse numpy matrices, and their synthesis into a partition.

Variables share one index space: public inputs 0..num_inputs-1 (ONE is input 0), then aux
variables num_inputs..num_inputs+num_aux-1. Coefficients are Python ints in [0, r) held in
object arrays so evaluation is exact and vectorised.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, ints_to_limbs, limbs_to_objects
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.formats.partition import SynthesizedPartition


@dataclass(frozen=True)
class SparseMatrix:
    """COO matrix over (constraint row, variable column); one entry per (row, col), no zeros."""

    rows: np.ndarray  # (nnz,) int64
    cols: np.ndarray  # (nnz,) int64
    coeffs: np.ndarray  # (nnz,) object, ints in [1, r)

    @classmethod
    def from_terms(cls, rows, cols, coeffs) -> SparseMatrix:
        """Build from raw terms: duplicates of one (row, col) are summed, zero entries dropped."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        vals = np.empty(len(coeffs), dtype=object)
        vals[:] = [int(c) % R for c in coeffs] if not isinstance(coeffs, np.ndarray) else coeffs % R
        if rows.size == 0:
            return cls(rows, cols, vals)
        key = rows * (int(cols.max()) + 1) + cols
        uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        if uniq.size != key.size:
            summed = np.zeros(uniq.size, dtype=object)
            np.add.at(summed, inverse, vals)
            summed %= R
            rows, cols, vals = rows[first], cols[first], summed
        else:
            order = np.argsort(key, kind="stable")
            rows, cols, vals = rows[order], cols[order], vals[order]
        keep = vals != 0
        return cls(rows[keep], cols[keep], vals[keep])

    def matvec(self, z: np.ndarray, num_rows: int) -> np.ndarray:
        """(M z) mod r for an object array z: one vectorised gather, multiply and scatter-add."""
        out = np.zeros(num_rows, dtype=object)
        if self.rows.size:
            np.add.at(out, self.rows, self.coeffs * z[self.cols])
        return out % R

    def column_density(self, num_vars: int) -> np.ndarray:
        dense = np.zeros(num_vars, dtype=bool)
        dense[self.cols] = True
        return dense


@dataclass(frozen=True)
class R1CS:
    """A circuit's constraints A z * B z = C z (without Filecoin's per-input constraints)."""

    num_inputs: int  # ONE included
    num_aux: int
    num_constraints: int
    a: SparseMatrix
    b: SparseMatrix
    c: SparseMatrix

    @property
    def num_vars(self) -> int:
        return self.num_inputs + self.num_aux

    def with_input_constraints(self) -> R1CS:
        """Append bellperson's ``x_i * 0 = 0`` constraint for every input i (A gets x_i)."""
        m, n = self.num_constraints, self.num_inputs
        extra = np.arange(n, dtype=np.int64)
        ones = np.ones(n, dtype=object)
        a = SparseMatrix(
            np.concatenate([self.a.rows, m + extra]), np.concatenate([self.a.cols, extra]),
            np.concatenate([self.a.coeffs, ones]),
        )
        return R1CS(n, self.num_aux, m + n, a, self.b, self.c)

    def assignment(self, inputs: np.ndarray, aux: np.ndarray) -> np.ndarray:
        """Full assignment z (object ints) from input and aux limb arrays; checks the counts."""
        if inputs.shape[0] != self.num_inputs:
            raise CircuitError(f"witness has {inputs.shape[0]} inputs (ONE included), circuit needs {self.num_inputs}")
        if aux.shape[0] != self.num_aux:
            raise CircuitError(f"witness has {aux.shape[0]} aux values, circuit needs {self.num_aux}")
        z = limbs_to_objects(np.concatenate([inputs, aux]).reshape(-1, FR_LIMBS))
        if self.num_inputs and z[0] != 1:
            raise CircuitError(f"input 0 must be ONE (1), got {z[0]}")
        if (z >= R).any():
            raise CircuitError(f"witness value {int(np.flatnonzero(z >= R)[0])} is not below r")
        return z

    def evaluate(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(<A_j, z>, <B_j, z>, <C_j, z>) for every constraint j, as object arrays mod r."""
        m = self.num_constraints
        return self.a.matvec(z, m), self.b.matvec(z, m), self.c.matvec(z, m)

    def first_unsatisfied(self, z: np.ndarray) -> int | None:
        """Index of the first constraint with <A,z>*<B,z> != <C,z>, or None."""
        return _first_unsatisfied(*self.evaluate(z))


def _first_unsatisfied(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> int | None:
    bad = np.flatnonzero((a * b - c) % R != 0)
    return int(bad[0]) if bad.size else None


def synthesize(r1cs: R1CS, inputs: np.ndarray, aux: np.ndarray, *, check: bool = True) -> SynthesizedPartition:
    """Evaluate the circuit on a witness: a, b, c per constraint (input constraints appended),
    assignments and densities. ``check`` refuses a witness that violates a constraint."""
    z = r1cs.assignment(inputs, aux)
    full = r1cs.with_input_constraints()
    a, b, c = full.evaluate(z)
    if check:
        bad = _first_unsatisfied(a, b, c)  # the appended input constraints always hold
        if bad is not None:
            raise CircuitError(f"witness does not satisfy constraint {bad} (of {r1cs.num_constraints})")
    n_in = full.num_inputs
    a_dense = full.a.column_density(full.num_vars)
    b_dense = full.b.column_density(full.num_vars)
    return SynthesizedPartition(
        a=ints_to_limbs(a), b=ints_to_limbs(b), c=ints_to_limbs(c),
        input_assignment=np.ascontiguousarray(inputs, dtype=np.uint64),
        aux_assignment=np.ascontiguousarray(aux, dtype=np.uint64).reshape(-1, FR_LIMBS),
        a_aux_density=a_dense[n_in:], b_input_density=b_dense[:n_in], b_aux_density=b_dense[n_in:],
    )
