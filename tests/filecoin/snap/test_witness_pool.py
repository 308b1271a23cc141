"""The SnapDeals witness split over forked processes (filecoin/snap/witness_pool.py): the pooled
witness equals the one-process ``update_assignment`` bit for bit, in a shared-memory block or
not; a corrupted value in any run is named as one process names it; a killed worker fails the
partition; the Curio task takes the pool only for a partition worth splitting."""

from __future__ import annotations

import os
import time
from multiprocessing.shared_memory import SharedMemory

import numpy as np
import pytest

from cuzk_plugin.adapters.curio.snap.job import SnapPartitionTask, SnapWitnessError
from cuzk_plugin.engine import workers
from cuzk_plugin.filecoin.fixtures.snap_seal import partition_proof, snap_update, vanilla_proofs
from cuzk_plugin.filecoin.snap import witness_pool as snap_pool
from cuzk_plugin.filecoin.snap.circuit import witness_from_proof
from cuzk_plugin.filecoin.snap.params import update_params
from cuzk_plugin.filecoin.snap.witness import UpdateWitnessMismatch, update_assignment, update_layout
from cuzk_plugin.filecoin.snap.witness_pool import SnapWitnessPool, shared_snap_pool
from cuzk_plugin.filecoin.witness import forked as forked_module
from cuzk_plugin.filecoin.witness.forked import WitnessWorkerDied
from tests.filecoin.snap.test_witness import split_params

_real_run = snap_pool._run


@pytest.fixture(scope="module")
def updates(sealed):
    """{name: (params, update)} of the sealed 2 KiB sector, Filecoin's shape and the split one."""
    return {"2KiB": (update_params("2KiB"), snap_update(sealed, data_seed=3)),
            "split": (split_params(), snap_update(sealed, data_seed=3, params=split_params()))}


def _witness(sealed, updates, name: str):
    p, u = updates[name]
    k = p.partitions - 1
    w = witness_from_proof(p, partition_proof(u, k), k, sealed.comm_r, u.tree_d_new.root,
                           int.from_bytes(u.comm_r_new, "little"))
    return p, k, w


@pytest.fixture(scope="module")
def pools():
    """Pools of 2 and 3 workers, forked once the SHA-256 programs are traced (as the task forks its own)."""
    update_layout(update_params("2KiB"))
    with SnapWitnessPool(2) as two, SnapWitnessPool(3) as three:
        yield {2: two, 3: three}


@pytest.mark.parametrize("name", ["2KiB", "split"])
def test_header_values_on_integers_equal_the_circuits(sealed, updates, name):
    """The runs start on header_values while the pool writes the header: the same values as the
    circuit's own (write_header), and other ones for another comm_r_new (other challenges)."""
    from dataclasses import replace

    from cuzk_plugin.bls12_381.fields import FR_LIMBS
    from cuzk_plugin.filecoin.snap.witness import header_values, same_header, write_header

    p, _k, w = _witness(sealed, updates, name)
    written, failures = write_header(p, w, np.zeros((update_layout(p).header_aux, FR_LIMBS), dtype=np.uint64))
    assert failures == [] and same_header(header_values(p, w), written)
    other = replace(w, comm_r_new=(w.comm_r_new or 0) + 1)
    assert not same_header(header_values(p, other), written)
    assert not np.array_equal(header_values(p, other).challenge_bits, written.challenge_bits)


@pytest.mark.parametrize("workers_", [2, 3])
@pytest.mark.parametrize("name", ["2KiB", "split"])
def test_pool_equals_one_process(sealed, updates, pools, name, workers_):
    p, k, w = _witness(sealed, updates, name)
    inputs, aux = update_assignment(p, w, partition=k)
    p_inputs, p_aux = pools[workers_].assignment(p, w, partition=k)
    assert np.array_equal(p_inputs, inputs)
    assert p_aux.shape == aux.shape and np.array_equal(p_aux, aux)


