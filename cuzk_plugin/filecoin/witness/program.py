"""Bit and word programs traced from gadget code, evaluated for many instances at once.

A gadget (one SHA-256 compression for a given constant/allocated input pattern) is run once
with :class:`Traced` values instead of bools and ints. Every value operation the gadget does
(``^``, ``&``, ``|``, ``~``, ``+``, shifts) appends a node to a :class:`Tape`; every ``alloc``
of :class:`TraceCS` records which node holds that aux variable's value. :func:`compile_program`
keeps the nodes the aux variables and outputs need, orders them by depth and groups the nodes
of one depth and one operation, so that :meth:`Program.run` evaluates N instances with one numpy
call per group: a compression costs a few thousand numpy calls whatever N is.

Values are ``uint64``: bits are 0/1, 32-bit words and their sums (< 2^36) fit. ``~x`` is the
64-bit complement; the gadgets only use it masked to 32 bits, where it equals Python's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Tape", "Traced", "TraceCS", "Program", "compile_program"]

_MASK64 = (1 << 64) - 1

# node kinds
_INPUT, _CONST, _XOR, _AND, _NOT, _PACK, _SUM = range(7)


class Tape:
    """The nodes of one trace: ``kinds[i]`` and ``args[i]`` (see the kinds above).

    PACK args: (const, ((node, shift), ...)), value const | OR of node shifted left by shift
    (right when negative). SUM args: (const, (node, ...)). XOR/AND args: (node, node)."""

    def __init__(self) -> None:
        self.kinds: list[int] = []
        self.args: list = []
        self._consts: dict[int, int] = {}

    def _add(self, kind: int, args) -> int:
        self.kinds.append(kind)
        self.args.append(args)
        return len(self.kinds) - 1

    def input(self, k: int) -> Traced:
        return Traced(self, self._add(_INPUT, k))

    def const(self, value: int) -> int:
        value = int(value)
        if not 0 <= value <= _MASK64:
            raise ValueError(f"traced constant {value} does not fit in 64 bits")
        node = self._consts.get(value)
        if node is None:
            node = self._consts[value] = self._add(_CONST, value)
        return node

    def node_of(self, x) -> int:
        """The node holding ``x`` (a Traced, or a bool/int constant)."""
        if isinstance(x, Traced):
            if x.tape is not self:
                raise ValueError("a traced value from another tape")
            return x.node
        if isinstance(x, (bool, int)):
            return self.const(x)
        raise TypeError(f"cannot trace a {type(x).__name__} value")


class Traced:
    """A value of the gadget under trace; operations append nodes to its tape."""

    __slots__ = ("tape", "node")

    def __init__(self, tape: Tape, node: int):
        self.tape = tape
        self.node = node

    def __bool__(self):
        raise TypeError("a traced value has no truth value: the gadget branches on a witness value")

    __index__ = __int__ = __bool__

    def _bin(self, kind: int, other) -> Traced:
        t = self.tape
        if isinstance(other, (bool, int)) and kind == _XOR and int(other) == 0:
            return self
        return Traced(t, t._add(kind, (self.node, t.node_of(other))))

    def __xor__(self, other): return self._bin(_XOR, other)
    __rxor__ = __xor__
    def __and__(self, other): return self._bin(_AND, other)
    __rand__ = __and__

    def __invert__(self):
        return Traced(self.tape, self.tape._add(_NOT, self.node))

    def _pack_terms(self) -> tuple[int, tuple]:
        if self.tape.kinds[self.node] == _PACK:
            return self.tape.args[self.node]
        return 0, ((self.node, 0),)

    def __lshift__(self, k: int):
        if not isinstance(k, int):
            return NotImplemented
        const, terms = self._pack_terms()
        if const:
            return Traced(self.tape, self.tape._add(_PACK, (0, ((self.node, k),))))
        return Traced(self.tape, self.tape._add(_PACK, (0, tuple((n, s + k) for n, s in terms))))

    def __rshift__(self, k: int):
        if not isinstance(k, int):
            return NotImplemented
        return Traced(self.tape, self.tape._add(_PACK, (0, ((self.node, -k),))))

    def __or__(self, other):
        t = self.tape
        c1, t1 = self._pack_terms()
        if isinstance(other, Traced):
            c2, t2 = other._pack_terms()
        elif isinstance(other, (bool, int)):
            c2, t2 = int(other), ()
        else:
            return NotImplemented
        return Traced(t, t._add(_PACK, (c1 | c2, t1 + t2)))
    __ror__ = __or__

    def __add__(self, other):
        t = self.tape
        if isinstance(other, (bool, int)) and int(other) == 0:
            return self
        c1, t1 = t.args[self.node] if t.kinds[self.node] == _SUM else (0, (self.node,))
        if isinstance(other, Traced):
            c2, t2 = t.args[other.node] if t.kinds[other.node] == _SUM else (0, (other.node,))
        elif isinstance(other, (bool, int)):
            c2, t2 = int(other), ()
        else:
            return NotImplemented
        return Traced(t, t._add(_SUM, (c1 + c2, t1 + t2)))
    __radd__ = __add__


class TraceCS:
    """A constraint system that only records, per aux variable, the node of its value.
    Variables are plain ints (aux k is k; give traced inputs negative ones): the gadgets only
    hash and compare them, and Variable's dataclass hash would dominate a trace."""

    def __init__(self, tape: Tape):
        self.tape = tape
        self.aux_nodes: list[int] = []
        self._num_constraints = 0

    def alloc(self, value=None) -> int:
        if value is None:
            raise ValueError("tracing needs values: a gadget allocated None")
        self.aux_nodes.append(self.tape.node_of(value))
        return len(self.aux_nodes) - 1

    def alloc_input(self, value=None):
        raise ValueError("a traced gadget must not allocate public inputs")

    def enforce(self, a, b, c) -> None:
        self._num_constraints += 1

    @property
    def num_constraints(self) -> int:
        return self._num_constraints


