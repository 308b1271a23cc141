"""Booleans in a circuit, laid out as bellpepper-core's `boolean.rs` lays them out.

A :class:`Boolean` is a constant, an allocated bit (``Is``) or the negation of one (``Not``).
Operations on constants cost nothing; each allocated result costs one variable and one
constraint, in the order bellpepper emits them. Values are ``bool`` (or int 0/1) in witness
mode and ``None`` when only the shape is synthesized; value arithmetic uses only ``&``, ``^``
and shifts (no ``and``/``not``/``bool()``), so a traced value can stand in for a bit (the
vectorized witness, :mod:`cuzk_plugin.filecoin.witness`, records the gadgets that way).

Linear combinations here are plain ``{Variable: int}`` dicts, wrapped into
:class:`LinearCombination` only when a constraint is enforced.
"""

from __future__ import annotations

from cuzk_plugin.circuit.constraint_system import ONE, LinearCombination, Variable

__all__ = [
    "Boolean", "alloc_bit", "xor", "and_", "sha256_ch", "sha256_maj", "lc", "enforce",
    "reverse_bit_numbering", "FALSE", "TRUE",
]


def lc(terms: dict) -> LinearCombination:
    """Wrap a ``{Variable: coeff}`` dict (coefficients may be negative) as a linear combination."""
    return LinearCombination(terms)


def enforce(cs, a: dict, b: dict, c: dict) -> None:
    """``cs.enforce`` on three dict linear combinations."""
    cs.enforce(LinearCombination(a), LinearCombination(b), LinearCombination(c))


class Boolean:
    """A constant, an allocated bit, or a negated allocated bit."""

    __slots__ = ("var", "negated", "value")

    def __init__(self, var: Variable | None, negated: bool, value: int | None):
        self.var = var  #: the allocated bit's variable; None for a constant
        self.negated = negated  #: True for Not(var)
        self.value = value  #: the Boolean's own value (already negated; bool or int 0/1), None in shape mode

    @staticmethod
    def constant(b: bool) -> Boolean:
        return TRUE if b else FALSE

    @property
    def is_constant(self) -> bool:
        return self.var is None

    def not_(self) -> Boolean:
        if self.var is None:
            return FALSE if self.value else TRUE
        return Boolean(self.var, not self.negated, None if self.value is None else self.value ^ True)

    def add_to(self, terms: dict, coeff: int) -> None:
        """terms += coeff * self (bellpepper ``Boolean::lc(one, coeff)``)."""
        if self.var is None:
            if self.value:
                terms[ONE] = terms.get(ONE, 0) + coeff
        elif self.negated:
            terms[ONE] = terms.get(ONE, 0) + coeff
            terms[self.var] = terms.get(self.var, 0) - coeff
        else:
            terms[self.var] = terms.get(self.var, 0) + coeff

    def lc_dict(self, coeff: int = 1) -> dict:
        d: dict = {}
        self.add_to(d, coeff)
        return d

    def __repr__(self) -> str:
        if self.var is None:
            return f"Boolean.constant({self.value})"
        return f"Boolean({'Not' if self.negated else 'Is'}({self.var}), value={self.value})"


TRUE = Boolean(None, False, True)
FALSE = Boolean(None, False, False)


def _alloc(cs, value) -> Variable:
    # bool, int 0/1, or a traced value (cuzk_plugin.filecoin.witness): no int() or bool() here
    return cs.alloc(value)


def alloc_bit(cs, value: int | None) -> Boolean:
    """AllocatedBit::alloc: one variable and the booleanity constraint (1 - a) * a = 0."""
    v = _alloc(cs, value)
    cs.enforce(LinearCombination({ONE: 1, v: -1}), LinearCombination({v: 1}), LinearCombination({}))
    return Boolean(v, False, value)


def _underlying(b: Boolean) -> int | None:
    """The value of the allocated bit behind ``b`` (before negation)."""
    if b.value is None:
        return None
    return (b.value ^ True) if b.negated else b.value


def _allocated_xor(cs, x: Variable, y: Variable, a: Boolean, b: Boolean) -> Boolean:
    """AllocatedBit::xor on the underlying bits: (2a) * b = a + b - c. ``x`` and ``y`` are
    ``a.var`` and ``b.var``, passed as the caller narrowed them (neither bit is a constant)."""
    va, vb = _underlying(a), _underlying(b)
    value = None if va is None or vb is None else va ^ vb
    c = _alloc(cs, value)
    cs.enforce(LinearCombination({x: 2}), LinearCombination({y: 1}),
               LinearCombination({x: 1, y: 1, c: -1} if x != y else {x: 2, c: -1}))
    return Boolean(c, False, value)


