"""The PoSt witness on limb arrays and the C Poseidon (filecoin/post/witness_slots.py, poseidon_cpu):
the C hash against the Python-int schedule (itself checked against the gadget), and whole
assignments against the reference synthesis and against the Python-int path."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from cuzk_plugin.adapters.curio.post.job import PostJob, PostPartition, PostWitnessError
from cuzk_plugin.bls12_381.fields import R, ints_to_limbs, limbs_to_ints
from cuzk_plugin.filecoin.fixtures.post_seal import post_test_sectors, post_vanilla_proofs, random_randomness
from cuzk_plugin.filecoin.post.params import post_proof_by_number
from cuzk_plugin.filecoin.witness import poseidon_cpu
from cuzk_plugin.filecoin.witness.poseidon import poseidon_many
from cuzk_plugin.filecoin.witness.poseidon_cpu import native_poseidon

MIB8 = 8 << 20
WPOST_8MIB = 11  # StackedDrgWindow8MiBV1_2

needs_cc = pytest.mark.skipif(native_poseidon(2) is None, reason="no C compiler: the C Poseidon cannot be built")


@needs_cc
@pytest.mark.parametrize("ifma", [True, False], ids=["ifma-where-present", "64-bit"])
@pytest.mark.parametrize("arity", [2, 4, 8, 11])
def test_c_poseidon_equals_the_python_schedule(arity, ifma):
    rng = random.Random(arity)
    n, h = 43, native_poseidon(arity, ifma)  # 43: the IFMA path's last group of eight is partial
    assert h is not None
    rows = [[0] * arity, [R - 1] * arity] + [[rng.randrange(R) for _ in range(arity)] for _ in range(n - 2)]
    pre = ints_to_limbs([v for row in rows for v in row]).reshape(n, arity, 4)
    gap = 3  # rows between the instances' aux runs stay untouched
    aux = np.zeros((n, h.num_aux + gap, 4), dtype=np.uint64)
    digest = np.zeros((n, 4), dtype=np.uint64)
    h.hash_into(pre, aux, np.arange(n) * (h.num_aux + gap) * 4 + 4, digest)
    want_aux, want_digest = poseidon_many(np.array(rows, dtype=object).T.copy())
    assert limbs_to_ints(aux[:, 1:1 + h.num_aux]) == [int(x) for x in want_aux.T.reshape(-1)]
    assert limbs_to_ints(digest) == [int(x) for x in want_digest]
    assert not aux[:, 0].any() and not aux[:, 1 + h.num_aux:].any()


@needs_cc
def test_c_poseidon_split_over_threads_equals_one_call():
    h = native_poseidon(2)
    assert h is not None
    n = 5000  # over two thread chunks where there are two cores
    pre = ints_to_limbs(random.Random(5).randrange(R) for _ in range(2 * n)).reshape(n, 2, 4)
    aux_a, aux_b = (np.zeros((n, h.num_aux, 4), dtype=np.uint64) for _ in range(2))
    dig_a, dig_b = (np.zeros((n, 4), dtype=np.uint64) for _ in range(2))
    offsets = np.arange(n, dtype=np.int64) * h.num_aux * 4
    h.hash_into(pre, aux_a, offsets, dig_a)
    h._run(pre, aux_b, offsets, dig_b)
    assert (aux_a == aux_b).all() and (dig_a == dig_b).all() and dig_a.any(axis=1).all()


@needs_cc
def test_c_poseidon_refuses_offsets_outside_the_array():
    h = native_poseidon(2)
    assert h is not None
    pre = np.zeros((2, 2, 4), dtype=np.uint64)
    aux = np.zeros((2 * h.num_aux, 4), dtype=np.uint64)
    digest = np.zeros((2, 4), dtype=np.uint64)
    with pytest.raises(ValueError, match="outside the array"):
        h.hash_into(pre, aux, np.array([0, h.num_aux * 4 + 4]), digest)
    with pytest.raises(ValueError, match="outside the array"):
        h.hash_into(pre, aux, np.array([-4, 0]), digest)
    with pytest.raises(ValueError, match="preimage"):
        h.hash_into(np.zeros((2, 3, 4), dtype=np.uint64), aux, np.array([0, 0]), digest)


@pytest.fixture(scope="module")
def window_8mib():
    """Two distinct 8 MiB sectors (own comm_c and comm_r, different challenged leaves)."""
    rand = random_randomness(21)
    sectors = post_test_sectors(MIB8, [11, 12], seed=5)
    job = PostJob.from_fields(WPOST_8MIB, rand, post_vanilla_proofs(post_proof_by_number(WPOST_8MIB), sectors, rand))
    assert job.slots[0] is not job.slots[1] and job.slots[0].comm_r != job.slots[1].comm_r
    return job


@pytest.mark.slow
def test_8mib_window_of_distinct_sectors_equals_the_reference_and_the_python_path(window_8mib, monkeypatch):
    _, ref_inputs, ref_aux = window_8mib.circuit()
    inputs, aux = window_8mib.assignment()
    assert inputs.dtype == aux.dtype == np.uint64
    assert (inputs == ref_inputs).all() and (aux == ref_aux).all()
    monkeypatch.setattr(poseidon_cpu, "native_poseidon", lambda arity: None)
    py_inputs, py_aux = window_8mib.assignment()
    assert (py_inputs == inputs).all() and (py_aux == aux).all()


def test_8mib_window_corrupted_leaf_names_its_inclusion_proof(window_8mib):
    part = window_8mib.partition
    leaves = part.slots_values.leaves.copy()
    leaves[1, 1, 0] ^= 1  # sector 1's second challenged leaf
    bad = PostPartition(part.proof, dataclasses.replace(part.slots_values, leaves=leaves), part.challenges)
    with pytest.raises(PostWitnessError, match=r"^vanilla_proofs\[1\]\.vanilla_proof\.sectors\[0\]\.inclusion_proofs\[1\]: "):
        bad.assignment()