def test_pool_writes_into_the_callers_block(sealed, updates, pools):
    """The aux lies at the start of the block (the engine exports it without a copy)."""
    p, k, w = _witness(sealed, updates, "split")
    want_inputs, want_aux = update_assignment(p, w, partition=k)
    nbytes = update_layout(p).aux_nbytes
    block = SharedMemory(create=True, size=nbytes + 64)
    try:
        inputs, aux = pools[3].assignment(p, w, partition=k, into=block)
        view = np.ndarray((nbytes // 8,), np.uint64, buffer=block.buf)
        assert np.shares_memory(aux, view)
        assert np.array_equal(inputs, want_inputs) and np.array_equal(view.reshape(-1, 4), want_aux)
        del aux, view
    finally:
        block.close()
        block.unlink()


def _corrupt_r_old(ch):
    ch.path_r_old[0] = (ch.path_r_old[0][0] + 1, *ch.path_r_old[0][1:])


def _corrupt_r_new(ch):
    ch.path_r_new[1] = (*ch.path_r_new[1][:-1], ch.path_r_new[1][-1] + 1)


def _corrupt_d(ch):
    ch.path_d_new[0] += 1


def _corrupt_leaf(ch):
    ch.leaf_d_new += 1


def _named(exc: UpdateWitnessMismatch) -> tuple:
    return exc.partition, exc.challenge, exc.region, exc.constraint


@pytest.mark.parametrize("corrupt", [
    {8: _corrupt_r_new},  # in the last run of two and of three
    {6: _corrupt_leaf},  # the leaf fails TreeR new and the TreeD path: the first is named
    {9: _corrupt_r_old, 3: _corrupt_d},  # two runs fail (of 0-5, 5-10 and of 0-3, 3-7, 7-10): the earlier challenge
    {1: _corrupt_d, 0: _corrupt_r_new},  # two challenges of the first run
], ids=["sibling", "leaf", "two-runs", "first-run"])
def test_pool_names_the_first_failure_as_one_process_does(sealed, updates, pools, corrupt):
    p, k, w = _witness(sealed, updates, "split")
    for i, fn in corrupt.items():
        fn(w.challenges[i])
    with pytest.raises(UpdateWitnessMismatch) as one:
        update_assignment(p, w, partition=k)
    assert one.value.challenge == min(corrupt)
    for pool in pools.values():
        with pytest.raises(UpdateWitnessMismatch) as got:
            pool.assignment(p, w, partition=k)
        assert _named(got.value) == _named(one.value)


def test_pool_names_a_header_failure_as_one_process_does(sealed, updates, pools):
    p, k, w = _witness(sealed, updates, "2KiB")
    w.comm_d_new = (w.comm_d_new or 0) + 1
    w.challenges[7].path_r_new[0] = (w.challenges[7].path_r_new[0][0] + 1, *w.challenges[7].path_r_new[0][1:])
    with pytest.raises(UpdateWitnessMismatch) as one:
        update_assignment(p, w, partition=k)
    with pytest.raises(UpdateWitnessMismatch) as got:
        pools[2].assignment(p, w, partition=k)
    assert got.value.challenge is None and _named(got.value) == _named(one.value)


def _dies(path, p, header, challenges, first):
    """In a forked worker: the first run's process is killed (as the out-of-memory killer would)."""
    if first == 0:
        os._exit(9)
    return _real_run(path, p, header, challenges, first)


def test_a_dead_worker_fails_the_partition_and_the_next_pool_works(sealed, updates, monkeypatch):
    """Without the check the pool waits forever for the dead worker's run."""
    p, k, w = _witness(sealed, updates, "2KiB")
    monkeypatch.setattr(snap_pool, "_run", _dies)  # before the fork
    monkeypatch.setattr(forked_module, "_kept", {})  # not a pool an earlier test forked
    pool = shared_snap_pool(2)
    t = time.perf_counter()
    with pytest.raises(WitnessWorkerDied, match="died"):
        pool.assignment(p, w, partition=k)
    assert time.perf_counter() - t < 10 and pool.closed
    monkeypatch.setattr(snap_pool, "_run", _real_run)
    again = shared_snap_pool(2)  # a fresh pool, forked without the killer
    try:
        assert again is not pool
        inputs, aux = again.assignment(p, w, partition=k)
        want_inputs, want_aux = update_assignment(p, w, partition=k)
        assert np.array_equal(inputs, want_inputs) and np.array_equal(aux, want_aux)
    finally:
        again.close()


@pytest.mark.parametrize("min_aux,forked", [(snap_pool.MIN_AUX_PER_PROCESS, []), (1, [3])],
                         ids=["2KiB-in-one-process", "threshold-lowered"])
def test_task_takes_the_pool_for_a_partition_worth_splitting(sealed, updates, monkeypatch, min_aux, forked):
    """As a synthesis worker with ``witness_processes = 3`` runs a task: a 2 KiB partition stays
    in one process unless the threshold is lowered; either way the same witness in the block,
    and a corrupt proof named by its field."""
    _, u = updates["2KiB"]
    (blob,) = vanilla_proofs(u)
    comms = (sealed.comm_r, u.tree_d_new.root, int.from_bytes(u.comm_r_new, "little"))
    p, k, w = _witness(sealed, updates, "2KiB")
    want_inputs, want_aux = update_assignment(p, w, partition=k)
    monkeypatch.setattr(workers, "_task_processes", 3)
    monkeypatch.setattr(snap_pool, "MIN_AUX_PER_PROCESS", min_aux)
    monkeypatch.setattr(forked_module, "_kept", {})
    calls: list[int] = []

    def counted(n: int, **kw) -> SnapWitnessPool:
        calls.append(n)
        return shared_snap_pool(n, **kw)

    monkeypatch.setattr(snap_pool, "shared_snap_pool", counted)
    block = SharedMemory(create=True, size=update_layout(p).aux_nbytes)
    try:
        inputs, aux = SnapPartitionTask(0, blob, 0, *comms).assignment(into=block)
        assert np.array_equal(inputs, want_inputs) and np.array_equal(aux, want_aux)
        assert np.shares_memory(aux, np.ndarray((update_layout(p).num_aux * 4,), np.uint64, buffer=block.buf))
        del aux
        bad = bytearray(blob)
        bad[-40] ^= 1  # the last challenge's top TreeR new sibling: its path misses root_r_new
        with pytest.raises(SnapWitnessError, match=r"challenge_proofs\[9\]\.proof_r_new: .*TreeR new inclusion"):
            SnapPartitionTask(0, bytes(bad), 0, *comms).assignment()
        assert calls == forked * 2
    finally:
        block.close()
        block.unlink()
        for _, pool in forked_module._kept.values():
            pool.close()
