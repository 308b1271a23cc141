"""The PoSt witness split over forked processes (filecoin/post/witness_pool.py) and the plan's
array decoding (adapters/curio/post/job.py): the pooled witness equals the one-process one bit
for bit (and the reference synthesis), in a shared-memory block or not, for any slot order;
a corrupted slot is named as one process names it; the arrays the plan decodes equal what the
object decoder gives."""

from __future__ import annotations

import dataclasses
import os
import pickle
import time
from multiprocessing.shared_memory import SharedMemory
from pathlib import Path

import numpy as np
import pytest

from cuzk_plugin.adapters.curio.post.job import PostJob, PostPartition, PostWitnessError
from cuzk_plugin.adapters.curio.post.provider import PostPartitionTask
from cuzk_plugin.filecoin.fixtures.post_seal import (
    ProvenSector,
    post_test_sector,
    post_test_sectors,
    post_vanilla_proofs,
    random_randomness,
)
from cuzk_plugin.filecoin.post import witness_pool as post_pool
from cuzk_plugin.filecoin.post.circuit import SlotWitness, post_public_inputs
from cuzk_plugin.filecoin.post.params import PostKind, post_proof_by_number
from cuzk_plugin.filecoin.post.witness import post_assignment
from cuzk_plugin.filecoin.post.witness_pool import PostWitnessPool
from cuzk_plugin.filecoin.post.witness_pool import _run as _real_run
from cuzk_plugin.filecoin.post.witness_slots import PostWitnessMismatch, SlotArrays, post_layout
from cuzk_plugin.filecoin.witness.forked import plan_runs
from tests.filecoin.post.post_data import sealed_post_sectors

GIB32, GIB64 = 32 << 30, 64 << 30


@pytest.fixture(scope="module")
def pool3():
    with PostWitnessPool(3) as pool:
        yield pool


@pytest.fixture(scope="module")
def winning_2k() -> PostJob:
    """A 2 KiB WinningPoSt: 66 slots of one challenge each, so three runs of 22."""
    rand = random_randomness(31)
    return PostJob.from_fields(0, rand, post_vanilla_proofs(post_proof_by_number(0), post_test_sectors(2 << 10, [9], seed=5), rand))


def _both(part: PostPartition, pool: PostWitnessPool) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    return part.assignment(), part.assignment(pool=pool)


@pytest.mark.parametrize("slots,workers", [(2349, 4), (2349, 1), (66, 3), (2, 3), (1, 16)])
def test_runs_cover_every_slot_once(slots, workers):
    runs = plan_runs(slots, workers)
    assert len(runs) == min(slots, workers)
    assert [a for a, _ in runs] == [0] + [b for _, b in runs[:-1]] and runs[-1][1] == slots
    sizes = [b - a for a, b in runs]
    assert max(sizes) - min(sizes) <= 1


def test_pool_equals_one_process_winning(winning_2k, pool3):
    (inputs, aux), (p_inputs, p_aux) = _both(winning_2k.partition, pool3)
    assert aux.shape == (66 * post_layout(winning_2k.shape).slot_aux, 4) and aux.any()
    assert (p_inputs == inputs).all() and (p_aux == aux).all()


