"""A small constraint-system API for writing circuits in Python (bellman-style).

    cs = ConstraintSystem()
    x = cs.alloc_input(3)           # public input
    y = cs.alloc(9)                 # private (aux) variable
    cs.enforce(x, x, y)             # x * x = y
    r1cs, inputs, aux = cs.finish()

Linear combinations are built with +, - and * by ints; an int stands for that multiple of ONE.
Values may be None everywhere to synthesize the shape only (setup, constraint counts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from cuzk_plugin.bls12_381.fields import R, ints_to_limbs
from cuzk_plugin.circuit.r1cs import R1CS, SparseMatrix
from cuzk_plugin.errors import CircuitError


@dataclass(frozen=True)
class Variable:
    """A circuit variable: ``is_input`` picks the input or aux index space."""

    is_input: bool
    index: int

    def __add__(self, other): return LinearCombination.of(self) + other
    def __radd__(self, other): return LinearCombination.of(other) + self
    def __sub__(self, other): return LinearCombination.of(self) - other
    def __rsub__(self, other): return LinearCombination.of(other) - self
    def __mul__(self, k: int): return LinearCombination.of(self) * k
    __rmul__ = __mul__
    def __neg__(self): return LinearCombination.of(self) * -1


ONE = Variable(True, 0)


class LinearCombination:
    """sum_i coeff_i * var_i, coefficients kept mod r."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict[Variable, int] | None = None):
        self.terms: dict[Variable, int] = terms or {}

    @classmethod
    def of(cls, value: LinearCombination | Variable | int) -> LinearCombination:
        if isinstance(value, LinearCombination):
            return value
        if isinstance(value, Variable):
            return cls({value: 1})
        if isinstance(value, int):
            return cls({ONE: value % R} if value % R else {})
        raise TypeError(f"cannot make a linear combination from {type(value).__name__}")

    def _combine(self, other, sign: int) -> LinearCombination:
        terms = dict(self.terms)
        for var, k in LinearCombination.of(other).terms.items():
            terms[var] = (terms.get(var, 0) + sign * k) % R
        return LinearCombination(terms)

    def __add__(self, other): return self._combine(other, 1)
    __radd__ = __add__
    def __sub__(self, other): return self._combine(other, -1)
    def __rsub__(self, other): return LinearCombination.of(other)._combine(self, -1)
    def __neg__(self): return self * -1

    def __mul__(self, k: int) -> LinearCombination:
        if not isinstance(k, int):
            raise TypeError("a linear combination can only be scaled by an int (R1CS is rank-1)")
        return LinearCombination({v: c * k % R for v, c in self.terms.items()})
    __rmul__ = __mul__


class ConstraintSystem:
    """Collects variables and constraints, then hands out an :class:`R1CS` and the witness."""

    def __init__(self) -> None:
        self._inputs: list[int | None] = [1]  # ONE
        self._aux: list[int | None] = []
        self._terms: tuple[list[list[int]], ...] = tuple([[], [], []] for _ in range(3))  # (rows, vars, coeffs) x A,B,C
        self._num_constraints = 0

    one = ONE

    def alloc(self, value: int | None = None) -> Variable:
        """A private variable."""
        self._aux.append(None if value is None else int(value) % R)
        return Variable(False, len(self._aux) - 1)

    def alloc_input(self, value: int | None = None) -> Variable:
        """A public input (appears in the verifier's input list, in allocation order)."""
        self._inputs.append(None if value is None else int(value) % R)
        return Variable(True, len(self._inputs) - 1)

    def value(self, lc: LinearCombination | Variable | int) -> int | None:
        """The witness value of a linear combination (None in shape-only mode)."""
        total = 0
        for var, k in LinearCombination.of(lc).terms.items():
            v = (self._inputs if var.is_input else self._aux)[var.index]
            if v is None:
                return None
            total += k * v
        return total % R

    def enforce(self, a, b, c) -> None:
        """Add the constraint <a, z> * <b, z> = <c, z>."""
        row = self._num_constraints
        for (rows, vars_, coeffs), lc in zip(self._terms, (a, b, c)):  # noqa: B905 (hot path: strict= costs ~0.2 us a call; three matrices, three LCs)
            for var, k in LinearCombination.of(lc).terms.items():
                if k:
                    rows.append(row)
                    vars_.append(var.index if var.is_input else ~var.index)  # aux as ~index until finish
                    coeffs.append(k)
        self._num_constraints += 1

    @property
    def num_constraints(self) -> int:
        return self._num_constraints

    def finish(self) -> tuple[R1CS, np.ndarray | None, np.ndarray | None]:
        """The R1CS and, when every value is known, the input and aux limb arrays."""
        n_in = len(self._inputs)
        mats = []
        for rows, vars_, coeffs in self._terms:
            cols = np.asarray(vars_, dtype=np.int64)
            cols = np.where(cols < 0, n_in + ~cols, cols)
            mats.append(SparseMatrix.from_terms(rows, cols, coeffs))
        r1cs = R1CS(n_in, len(self._aux), self._num_constraints, *mats)
        if any(v is None for v in self._inputs) or any(v is None for v in self._aux):
            return r1cs, None, None
        inputs, aux = cast("list[int]", self._inputs), cast("list[int]", self._aux)  # no None: checked above
        return r1cs, ints_to_limbs(inputs), ints_to_limbs(aux).reshape(-1, 4)

    def finish_witness(self) -> tuple[R1CS, np.ndarray, np.ndarray]:
        """:meth:`finish` for a witness-mode system: CircuitError where some value is None."""
        r1cs, inputs, aux = self.finish()
        if inputs is None or aux is None:
            raise CircuitError("shape-only constraint system: some values are None, there is no witness")
        return r1cs, inputs, aux

    def check(self) -> None:
        """Raise CircuitError naming the first violated constraint (witness mode only)."""
        r1cs, inputs, aux = self.finish_witness()
        bad = r1cs.first_unsatisfied(r1cs.assignment(inputs, aux))
        if bad is not None:
            raise CircuitError(f"constraint {bad} is not satisfied")
