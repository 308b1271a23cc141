"""A witness-mode constraint system with cheaper per-term bookkeeping.

:class:`FastConstraintSystem` is a :class:`ConstraintSystem` (same ``finish``/``check``) whose
variables cache their hash and whose ``enforce`` appends whole linear combinations at once.
Gadgets hash variables millions of times (dict linear combinations), and the frozen
dataclass's generated ``__hash__`` dominated a 2 KiB PoRep synthesis.
"""

from __future__ import annotations

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.circuit.constraint_system import ConstraintSystem, Variable
from cuzk_plugin.errors import CircuitError

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
    """ConstraintSystem with cached variable hashes and bulk term appends.

    With ``check_as_you_go`` every constraint whose values are all known is evaluated when it
    is enforced, and the first violated one raises :class:`CircuitError` at once (its index is
    ``error.constraint``): a corrupt witness is refused without synthesizing the rest.
    """

    def __init__(self, *, check_as_you_go: bool = False) -> None:
        super().__init__()
        self.check_as_you_go = check_as_you_go

    def alloc(self, value: int | None = None) -> Variable:
        self._aux.append(None if value is None else int(value) % R)
        return _Var(False, len(self._aux) - 1)

    def alloc_input(self, value: int | None = None) -> Variable:
        self._inputs.append(None if value is None else int(value) % R)
        return _Var(True, len(self._inputs) - 1)

    def enforce(self, a, b, c) -> None:
        row = self._num_constraints
        lcs = [lc.terms if hasattr(lc, "terms") else self._as_terms(lc) for lc in (a, b, c)]
        for (rows, vars_, coeffs), terms in zip(self._terms, lcs):
            if terms:
                rows.extend([row] * len(terms))
                vars_.extend([v.index if v.is_input else ~v.index for v in terms])
                coeffs.extend(terms.values())
        self._num_constraints += 1
        if self.check_as_you_go:
            self._check_row(row, *lcs)

    def _eval(self, terms: dict) -> int | None:
        total = 0
        inputs, aux = self._inputs, self._aux
        for v, k in terms.items():
            x = inputs[v.index] if v.is_input else aux[v.index]
            if x is None:
                return None
            total += k * x
        return total

    def _check_row(self, row: int, a: dict, b: dict, c: dict) -> None:
        va, vb, vc = self._eval(a), self._eval(b), self._eval(c)
        if va is None or vb is None or vc is None:
            return
        if (va * vb - vc) % R:
            err = CircuitError(f"constraint {row} is not satisfied")
            err.constraint = row
            raise err

    @staticmethod
    def _as_terms(lc) -> dict:
        from cuzk_plugin.circuit.constraint_system import LinearCombination
        return LinearCombination.of(lc).terms