@dataclass(frozen=True)
class Program:
    """A compiled trace: ``run(inputs)`` gives the value matrix V (nodes x instances); aux
    variable j of an instance is ``V[aux[j]]``, output k is ``V[outputs[k]]``."""

    num_inputs: int
    num_nodes: int
    const_rows: np.ndarray  # (c,) int64
    const_values: np.ndarray  # (c,) uint64
    steps: tuple  # (kind, out rows, operand arrays...) in dependency order
    aux: np.ndarray  # (num_aux,) int64 rows of V
    outputs: np.ndarray  # (num_outputs,) int64 rows of V
    num_constraints: int

    @property
    def num_aux(self) -> int:
        return int(self.aux.shape[0])

    def run(self, inputs: np.ndarray) -> np.ndarray:
        """``inputs`` (num_inputs, N) uint64 -> V (num_nodes, N) uint64."""
        if inputs.shape[0] != self.num_inputs:
            raise ValueError(f"{inputs.shape[0]} input rows, the program takes {self.num_inputs}")
        n = inputs.shape[1]
        v = np.empty((self.num_nodes, n), dtype=np.uint64)
        v[:self.num_inputs] = inputs
        v[self.const_rows] = self.const_values[:, None]
        for step in self.steps:
            kind, out = step[0], step[1]
            if kind == _XOR:
                v[out] = v[step[2]] ^ v[step[3]]
            elif kind == _AND:
                v[out] = v[step[2]] & v[step[3]]
            elif kind == _NOT:
                v[out] = ~v[step[2]]
            elif kind == _PACK:
                _, _, const, nodes, lsh, rsh = step
                acc = (v[nodes[:, 0]] << lsh[:, 0, None]) >> rsh[:, 0, None]
                for t in range(1, nodes.shape[1]):
                    acc |= (v[nodes[:, t]] << lsh[:, t, None]) >> rsh[:, t, None]
                if const is not None:
                    acc |= const[:, None]
                v[out] = acc
            else:  # _SUM
                _, _, const, nodes = step
                acc = v[nodes].sum(axis=1, dtype=np.uint64)
                if const is not None:
                    acc += const[:, None]
                v[out] = acc
        return v


