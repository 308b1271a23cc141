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
        """Build from raw terms: duplicates of one (row, col) are summed, zero entries dropped,
        entries sorted by (row, col). Synthesis emits terms row by row, so the keys are mostly
        sorted already: a stable argsort (timsort on runs) replaces np.unique, which sorted and
        inverted the whole key array, and only keys that repeat are summed."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        vals = _reduced_coeffs(coeffs)
        if rows.ndim != 1 or rows.shape != cols.shape or rows.shape != vals.shape:
            raise CircuitError(
                f"terms need equal 1-D rows, cols and coeffs; got shapes {rows.shape}, {cols.shape}, {vals.shape}"
            )
        if rows.size == 0:
            return cls(rows, cols, vals)
        if rows.min() < 0 or cols.min() < 0:
            raise CircuitError(f"negative term index: row min {int(rows.min())}, col min {int(cols.min())}")
        key = rows * (int(cols.max()) + 1) + cols
        if not (key[1:] > key[:-1]).all():  # unsorted or repeated keys
            order = np.argsort(key, kind="stable")
            key, rows, cols, vals = key[order], rows[order], cols[order], vals[order]
            starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
            if starts.size != key.size:
                rows, cols, vals = rows[starts], cols[starts], _sum_runs(vals, starts)
        keep = vals != 0
        if keep.all():
            return cls(rows, cols, vals)
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


def _reduced_coeffs(coeffs) -> np.ndarray:
    """Coefficients as an object array of Python ints in [0, r). One object-ufunc ``% R``
    (C loop) instead of a Python ``int(c) % R`` per term, ~4x faster on 6 M terms; numpy
    integer arrays become Python ints first (an int64 ``% R`` would overflow)."""
    if isinstance(coeffs, np.ndarray) and coeffs.dtype != object:
        if coeffs.dtype.kind not in "iub":
            raise CircuitError(f"coefficients must be integers, got a {coeffs.dtype} array")
        return coeffs.astype(object) % R
    vals = np.empty(len(coeffs), dtype=object)
    vals[:] = coeffs
    try:
        return vals % R
    except (OverflowError, TypeError):  # numpy integer scalars among the terms: convert one by one
        vals[:] = [int(c) % R for c in coeffs]
        return vals


def _sum_runs(vals: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per run of sorted equal keys (beginning at ``starts``), the sum of its values mod r;
    only runs longer than one are added up (object adds are the slow part)."""
    sizes = np.diff(np.append(starts, vals.size))
    out = vals[starts]
    multi = sizes > 1
    sub = vals[np.repeat(multi, sizes)]
    sub_starts = np.concatenate([[0], np.cumsum(sizes[multi])[:-1]])
    out[multi] = np.add.reduceat(sub, sub_starts) % R
    return out
