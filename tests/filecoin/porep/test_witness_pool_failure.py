"""A failing piece of a pooled PoRep witness is raised only once every other piece has ended:
the engine zeroes and offers a failed task's recycled block to the next task, so no worker may
still be writing into it (cuzk_plugin.filecoin.porep.witness_pool)."""

from __future__ import annotations

import os
import time

import pytest

from cuzk_plugin.adapters.curio.porep.job import porep_partitions
from cuzk_plugin.filecoin.porep import witness_pool as pool_module
from cuzk_plugin.filecoin.porep.witness_pool import WitnessPool, plan_parts
from cuzk_plugin.filecoin.witness import forked


def _slow_or_failing(params, all_aux, header, chs, part):
    """In a forked worker: the first labels piece fails at once, every other piece leaves a
    mark after 0.3 s (the directory comes from the environment the pool was forked with)."""
    if part.kind == "labels" and part.first == 0:
        raise ValueError("labels piece failed")
    time.sleep(0.3)
    marks = os.environ["CUZK_TEST_MARKS"]
    with open(os.path.join(marks, f"{part.kind}-{part.first}-{part.parents}"), "w"):
        pass
    return {}


def test_a_failing_piece_is_raised_after_the_others_end(c1_bytes, tmp_path, monkeypatch):
    job = porep_partitions(c1_bytes)
    monkeypatch.setenv("CUZK_TEST_MARKS", str(tmp_path))
    monkeypatch.setattr(pool_module, "compute_part", _slow_or_failing)  # before the fork
    workers = 3
    others = len(plan_parts(job.params.challenges_per_partition, workers)) - 1
    with WitnessPool(job.params, workers) as pool, pytest.raises(ValueError, match="labels piece failed"):
        pool.assignment(job.witness(0), partition=0)
    assert len(os.listdir(tmp_path)) == others


def _dies(params, all_aux, header, chs, part):
    """In a forked worker: the first comm_d piece's process is killed (as the out-of-memory
    killer would), the others compute as usual."""
    if part.kind == "comm_d" and part.first == 0:
        os._exit(9)
    return _real_compute(params, all_aux, header, chs, part)


_real_compute = pool_module.compute_part


def test_a_dead_worker_fails_the_partition_and_the_next_pool_works(c1_bytes, monkeypatch):
    """Without the check the pool waits forever for the dead worker's piece."""
    from cuzk_plugin.filecoin.porep.witness_pool import shared_pool
    from cuzk_plugin.filecoin.witness.forked import WitnessWorkerDied

    job = porep_partitions(c1_bytes)
    monkeypatch.setattr(pool_module, "compute_part", _dies)  # before the fork
    monkeypatch.setattr(forked, "_kept", {})  # not a pool an earlier test forked
    pool = shared_pool(job.params, 3)
    t = time.perf_counter()
    with pytest.raises(WitnessWorkerDied, match="died"):
        pool.assignment(job.witness(0), partition=0)
    assert time.perf_counter() - t < 20 and pool.closed
    monkeypatch.setattr(pool_module, "compute_part", _real_compute)
    again = shared_pool(job.params, 3)  # a fresh pool, forked without the killer
    assert again is not pool
    try:
        inputs, aux = again.assignment(job.witness(0), partition=0)
        from cuzk_plugin.filecoin.porep.witness import partition_assignment
        want = partition_assignment(job.params, job.witness(0), partition=0)
        assert (inputs == want[0]).all() and (aux == want[1]).all()
    finally:
        again.close()
