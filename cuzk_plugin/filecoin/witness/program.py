"""Bit and word programs traced from gadget code, evaluated for many instances at once.

A gadget (one SHA-256 compression for a given constant/allocated input pattern) is run once
with :class:`Traced` values instead of bools and ints. Every value operation the gadget does
(``^``, ``&``, ``|``, ``~``, ``+``, shifts) appends a node to a :class:`Tape`; every ``alloc``
of :class:`TraceCS` records which node holds that aux variable's value. :func:`compile_program`
keeps the nodes the aux variables and outputs need, orders them by depth and groups the nodes
of one depth and one operation, so that :meth:`Program.run` evaluates N instances with one numpy
call per group: a compression costs a few thousand numpy calls whatever N is.

Bits (inputs, xor/and of bits, a word masked with 1) are ``uint8``; words and their sums
(< 2^36) ``uint64``. ``~x`` is the 64-bit complement; the gadgets only use it masked to 32
bits, where it equals Python's.
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
    """A compiled trace. Nodes whose values are bits (0/1) live in a uint8 matrix, the others
    (words, sums) in a uint64 one: ``run(inputs)`` gives both, (bits, words), each
    (nodes, instances); :meth:`take` reads nodes out of them. Aux variable j of an instance is
    node ``aux[j]``, output k node ``outputs[k]``; a node is (is_bit, row)."""

    num_inputs: int
    num_bit_nodes: int
    num_word_nodes: int
    consts: tuple  # ((is_bit, rows, values), ...)
    steps: tuple  # (kind, out_is_bit, out rows, ((is_bit, rows), ...) operands, extra) in order
    aux: tuple  # (is_bit (num_aux,) bool, rows (num_aux,) int64)
    outputs: tuple  # the same for the outputs
    num_constraints: int

    @property
    def num_aux(self) -> int:
        return int(self.aux[1].shape[0])

    def run(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``inputs`` (num_inputs, N) 0/1 -> (bit values (bit nodes, N) uint8, word values
        (word nodes, N) uint64)."""
        if inputs.shape[0] != self.num_inputs:
            raise ValueError(f"{inputs.shape[0]} input rows, the program takes {self.num_inputs}")
        n = inputs.shape[1]
        bits = np.empty((self.num_bit_nodes, n), dtype=np.uint8)
        words = np.empty((self.num_word_nodes, n), dtype=np.uint64)
        store = (words, bits)
        bits[:self.num_inputs] = inputs
        for is_bit, rows, values in self.consts:
            store[is_bit][rows] = values[:, None]
        for kind, out_bit, out, ops, extra in self.steps:
            dst = store[out_bit][out]  # a group's outputs are consecutive rows: a view
            if out_bit:
                vals = [store[b][r] for b, r in ops]
            else:  # words: widen bit operands before shifts, sums and complements
                vals = [store[b][r].astype(np.uint64) if b else store[b][r] for b, r in ops]
            if kind == _XOR:
                np.bitwise_xor(vals[0], vals[1], out=dst, casting="unsafe")
            elif kind == _AND:
                np.bitwise_and(vals[0], vals[1], out=dst, casting="unsafe")
            elif kind == _NOT:
                np.invert(vals[0], out=dst)
            elif kind == _PACK:
                const, lsh, rsh = extra
                if vals[0].ndim == 3:  # all terms in one gather: (members, terms, N)
                    x = vals[0] << lsh
                    x >>= rsh
                    np.bitwise_or.reduce(x, axis=1, out=dst)
                else:
                    dst[...] = (vals[0] << lsh[:, 0]) >> rsh[:, 0]
                    for t in range(1, len(vals)):
                        dst |= (vals[t] << lsh[:, t]) >> rsh[:, t]
                if const is not None:
                    dst |= const[:, None]
            else:  # _SUM
                if vals[0].ndim == 3:
                    vals[0].sum(axis=1, out=dst)
                else:
                    np.add(vals[0], vals[1], out=dst)
                    for v in vals[2:]:
                        dst += v
                if extra is not None:
                    dst += extra[:, None]
        return bits, words

    def take(self, values: tuple[np.ndarray, np.ndarray], which: tuple) -> np.ndarray:
        """The values of nodes ``which`` (self.aux or self.outputs): (len, N), uint8 when all
        are bits, else uint64."""
        is_bit, rows = which
        bits, words = values
        if is_bit.all():
            return bits[rows]
        out = np.empty((rows.shape[0], bits.shape[1]), dtype=np.uint64)
        out[is_bit] = bits[rows[is_bit]]
        out[~is_bit] = words[rows[~is_bit]]
        return out


