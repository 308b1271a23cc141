"""A counting-only constraint system for shape passes over very large circuits.

:class:`ShapeConstraintSystem` has the allocation and ``enforce`` interface of
:class:`~cuzk_plugin.circuit.constraint_system.ConstraintSystem` but stores nothing: it counts
inputs, aux variables and constraints. Gadgets that synthesize a large, repeated sub-circuit
(one SHA-256 compression, one Poseidon hash) call ``memoized``: the first call with a
given pattern of inputs (which are constants, which are allocated, negated or not) runs the
gadget for real and records what it added; later calls with the same pattern add the same
counts and return outputs re-mapped onto fresh variable indices. The gadget code is the same
one that witness synthesis runs.
"""

from __future__ import annotations

from collections.abc import Callable

from cuzk_plugin.circuit.constraint_system import Variable
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.filecoin.gadgets.boolean import Boolean
from cuzk_plugin.filecoin.gadgets.num import AllocatedNum

__all__ = ["ShapeConstraintSystem"]

#: One output of a memoized gadget: ("c", 0/1, _) a constant bit; ("new", k, negated) the
#: gadget's k-th new aux variable as a bit, ("newnum", k, _) as a number; ("in", pos, negated)
#: input ``pos`` as a bit, ("innum", pos, _) as a number.
_OutputSpec = tuple[str, int, bool]
#: A gadget's ``fn(cs, inputs) -> outputs`` and the ``memoized`` entry point that runs it.
_Gadget = Callable[["ShapeConstraintSystem", list], list]
_Memoized = Callable[[str, _Gadget, list], list]


def _signature(x) -> str:
    if isinstance(x, Boolean):
        if x.var is None:
            return "T" if x.value else "F"
        return "N" if x.negated else "I"
    if isinstance(x, AllocatedNum):
        return "n"
    raise TypeError(f"cannot memoize over {type(x).__name__}")


class ShapeConstraintSystem:
    """Counts variables and constraints; values are always None."""

    def __init__(self, *, memoize: bool = True) -> None:
        self.num_inputs = 1  # ONE
        self.num_aux = 0
        self._num_constraints = 0
        self._memo: dict[tuple[str, tuple[str, ...]], tuple[int, int, list[_OutputSpec]]] = {}
        self.memo_hits = 0
        #: what the gadgets call (see :meth:`_memoized`); None: they see no memo and synthesize every call
        self.memoized: _Memoized | None = self._memoized if memoize else None

    def alloc(self, value=None) -> Variable:
        self.num_aux += 1
        return Variable(False, self.num_aux - 1)

    def alloc_input(self, value=None) -> Variable:
        self.num_inputs += 1
        return Variable(True, self.num_inputs - 1)

    def enforce(self, a, b, c) -> None:
        self._num_constraints += 1

    def value(self, lc) -> None:
        return None

    @property
    def num_constraints(self) -> int:
        return self._num_constraints

    def finish(self):
        raise CircuitError("a shape-only constraint system has no R1CS matrices; use ConstraintSystem")

    def _memoized(self, name: str, fn: _Gadget, inputs: list) -> list:
        """``fn(cs, inputs) -> outputs`` (lists of Boolean / AllocatedNum), run once per input
        pattern; replays of the same pattern cost the recorded counts."""
        key = (name, tuple(_signature(x) for x in inputs))
        rec = self._memo.get(key)
        if rec is None:
            aux0, in0, c0 = self.num_aux, self.num_inputs, self._num_constraints
            outputs = fn(self, inputs)
            if self.num_inputs != in0:
                return outputs  # allocates inputs: not replayable, never recorded
            where: dict[Variable, int] = {}
            for pos, x in enumerate(inputs):
                if getattr(x, "var", None) is not None:
                    where.setdefault(x.var, pos)
            spec: list[_OutputSpec] = []
            for out in outputs:
                if isinstance(out, Boolean):
                    if out.var is None:
                        spec.append(("c", 1 if out.value else 0, False))
                    elif not out.var.is_input and out.var.index >= aux0:
                        spec.append(("new", out.var.index - aux0, out.negated))
                    else:
                        pos = where[out.var]
                        spec.append(("in", pos, out.negated != inputs[pos].negated))
                else:
                    if not out.var.is_input and out.var.index >= aux0:
                        spec.append(("newnum", out.var.index - aux0, False))
                    else:
                        spec.append(("innum", where[out.var], False))
            self._memo[key] = (self.num_aux - aux0, self._num_constraints - c0, spec)
            return outputs
        self.memo_hits += 1
        d_aux, d_cons, spec = rec
        base = self.num_aux
        self.num_aux += d_aux
        self._num_constraints += d_cons
        outputs = []
        for kind, arg, neg in spec:
            if kind == "c":
                outputs.append(Boolean.constant(arg == 1))
            elif kind == "new":
                outputs.append(Boolean(Variable(False, base + arg), neg, None))
            elif kind == "in":
                src = inputs[arg]
                outputs.append(Boolean(src.var, src.negated != neg, None))
            elif kind == "newnum":
                outputs.append(AllocatedNum(Variable(False, base + arg), None))
            else:
                outputs.append(inputs[arg])
        return outputs
