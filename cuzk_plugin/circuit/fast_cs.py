"""A witness-mode constraint system with cheaper per-term bookkeeping.

:class:`FastConstraintSystem` is a :class:`ConstraintSystem` (same ``finish``/``check``)
whose variables are small ``int`` subclasses: their value is the column code ``finish``
expects (the input index, or ``~index`` for an aux variable), so hashing and dict look-ups
stay in C, and ``enforce`` appends a linear combination's keys as they are. Gadgets hash
variables millions of times (dict linear combinations); the frozen dataclass's generated
``__hash__`` dominated a 2 KiB PoRep synthesis. The shared ``ONE`` (input 0) is the one
:class:`Variable` that is not such an int; it maps to column 0.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.circuit.constraint_system import ONE, ConstraintSystem, LinearCombination
from cuzk_plugin.errors import CircuitError

__all__ = ["FastConstraintSystem", "IntVariable", "gc_paused"]


_gc_pause_lock = threading.Lock()
_gc_pauses = 0  # threads inside gc_paused
_gc_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Synthesis and large JSON documents allocate millions of acyclic objects: cyclic GC
    passes only slow them down, and each holds the GIL (a full pass over a parsed 32 GiB C1
    ~0.5 s). Counted, so that overlapping pauses in several threads end with the last."""
    global _gc_pauses, _gc_was_enabled
    with _gc_pause_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_pause_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


class IntVariable(int):
    """A variable as its column code: index >= 1 for an input, ~index (< 0) for an aux."""

    __slots__ = ()

    @property
    def is_input(self) -> bool:
        return self >= 0

    @property
    def index(self) -> int:
        return int(self) if self >= 0 else ~int(self)

    def __repr__(self) -> str:
        return f"Variable(is_input={self.is_input}, index={self.index})"


class FastConstraintSystem(ConstraintSystem):
    """ConstraintSystem with int-coded variables and bulk term appends.

    With ``check_as_you_go`` every constraint whose values are all known is evaluated when it
    is enforced, and the first violated one raises :class:`CircuitError` at once (its index is
    ``error.constraint``): a corrupt witness is refused without synthesizing the rest.
    """

    def __init__(self, *, check_as_you_go: bool = False) -> None:
        super().__init__()
        self.check_as_you_go = check_as_you_go

    def alloc(self, value: int | None = None) -> IntVariable:  # type: ignore[override]  # _Var duck-types Variable (is_input, index) as an int: see the module doc
        aux = self._aux
        aux.append(None if value is None else (value if 0 <= value < 2 else int(value) % R))
        return IntVariable(~(len(aux) - 1))

    def alloc_input(self, value: int | None = None) -> IntVariable:  # type: ignore[override]  # _Var duck-types Variable (is_input, index) as an int: see the module doc
        self._inputs.append(None if value is None else int(value) % R)
        return IntVariable(len(self._inputs) - 1)

    def enforce(self, a, b, c) -> None:
        row = self._num_constraints
        lcs = [lc.terms if type(lc) is LinearCombination else LinearCombination.of(lc).terms for lc in (a, b, c)]
        for (rows, vars_, coeffs), terms in zip(self._terms, lcs):  # noqa: B905 (hot path: strict= costs ~0.2 us a call; three matrices, three LCs)
            if terms:
                rows.extend([row] * len(terms))
                vars_.extend(terms)  # type: ignore[arg-type]  # _Var keys are ints; ONE stays a Variable here, finish maps it to column 0
                coeffs.extend(terms.values())
        self._num_constraints += 1
        if self.check_as_you_go:
            self._check_row(row, *lcs)

    def finish(self):
        for _rows, vars_, _coeffs in self._terms:
            vars_[:] = [0 if v is ONE else v for v in vars_]
        return super().finish()

    def _eval(self, terms: dict) -> int | None:
        total = 0
        inputs, aux = self._inputs, self._aux
        for v, k in terms.items():
            if v is ONE:
                total += k
                continue
            x = aux[~v] if v < 0 else inputs[v]
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
