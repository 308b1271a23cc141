"""Boolean, uint32, multipack, SHA-256 and Merkle gadgets: values against native code, constraint
counts against bellperson's and rust-fil-proofs' own tests, satisfaction checked on the R1CS."""

from __future__ import annotations

import hashlib
import random

import pytest

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.circuit.constraint_system import ConstraintSystem
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.filecoin.gadgets.boolean import (
    FALSE,
    TRUE,
    alloc_bit,
    and_,
    reverse_bit_numbering,
    sha256_ch,
    sha256_maj,
    xor,
)
from cuzk_plugin.filecoin.gadgets.merkle import (
    PathLevel,
    enforce_inclusion,
    insert,
    poseidon_node_hash,
    sha256_node_hash,
)
from cuzk_plugin.filecoin.gadgets.num import alloc_num, pack_bits, pack_into_inputs, to_bits_le
from cuzk_plugin.filecoin.gadgets.sha256 import IV, sha256, sha256_compression
from cuzk_plugin.filecoin.gadgets.shape import ShapeConstraintSystem
from cuzk_plugin.filecoin.gadgets.uint32 import MultiEq, UInt32
from cuzk_plugin.filecoin.trees import MerkleTree


def _msg_bits(cs, msg: bytes):
    return [alloc_bit(cs, bool((byte >> (7 - i)) & 1)) for byte in msg for i in range(8)]


def _bytes(bits) -> bytes:
    return bytes(int("".join("1" if b.value else "0" for b in bits[i:i + 8]), 2) for i in range(0, len(bits), 8))


@pytest.mark.parametrize("length", [0, 1, 31, 55, 56, 64, 65, 119, 200])
def test_sha256_matches_hashlib(length, seed):
    msg = random.Random(seed).randbytes(length)
    cs = ConstraintSystem()
    digest = sha256(cs, _msg_bits(cs, msg))
    assert _bytes(digest) == hashlib.sha256(msg).digest()
    cs.check()


def test_sha256_constraint_counts_match_bellperson():
    # bellperson gadgets/sha256.rs: test_full_block asserts 25840, test_full_hash 44874
    # (512 allocated input bits, their 512 booleanity constraints subtracted).
    for fn, expected in ((lambda cs, bits: sha256_compression(cs, bits, [UInt32.constant(v) for v in IV]), 25840),
                         (sha256, 44874)):
        cs = ShapeConstraintSystem(memoize=False)
        bits = [alloc_bit(cs, None) for _ in range(512)]
        fn(cs, bits)
        assert cs.num_constraints - 512 == expected


def test_memoized_shape_equals_full_shape():
    def run(cs):
        bits = [alloc_bit(cs, None) for _ in range(256)] + [TRUE, FALSE] * 384
        out = sha256(cs, bits)
        sha256(cs, out + bits[:256])
        return cs.num_constraints, cs.num_aux
    assert run(ShapeConstraintSystem()) == run(ShapeConstraintSystem(memoize=False))


@pytest.mark.parametrize("op", ["xor", "and", "ch", "maj"])
def test_boolean_ops_all_cases(op):
    kinds = []
    for v in (False, True):
        kinds += [("const", v), ("is", v), ("not", v)]
    fn2 = {"xor": (xor, lambda a, b: a ^ b), "and": (and_, lambda a, b: a and b)}
    fn3 = {"ch": (sha256_ch, lambda a, b, c: (a and b) ^ ((not a) and c)),
           "maj": (sha256_maj, lambda a, b, c: (a and b) ^ (a and c) ^ (b and c))}
    cs = ConstraintSystem()

    def make(kind, v):
        if kind == "const":
            return TRUE if v else FALSE
        if kind == "is":
            return alloc_bit(cs, v)
        return alloc_bit(cs, not v).not_()

    arity = 2 if op in fn2 else 3
    gadget, native = (fn2 | fn3)[op]
    import itertools
    for combo in itertools.product(kinds, repeat=arity):
        args = [make(k, v) for k, v in combo]
        out = gadget(cs, *args)
        assert out.value == native(*[v for _, v in combo]), combo
        if out.var is not None:  # the output's variable must carry the right value
            raw = cs.value(out.var)
            assert bool(raw) == (out.value != out.negated)
    cs.check()


def test_uint32_addmany_and_multieq(seed):
    rnd = random.Random(seed)
    cs = ConstraintSystem()
    meq = MultiEq(cs)
    for n in range(2, 11):
        vals = [rnd.getrandbits(32) for _ in range(n)]
        words = [UInt32([alloc_bit(cs, bool((v >> i) & 1)) for i in range(32)], v) for v in vals[:-1]]
        words.append(UInt32.constant(vals[-1]))
        before = len(cs._aux)
        out = UInt32.addmany(cs, meq, words)
        assert out.value == sum(vals) % (1 << 32)
        assert len(cs._aux) - before == (n * 0xFFFFFFFF).bit_length()
        assert [b.value for b in out.bits] == [bool((out.value >> i) & 1) for i in range(32)]
    meq.flush()
    cs.check()
    assert UInt32.addmany(cs, meq, [UInt32.constant(5), UInt32.constant(7)]).value == 12


