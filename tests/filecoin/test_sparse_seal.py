"""The sparse test sealer: its trees equal dense trees over the same leaves, its 2 KiB C1 is the
full sealer's (whose witness test_porep checks against every constraint), its C1s parse at
every size and satisfy the circuit (reference synthesis at 8 MiB, the native relation check at
every size), and a flipped byte in any Merkle path is caught."""

from __future__ import annotations

import json
import random

import pytest

from cuzk_plugin.adapters.curio.porep.c1 import parse_envelope
from cuzk_plugin.adapters.curio.porep.job import porep_partitions
from cuzk_plugin.filecoin.fixtures import seal as seal_cli
from cuzk_plugin.filecoin.fixtures.seal import c1_json, seal
from cuzk_plugin.filecoin.fixtures.sparse_seal import seal_proof_for_size, sparse_seal
from cuzk_plugin.filecoin.fixtures.sparse_tree import SparseMerkleTree
from cuzk_plugin.filecoin.params import porep_params
from cuzk_plugin.filecoin.porep.circuit import blank_partition
from cuzk_plugin.filecoin.porep.witness_check import WitnessCheckError, check_partition
from cuzk_plugin.filecoin.trees import MerkleTree

SMALL = ["2KiB", "8MiB", "512MiB"]
SIZE = {"2KiB": 2 << 10, "8MiB": 8 << 20, "512MiB": 512 << 20, "32GiB": 32 << 30, "64GiB": 64 << 30}


def _sparse_c1(size: str, **kw) -> bytes:
    proof = kw.pop("proof", None) or seal_proof_for_size(SIZE[size]).name
    return c1_json(sparse_seal(proof, **kw))


@pytest.mark.parametrize("arities,hasher,period,overrides", [
    ([8, 8, 8], "poseidon", 64, [0, 5, 6, 300, 511]),
    ([8, 8, 8, 2], "poseidon", 64, [63, 64, 1000, 1023]),  # a Top-shaped tree
    ([8, 8], "poseidon", 64, []),
    ([2] * 9, "sha256", 64, [1, 2, 3, 200, 511]),
    ([2] * 6, "sha256", 64, [7]),
])
def test_sparse_tree_equals_dense_tree(arities, hasher, period, overrides):
    rng = random.Random(len(arities) * 31 + period)
    leaves = 1
    for a in arities:
        leaves *= a
    background = [rng.getrandbits(250) for _ in range(period)]
    over = {i: rng.getrandbits(250) for i in overrides}
    dense = MerkleTree([over.get(i, background[i % period]) for i in range(leaves)], arities, hasher)
    sparse = SparseMerkleTree(leaves, arities, hasher, background, over)
    assert sparse.root == dense.root
    for i in sorted({0, leaves - 1, *overrides, *(i ^ 1 for i in overrides), 77 % leaves}):
        assert sparse.path(i) == dense.path(i)


def test_sparse_tree_refuses_misfit_background():
    with pytest.raises(ValueError, match="does not tile"):
        SparseMerkleTree(64, [8, 8], "poseidon", [1] * 48)
    with pytest.raises(ValueError, match="groups of 8"):
        SparseMerkleTree(64, [8, 8], "poseidon", [1] * 4)
    with pytest.raises(ValueError, match="outside"):
        SparseMerkleTree(64, [8, 8], "poseidon", [1] * 64, {64: 3})


def test_sparse_2kib_equals_full_sealer(c1_bytes):
    # conftest's sealed sector, whose witness test_porep checks against every constraint: the
    # sparse 2 KiB C1 is byte for byte that C1, so the same check covers it
    assert _sparse_c1("2KiB", miner_id=1000, sector_id=7, data_seed=1) == c1_bytes
    kw = dict(miner_id=1000, sector_id=2, data_seed=5)
    assert _sparse_c1("2KiB", **kw) == c1_json(seal("StackedDrg2KiBV1_1", **kw))


def test_full_sealer_passes_the_native_check(c1_bytes):
    job = porep_partitions(c1_bytes)
    check_partition(job.params, job.witness(0))


def test_wrong_comm_r_fails_the_native_check(c1_bytes):
    job = porep_partitions(c1_bytes)
    w = job.witness(0)
    w2 = type(w)(w.replica_id, w.comm_d, (w.comm_r + 1), w.comm_r_last, w.comm_c, w.challenges)
    with pytest.raises(WitnessCheckError, match=r"^partition 0, header: comm_r is not"):
        check_partition(job.params, w2, partition=0)


def test_blank_partition_is_refused_by_the_native_check():
    params = porep_params("2KiB")
    with pytest.raises(WitnessCheckError, match=r"^partition 3, header: no values \(a blank partition\)$"):
        check_partition(params, blank_partition(params), partition=3)


