"""The SnapDeals fast path: the vectorized update witness equals the reference synthesis bit for
bit (Filecoin's 2 KiB shape, and a 2 KiB sector split in two partitions with six distinct h
values and four apex leaves, which exercises what the large sizes do), its layout counts equal
the shape pass's for every size (32 GiB: rust-fil-proofs' published 81,049,499), a corrupted
value is named at the constraint the reference synthesis fails first, the provider hands the
backend a WitnessPartition on the recorded circuit whose every row holds, and the sparse
update (large-size test data) is the dense sealer's update at 2 KiB."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from cuzk_plugin.adapters.curio.snap.job import SnapPartitionTask, SnapWitnessError, ensure_snap_pce
from cuzk_plugin.backends.cpu.backend import witness_to_synthesized
from cuzk_plugin.backends.cpu.r1cs_eval import evaluate_r1cs, unsatisfied_rows
from cuzk_plugin.bls12_381.fields import ints_to_limbs
from cuzk_plugin.circuit.fast_cs import FastConstraintSystem, gc_paused
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.filecoin.fixtures.seal import seal
from cuzk_plugin.filecoin.fixtures.snap_seal import partition_proof, snap_update, sparse_snap_update, vanilla_proofs
from cuzk_plugin.filecoin.fixtures.sparse_seal import sparse_seal
from cuzk_plugin.filecoin.snap.circuit import synthesize_update_partition, witness_from_proof
from cuzk_plugin.filecoin.snap.params import update_params
from cuzk_plugin.filecoin.snap.vanilla import verify_partition
from cuzk_plugin.filecoin.snap.witness import UpdateWitnessMismatch, update_assignment, update_layout
from cuzk_plugin.formats.partition import WitnessPartition
from cuzk_plugin.formats.pce import MappedCircuit, pce_path, read_header

#: (constraints, aux) of the shape pass (bench/snap/snap-2kib-and-shapes-2026-12-03.md); 32 GiB's
#: constraint count is rust-fil-proofs' published figure (snap-facts.md section 8).
SHAPES = {"2KiB": (1_705_039, 1_703_569), "8MiB": (10_007_503, 9_998_039), "512MiB": (57_450_479, 57_401_314),
          "32GiB": (81_049_499, 80_978_488), "64GiB": (85_006_101, 84_931_220)}


def split_params():
    """A 2 KiB sector in two partitions: a partition bit in k_and_h_select and the partition
    path, distinct h values (h = hs[3] = 4), a two-level apex tree."""
    return replace(update_params("2KiB"), partitions=2, hs=(1, 2, 3, 4, 5, 6), apex_leaves=4)


def _witness(sealed, params, k: int, data_seed: int = 3):
    u = snap_update(sealed, data_seed=data_seed, params=params)
    proof = partition_proof(u, k)
    return witness_from_proof(params, proof, k, sealed.comm_r, u.tree_d_new.root, int.from_bytes(u.comm_r_new, "little"))


def _checked_reference_values(params, w):
    """(None, inputs, aux) by the reference synthesis with every constraint checked as it is
    enforced (a violated one raises): no R1CS matrices, which values equal to these need not be
    checked against again (about half of the reference's time)."""
    cs = FastConstraintSystem(check_as_you_go=True)
    with gc_paused():  # over a million acyclic objects
        synthesize_update_partition(cs, params, w)
    assert (cs.num_constraints, len(cs._aux)) == (update_layout(params).num_constraints, update_layout(params).num_aux)
    return None, ints_to_limbs(cs._inputs), ints_to_limbs(cs._aux).reshape(-1, 4)


@pytest.mark.parametrize("size", list(SHAPES))
def test_layout_counts_equal_the_shape_pass(size):
    lay = update_layout(update_params(size))
    assert (lay.num_constraints, lay.num_aux) == SHAPES[size]


@pytest.mark.slow
@pytest.mark.parametrize("split", [False, True], ids=["2KiB", "2KiB-in-2-partitions"])
def test_fast_witness_equals_the_reference_synthesis(sealed, split, request):
    p = split_params() if split else update_params("2KiB")
    k = p.partitions - 1
    u = snap_update(sealed, data_seed=3, params=p)
    proof = partition_proof(u, k)
    comm_r_new = int.from_bytes(u.comm_r_new, "little")
    verify_partition(p, proof, k, sealed.comm_r, u.tree_d_new.root, comm_r_new)
    w = witness_from_proof(p, proof, k, sealed.comm_r, u.tree_d_new.root, comm_r_new)
    if split:  # k in k_and_h_select (h = hs[3] = 4: select bit 3) and the partition path's right half
        assert w.k_and_h_select == 1 | (1 << 3) << 1
        assert all(cp.proof_d_new.levels[-1][1] == 1 for cp in proof.challenge_proofs)
    inputs, aux = update_assignment(p, w)
    # Filecoin's 2 KiB: the session's reference synthesis of this update (from its encoded proof)
    r1cs, ref_inputs, ref_aux = (_checked_reference_values(p, w) if split
                                 else request.getfixturevalue("snap_reference_2kib"))
    assert np.array_equal(inputs, ref_inputs)
    assert aux.shape == ref_aux.shape and np.array_equal(aux, ref_aux)
    if r1cs is not None:  # else the reference values, equal to these, met every constraint as it was enforced
        assert r1cs.first_unsatisfied(r1cs.assignment(inputs, aux)) is None


@pytest.mark.slow
def test_a_corrupted_sibling_is_named_at_the_reference_constraint(sealed):
    p = split_params()
    w = _witness(sealed, p, 1)
    ch = w.challenges[3]
    ch.path_r_new[1] = (ch.path_r_new[1][0] + 1, *ch.path_r_new[1][1:])
    with pytest.raises(UpdateWitnessMismatch) as err:
        update_assignment(p, w, partition=1)
    assert (err.value.challenge, err.value.region) == (3, "TreeR new inclusion")
    cs = FastConstraintSystem(check_as_you_go=True)
    with pytest.raises(CircuitError) as ref:
        synthesize_update_partition(cs, p, w)
    assert err.value.constraint == ref.value.constraint


def test_a_wrong_comm_d_new_fails_the_apex_path(sealed):
    p = update_params("2KiB")
    w = _witness(sealed, p, 0)
    w.comm_d_new = (w.comm_d_new or 0) + 1
    with pytest.raises(UpdateWitnessMismatch, match="apex tree of the apex leaves and its path to comm_d_new"):
        update_assignment(p, w)


@pytest.mark.slow
def test_provider_hands_a_witness_partition_on_the_recorded_circuit(sealed, tmp_path):
    u = snap_update(sealed, data_seed=3)
    (blob,) = vanilla_proofs(u)
    comms = (sealed.comm_r, u.tree_d_new.root, int.from_bytes(u.comm_r_new, "little"))
    part, public = SnapPartitionTask(0, blob, 0, *comms, pce_cache=str(tmp_path)).synthesize()
    assert isinstance(part, WitnessPartition) and isinstance(part.circuit, MappedCircuit)
    assert part.circuit.path == str(pce_path(tmp_path, "snap-2k"))
    assert public == [1, *comms]  # k_and_h_select = 1 at 2 KiB
    hdr = read_header(ensure_snap_pce("snap-2k", tmp_path))
    assert (hdr.num_constraints, hdr.num_inputs, hdr.num_aux) == (SHAPES["2KiB"][0] + 5, 5, SHAPES["2KiB"][1])
    got = witness_to_synthesized(part, *evaluate_r1cs(part.pce, part.z()))
    assert unsatisfied_rows(got.a, got.b, got.c).size == 0  # every recorded constraint holds

    bad = bytearray(blob)
    bad[-40] ^= 1  # the last challenge's top TreeR new sibling: its path misses root_r_new
    with pytest.raises(SnapWitnessError, match=r"vanilla_proofs\[0\]\.challenge_proofs\[9\]\.proof_r_new: .*"
                                               r"TreeR new inclusion"):
        SnapPartitionTask(0, bytes(bad), 0, *comms, pce_cache=str(tmp_path)).synthesize()


def test_disable_pce_takes_the_reference_path(sealed, tmp_path, monkeypatch):
    monkeypatch.setenv("CUZK_DISABLE_PCE", "1")
    calls = []

    def reference(self):
        calls.append(self.k)
        return None, None, None

    monkeypatch.setattr(SnapPartitionTask, "circuit", reference)
    monkeypatch.setattr(SnapPartitionTask, "_checked_inputs", lambda self, inputs: [])
    monkeypatch.setattr("cuzk_plugin.circuit.r1cs.synthesize", lambda *a, **kw: "reference")
    part, _ = SnapPartitionTask(0, b"", 0, 0, 0, 0, pce_cache=str(tmp_path)).synthesize()
    assert part == "reference" and calls == [0]
    assert not pce_path(tmp_path, "snap-2k").exists()


def test_sparse_update_of_2kib_is_the_dense_update():
    # at 2 KiB the sparse sector is the sealed one and the 64-node block is the whole new data,
    # so the region-wise TreeR new must give the dense sealer's proofs byte for byte
    sector = sparse_seal("StackedDrg2KiBV1_1", miner_id=1000, sector_id=7, data_seed=1)
    dense = snap_update(seal("StackedDrg2KiBV1_1", miner_id=1000, sector_id=7, data_seed=1), data_seed=3)
    sparse = sparse_snap_update(sector, data_seed=3)
    assert (sparse.comm_r_old, sparse.comm_d_new, sparse.comm_r_new) == (dense.comm_r_old, dense.comm_d_new,
                                                                         dense.comm_r_new)
    assert vanilla_proofs(sparse) == vanilla_proofs(dense)
