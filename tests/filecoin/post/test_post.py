"""The Fallback PoSt circuit (Window and Winning): constraint and public-input counts against
rust-fil-proofs' published figures, witness satisfaction, challenge derivation written out
independently, and proofs that verify (and fail when tampered)."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest

from cuzk_plugin.adapters.curio.post.job import PostJob
from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.circuit.fast_cs import FastConstraintSystem
from cuzk_plugin.circuit.r1cs import synthesize as synthesize_r1cs
from cuzk_plugin.filecoin.fixtures.post_seal import ProvenSector, post_test_sector, post_vanilla_proofs, random_randomness
from cuzk_plugin.filecoin.gadgets.shape import ShapeConstraintSystem
from cuzk_plugin.filecoin.post.challenges import (
    challenge_index,
    check_randomness,
    leaf_challenge,
    slot_challenges,
    winning_sector_index,
)
from cuzk_plugin.filecoin.post.circuit import blank_slots, synthesize_post
from cuzk_plugin.filecoin.post.params import POST_PROOFS, PostKind, PostShape, post_proof_by_number, post_shape
from cuzk_plugin.filecoin.proofs import prover_id_from_miner
from cuzk_plugin.groth16.prover import prove
from cuzk_plugin.groth16.setup import setup
from cuzk_plugin.groth16.verifier import verify
from tests.filecoin.post.post_data import sealed_post_sectors

KIB2, MIB8, MIB512, GIB32, GIB64 = 2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30


def _shape_count_of(shape: PostShape) -> ShapeConstraintSystem:
    cs = ShapeConstraintSystem()
    synthesize_post(cs, shape, blank_slots(shape))
    return cs


def _shape_count(kind: PostKind, size: int) -> ShapeConstraintSystem:
    return _shape_count_of(post_shape(kind, size))


# Public inputs incl. ONE: Window 1 + 2349 * 11 / 1 + 2300 * 11 and Winning 1 + 66 * 2 equal the
# published .vk sizes (post-facts.md section 4; params-files-facts.md section 6: 2.4M / 2.3M /
# 13K .vk = 868 + 96 * inputs bytes); the small Window .vk (3.0K) is 23 inputs.
@pytest.mark.parametrize("kind,size,constraints,inputs", [
    # Winning 32 GiB: ~370 K constraints (the target, post-facts.md section 5 derived 370,590).
    (PostKind.WINNING, GIB32, 370_590, 133),
    (PostKind.WINNING, GIB64, 391_314, 133),
    (PostKind.WINNING, KIB2, 90_750, 133),
    (PostKind.WINDOW, KIB2, 21_866, 23),
])
def test_small_shape_counts(kind, size, constraints, inputs):
    cs = _shape_count(kind, size)
    assert (cs.num_constraints, cs.num_inputs) == (constraints, inputs)


# filecoin-proofs src/constants.rs, comments on WINDOW_POST_SECTOR_COUNT (post-facts.md section 5):
# 32 GiB (2349 sectors) 125,279,217 constraints; 64 GiB (2300 sectors) 129,887,900.
WINDOW_COUNTS = [(GIB32, 125_279_217, 25_840), (GIB64, 129_887_900, 25_301)]


@pytest.mark.parametrize("size,constraints,inputs", WINDOW_COUNTS)
def test_window_shape_counts_from_one_and_two_slots_match_rust_fil_proofs(size, constraints, inputs):
    """synthesize_post is a loop over the slots, each the same circuit: the shape pass of one and
    of two slots of the real shape (the second slot as it follows the first) gives the count of
    every slot, and all 2349 / 2300 of them must add up to the published figure. The whole
    pass (~25 s each on two cores) is test_window_shape_counts_match_rust_fil_proofs (heavy)."""
    full = post_shape(PostKind.WINDOW, size)
    one, two = (_shape_count_of(dataclasses.replace(full, sector_slots=n)) for n in (1, 2))
    slot = (two.num_constraints - one.num_constraints, two.num_inputs - one.num_inputs)
    assert slot[1] == 1 + full.challenges_per_slot  # comm_r and the leaf indices
    assert (one.num_constraints, one.num_inputs) == (slot[0], 1 + slot[1])  # nothing but ONE outside the slots
    assert (full.sector_slots * slot[0], 1 + full.sector_slots * slot[1]) == (constraints, inputs)


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.parametrize("size,constraints,inputs", WINDOW_COUNTS)
def test_window_shape_counts_match_rust_fil_proofs(size, constraints, inputs):
    # heavy: ~50 s for both; test_window_shape_counts_from_one_and_two_slots_match_rust_fil_proofs
    # checks the same figures in the default run
    cs = _shape_count(PostKind.WINDOW, size)
    assert (cs.num_constraints, cs.num_inputs) == (constraints, inputs)


def test_registered_post_proofs():
    # post-facts.md section 1: 0-4 Winning V1, 5-9 Window V1, 10-14 Window V1_1 (proofs-api V1_2).
    assert [(p.number, p.kind, p.api_version) for p in POST_PROOFS][::5] == [
        (0, PostKind.WINNING, "1.0.0"), (5, PostKind.WINDOW, "1.0.0"), (10, PostKind.WINDOW, "1.2.0")]
    assert post_proof_by_number(13).go_name == "StackedDrgWindow32GiBV1_1"
    assert post_proof_by_number(3).shape.variant == "Sub" and post_proof_by_number(4).shape.variant == "Top"
    with pytest.raises(ValueError, match="15"):
        post_proof_by_number(15)


# -- challenges, written out from post-facts.md section 3 ------------------------------------

def _leaf(rand: bytes, sector_id: int, index: int, leaves: int) -> int:
    h = hashlib.sha256(rand + sector_id.to_bytes(8, "little") + index.to_bytes(8, "little")).digest()
    return int.from_bytes(h[:8], "little") % leaves


def test_window_challenges_v1_and_v1_2():
    rand = random_randomness(5)
    v1, v12 = post_proof_by_number(5), post_proof_by_number(10)
    # V1_0_0: index = sector_index * 10 + n, sector_index counts across partitions.
    got = slot_challenges(v1, rand, [11, 12], partition_index=3)
    assert got[1] == [_leaf(rand, 12, (3 * 2 + 1) * 10 + n, 64) for n in range(10)]
    # V1_2_0: index = n, whatever the position.
    got = slot_challenges(v12, rand, [11, 12], partition_index=3)
    assert got[1] == [_leaf(rand, 12, n, 64) for n in range(10)]
    # One sector: the partition is padded with its block.
    assert slot_challenges(v12, rand, [11]) == [[_leaf(rand, 11, n, 64) for n in range(10)]] * 2
    assert challenge_index(v1, 4, 7) == 47 and challenge_index(v12, 4, 7) == 7


def test_winning_challenges_and_sector_selection():
    rand = random_randomness(6)
    w = post_proof_by_number(3)
    got = slot_challenges(w, rand, [99])
    assert got == [[_leaf(rand, 99, i, 1 << 30)] for i in range(66)]
    prover = prover_id_from_miner(1000)
    h = hashlib.sha256(prover + rand + bytes(8)).digest()
    assert winning_sector_index(prover, rand, 17) == int.from_bytes(h[:8], "little") % 17
    assert leaf_challenge(rand, 99, 0, 1 << 30) == got[0][0]


def test_randomness_must_be_canonical():
    assert check_randomness(bytes(32)) == 0
    with pytest.raises(ValueError, match="canonical"):
        check_randomness(b"\xff" * 32)
    with pytest.raises(ValueError, match="32 bytes"):
        check_randomness(b"\x00" * 31)


# -- witnesses and proofs ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def post_sectors():
    return list(sealed_post_sectors())


@pytest.fixture(scope="module")
def window_job(post_sectors):
    rand = random_randomness(7)
    return PostJob.from_fields(10, rand, post_vanilla_proofs(post_proof_by_number(10), post_sectors, rand))


@pytest.fixture(scope="module")
def window_circuit(window_job):
    return window_job.circuit()  # raises PostWitnessError on the first violated constraint


def test_window_2kib_witness_satisfies_every_constraint(window_job, window_circuit):
    r1cs, inputs, aux = window_circuit
    assert r1cs.first_unsatisfied(r1cs.assignment(inputs, aux)) is None
    assert (r1cs.num_constraints, r1cs.num_inputs) == (21_866, 23)
    # Inputs: per slot comm_r then its 10 leaf indices, as the verifier derives them.
    s0, s1 = window_job.sectors
    assert list(window_job.public_inputs[:1]) == [s0.comm_r] and window_job.public_inputs[11] == s1.comm_r


@pytest.mark.slow
def test_window_2kib_proof_verifies_and_tampering_fails(window_job, window_circuit):
    r1cs, inputs, aux = window_circuit
    key = setup(r1cs)
    part = synthesize_r1cs(r1cs, inputs, aux)
    public = list(window_job.public_inputs)
    proof = prove(key, part, CpuBackend())
    assert verify(key.vk, proof, public)
    bad_inputs = list(public)
    bad_inputs[3] ^= 1  # another leaf index
    assert not verify(key.vk, proof, bad_inputs)
    bad_inputs = list(public)
    bad_inputs[11] = (bad_inputs[11] + 1)  # the second sector's comm_r
    assert not verify(key.vk, proof, bad_inputs)
    from cuzk_plugin.formats.proof import Proof

    tampered = Proof(a=proof.a + proof.a, b=proof.b, c=proof.c)
    assert not verify(key.vk, tampered, public)


@pytest.mark.slow
def test_winning_2kib_witness_satisfies_every_constraint(post_sectors):
    rand = random_randomness(8)
    job = PostJob.from_fields(0, rand, post_vanilla_proofs(post_proof_by_number(0), post_sectors[:1], rand))
    r1cs, inputs, aux = job.circuit()
    assert r1cs.first_unsatisfied(r1cs.assignment(inputs, aux)) is None
    assert (r1cs.num_constraints, r1cs.num_inputs) == (90_750, 133)
    # 66 slots, each comm_r then one leaf: leaf i = SHA-256(rand || id || i) mod 64.
    sid = job.sectors[0].sector_id
    assert list(job.public_inputs[1::2]) == [_leaf(rand, sid, i, 64) for i in range(66)]
    assert set(job.public_inputs[0::2]) == {job.sectors[0].comm_r}


@pytest.mark.slow
def test_winning_32gib_test_sector_satisfies_every_constraint():
    """A 32 GiB tree_r_last (8-8-0, Sub proofs): 370,590 constraints of real witness."""
    rand = random_randomness(9)
    ps = ProvenSector(4242, post_test_sector(GIB32, seed=3))
    job = PostJob.from_fields(3, rand, post_vanilla_proofs(post_proof_by_number(3), [ps], rand))
    r1cs, inputs, aux = job.circuit()
    assert (r1cs.num_constraints, r1cs.num_inputs) == (370_590, 133)
    assert r1cs.first_unsatisfied(r1cs.assignment(inputs, aux)) is None


def test_64gib_window_plan_pads_to_2300_slots():
    """64 GiB Top proofs decode and check; one sector fills all 2300 slots (not synthesized)."""
    rand = random_randomness(10)
    ps = ProvenSector(7, post_test_sector(GIB64, seed=4))
    job = PostJob.from_fields(14, rand, post_vanilla_proofs(post_proof_by_number(14), [ps], rand))
    assert len(job.slots) == 2300 and len(job.public_inputs) == 2300 * 11
    assert job.public_inputs[-11:] == job.public_inputs[:11]
    assert job.circuit_id == "wpost-64g"


def test_blank_circuit_matches_witness_circuit_layout(window_job, window_circuit):
    """The key is made from the blank circuit: its matrices must be the witness circuit's."""
    cs = FastConstraintSystem()
    synthesize_post(cs, window_job.shape, blank_slots(window_job.shape))
    blank, _, _ = cs.finish()
    full, _, _ = window_circuit
    assert (blank.num_inputs, blank.num_aux, blank.num_constraints) == (full.num_inputs, full.num_aux, full.num_constraints)
    for m in ("a", "b", "c"):
        x, y = getattr(blank, m), getattr(full, m)
        assert (x.rows == y.rows).all() and (x.cols == y.cols).all() and (x.coeffs == y.coeffs).all()


