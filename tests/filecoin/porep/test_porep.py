"""The PoRep partition circuit: constraint counts (2 KiB printed by the count script, 32 GiB =
rust-fil-proofs' published v28 figure), the sealer's witness satisfies every constraint, and a
corrupted Merkle path is caught, with the failing part named, before any proving."""

from __future__ import annotations

import gc
import io
import json
from contextlib import redirect_stdout

import pytest

from cuzk_plugin.adapters.curio.porep.job import WitnessError, porep_partitions
from cuzk_plugin.filecoin.gadgets.boolean import Boolean, alloc_bit
from cuzk_plugin.filecoin.gadgets.shape import ShapeConstraintSystem
from cuzk_plugin.filecoin.porep import count
from cuzk_plugin.filecoin.porep.circuit import TOTAL_PARENTS, _label

COUNT_2KIB = 2_687_921
INPUTS_2KIB = 40  # ONE, replica_id, comm_d, comm_r, 18 per challenge x 2


def test_count_script_2kib():
    out = io.StringIO()
    with redirect_stdout(out):
        assert count.main(["--sector-size", "2KiB"]) == 0
    assert gc.isenabled()  # paused for the pass only: main also runs inside other processes' tests
    text = out.getvalue()
    assert f"constraints: {COUNT_2KIB}\n" in text
    assert f"public inputs (ONE included): {INPUTS_2KIB}\n" in text


@pytest.mark.slow
def test_count_32gib_matches_rust_fil_proofs():
    # rust-fil-proofs publishes 130,278,541 constraints for one 32 GiB PoRep partition (v28).
    cs = count.count_partition("32GiB")
    assert (cs.num_constraints, cs.num_inputs) == (130_278_541, 328)


def test_create_label_count_matches_rust_fil_proofs():
    # storage-proofs-porep stacked/circuit/create_label.rs test_create_label: 532,025 constraints
    # for 38 x 256 allocated input bits (replica id and 37 parents), constant layer and node.
    cs = ShapeConstraintSystem()
    replica = [alloc_bit(cs, None) for _ in range(256)]
    parents = [[alloc_bit(cs, None) for _ in range(256)] for _ in range(TOTAL_PARENTS)]
    node = [Boolean.constant(bool((22 >> i) & 1)) for i in range(63, -1, -1)]
    _label(cs, replica, parents, 3, node)
    assert cs.num_constraints == 532_025


@pytest.mark.slow
def test_sealed_2kib_witness_satisfies_every_constraint(reference_2kib):
    r1cs, inputs, aux = reference_2kib  # job.circuit(0) raises WitnessError on the first violated constraint
    assert r1cs.first_unsatisfied(r1cs.assignment(inputs, aux)) is None  # and again on the matrices
    assert r1cs.num_constraints == COUNT_2KIB
    assert r1cs.num_inputs == INPUTS_2KIB == inputs.shape[0]
    assert aux.shape[0] == r1cs.num_aux


@pytest.mark.parametrize("tree,where", [
    ("comm_d_proofs", "comm_d inclusion of the data leaf"),
    ("drg0", "DRG parent 0: column hash and comm_c inclusion"),
])
def test_flipped_byte_in_merkle_path_fails_before_proving(c1_dict, tree, where):
    proof = c1_dict["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]
    merkle = proof["replica_column_proofs"]["drg_parents"][0]["inclusion_proof"] if tree == "drg0" else proof[tree]
    merkle["data"]["Single"]["path"]["path"][1]["hashes"][0][7] ^= 0x01
    job = porep_partitions(json.dumps(c1_dict).encode())  # well-formed: parsing accepts it
    with pytest.raises(WitnessError, match=rf"challenge 0 \(node \d+\): {where}\); the C1 is corrupted"):
        job.circuit(0)
