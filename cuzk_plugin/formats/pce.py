"""A pre-compiled circuit: the R1CS matrices A, B, C of one circuit shape, recorded once and
reused for every proof of that shape (Filecoin circuits of one kind and sector size differ
only in their witness).

Rows are the circuit's constraints in ``enforce`` order followed by one ``x_i * 0 = 0`` row per
public input (bellperson's input constraints), so a backend evaluates a = A z, b = B z,
c = C z over all ``num_constraints`` rows and goes straight on to H. Columns are the unified
variable space: inputs ``0 .. num_inputs-1`` (ONE is 0), then aux ``num_inputs + j``.
Coefficients are indices into a small table of the distinct non-zero values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CsrMatrix", "PrecompiledCircuit"]


@dataclass(frozen=True)
class CsrMatrix:
    """One matrix in compressed sparse rows; row j's terms are ``row_ptr[j] .. row_ptr[j+1]``."""

    #: (num_constraints + 1,) uint64, starting at 0, non-decreasing.
    row_ptr: np.ndarray
    #: (nnz,) uint32 column (variable) of each term.
    cols: np.ndarray
    #: (nnz,) uint32 index of each term's coefficient in :attr:`PrecompiledCircuit.coeffs`.
    coeff_idx: np.ndarray

    @property
    def nnz(self) -> int:
        return int(self.cols.shape[0])


@dataclass(frozen=True)
class PrecompiledCircuit:
    """The constraint matrices and densities of one circuit shape (see the module doc)."""

    #: Shape name, e.g. ``porep-32g``.
    name: str
    #: Public inputs, ONE included.
    num_inputs: int
    num_aux: int
    #: Rows: circuit constraints, then one per public input.
    num_constraints: int
    #: (k, 4) uint64 canonical Fr limbs: the distinct non-zero coefficients.
    coeffs: np.ndarray
    a: CsrMatrix
    b: CsrMatrix
    c: CsrMatrix
    #: (num_aux,) bool: aux variable i appears in some A row (every input is dense in A).
    a_aux_density: np.ndarray
    #: (num_inputs,) bool: input i appears in some B row.
    b_input_density: np.ndarray
    #: (num_aux,) bool: aux variable i appears in some B row.
    b_aux_density: np.ndarray
    #: Hex SHA-256 over the shape (counts, matrices, coefficient table): names the recorded circuit.
    digest: str

    @property
    def num_vars(self) -> int:
        return self.num_inputs + self.num_aux