# -- the witness without synthesis and the pre-compiled circuit ---------------------------------

def test_fast_witness_equals_the_reference_synthesis(window_job, window_circuit):
    from cuzk_plugin.filecoin.post.witness import post_assignment

    _, ref_inputs, ref_aux = window_circuit
    inputs, aux = post_assignment(window_job.shape, list(window_job.slots))
    assert (inputs == ref_inputs).all() and (aux == ref_aux).all()


def test_fast_witness_refuses_blank_slots():
    from cuzk_plugin.filecoin.post.witness import post_assignment

    shape = post_shape(PostKind.WINDOW, KIB2)
    with pytest.raises(ValueError, match=r"^slot 0 has no values"):
        post_assignment(shape, blank_slots(shape))


def test_fast_witness_names_a_corrupted_sibling(post_sectors):
    from cuzk_plugin.adapters.curio.post.job import PostWitnessError

    rand = random_randomness(12)
    blobs = post_vanilla_proofs(post_proof_by_number(10), post_sectors, rand)
    raw = bytearray(blobs[1])
    raw[56 + 4 + 64 + 8 + 8 + 32 * 7 + 8 + 8 + 3] ^= 0x01  # inclusion_proofs[0], level 1, hashes[0]
    job = PostJob.from_fields(10, rand, [blobs[0], bytes(raw)])
    # Slot 1 starts at 10,933 (313 + 10 x 1,062 a slot); its challenge 0's root equality is
    # 10,933 + 313 + 1,062 - 1: the only constraint a wrong sibling breaks, in both paths.
    where = r"^vanilla_proofs\[1\]\.vanilla_proof\.sectors\[0\]\.inclusion_proofs\[0\]: violates constraint 12307 "
    with pytest.raises(PostWitnessError, match=where):
        job.assignment()
    with pytest.raises(PostWitnessError, match=where):
        job.circuit()


