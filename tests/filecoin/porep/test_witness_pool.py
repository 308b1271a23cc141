"""One partition's witness computed by several processes (cuzk_plugin.filecoin.porep.witness_pool)
against the one-process computation: the same assignment bit for bit (2 KiB sealed, sparse
8 MiB), the same refusal of a corrupted C1, and a plan that covers every piece once."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cuzk_plugin.adapters.curio.porep.job import porep_partitions
from cuzk_plugin.filecoin.fixtures.seal import c1_json
from cuzk_plugin.filecoin.fixtures.sparse_seal import seal_proof_for_size, sparse_seal
from cuzk_plugin.filecoin.params import BASE_DEGREE, EXP_DEGREE
from cuzk_plugin.filecoin.porep.witness import partition_assignment
from cuzk_plugin.filecoin.porep.witness_parts import WitnessMismatch
from cuzk_plugin.filecoin.porep.witness_pool import WitnessPool, plan_parts

_PARENTS = BASE_DEGREE + EXP_DEGREE


@pytest.mark.parametrize("challenges", [2, 18])
@pytest.mark.parametrize("workers", [1, 2, 3, 4, 8, 16, 40])
def test_plan_covers_every_piece_once(challenges, workers):
    parts = plan_parts(challenges, workers)
    comm_d = np.zeros(challenges, dtype=int)
    labels = np.zeros(challenges, dtype=int)
    parents = np.zeros((challenges, _PARENTS), dtype=int)
    for p in parts:
        rows = slice(p.first, p.first + p.count)
        assert p.count > 0
        if p.kind == "parents":
            parents[rows, slice(*p.parents)] += 1
        else:
            {"comm_d": comm_d, "labels": labels}[p.kind][rows] += 1
    assert (comm_d == 1).all() and (labels == 1).all() and (parents == 1).all()


def _equal(job, workers: int, k: int = 0) -> None:
    want = partition_assignment(job.params, job.witness(k), partition=k)
    with WitnessPool(job.params, workers) as pool:
        for _ in range(2):  # a pool serves partition after partition
            got = pool.assignment(job.witness(k), partition=k)
            for g, w in zip(got, want, strict=True):
                assert g.dtype == w.dtype == np.uint64 and g.shape == w.shape
                np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("workers", [2, 3])
def test_pool_equals_one_process_2kib(c1_bytes, workers):
    # 3 workers split the parent columns of a challenge in two pieces as well
    _equal(porep_partitions(c1_bytes), workers)


def test_pool_equals_one_process_sparse_8mib():
    job = porep_partitions(c1_json(sparse_seal(seal_proof_for_size(8 << 20).name, sector_id=3)))
    _equal(job, 2)


def test_workers_argument_equals_one_process(c1_bytes):
    job = porep_partitions(c1_bytes)
    want = partition_assignment(job.params, job.witness(0))
    got = partition_assignment(job.params, job.witness(0), workers=2)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("where,region", [
    ("comm_d_proofs", "comm_d inclusion of the data leaf"),
    ("exp3", "expander parent 3: column hash and comm_c inclusion"),
    ("comm_r_last_proof", "encoding and comm_r_last inclusion"),
])
def test_pool_refuses_a_flipped_path_byte_as_one_process_does(c1_dict, where, region):
    proof = c1_dict["vanilla_proofs"]["StackedDrg2KiBV1"][0][1]
    merkle = proof["replica_column_proofs"]["exp_parents"][3]["inclusion_proof"] if where == "exp3" else proof[where]
    merkle["data"]["Single"]["path"]["path"][0]["hashes"][0][4] ^= 0x10
    job = porep_partitions(json.dumps(c1_dict).encode())
    with pytest.raises(WitnessMismatch) as one:
        partition_assignment(job.params, job.witness(0), partition=0)
    with WitnessPool(job.params, 2) as pool, pytest.raises(WitnessMismatch) as many:
        pool.assignment(job.witness(0), partition=0)
    assert (many.value.challenge, many.value.region, many.value.constraint) == \
        (one.value.challenge, one.value.region, one.value.constraint) and one.value.region == region
    assert str(many.value) == str(one.value)


def test_closed_pool_and_bad_worker_counts_are_refused(c1_bytes):
    job = porep_partitions(c1_bytes)
    with pytest.raises(ValueError, match="workers must be >= 1"):
        WitnessPool(job.params, 0)
    pool = WitnessPool(job.params, 1)
    pool.close()
    with pytest.raises(ValueError, match="closed"):
        pool.assignment(job.witness(0))