def test_to_bits_pack_and_reverse(seed):
    x = random.Random(seed).randrange(R)
    cs = ConstraintSystem()
    num = alloc_num(cs, x)
    n0 = cs.num_constraints
    bits = to_bits_le(cs, num)
    assert (len(bits), cs.num_constraints - n0) == (255, 256)
    assert sum(int(b.value) << i for i, b in enumerate(bits)) == x
    packed = pack_bits(cs, bits)
    assert packed.value == x % (1 << 254)
    rev = reverse_bit_numbering(bits)
    assert len(rev) == 256 and _bytes(rev) == x.to_bytes(32, "little")
    (inp,) = pack_into_inputs(cs, bits[:100])
    assert cs.value(inp) == x % (1 << 100)
    cs.check()


@pytest.mark.parametrize("arity,cost", [(2, 2), (4, 8), (8, 22)])
def test_insert_every_position(arity, cost, seed):
    rnd = random.Random(seed)
    for index in range(arity):
        cs = ConstraintSystem()
        els = [alloc_num(cs, rnd.randrange(R)) for _ in range(arity - 1)]
        x = alloc_num(cs, rnd.randrange(R))
        bits = [alloc_bit(cs, bool((index >> i) & 1)) for i in range(arity.bit_length() - 1)]
        n0 = cs.num_constraints
        out = insert(cs, x, bits, els)
        assert cs.num_constraints - n0 == cost
        expected = [e.value for e in els]
        expected.insert(index, x.value)
        assert [o.value for o in out] == expected
        cs.check()


def inputs_var(cs):
    from cuzk_plugin.circuit.constraint_system import Variable
    return Variable(True, 1)


def _tree_case(arities, hasher, seed):
    rnd = random.Random(seed)
    size = 1
    for a in arities:
        size *= a
    leaves = [rnd.getrandbits(254) for _ in range(size)]
    tree = MerkleTree(leaves, arities, hasher)
    index = rnd.randrange(size)
    return tree, tree.path(index)


@pytest.mark.parametrize("arities,hasher", [([2, 2, 2], "sha256"), ([8, 8], "poseidon"),
                                            ([8, 8, 2], "poseidon"), ([8, 8, 8, 2], "poseidon")])
def test_merkle_inclusion(arities, hasher, seed):
    _, path = _tree_case(arities, hasher, seed)
    assert MerkleTree.verify(path, hasher)
    node_hash = sha256_node_hash if hasher == "sha256" else poseidon_node_hash

    def synth(levels):
        cs = ConstraintSystem()
        leaf = alloc_num(cs, path.leaf)
        root = alloc_num(cs, path.root)
        enforce_inclusion(cs, leaf, levels, root, node_hash)
        return cs

    levels = [PathLevel(a, tuple(sib), pos) for (sib, pos), a in zip(path.levels, arities, strict=True)]
    cs = synth(levels)
    cs.check()
    r1cs, _, _ = cs.finish()
    assert r1cs.num_inputs == 2  # ONE and the packed path index
    position, scale = 0, 1
    for (_, pos), a in zip(path.levels, arities, strict=True):
        position, scale = position + pos * scale, scale * a
    assert cs.value(inputs_var(cs)) == position
    bad = list(levels)
    sib = list(bad[0].siblings)
    sib[0] ^= 1
    bad[0] = PathLevel(bad[0].arity, tuple(sib), bad[0].index)
    with pytest.raises(CircuitError):
        synth(bad).check()


def test_fast_constraint_system_builds_the_same_r1cs(seed):
    import numpy as np

    from cuzk_plugin.circuit.fast_cs import FastConstraintSystem
    from cuzk_plugin.filecoin.gadgets.num import inputize

    _, path = _tree_case([8, 2], "poseidon", seed)
    msg = random.Random(seed).randbytes(40)

    def build(cs):
        bits = _msg_bits(cs, msg) + [TRUE, FALSE] * 4 + [alloc_bit(cs, True).not_()] * 8
        digest = sha256(cs, bits)
        leaf, root = alloc_num(cs, path.leaf), alloc_num(cs, path.root)
        inputize(cs, root)
        levels = [PathLevel(a, tuple(sib), pos) for (sib, pos), a in zip(path.levels, [8, 2], strict=True)]
        enforce_inclusion(cs, leaf, levels, root, poseidon_node_hash)
        pack_bits(cs, digest)
        return cs.finish()

    ref, fast = build(ConstraintSystem()), build(FastConstraintSystem(check_as_you_go=True))
    assert (ref[0].num_inputs, ref[0].num_aux, ref[0].num_constraints) == \
        (fast[0].num_inputs, fast[0].num_aux, fast[0].num_constraints)
    for name in "abc":
        m1, m2 = getattr(ref[0], name), getattr(fast[0], name)
        assert np.array_equal(m1.rows, m2.rows) and np.array_equal(m1.cols, m2.cols)
        assert list(m1.coeffs) == list(m2.coeffs)
    assert np.array_equal(ref[1], fast[1]) and np.array_equal(ref[2], fast[2])
