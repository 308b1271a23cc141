"""Merkle inclusion in a circuit (storage-proofs-core ``gadgets/por.rs``, ``insertion.rs``).

A path runs leaf to root through base levels (arity U), then an optional sub-tree level (V)
and top-tree level (W). Each level allocates its log2(arity) index bits (LSB first), its
arity - 1 siblings, inserts the current node among them at the index, and hashes the level:
SHA-256 for binary data trees, Poseidon for arity-2/8 replica and column trees. Afterwards all
index bits become public inputs (one per 254 bits) and the computed root is enforced equal to
the given root; roots are private (PoRCircuit with private = true).
"""

from __future__ import annotations

from dataclasses import dataclass

from cuzk_plugin.filecoin.gadgets.boolean import Boolean, alloc_bit, and_, reverse_bit_numbering
from cuzk_plugin.filecoin.gadgets.num import (
    AllocatedNum,
    alloc_num,
    equal,
    pack_bits,
    pack_into_inputs,
    pick,
    to_bits_le,
)
from cuzk_plugin.filecoin.gadgets.poseidon import poseidon_hash
from cuzk_plugin.filecoin.gadgets.sha256 import sha256

__all__ = ["PathLevel", "insert", "sha256_node_hash", "poseidon_node_hash", "enforce_inclusion"]


@dataclass(frozen=True)
class PathLevel:
    """One level of an inclusion path: the level's arity, its arity - 1 sibling values and the
    current node's position among the arity children (None everywhere for a blank circuit)."""

    arity: int
    siblings: tuple[int | None, ...]
    index: int | None


def _insert_2(cs, x, bits, els):
    b0 = bits[0]
    return [pick(cs, b0, els[0], x), pick(cs, b0, x, els[0])]


def _insert_4(cs, x, bits, els):
    b0, b1 = bits
    a = x
    b, c, d = els
    p0 = pick(cs, b1, b, pick(cs, b0, b, a))
    p1 = pick(cs, b1, c, pick(cs, b0, a, b))
    p2 = pick(cs, b1, pick(cs, b0, d, a), c)
    p3 = pick(cs, b1, pick(cs, b0, a, d), d)
    return [p0, p1, p2, p3]


def _insert_8(cs, x, bits, els):
    b0, b1, b2 = bits
    if b0.var is None or b1.var is None or b0.negated or b1.negated:
        raise ValueError("insert_8 needs allocated, unnegated index bits")
    a = x
    b, c, d, e, f, g, h = els
    nor01 = and_(cs, b0.not_(), b1.not_())  # (1 - b0)(1 - b1) = c
    and01 = and_(cs, b0, b1)  # b0 * b1 = c
    p0 = pick(cs, b2, b, pick(cs, nor01, a, b))
    p1 = pick(cs, b2, c, pick(cs, b1, c, pick(cs, b0, a, b)))
    p2 = pick(cs, b2, d, pick(cs, b1, pick(cs, b0, d, a), c))
    p3 = pick(cs, b2, e, pick(cs, and01, a, d))
    p4 = pick(cs, b2, pick(cs, nor01, a, f), e)
    p5 = pick(cs, b2, pick(cs, b1, g, pick(cs, b0, a, f)), f)
    p6 = pick(cs, b2, pick(cs, b1, pick(cs, b0, h, a), g), g)
    p7 = pick(cs, b2, pick(cs, and01, a, h), h)
    return [p0, p1, p2, p3, p4, p5, p6, p7]


def insert(cs, element: AllocatedNum, bits: list[Boolean], elements: list[AllocatedNum]) -> list[AllocatedNum]:
    """Insert ``element`` among ``elements`` at the position the LE ``bits`` encode
    (hand-optimized insert_2 / insert_4 / insert_8; other sizes are not used by Filecoin)."""
    size = len(elements) + 1
    if size != 1 << len(bits):
        raise ValueError(f"{len(bits)} index bits cannot address {size} positions")
    table = {2: _insert_2, 4: _insert_4, 8: _insert_8}
    if size not in table:
        raise ValueError(f"no insertion gadget for arity {size}")
    return table[size](cs, element, bits, elements)


def sha256_node_hash(cs, leaves: list[AllocatedNum]) -> AllocatedNum:
    """filecoin-hashers Sha256 hash_multi_leaf_circuit: each leaf to 255 LE bits, padded to a
    byte and bit-reversed per byte (its LE byte string), SHA-256, digest bits reversed per byte,
    first 254 bits packed."""
    bits: list[Boolean] = []
    for leaf in leaves:
        bits.extend(reverse_bit_numbering(to_bits_le(cs, leaf)))
    digest = sha256(cs, bits)
    return pack_bits(cs, reverse_bit_numbering(digest)[:254])


def poseidon_node_hash(cs, leaves: list[AllocatedNum]) -> AllocatedNum:
    return poseidon_hash(cs, leaves)


def enforce_inclusion(cs, leaf: AllocatedNum, path: list[PathLevel], root: AllocatedNum, node_hash) -> None:
    """PoRCircuit::synthesize with private = true over ``path`` (leaf to root)."""
    cur = leaf
    index_bits: list[Boolean] = []
    for level in path:
        nbits = level.arity.bit_length() - 1
        bits = [alloc_bit(cs, None if level.index is None else bool((level.index >> i) & 1)) for i in range(nbits)]
        index_bits.extend(bits)
        siblings = [alloc_num(cs, s) for s in level.siblings]
        cur = node_hash(cs, insert(cs, cur, bits, siblings))
    pack_into_inputs(cs, index_bits)
    equal(cs, cur, root)
