"""A witness-mode constraint system with cheaper per-term bookkeeping.

:class:`FastConstraintSystem` is a :class:`ConstraintSystem` (same ``finish``/``check``) whose
variables cache their hash and whose ``enforce`` appends whole linear combinations at once.
Gadgets hash variables millions of times (dict linear combinations), and the frozen
dataclass's generated ``__hash__`` dominated a 2 KiB PoRep synthesis.
"""

from __future__ import annotations

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.circuit.constraint_system import ConstraintSystem, Variable

__all__ = ["FastConstraintSystem"]


class _Var(Variable):
    """A Variable whose hash is computed once."""

    def __init__(self, is_input: bool, index: int):
        object.__setattr__(self, "is_input", is_input)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "_h", hash((is_input, index)))

    def __hash__(self) -> int:
        return self._h

    def __eq__(self, other) -> bool:
        return isinstance(other, Variable) and self.is_input == other.is_input and self.index == other.index

    def __repr__(self) -> str:
        return f"Variable(is_input={self.is_input}, index={self.index})"


class FastConstraintSystem(ConstraintSystem):
    """ConstraintSystem with cached variable hashes and bulk term appends."""

    def alloc(self, value: int | None = None) -> Variable:
        self._aux.append(None if value is None else int(value) % R)
        return _Var(False, len(self._aux) - 1)

    def alloc_input(self, value: int | None = None) -> Variable:
        self._inputs.append(None if value is None else int(value) % R)
        return _Var(True, len(self._inputs) - 1)

    def enforce(self, a, b, c) -> None:
        row = self._num_constraints
        for (rows, vars_, coeffs), lc in zip(self._terms, (a, b, c)):
            terms = lc.terms if hasattr(lc, "terms") else type(self)._as_terms(lc)
            if terms:
                rows.extend([row] * len(terms))
                vars_.extend([v.index if v.is_input else ~v.index for v in terms])
                coeffs.extend(terms.values())
        self._num_constraints += 1

    @staticmethod
    def _as_terms(lc) -> dict:
        from cuzk_plugin.circuit.constraint_system import LinearCombination
        return LinearCombination.of(lc).terms
