"""The vectorized PoRep witness (cuzk_plugin.filecoin.witness) against the reference synthesis:
its SHA-256 and Poseidon parts against the gadgets run through FastConstraintSystem, a whole
partition bit for bit (the sealed 2 KiB C1, the sparse sealer's 2 KiB and 8 MiB C1s) with
every constraint of the reference R1CS holding, and corrupted C1 values refused with the same
constraint the reference synthesis stops at."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from cuzk_plugin.adapters.curio.porep.job import WitnessError, porep_partitions
from cuzk_plugin.bls12_381.fields import R, ints_to_limbs
from cuzk_plugin.circuit.fast_cs import FastConstraintSystem, gc_paused
from cuzk_plugin.filecoin.fixtures.seal import c1_json
from cuzk_plugin.filecoin.fixtures.sparse_seal import seal_proof_for_size, sparse_seal
from cuzk_plugin.filecoin.gadgets.boolean import FALSE, TRUE, alloc_bit
from cuzk_plugin.filecoin.gadgets.num import alloc_num
from cuzk_plugin.filecoin.gadgets.poseidon import poseidon_hash
from cuzk_plugin.filecoin.gadgets.sha256 import sha256
from cuzk_plugin.filecoin.gadgets.shape import ShapeConstraintSystem
from cuzk_plugin.filecoin.params import porep_params
from cuzk_plugin.filecoin.porep.circuit import blank_partition, synthesize_partition
from cuzk_plugin.filecoin.porep.witness import partition_assignment
from cuzk_plugin.filecoin.porep.witness_layout import porep_layout
from cuzk_plugin.filecoin.porep.witness_parts import WitnessMismatch
from cuzk_plugin.filecoin.witness.poseidon import poseidon_many
from cuzk_plugin.filecoin.witness.program import Tape
from cuzk_plugin.filecoin.witness.sha256 import sha256_many


def _reference_sha(sig: str, message: list[int]):
    cs = FastConstraintSystem()
    bits = [alloc_bit(cs, bool(b)) if c == "I" else (TRUE if c == "T" else FALSE) for b, c in zip(message, sig, strict=True)]
    first = len(cs._aux)
    digest = sha256(cs, bits)
    return [int(x) for x in cs._aux[first:]], [int(b.value) for b in digest]


def test_sha256_many_equals_gadget_aux_and_digest():
    # constants of both values inside the message, two signatures in one batch, 2 compressions
    rng = random.Random(5)
    sigs = ["".join("F" if k % 61 == 3 else "T" if k % 67 == 5 else "I" for k in range(448)),
            "".join("T" if k < 40 else "I" for k in range(448))]
    group = np.array([0, 1, 0, 1, 1])
    msgs = [[rng.getrandbits(1) if c == "I" else int(c == "T") for c in sigs[g]] for g in group]
    res = sha256_many(sigs, group, np.array(msgs, dtype=np.uint64).T)
    assert len(res.blocks) == 2
    for i, g in enumerate(group):
        want_aux, want_digest = _reference_sha(sigs[g], msgs[i])
        got = []
        for block in res.blocks:
            (bits,) = [b[:, list(cols).index(i)] for _, cols, b in block if i in cols]
            got += [int(x) for x in bits]
        assert got == want_aux
        assert [int(x) for x in res.digest[:, i]] == want_digest


@pytest.mark.parametrize("arity", [2, 8, 11])
def test_poseidon_many_equals_gadget(arity):
    rng = random.Random(arity)
    pre = [[rng.randrange(R) for _ in range(arity)] for _ in range(3)] + [[R - 1] * arity]
    aux, digest = poseidon_many(np.array(pre, dtype=object).T)
    for i, xs in enumerate(pre):
        cs = FastConstraintSystem()
        nums = [alloc_num(cs, x) for x in xs]
        first = len(cs._aux)
        out = poseidon_hash(cs, nums)
        assert [int(x) for x in cs._aux[first:]] == [int(x) for x in aux[:, i]]
        assert out.value == digest[i]


def test_traced_value_refuses_branching():
    tape = Tape()
    x = tape.input(0)
    with pytest.raises(TypeError, match="no truth value"):
        bool(x)
    with pytest.raises(TypeError):
        int(x & 1)


def test_layout_counts_and_regions_equal_the_shape_pass():
    params = porep_params("2KiB")
    cs = ShapeConstraintSystem()
    regions: list = []
    synthesize_partition(cs, params, blank_partition(params), regions=regions)
    lay = porep_layout(params)
    assert (lay.num_aux, lay.num_inputs, lay.num_constraints) == (cs.num_aux, cs.num_inputs, cs.num_constraints)
    assert lay.regions() == regions
    start, name = regions[7]
    assert lay.locate(start) == lay.locate(regions[8][0] - 1) == (0, name.split(": ", 1)[1])
    assert lay.locate(0) == (None, "partition header")
    with pytest.raises(ValueError, match="outside"):
        lay.locate(lay.num_constraints)


def _check_against_reference(job, reference) -> None:
    # one process, and two worker processes writing one shared assignment (witness.pool). Both
    # equal the reference bit for bit, so the R1CS check runs once; with no R1CS (r1cs None) the
    # reference values were checked against every constraint as it was enforced, so values equal
    # to them satisfy every constraint too
    r1cs, want_inputs, want_aux = reference
    for workers in (1, 2):
        inputs, aux = partition_assignment(job.params, job.witness(0), partition=0, workers=workers)
        assert inputs.dtype == aux.dtype == np.uint64
        assert inputs.shape == want_inputs.shape and aux.shape == want_aux.shape
        np.testing.assert_array_equal(inputs, want_inputs)
        bad = np.flatnonzero((aux != want_aux).any(axis=1))
        assert bad.size == 0, f"workers={workers}: {bad.size} aux values differ, first at {bad[:5]}"
        if r1cs is not None and workers == 1:
            assert r1cs.first_unsatisfied(r1cs.assignment(inputs, aux)) is None


def _checked_reference_values(job):
    """(None, inputs, aux) of partition 0 by the reference synthesis, every constraint checked as
    it is enforced (a violated one raises): job.circuit(0) without building the R1CS matrices
    and checking the fast values against them, ~35 s of ~68 s of CPU at 8 MiB, which the check
    as it goes makes unneeded here."""
    cs = FastConstraintSystem(check_as_you_go=True)
    with gc_paused():  # millions of acyclic objects, as job.circuit pauses it too
        synthesize_partition(cs, job.params, job.witness(0))
    assert cs.num_constraints == porep_layout(job.params).num_constraints
    return None, ints_to_limbs(cs._inputs), ints_to_limbs(cs._aux).reshape(-1, 4)


@pytest.mark.slow
def test_sealed_2kib_equals_reference_synthesis(c1_bytes, reference_2kib):
    _check_against_reference(porep_partitions(c1_bytes), reference_2kib)


@pytest.mark.slow
def test_sparse_8mib_equals_reference_synthesis():
    job = porep_partitions(c1_json(sparse_seal(seal_proof_for_size(8 << 20).name, sector_id=3)))
    _check_against_reference(job, _checked_reference_values(job))


def test_sparse_2kib_witness_equals_sealed(c1_bytes):
    # the sparse sealer's 2 KiB C1 is the full sealer's (test_sparse_seal), and so is its witness
    # (which test_sealed_2kib_equals_reference_synthesis checks bit for bit)
    sparse = porep_partitions(c1_json(sparse_seal(seal_proof_for_size(2 << 10).name, miner_id=1000, sector_id=7, data_seed=1)))
    sealed = porep_partitions(c1_bytes)
    got = partition_assignment(sparse.params, sparse.witness(0))
    want = partition_assignment(sealed.params, sealed.witness(0))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def _flip_path_byte(c1_dict: dict, challenge: int, tree: str) -> None:
    proof = c1_dict["vanilla_proofs"]["StackedDrg2KiBV1"][0][challenge]
    cols = proof["replica_column_proofs"]
    merkle = {"drg0": lambda: cols["drg_parents"][0]["inclusion_proof"],
              "exp3": lambda: cols["exp_parents"][3]["inclusion_proof"],
              "c_x": lambda: cols["c_x"]["inclusion_proof"]}.get(tree, lambda: proof[tree])()
    merkle["data"]["Single"]["path"]["path"][0]["hashes"][0][4] ^= 0x10


@pytest.mark.parametrize("tree,where", [
    ("comm_d_proofs", "comm_d inclusion of the data leaf"),
    ("drg0", "DRG parent 0: column hash and comm_c inclusion"),
])
def test_flipped_path_byte_names_the_constraint_the_reference_stops_at(c1_dict, tree, where):
    # challenge 0, early in the circuit: the reference synthesis stops there after a few seconds
    _flip_path_byte(c1_dict, 0, tree)
    job = porep_partitions(json.dumps(c1_dict).encode())
    with pytest.raises(WitnessMismatch) as fast:
        partition_assignment(job.params, job.witness(0), partition=0)
    err = fast.value
    assert (err.partition, err.challenge, err.region) == (0, 0, where)
    assert f"partition 0: the witness violates constraint {err.constraint} (challenge 0 (node " in str(err)
    with pytest.raises(WitnessError) as ref:
        job.circuit(0)
    assert f"violate constraint {err.constraint} (challenge 0 (node {err.node}): {where})" in str(ref.value)


@pytest.mark.slow
@pytest.mark.parametrize("challenge,tree,where", [
    (1, "comm_d_proofs", "comm_d inclusion of the data leaf"),
    (1, "exp3", "expander parent 3: column hash and comm_c inclusion"),
    (1, "comm_r_last_proof", "encoding and comm_r_last inclusion"),
    (0, "c_x", "challenged column hash and comm_c inclusion"),
])
def test_flipped_path_byte_fails_the_named_constraint_of_the_matrices(c1_dict, reference_2kib, challenge, tree, where):
    _flip_path_byte(c1_dict, challenge, tree)
    job = porep_partitions(json.dumps(c1_dict).encode())
    with pytest.raises(WitnessMismatch) as fast:
        partition_assignment(job.params, job.witness(0), partition=0)
    err = fast.value
    assert (err.challenge, err.region) == (challenge, where)
    assert porep_layout(job.params).locate(err.constraint) == (challenge, where)
    # unchecked, the values are still the circuit's: the root equality is the first (only) failure
    inputs, aux = partition_assignment(job.params, job.witness(0), check=False)
    r1cs = reference_2kib[0]
    assert r1cs.first_unsatisfied(r1cs.assignment(inputs, aux)) == err.constraint


def test_header_mismatch_names_comm_r(c1_bytes):
    job = porep_partitions(c1_bytes)
    w = job.witness(0)
    w = type(w)(w.replica_id, w.comm_d, (w.comm_r + 1) % R, w.comm_r_last, w.comm_c, w.challenges)
    with pytest.raises(WitnessMismatch, match=r"constraint 570 \(comm_r = Poseidon\(comm_c, comm_r_last\)\)"):
        partition_assignment(job.params, w)


def test_blank_partition_is_refused_by_name():
    # a blank partition (shape and setup) has no values to assign: refused naming the first one
    params = porep_params("2KiB")
    with pytest.raises(ValueError, match=r"replica_id has no value"):
        partition_assignment(params, blank_partition(params))
