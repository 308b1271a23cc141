"""What synthesis hands to a backend, in numpy arrays: a :class:`SynthesizedPartition` (a, b, c
already evaluated) or a :class:`WitnessPartition` (the assignment only, for a pre-compiled circuit
resident on the backend)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS


class _Assignment:
    """What both partition forms derive from their assignment and densities."""

    input_assignment: np.ndarray
    aux_assignment: np.ndarray

    if TYPE_CHECKING:  # fields of one subclass, properties of the other
        @property
        def a_aux_density(self) -> np.ndarray: ...

        @property
        def b_input_density(self) -> np.ndarray: ...

        @property
        def b_aux_density(self) -> np.ndarray: ...

        @property
        def num_constraints(self) -> int: ...

    @property
    def num_inputs(self) -> int:
        return int(self.input_assignment.shape[0])

    @property
    def num_aux(self) -> int:
        return int(self.aux_assignment.shape[0])

    @property
    def domain_size(self) -> int:
        """N: the smallest power of two >= the number of constraints."""
        return 1 << max(0, (self.num_constraints - 1).bit_length())

    def a_scalars(self) -> np.ndarray:
        """Scalars of the A query in key order: every input, then the dense aux variables."""
        return np.concatenate([self.input_assignment, self.aux_assignment[self.a_aux_density]])

    def b_scalars(self) -> np.ndarray:
        """Scalars of the B queries: dense inputs, then dense aux variables."""
        return np.concatenate([self.input_assignment[self.b_input_density], self.aux_assignment[self.b_aux_density]])


@dataclass(frozen=True)
class SynthesizedPartition(_Assignment):
    """One circuit instance, synthesized: everything the prover needs besides the key.

    Rows are the circuit's constraints followed by one ``x_i * 0 = 0`` constraint per public
    input (Filecoin's input constraints), so ``a.shape[0] == num_constraints``.
    All field arrays are canonical Fr limbs, ``(n, 4) uint64``.
    """

    #: a_j = <A_j, z> for every constraint j (input constraints included).
    a: np.ndarray
    #: b_j = <B_j, z>.
    b: np.ndarray
    #: c_j = <C_j, z>.
    c: np.ndarray
    #: Public inputs, ONE first.
    input_assignment: np.ndarray
    #: Private (auxiliary) variables.
    aux_assignment: np.ndarray
    #: aux variable i appears in some A_j (all inputs are dense in A).
    a_aux_density: np.ndarray
    #: input variable i appears in some B_j.
    b_input_density: np.ndarray
    #: aux variable i appears in some B_j.
    b_aux_density: np.ndarray

    def __post_init__(self) -> None:
        m = self.a.shape[0]
        for name in ("a", "b", "c", "input_assignment", "aux_assignment"):
            arr = getattr(self, name)
            if arr.dtype != np.uint64 or arr.ndim != 2 or arr.shape[1] != FR_LIMBS:
                raise ValueError(f"SynthesizedPartition.{name}: expected (n, 4) uint64, got {arr.dtype} {arr.shape}")
        if self.b.shape[0] != m or self.c.shape[0] != m:
            raise ValueError("SynthesizedPartition: a, b, c must have one row per constraint")
        if self.a_aux_density.shape != (self.num_aux,) or self.b_aux_density.shape != (self.num_aux,):
            raise ValueError("SynthesizedPartition: aux densities must have one entry per aux variable")
        if self.b_input_density.shape != (self.num_inputs,):
            raise ValueError("SynthesizedPartition: b_input_density must have one entry per input")

    @property
    def num_constraints(self) -> int:
        return int(self.a.shape[0])



@dataclass(frozen=True)
class WitnessPartition(_Assignment):
    """One circuit instance as its assignment alone: the backend evaluates a, b, c itself from a
    pre-compiled circuit it holds (``circuit``, the handle :meth:`Backend.load_circuit` returned),
    and takes the densities from it, so the matrices never cross the boundary per proof."""

    #: The backend's handle of the resident :class:`~cuzk_plugin.formats.pce.PrecompiledCircuit`
    #: (``circuit.circuit`` is the PrecompiledCircuit: counts, densities, digest).
    circuit: Any
    #: Public inputs, ONE first: (num_inputs, 4) uint64 canonical.
    input_assignment: np.ndarray
    #: Private variables: (num_aux, 4) uint64 canonical.
    aux_assignment: np.ndarray

    def __post_init__(self) -> None:
        pce = self.pce
        for name, n in (("input_assignment", pce.num_inputs), ("aux_assignment", pce.num_aux)):
            arr = getattr(self, name)
            if arr.dtype != np.uint64 or arr.shape != (n, FR_LIMBS):
                raise ValueError(f"WitnessPartition.{name}: circuit {pce.name} needs ({n}, 4) uint64, "
                                 f"got {arr.dtype} {arr.shape}")

    @property
    def pce(self):
        """The pre-compiled circuit the handle holds."""
        return self.circuit.circuit

    @property
    def num_constraints(self) -> int:
        return int(self.pce.num_constraints)


    @property
    def a_aux_density(self) -> np.ndarray:
        return np.asarray(self.pce.a_aux_density)

    @property
    def b_input_density(self) -> np.ndarray:
        return np.asarray(self.pce.b_input_density)

    @property
    def b_aux_density(self) -> np.ndarray:
        return np.asarray(self.pce.b_aux_density)

    def on(self, circuit: Any) -> WitnessPartition:
        """The same assignment for another handle of the same circuit (a lane's resident copy)."""
        if circuit.circuit.digest != self.pce.digest:
            raise ValueError(f"circuit handle holds {circuit.circuit.name} ({circuit.circuit.digest[:16]}...), "
                             f"the witness is for {self.pce.name} ({self.pce.digest[:16]}...)")
        return WitnessPartition(circuit, self.input_assignment, self.aux_assignment)

    def z(self) -> np.ndarray:
        """The full assignment: inputs then aux, (num_vars, 4) uint64."""
        return np.concatenate([self.input_assignment, self.aux_assignment])

