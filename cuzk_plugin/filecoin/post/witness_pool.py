"""One PoSt partition's witness computed by several processes at once.

A 32 GiB WindowPoSt partition is 2349 slots of 10 inclusion paths whose rows do not depend on
one another: :class:`PostWitnessPool` forks N workers once and splits each partition into
runs of slots (:func:`plan_runs`), each worker writing its run straight into one shared aux
array: the caller's shared-memory block (``into``: the daemon's synthesis worker hands the
engine that very block, so the 4.06 GB are written once, their pages faulted by N processes)
or a memfd the parent creates, mapped once the workers are done. Only a run's own rows of
:class:`~cuzk_plugin.filecoin.post.witness_slots.SlotArrays` go to its worker, and only the rows
found wrong come back; the parent names the first failure as the one-process path does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from multiprocessing.shared_memory import SharedMemory

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS
from cuzk_plugin.filecoin.post.params import PostShape
from cuzk_plugin.filecoin.post.witness_slots import PostLayout, RunFailures, SlotArrays, post_layout, write_run
from cuzk_plugin.filecoin.witness.forked import ForkedWorkers, kept_pool, mapped_aux, plan_runs

__all__ = ["PostWitnessPool", "shared_post_pool", "MIN_PATHS_PER_PROCESS"]

#: Fewer inclusion paths than this a process are not worth a run of their own (a WinningPoSt's
#: 66 stay in one process: the pipe round trip would cost more than they take).
MIN_PATHS_PER_PROCESS = 512


def _run(path: str, shape: PostShape, arrays: SlotArrays, first: int) -> tuple[RunFailures, float]:
    """In a worker: map the partition's aux file, write slots ``first`` on of ``arrays`` into it."""
    t = time.perf_counter()
    lay = post_layout(shape)
    with mapped_aux(path, (shape.sector_slots, lay.slot_aux, FR_LIMBS)) as aux3:
        got = write_run(lay, arrays, aux3, first)
    return got, time.perf_counter() - t


class PostWitnessPool(ForkedWorkers):
    """``workers`` forked processes that compute one PoSt partition (any shape) at a time
    together, equal to the one-process :func:`~cuzk_plugin.filecoin.post.witness_slots.post_assignment`
    bit for bit. Create it before the process starts threads (fork); close it (or use
    ``with``) to end the workers."""

    def write_slots(self, lay: PostLayout, arrays: SlotArrays, into: SharedMemory | None,
                    timings: dict | None = None) -> tuple[np.ndarray, list[RunFailures]]:
        """(the partition's (slots, slot_aux, 4) aux, each run's failures). The aux lies at the
        start of ``into`` (a new, zero block of at least its size), or else of a memfd that
        lives as long as the array."""
        if self.closed:
            raise ValueError("the PoSt witness pool is closed")
        shape = lay.shape
        t0 = time.perf_counter()
        pieces = []
        for a, b in plan_runs(shape.sector_slots, self.workers):
            rows, local = np.unique(arrays.order[a:b], return_inverse=True)
            pieces.append((_run, (shape, arrays.select(rows, local.astype(np.int64).reshape(-1)), a)))
        t1 = time.perf_counter()
        results, aux3 = self.write((shape.sector_slots, lay.slot_aux, FR_LIMBS), into, pieces)
        t2 = time.perf_counter()
        if timings is not None:
            timings["dispatch"] = t1 - t0
            timings["runs (workers)"] = t2 - t1
            timings["slowest run"] = max((seconds for _, seconds in results), default=0.0)
        return aux3, [got for got, _ in results]


def shared_post_pool(workers: int, *, on_fork: Callable[[int], None] | None = None) -> PostWitnessPool:
    """This process's pool of ``workers`` (another count replaces it), forked on first use and
    kept for the partitions that follow (:func:`kept_pool`)."""
    return kept_pool(PostWitnessPool, workers, lambda: PostWitnessPool(workers, on_fork=on_fork))
