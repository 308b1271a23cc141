"""Our Groth16 (setup, prove, verify) over a Filecoin sub-circuit: one column hash and its
inclusion in an arity-8 Poseidon tree, as a PoRep challenge opens a parent column. (A whole
2 KiB PoRep partition has 2.7M constraints: our CPU setup, ~0.8 ms per constraint, would take
about 36 minutes, so the full partition is not proved in CI.)"""

from __future__ import annotations

import random
import time

from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.bls12_381.fields import R, limbs_to_ints
from cuzk_plugin.circuit.constraint_system import ConstraintSystem
from cuzk_plugin.circuit.r1cs import synthesize
from cuzk_plugin.filecoin.gadgets.merkle import PathLevel, enforce_inclusion, poseidon_node_hash
from cuzk_plugin.filecoin.gadgets.num import alloc_num
from cuzk_plugin.filecoin.gadgets.poseidon import poseidon_hash
from cuzk_plugin.filecoin.poseidon import poseidon_hash as native_poseidon
from cuzk_plugin.filecoin.trees import MerkleTree
from cuzk_plugin.groth16.prover import prove
from cuzk_plugin.groth16.setup import setup
from cuzk_plugin.groth16.verifier import verify


def _column_opening(cs, rows, path, arities, root):
    cols = [alloc_num(cs, r) for r in rows]
    leaf = poseidon_hash(cs, cols)
    levels = [PathLevel(a, tuple(sib) if sib else (None,) * (a - 1), pos) for (sib, pos), a in zip(path, arities, strict=True)]
    enforce_inclusion(cs, leaf, levels, alloc_num(cs, root), poseidon_node_hash)
    return cs


def test_column_inclusion_proves_and_verifies(seed):
    rnd = random.Random(seed)
    arities = [8, 8]
    columns = [[rnd.randrange(R) for _ in range(2)] for _ in range(64)]
    tree = MerkleTree([native_poseidon(c) for c in columns], arities, "poseidon")
    node = rnd.randrange(64)
    path = tree.path(node)

    blank = _column_opening(ConstraintSystem(), [None, None], [(None, None)] * 2, arities, None)
    shape, _, _ = blank.finish()
    t0 = time.perf_counter()
    key = setup(shape)
    setup_s = time.perf_counter() - t0
    cs = _column_opening(ConstraintSystem(), columns[node], path.levels, arities, tree.root)
    r1cs, inputs, aux = cs.finish()
    assert r1cs.num_constraints == shape.num_constraints
    public = limbs_to_ints(inputs)[1:]
    assert public == [node]
    proof = prove(key, synthesize(r1cs, inputs, aux), CpuBackend())
    assert verify(key.vk, proof, public)
    assert not verify(key.vk, proof, [(node + 1) % 64])
    print(f"{shape.num_constraints} constraints, setup {setup_s:.1f} s")