def compile_program(tape: Tape, num_inputs: int, aux_nodes: list[int], output_nodes: list[int],
                    num_constraints: int) -> Program:
    """Keep what the aux variables and outputs need; type each node (bit or word) and group the
    nodes by (depth, kind, arity, types). Input node k must be the tape's k-th input (created
    first, in order); inputs are bits."""
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

    is_bit = np.zeros(len(kinds), dtype=bool)
    depth = np.zeros(len(kinds), dtype=np.int64)
    groups: dict[tuple, list[int]] = {}
    consts = []

    def const_bit(i: int) -> bool:
        return kinds[i] == _CONST and args[i] in (0, 1)

    for node in np.flatnonzero(live):
        i = int(node)
        kind = kinds[i]
        if kind == _INPUT:
            is_bit[i] = True
            continue
        if kind == _CONST:
            is_bit[i] = args[i] in (0, 1)
            consts.append(i)
            continue
        ops = operands(i)
        if kind == _XOR:
            is_bit[i] = is_bit[ops[0]] and is_bit[ops[1]]
        elif kind == _AND:
            is_bit[i] = (is_bit[ops[0]] and is_bit[ops[1]]) or const_bit(ops[0]) or const_bit(ops[1])
        depth[i] = 1 + max(int(depth[o]) for o in ops)
        op_bits = tuple(bool(is_bit[o]) for o in ops)
        # terms all of one type read as one (members, terms) gather: (True, (is_bit,))
        gathered = kind in (_PACK, _SUM) and len(set(op_bits)) == 1
        key = (int(depth[i]), kind, len(ops), bool(is_bit[i]), gathered, op_bits[:1] if gathered else op_bits)
        groups.setdefault(key, []).append(i)

    row = np.full(len(kinds), -1, dtype=np.int64)
    nxt = [0, 0]  # next free row: words, bits
    def place(nodes: list[int], bit: bool) -> None:
        row[nodes] = np.arange(nxt[bit], nxt[bit] + len(nodes))
        nxt[bit] += len(nodes)

    place(list(range(num_inputs)), True)
    const_groups = []
    for bit in (False, True):
        members = [i for i in consts if bool(is_bit[i]) == bit]
        if members:
            place(members, bit)
            const_groups.append((bit, row[members], np.array([args[i] for i in members], dtype=np.uint64)))
    ordered = sorted(groups)
    for key in ordered:
        place(groups[key], key[3])

    steps = []
    for key in ordered:
        _, kind, arity, out_bit, gathered, op_bits = key
        members = groups[key]
        opnodes = [operands(i) for i in members]
        op_rows: tuple[tuple[bool, np.ndarray], ...]
        if gathered:
            op_rows = ((op_bits[0], row[np.array(opnodes, dtype=np.int64)]),)
        else:
            op_rows = tuple((op_bits[t], row[[o[t] for o in opnodes]]) for t in range(arity))
        extra: tuple | np.ndarray | None = None
        if kind == _PACK:
            shifts = np.array([[s for _, s in args[i][1]] for i in members], dtype=np.int64)
            c = np.array([args[i][0] for i in members], dtype=np.uint64)
            extra = (c if c.any() else None, np.maximum(shifts, 0).astype(np.uint64)[:, :, None],
                     np.maximum(-shifts, 0).astype(np.uint64)[:, :, None])
        elif kind == _SUM:
            c = np.array([args[i][0] for i in members], dtype=np.uint64)
            extra = c if c.any() else None
        out = row[members]
        assert out[-1] - out[0] + 1 == len(out), "a group's rows are consecutive"
        steps.append((kind, out_bit, slice(int(out[0]), int(out[-1]) + 1), op_rows, extra))

    def nodes(which: list[int]) -> tuple:
        idx = np.asarray(which, dtype=np.int64)
        return is_bit[idx].copy(), row[idx]

    return Program(
        num_inputs=num_inputs, num_bit_nodes=nxt[True], num_word_nodes=nxt[False],
        consts=tuple(const_groups), steps=tuple(steps), aux=nodes(aux_nodes), outputs=nodes(output_nodes),
        num_constraints=num_constraints,
    )
