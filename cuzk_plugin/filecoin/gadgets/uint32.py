"""32-bit words in a circuit (bellperson ``uint32.rs``) and the packed equality accumulator
(``multieq.rs``) that SHA-256 uses to share one constraint between several additions."""

from __future__ import annotations

from cuzk_plugin.circuit.constraint_system import ONE, LinearCombination
from cuzk_plugin.filecoin.gadgets.boolean import FALSE, Boolean, alloc_bit, sha256_ch, sha256_maj, xor

__all__ = ["UInt32", "MultiEq"]

#: Fr::CAPACITY: an accumulated equality must stay below 2^254.
_CAPACITY = 254


class MultiEq:
    """Accumulates equalities lhs_k = rhs_k of known bit widths into one constraint
    (sum 2^{offset_k} lhs_k) * 1 = sum 2^{offset_k} rhs_k, flushed before it would overflow
    and at :meth:`flush` (bellperson drops its MultiEq at the end of each compression)."""

    __slots__ = ("cs", "lhs", "rhs", "bits_used")

    def __init__(self, cs) -> None:
        self.cs = cs
        self.lhs: dict = {}
        self.rhs: dict = {}
        self.bits_used = 0

    def _accumulate(self) -> None:
        lhs, rhs = self.lhs, self.rhs
        self.lhs, self.rhs, self.bits_used = {}, {}, 0
        self.cs.enforce(LinearCombination(lhs), LinearCombination({ONE: 1}), LinearCombination(rhs))

    def enforce_equal(self, num_bits: int, lhs: dict, rhs: dict) -> None:
        if self.bits_used + num_bits >= _CAPACITY:
            self._accumulate()
        shift = 1 << self.bits_used
        for src, dst in ((lhs, self.lhs), (rhs, self.rhs)):
            for k, v in src.items():
                dst[k] = dst.get(k, 0) + v * shift
        self.bits_used += num_bits

    def flush(self) -> None:
        if self.bits_used > 0:
            self._accumulate()


class UInt32:
    """32 Booleans, least significant first, and the word's value when known."""

    __slots__ = ("bits", "value")

    def __init__(self, bits: list[Boolean], value: int | None):
        self.bits = bits
        self.value = value

    @classmethod
    def constant(cls, value: int) -> UInt32:
        return cls([Boolean.constant(bool((value >> i) & 1)) for i in range(32)], value)

    @classmethod
    def from_bits_be(cls, bits: list[Boolean]) -> UInt32:
        le = list(reversed(bits))
        value = 0
        for i, b in enumerate(le):
            bit = b.value
            if bit is None:
                return cls(le, None)
            value |= bit << i
        return cls(le, value)

    def into_bits_be(self) -> list[Boolean]:
        return list(reversed(self.bits))

    def rotr(self, by: int) -> UInt32:
        by %= 32
        bits = self.bits[by:] + self.bits[:by]
        value = None if self.value is None else ((self.value >> by) | (self.value << (32 - by))) & 0xFFFFFFFF
        return UInt32(bits, value)

    def shr(self, by: int) -> UInt32:
        by %= 32
        bits = self.bits[by:] + [FALSE] * by
        return UInt32(bits, None if self.value is None else self.value >> by)

    def xor(self, cs, other: UInt32) -> UInt32:
        value = None if self.value is None or other.value is None else self.value ^ other.value
        return UInt32([xor(cs, a, b) for a, b in zip(self.bits, other.bits, strict=True)], value)

    @staticmethod
    def _triop(cs, a, b, c, fn, word_fn) -> UInt32:
        value = None if None in (a.value, b.value, c.value) else word_fn(a.value, b.value, c.value)
        return UInt32([fn(cs, x, y, z) for x, y, z in zip(a.bits, b.bits, c.bits, strict=True)], value)

    @staticmethod
    def sha256_ch(cs, a: UInt32, b: UInt32, c: UInt32) -> UInt32:
        return UInt32._triop(cs, a, b, c, sha256_ch, lambda x, y, z: (x & y) ^ (~x & 0xFFFFFFFF & z))

    @staticmethod
    def sha256_maj(cs, a: UInt32, b: UInt32, c: UInt32) -> UInt32:
        return UInt32._triop(cs, a, b, c, sha256_maj, lambda x, y, z: (x & y) ^ (x & z) ^ (y & z))

    @staticmethod
    def addmany(cs, meq: MultiEq, operands: list[UInt32]) -> UInt32:
        """Sum of 2..10 words mod 2^32: all-constant sums fold; otherwise bitlen(n(2^32-1))
        result bits are allocated (booleanity each) and the equality goes to ``meq``."""
        assert 2 <= len(operands) <= 10
        max_value = len(operands) * 0xFFFFFFFF
        total: int | None = 0
        lhs: dict = {}
        all_constants = True
        for op in operands:
            total = None if total is None or op.value is None else total + op.value
            for j, bit in enumerate(op.bits):
                bit.add_to(lhs, 1 << j)
                all_constants = all_constants and bit.var is None
        if all_constants and total is not None:
            return UInt32.constant(total & 0xFFFFFFFF)
        nbits = max_value.bit_length()
        result = [alloc_bit(cs, None if total is None else (total >> i) & 1) for i in range(nbits)]
        rhs = {b.var: 1 << i for i, b in enumerate(result)}
        meq.enforce_equal(nbits, lhs, rhs)
        return UInt32(result[:32], None if total is None else total & 0xFFFFFFFF)
