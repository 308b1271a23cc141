"""Allocated field elements and the small gadgets around them (bellpepper-core ``num.rs``,
storage-proofs-core ``constraint.rs``, ``insertion.rs`` pick, ``multipack``)."""

from __future__ import annotations

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.circuit.constraint_system import ONE, LinearCombination, Variable
from cuzk_plugin.filecoin.gadgets.boolean import Boolean, alloc_bit

__all__ = [
    "AllocatedNum", "alloc_num", "inputize", "to_bits_le", "equal", "add", "pick",
    "pack_bits", "pack_into_inputs", "FR_NUM_BITS", "FR_CAPACITY",
]

FR_NUM_BITS = 255
FR_CAPACITY = 254


class AllocatedNum:
    """A private variable holding a field element (``value`` None in shape mode)."""

    __slots__ = ("var", "value")

    def __init__(self, var: Variable, value: int | None):
        self.var = var
        self.value = value

    def __repr__(self) -> str:
        return f"AllocatedNum({self.var}, value={self.value})"


def alloc_num(cs, value: int | None) -> AllocatedNum:
    """AllocatedNum::alloc: one aux variable, no constraint."""
    v = None if value is None else int(value) % R
    return AllocatedNum(cs.alloc(v), v)


def inputize(cs, num: AllocatedNum) -> Variable:
    """AllocatedNum::inputize: a public input x and the constraint x * 1 = num."""
    x = cs.alloc_input(num.value)
    cs.enforce(LinearCombination({x: 1}), LinearCombination({ONE: 1}), LinearCombination({num.var: 1}))
    return x


def to_bits_le(cs, num: AllocatedNum) -> list[Boolean]:
    """AllocatedNum::to_bits_le (not strict): 255 bits allocated LSB first, each with its
    booleanity constraint, then 0 * 0 = sum 2^i b_i - num."""
    value = num.value
    bits = [alloc_bit(cs, None if value is None else bool((value >> i) & 1)) for i in range(FR_NUM_BITS)]
    terms: dict = {b.var: 1 << i for i, b in enumerate(bits)}  # a plain {Variable: int} dict (alloc_bit's bits have vars)
    terms[num.var] = terms.get(num.var, 0) - 1
    cs.enforce(LinearCombination({}), LinearCombination({}), LinearCombination(terms))
    return bits


def equal(cs, a: AllocatedNum, b: AllocatedNum) -> None:
    """constraint::equal: a * 1 = b."""
    cs.enforce(LinearCombination({a.var: 1}), LinearCombination({ONE: 1}), LinearCombination({b.var: 1}))


def add(cs, a: AllocatedNum, b: AllocatedNum) -> AllocatedNum:
    """constraint::add: res allocated, (a + b) * 1 = res."""
    value = None if a.value is None or b.value is None else (a.value + b.value) % R
    res = alloc_num(cs, value)
    terms = {a.var: 1}
    terms[b.var] = terms.get(b.var, 0) + 1
    cs.enforce(LinearCombination(terms), LinearCombination({ONE: 1}), LinearCombination({res.var: 1}))
    return res


def pick(cs, cond: Boolean, a: AllocatedNum, b: AllocatedNum) -> AllocatedNum:
    """insertion::pick: c = a if cond else b, enforced as (b - a) * cond = b - c."""
    value = None if cond.value is None or a.value is None or b.value is None else (a.value if cond.value else b.value)
    c = alloc_num(cs, value)
    A = {b.var: 1}
    A[a.var] = A.get(a.var, 0) - 1
    cs.enforce(LinearCombination(A), LinearCombination(cond.lc_dict()),
               LinearCombination({b.var: 1, c.var: -1}))
    return c


def _packed(bits: list[Boolean]) -> tuple[dict, int | None]:
    terms: dict = {}
    value: int | None = 0
    for i, bit in enumerate(bits):
        bit.add_to(terms, 1 << i)
        if value is not None:
            value = None if bit.value is None else value + (int(bit.value) << i)
    return terms, value


def pack_bits(cs, bits: list[Boolean]) -> AllocatedNum:
    """storage-proofs-core multipack::pack_bits: the first 254 bits (LE) as one allocated
    number, with (sum 2^i b_i) * 1 = num."""
    terms, value = _packed(bits[:FR_CAPACITY])
    num = alloc_num(cs, value)
    cs.enforce(LinearCombination(terms), LinearCombination({ONE: 1}), LinearCombination({num.var: 1}))
    return num


def pack_into_inputs(cs, bits: list[Boolean]) -> list[Variable]:
    """bellpepper multipack::pack_into_inputs: one public input per 254-bit chunk (LE),
    each with (sum 2^i b_i) * 1 = input."""
    out = []
    for start in range(0, len(bits), FR_CAPACITY):
        terms, value = _packed(bits[start:start + FR_CAPACITY])
        x = cs.alloc_input(value)
        cs.enforce(LinearCombination(terms), LinearCombination({ONE: 1}), LinearCombination({x: 1}))
        out.append(x)
    return out