def compile_program(tape: Tape, num_inputs: int, aux_nodes: list[int], output_nodes: list[int],
                    num_constraints: int) -> Program:
    """Keep what the aux variables and outputs need; group nodes by (depth, kind, arity).
    Input node k must be the tape's k-th input (created first, in order)."""
    kinds, args = tape.kinds, tape.args
    for k in range(num_inputs):
        if kinds[k] != _INPUT or args[k] != k:
            raise ValueError("the tape's first nodes must be its inputs, in order")

    def operands(i: int) -> list[int]:
        kind, a = kinds[i], args[i]
        if kind in (_XOR, _AND):
            return list(a)
        if kind == _NOT:
            return [a]
        if kind == _PACK:
            return [n for n, _ in a[1]]
        if kind == _SUM:
            return list(a[1])
        return []

    live = np.zeros(len(kinds), dtype=bool)
    stack = list(aux_nodes) + list(output_nodes)
    while stack:
        i = stack.pop()
        if not live[i]:
            live[i] = True
            stack.extend(operands(i))
    live[:num_inputs] = True

    depth = np.zeros(len(kinds), dtype=np.int64)
    groups: dict[tuple, list[int]] = {}
    consts = []
    for i in np.flatnonzero(live):
        i = int(i)
        kind = kinds[i]
        if kind == _INPUT:
            continue
        if kind == _CONST:
            consts.append(i)
            continue
        ops = operands(i)
        depth[i] = 1 + max(int(depth[o]) for o in ops)
        arity = len(ops) if kind in (_PACK, _SUM) else 0
        groups.setdefault((int(depth[i]), kind, arity), []).append(i)

    row = np.full(len(kinds), -1, dtype=np.int64)
    row[:num_inputs] = np.arange(num_inputs)
    nxt = num_inputs
    row[consts] = np.arange(nxt, nxt + len(consts))
    nxt += len(consts)
    ordered = sorted(groups)
    for key in ordered:
        members = groups[key]
        row[members] = np.arange(nxt, nxt + len(members))
        nxt += len(members)

    steps = []
    for key in ordered:
        _, kind, arity = key
        members = groups[key]
        out = row[members]
        if kind in (_XOR, _AND):
            a = row[[args[i][0] for i in members]]
            b = row[[args[i][1] for i in members]]
            steps.append((kind, out, a, b))
        elif kind == _NOT:
            steps.append((kind, out, row[[args[i] for i in members]]))
        elif kind == _PACK:
            nodes = row[[[n for n, _ in args[i][1]] for i in members]]
            shifts = np.array([[s for _, s in args[i][1]] for i in members], dtype=np.int64)
            c = np.array([args[i][0] for i in members], dtype=np.uint64)
            steps.append((kind, out, c if c.any() else None, nodes,
                          np.maximum(shifts, 0).astype(np.uint64), np.maximum(-shifts, 0).astype(np.uint64)))
        else:
            nodes = row[[list(args[i][1]) for i in members]]
            c = np.array([args[i][0] for i in members], dtype=np.uint64)
            steps.append((kind, out, c if c.any() else None, nodes))
    return Program(
        num_inputs=num_inputs, num_nodes=nxt,
        const_rows=row[consts], const_values=np.array([args[i] for i in consts], dtype=np.uint64),
        steps=tuple(steps), aux=row[np.asarray(aux_nodes, dtype=np.int64)],
        outputs=row[np.asarray(output_nodes, dtype=np.int64)], num_constraints=num_constraints,
    )