def test_winning_32gib_fast_witness():
    """370,590 constraints' witness in about a second (the reference synthesis takes ~40 s here)."""
    rand = random_randomness(9)
    ps = ProvenSector(4242, post_test_sector(GIB32, seed=3))
    job = PostJob.from_fields(3, rand, post_vanilla_proofs(post_proof_by_number(3), [ps], rand))
    inputs, aux = job.assignment()  # roots and comm_r checked; inputs = the verifier's
    assert inputs.shape == (133, 4) and aux.shape == (375_210, 4)


def test_pre_compiled_circuit_has_the_reference_shape(window_circuit, tmp_path):
    from cuzk_plugin.adapters.curio.post.provider import ensure_post_pce
    from cuzk_plugin.formats.pce import load_pce

    r1cs, _, _ = window_circuit
    full = r1cs.with_input_constraints()
    pce = load_pce(ensure_post_pce("wpost-2k", tmp_path))
    assert (pce.num_inputs, pce.num_aux, pce.num_constraints) == (full.num_inputs, full.num_aux, full.num_constraints)
    for m in ("a", "b", "c"):
        csr, ref = getattr(pce, m), getattr(full, m)
        assert csr.nnz == ref.rows.size and (csr.cols.astype(np.int64) == ref.cols).all()


def test_fast_witness_of_a_padded_partition_equals_the_reference(post_sectors):
    """One sector in a 2-slot partition: the padded slot is computed once and copied."""
    rand = random_randomness(13)
    job = PostJob.from_fields(10, rand, post_vanilla_proofs(post_proof_by_number(10), post_sectors[:1], rand))
    assert job.slots[0] is job.slots[1]
    _, ref_inputs, ref_aux = job.circuit()
    inputs, aux = job.assignment()
    assert (inputs == ref_inputs).all() and (aux == ref_aux).all()