@pytest.mark.parametrize("size,proof", [(s, None) for s in SMALL] + [("8MiB", "StackedDrg8MiBV1")])
def test_sparse_c1_parses_and_passes_the_native_check(size, proof):
    job = porep_partitions(_sparse_c1(size, proof=proof, sector_id=3, data_seed=9))
    assert job.params.sector_size == SIZE[size]
    for k in range(job.num_partitions):
        check_partition(job.params, job.witness(k))


def _merkle(vp: dict, which: str) -> dict:
    rcp = vp["replica_column_proofs"]
    return {"comm_d": vp["comm_d_proofs"], "comm_r_last": vp["comm_r_last_proof"],
            "c_x": rcp["c_x"]["inclusion_proof"], "drg3": rcp["drg_parents"][3]["inclusion_proof"],
            "exp5": rcp["exp_parents"][5]["inclusion_proof"]}[which]


def _flip(merkle: dict, level: int) -> None:
    variant, proof = next(iter(merkle["data"].items()))
    levels = proof["path"]["path"] if variant == "Single" else proof["base_proof"]["path"]
    levels[level]["hashes"][0][7] ^= 0x01


@pytest.mark.parametrize("which,what", [
    ("comm_d", "data leaf's path does not hash to comm_d"),
    ("drg3", "DRG parent 3: the column's path does not hash to comm_c"),
    ("exp5", "expander parent 5: the column's path does not hash to comm_c"),
    ("comm_r_last", "encoded node's path does not hash to comm_r_last"),
    ("c_x", "challenged column .* does not hash to comm_c"),
])
def test_flipped_byte_in_any_path_fails_the_native_check(which, what):
    c1 = json.loads(_sparse_c1("512MiB", sector_id=4))
    _flip(_merkle(c1["vanilla_proofs"]["StackedDrg512MiBV1"][0][1], which), 2)
    job = porep_partitions(json.dumps(c1).encode())  # well-formed: parsing accepts it
    with pytest.raises(WitnessCheckError, match=rf"^challenge 1 \(node \d+\): .*{what}"):
        check_partition(job.params, job.witness(0))


def test_cli_writes_a_sparse_envelope(tmp_path, capsys):
    out = tmp_path / "c1.json"
    assert seal_cli._main(["--sector-size", "8MiB", "--sparse", "--envelope", "--sector-id", "11",
                           "--out", str(out)]) == 0
    assert "TEST FIXTURE" in capsys.readouterr().out
    env, c1 = parse_envelope(out.read_bytes())
    assert (env.SectorNum, env.SectorSize, c1.registered_proof) == (11, 8 << 20, "StackedDrg8MiBV1_1")
    assert [p.name for p in tmp_path.iterdir()] == ["c1.json"]  # no temporary file left


def test_cli_refuses_a_full_sealing_beyond_2kib(tmp_path):
    with pytest.raises(SystemExit):
        seal_cli._main(["--sector-size", "32GiB", "--out", str(tmp_path / "c1.json")])
    with pytest.raises(SystemExit):
        seal_cli._main(["--sector-size", "8MiB", "--proof", "StackedDrg2KiBV1_1", "--sparse",
                        "--out", str(tmp_path / "c1.json")])
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
@pytest.mark.heavy
def test_sparse_8mib_witness_satisfies_every_constraint():
    # 3.84 M constraints in the reference synthesis: about 40 s and 2.8 GB on the 2-core machine
    job = porep_partitions(_sparse_c1("8MiB", sector_id=6, data_seed=2))
    r1cs, inputs, aux = job.circuit(0)  # raises WitnessError on the first violated constraint
    assert r1cs.first_unsatisfied(r1cs.assignment(inputs, aux)) is None
    assert r1cs.num_constraints == 3_844_929


@pytest.fixture(scope="module")
def c1_32gib() -> bytes:
    return _sparse_c1("32GiB", sector_id=8)


@pytest.mark.slow
def test_sparse_32gib_parses_and_every_partition_passes_the_native_check(c1_32gib):
    job = porep_partitions(c1_32gib)
    assert (job.num_partitions, len(job.witness(0).challenges)) == (10, 18)
    for k in range(job.num_partitions):
        check_partition(job.params, job.witness(k))


@pytest.mark.slow
def test_sparse_32gib_flipped_path_byte_fails(c1_32gib):
    c1 = json.loads(c1_32gib)
    merkle = _merkle(c1["vanilla_proofs"]["StackedDrg32GiBV1"][6][4], "exp5")
    assert "Sub" in merkle["data"]
    _flip(merkle, 5)
    job = porep_partitions(json.dumps(c1).encode())
    check_partition(job.params, job.witness(5))
    with pytest.raises(WitnessCheckError, match=r"^partition 6, challenge 4 \(node \d+\): expander parent 5: .* comm_c"):
        check_partition(job.params, job.witness(6), partition=6)


@pytest.mark.slow
def test_sparse_64gib_parses_and_passes_the_native_check():
    job = porep_partitions(_sparse_c1("64GiB", sector_id=9))
    assert job.params.top_arity == 2
    for k in (0, job.num_partitions - 1):
        check_partition(job.params, job.witness(k))