def xor(cs, a: Boolean, b: Boolean) -> Boolean:
    """Boolean::xor with bellpepper's case analysis (constants and negations are free)."""
    if a.var is None:
        return b.not_() if a.value else b
    if b.var is None:
        return a.not_() if b.value else a
    if a.negated != b.negated:
        is_, not_ = (a, b) if not a.negated else (b, a)
        return xor(cs, is_, not_.not_()).not_()
    return _allocated_xor(cs, a.var, b.var, a, b)


def _and_alloc(cs, a_var, b_var, value, kind: str) -> Boolean:
    c = _alloc(cs, value)
    if kind == "and":  # a * b = c
        A, B = {a_var: 1}, {b_var: 1}
    elif kind == "and_not":  # a * (1 - b) = c
        A, B = {a_var: 1}, {ONE: 1, b_var: -1}
    else:  # nor: (1 - a) * (1 - b) = c
        A, B = {ONE: 1, a_var: -1}, {ONE: 1, b_var: -1}
    cs.enforce(LinearCombination(A), LinearCombination(B), LinearCombination({c: 1}))
    return Boolean(c, False, value)


def and_(cs, a: Boolean, b: Boolean) -> Boolean:
    """Boolean::and: and / and_not / nor on the underlying bits, constants free."""
    if a.var is None:
        return b if a.value else FALSE
    if b.var is None:
        return a if b.value else FALSE
    value = None if a.value is None or b.value is None else (a.value & b.value)
    if not a.negated and not b.negated:
        return _and_alloc(cs, a.var, b.var, value, "and")
    if a.negated and b.negated:
        return _and_alloc(cs, a.var, b.var, value, "nor")
    is_, not_ = (a, b) if not a.negated else (b, a)
    return _and_alloc(cs, is_.var, not_.var, value, "and_not")


def _val3(a, b, c, f):
    if a.value is None or b.value is None or c.value is None:
        return None
    return f(a.value, b.value, c.value)


def sha256_ch(cs, a: Boolean, b: Boolean, c: Boolean) -> Boolean:
    """(a and b) xor ((not a) and c), with bellpepper's constant cases in its order."""
    value = _val3(a, b, c, lambda x, y, z: (x & y) ^ ((x ^ True) & z))
    if a.var is None and b.var is None and c.var is None:
        return Boolean.constant(value)
    if a.var is None and not a.value:
        return c
    if b.var is None and not b.value:
        return and_(cs, a.not_(), c)
    if c.var is None and not c.value:
        return and_(cs, a, b)
    if c.var is None:  # c is true
        return and_(cs, a, b.not_()).not_()
    if b.var is None:  # b is true
        return and_(cs, a.not_(), c.not_()).not_()
    # a true or all allocated: the general case
    ch = _alloc(cs, value)
    bl, cl, al = b.lc_dict(), c.lc_dict(), a.lc_dict()
    A = dict(bl)
    for k, v in cl.items():
        A[k] = A.get(k, 0) - v
    C = {ch: 1}
    for k, v in cl.items():
        C[k] = C.get(k, 0) - v
    enforce(cs, A, al, C)  # (b - c) * a = ch - c
    return Boolean(ch, False, value)


def sha256_maj(cs, a: Boolean, b: Boolean, c: Boolean) -> Boolean:
    """(a and b) xor (a and c) xor (b and c), with bellpepper's constant cases in its order."""
    value = _val3(a, b, c, lambda x, y, z: (x & y) ^ (x & z) ^ (y & z))
    if a.var is None and b.var is None and c.var is None:
        return Boolean.constant(value)
    if a.var is None and not a.value:
        return and_(cs, b, c)
    if b.var is None and not b.value:
        return and_(cs, a, c)
    if c.var is None and not c.value:
        return and_(cs, a, b)
    if c.var is None:
        return and_(cs, a.not_(), b.not_()).not_()
    if b.var is None:
        return and_(cs, a.not_(), c.not_()).not_()
    if a.var is None:
        return and_(cs, b.not_(), c.not_()).not_()
    bc = and_(cs, b, c)
    maj = _alloc(cs, value)
    A = bc.lc_dict(2)
    for x in (b, c):
        x.add_to(A, -1)
    C = bc.lc_dict()
    C[maj] = C.get(maj, 0) - 1
    enforce(cs, A, a.lc_dict(), C)  # (2bc - b - c) * a = bc - maj
    return Boolean(maj, False, value)


def reverse_bit_numbering(bits: list[Boolean]) -> list[Boolean]:
    """storage-proofs-core util: pad with constant false to whole bytes, reverse each byte."""
    padded = list(bits)
    while len(padded) % 8:
        padded.append(FALSE)
    out: list[Boolean] = []
    for i in range(0, len(padded), 8):
        out.extend(reversed(padded[i:i + 8]))
    return out
