"""Example circuits written with our constraint-system API: the core test shapes and the demo.

Each builder takes a seed for its witness and returns a filled :class:`ConstraintSystem`.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.circuit.constraint_system import ConstraintSystem


def inputs_only(seed: int = 0) -> ConstraintSystem:
    """Only public inputs: x * y = z with all three public."""
    rnd = random.Random(seed)
    x, y = rnd.randrange(R), rnd.randrange(R)
    cs = ConstraintSystem()
    vx, vy, vz = cs.alloc_input(x), cs.alloc_input(y), cs.alloc_input(x * y % R)
    cs.enforce(vx, vy, vz)
    return cs


def aux_only(seed: int = 0) -> ConstraintSystem:
    """No public input besides ONE: a chain of private squarings."""
    rnd = random.Random(seed)
    cs = ConstraintSystem()
    v = rnd.randrange(R)
    prev = cs.alloc(v)
    for _ in range(5):
        v = v * v % R
        nxt = cs.alloc(v)
        cs.enforce(prev, prev, nxt)
        prev = nxt
    return cs


def repeated_variables(seed: int = 0) -> ConstraintSystem:
    """The same variable several times in one linear combination and on several sides."""
    rnd = random.Random(seed)
    x = rnd.randrange(R)
    cs = ConstraintSystem()
    vx = cs.alloc_input(x)
    y = cs.alloc((2 * x) * (3 * x) % R)
    cs.enforce(vx + vx, vx + vx + vx, y)  # (x+x)(x+x+x) = y
    z = cs.alloc(x * x * 6 * x % R)
    cs.enforce(vx, y + y - y, z)  # terms that cancel to y itself
    cs.enforce(vx - vx, z, 0)  # a side whose terms cancel to nothing
    return cs


def with_constants(seed: int = 0) -> ConstraintSystem:
    """Constants (multiples of ONE) inside linear combinations: (x + 5)(x - 3) = y."""
    rnd = random.Random(seed)
    x = rnd.randrange(R)
    cs = ConstraintSystem()
    vx = cs.alloc_input(x)
    vy = cs.alloc_input((x + 5) * (x - 3) % R)
    cs.enforce(vx + 5, vx - 3, vy)
    cs.enforce(7, 11, 77)  # a constraint between constants only
    return cs


def empty_side(seed: int = 0) -> ConstraintSystem:
    """Constraints with an empty linear combination on a side: x * 0 = 0, 0 * y = 0, b*(1-b) = 0."""
    rnd = random.Random(seed)
    cs = ConstraintSystem()
    x = cs.alloc(rnd.randrange(R))
    y = cs.alloc_input(rnd.randrange(R))
    bit = cs.alloc(rnd.randrange(2))
    cs.enforce(x, 0, 0)
    cs.enforce(0, y, 0)
    cs.enforce(bit, 1 - bit, 0)
    return cs


def filecoin_like(num_constraints: int, seed: int = 0, num_inputs: int = 4) -> ConstraintSystem:
    """A circuit shaped like Filecoin's: mostly boolean decompositions (aux values 0 or 1, as in
    SHA-256 gadgets) packed back into field elements, with a few full multiplications."""
    rnd = random.Random(seed)
    cs = ConstraintSystem()
    acc_val = rnd.randrange(R)
    acc = cs.alloc(acc_val)
    for _ in range(num_inputs - 1):
        cs.alloc_input(rnd.randrange(R))
    while cs.num_constraints + 34 <= num_constraints - 1:
        # 32 booleans b_i with b_i (1 - b_i) = 0, packed: (sum 2^i b_i) * 1 = word.
        word_val = rnd.getrandbits(32)
        bits = [cs.alloc((word_val >> i) & 1) for i in range(32)]
        for b in bits:
            cs.enforce(b, 1 - b, 0)
        word = cs.alloc(word_val)
        lc = 0
        for i, b in enumerate(bits):
            lc = b * (1 << i) + lc
        cs.enforce(lc, 1, word)
        # acc' = acc * word (a large-scalar aux value).
        acc_val = acc_val * word_val % R
        nxt = cs.alloc(acc_val)
        cs.enforce(acc, word, nxt)
        acc = nxt
    out = cs.alloc_input(acc_val)
    cs.enforce(acc, 1, out)
    while cs.num_constraints < num_constraints:
        b = cs.alloc(rnd.getrandbits(1))
        cs.enforce(b, 1 - b, 0)
    return cs


def unconstrained_aux(seed: int = 0) -> ConstraintSystem:
    """An aux variable that no constraint uses (circom --O0 keeps such wires): its L point is
    the identity, which the key must store and every backend must handle."""
    rnd = random.Random(seed)
    cs = ConstraintSystem()
    xv = rnd.randrange(R)
    x = cs.alloc_input(xv)
    cs.alloc(rnd.randrange(R))  # never constrained
    yv = rnd.randrange(R)
    y = cs.alloc(yv)
    cs.enforce(x, y, cs.alloc(xv * yv % R))
    return cs


def filecoin_like_64(seed: int = 0) -> ConstraintSystem:
    return filecoin_like(64, seed)


#: The core test shapes, by name.
CORE_CIRCUITS: dict[str, Callable[[int], ConstraintSystem]] = {
    "inputs_only": inputs_only,
    "aux_only": aux_only,
    "repeated_variables": repeated_variables,
    "with_constants": with_constants,
    "empty_side": empty_side,
    "unconstrained_aux": unconstrained_aux,
    "filecoin_like_64": filecoin_like_64,
}