def test_pool_writes_into_the_callers_block(winning_2k, pool3):
    """The aux lies at the start of the block (the engine exports it without a copy)."""
    part = winning_2k.partition
    want_inputs, want_aux = part.assignment()
    lay = post_layout(part.shape)
    for pool in (None, pool3):
        block = SharedMemory(create=True, size=lay.aux_nbytes)
        try:
            inputs, aux = part.assignment(into=block, pool=pool)
            view = np.ndarray((lay.aux_nbytes // 8,), np.uint64, buffer=block.buf)
            assert np.shares_memory(aux, view) and aux.ctypes.data == view.ctypes.data
            assert (aux == want_aux).all() and (inputs == want_inputs).all()
            del aux, view
        finally:
            block.close()
            block.unlink()
    small = SharedMemory(create=True, size=lay.aux_nbytes - 32)
    try:
        with pytest.raises(ValueError, match="the output block holds"):
            part.assignment(into=small, pool=pool3)
    finally:
        small.close()
        small.unlink()


def test_padded_window_pool_equals_the_reference(pool3):
    """One real 2 KiB sector padded to the partition's 2 slots: each run computes the row it
    needs; the result is the constraint-by-constraint synthesis's."""
    rand = random_randomness(32)
    job = PostJob.from_fields(10, rand, post_vanilla_proofs(post_proof_by_number(10), list(sealed_post_sectors()[:1]), rand))
    assert job.partition.slots_values.order.tolist() == [0, 0]
    _, ref_inputs, ref_aux = job.circuit()
    inputs, aux = job.partition.assignment(pool=pool3)
    assert (inputs == ref_inputs).all() and (aux == ref_aux).all()


def test_any_slot_order_is_each_rows_witness(winning_2k, pool3):
    """Slots naming rows in any order (repeats apart, not in first-seen order): slot s's aux is
    the aux its row has in the plain partition, in one process, in the pool and from SlotWitness
    objects."""
    part = winning_2k.partition
    v = part.slots_values
    lay = post_layout(part.shape)
    _, plain = part.assignment()
    plain3 = plain.reshape(66, lay.slot_aux, 4)
    order = np.random.default_rng(3).integers(0, 66, size=66).astype(np.int64)
    order[:4] = [5, 1, 5, 0]  # 5's first run computation lands before a repeat and a new row
    mixed = dataclasses.replace(v, order=order)
    got = [post_assignment(part.shape, mixed), post_assignment(part.shape, mixed, pool=pool3),
           post_assignment(part.shape, mixed.witnesses(part.shape))]
    for inputs, aux in got:
        assert (aux.reshape(66, lay.slot_aux, 4) == plain3[order]).all()
        assert (inputs == got[0][0]).all()


def _corrupt(part: PostPartition, **rows) -> PostPartition:
    """``part`` with one limb bit flipped in these rows: comm_r=[...] and/or siblings=[...]."""
    v = part.slots_values
    arrays = {}
    for name, where in rows.items():
        a = getattr(v, name).copy()
        for r in where:
            a.reshape(a.shape[0], -1)[r, 0] ^= 1
        arrays[name] = a
    return PostPartition(part.proof, dataclasses.replace(v, **arrays), part.challenges)


@pytest.mark.parametrize("rows,named", [
    ({"siblings": [50, 30]}, r"^vanilla_proofs\[0\]\.vanilla_proof\.sectors\[0\]\.inclusion_proofs\[30\]: violates constraint "),
    ({"siblings": [10], "comm_r": [60, 64]}, r"^vanilla_proofs\[0\]\.comm_r: violates constraint .* \(slot 60 comm_r"),
])
def test_pool_names_the_first_failure_as_one_process_does(winning_2k, pool3, rows, named):
    """Failures in several runs: comm_r before the paths, then the lowest slot."""
    bad = _corrupt(winning_2k.partition, **rows)
    messages = []
    for pool in (None, pool3):
        with pytest.raises(PostWitnessError, match=named) as err:
            bad.assignment(pool=pool)
        messages.append(str(err.value))
    assert messages[0] == messages[1]


def test_repeated_row_failure_names_its_first_slot(winning_2k, pool3):
    """A wrong row that several slots name, in several runs, is named at its first slot."""
    part = _corrupt(winning_2k.partition, siblings=[7])
    v = dataclasses.replace(part.slots_values, order=np.array([0, 1, 2] + [7] * 63, dtype=np.int64))
    for pool in (None, pool3):
        with pytest.raises(PostWitnessMismatch) as err:
            post_assignment(part.shape, v, pool=pool)
        assert (err.value.slot, err.value.challenge) == (3, 0)


def _object_slots(job: PostJob) -> list[SlotWitness]:
    """The slots as the plan built them from decoded objects before it decoded into arrays."""
    shape, sectors, slots = job.shape, job.sectors, []
    built: dict[tuple[int, int], SlotWitness] = {}
    for k in range(shape.sector_slots):
        i, first = (0, k) if job.proof.kind is PostKind.WINNING else (min(k, len(sectors) - 1), 0)
        if (i, first) not in built:
            sp = sectors[i].sectors[0]
            inc = sp.inclusion_proofs[first:first + shape.challenges_per_slot]
            built[i, first] = SlotWitness(sectors[i].comm_r, sp.comm_c, sp.comm_r_last, tuple(m.leaf for m in inc),
                                          tuple(tuple(m.path_levels()) for m in inc))
        slots.append(built[i, first])
    return slots


@pytest.mark.parametrize("number,size", [(10, 2 << 10), (0, 2 << 10), (13, GIB32), (3, GIB32), (14, GIB64)])
def test_plan_arrays_equal_the_object_decoder(number, size):
    """Single, Sub and Top proofs, Window and Winning: the arrays the plan decodes are those of
    the objects decode_sector_proof builds, and the public inputs the verifier's."""
    proof = post_proof_by_number(number)
    rand = random_randomness(number)
    if size == 2 << 10:
        sectors = list(sealed_post_sectors()[:1 if proof.kind is PostKind.WINNING else 2])
    else:
        sectors = [ProvenSector(40 + number, post_test_sector(size, seed=number))]
    job = PostJob.from_fields(number, rand, post_vanilla_proofs(proof, sectors, rand))
    got, want = job.partition.slots_values, SlotArrays.from_witnesses(job.shape, _object_slots(job))
    for f in dataclasses.fields(SlotArrays):
        assert (getattr(got, f.name) == getattr(want, f.name)).all(), f.name
    comm_rs = [job.sectors[i].comm_r for i, _ in map(job.partition.origin, range(job.shape.sector_slots))]
    assert list(job.public_inputs) == post_public_inputs(comm_rs, job.partition.challenges.tolist())


def test_task_carries_arrays_not_the_request(winning_2k):
    """The task a worker receives is the decoded partition; it round-trips through pickle."""
    task = PostPartitionTask(winning_2k.partition, None)
    back = pickle.loads(pickle.dumps(task))
    assert not hasattr(back, "vanilla_proofs") and back.partition.public_inputs == winning_2k.public_inputs
    (inputs, aux), (want_inputs, want_aux) = back.partition.assignment(), winning_2k.partition.assignment()
    assert (inputs == want_inputs).all() and (aux == want_aux).all()


def _failing_first_run(path, shape, arrays, first):
    """A run that raises at once for slot 0; the others take a while, then leave a mark."""
    if first == 0:
        raise ValueError("run 0 broke")
    time.sleep(0.5)
    got = _real_run(path, shape, arrays, first)
    (Path(os.environ["POST_POOL_MARKS"]) / str(first)).touch()
    return got


def test_a_failing_run_is_raised_after_every_run_ended(winning_2k, tmp_path, monkeypatch):
    """No run may still write into the block once the error reaches the engine (which then
    unlinks it, or zeroes and offers it to the next task)."""
    monkeypatch.setenv("POST_POOL_MARKS", str(tmp_path))
    monkeypatch.setattr(post_pool, "_run", _failing_first_run)
    with PostWitnessPool(3) as pool, pytest.raises(ValueError, match="run 0 broke"):
        winning_2k.partition.assignment(pool=pool)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["22", "44"]


def test_closed_pool_and_bad_counts_are_refused(winning_2k):
    with pytest.raises(ValueError, match="workers must be >= 1"):
        PostWitnessPool(0)
    with pytest.raises(ValueError, match="workers must be >= 1"):
        plan_runs(10, 0)
    pool = PostWitnessPool(2)
    pool.close()
    with pytest.raises(ValueError, match="closed"):
        winning_2k.partition.assignment(pool=pool)


@pytest.mark.parametrize("processes", [1, 3])
def test_task_writes_the_witness_where_the_engine_maps_it(tmp_path, monkeypatch, processes):
    """As a synthesis worker runs a WindowPoSt task: the witness (one process, or the forked
    pool) written straight into the block the engine maps, only the small inputs copied into a
    second one; equal to the reference synthesis; both blocks gone on release."""
    from cuzk_plugin.engine import workers
    from cuzk_plugin.engine.synthesis import SharedPartition, run_task
    from cuzk_plugin.filecoin.post import witness_pool as post_pool
    from cuzk_plugin.formats.partition import WitnessPartition

    monkeypatch.setattr(workers, "_task_processes", processes)
    monkeypatch.setattr(post_pool, "MIN_PATHS_PER_PROCESS", 1)  # a 2 KiB partition's 20 paths split too
    forked: list[int] = []
    shared_pool = post_pool.shared_post_pool
    monkeypatch.setattr(post_pool, "shared_post_pool", lambda n, **kw: forked.append(n) or shared_pool(n, **kw))
    rand = random_randomness(33)
    job = PostJob.from_fields(10, rand, post_vanilla_proofs(post_proof_by_number(10), list(sealed_post_sectors()), rand))
    ref = run_task(PostPartitionTask(job.partition, str(tmp_path)))
    assert [(name, block, offset) for name, block, offset, *_ in ref.layout] == [
        ("input_assignment", 1, 0), ("aux_assignment", 0, 0)]
    shared = SharedPartition(ref)
    part = shared.partition
    assert isinstance(part, WitnessPartition) and ref.public_inputs == list(job.public_inputs)
    assert forked == ([processes] if processes > 1 else [])
    _, want_inputs, want_aux = job.circuit()
    assert (part.input_assignment == want_inputs).all() and (part.aux_assignment == want_aux).all()
    del part
    shared.release()
    for name in ref.blocks:
        with pytest.raises(FileNotFoundError):
            SharedMemory(name=name)
