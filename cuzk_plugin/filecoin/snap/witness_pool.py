"""One SnapDeals (EmptySectorUpdate) partition's witness computed by several processes at once.

A 32 GiB update partition is a header (the apex tree, the digests that derive the challenges:
7% of its 81 M aux) and 86 challenges whose rows do not depend on one another.
:class:`SnapWitnessPool` derives the few header values the challenges take on integers
(:func:`~cuzk_plugin.filecoin.snap.witness.header_values`), splits the challenges into runs
(:func:`plan_runs`) and writes the header's rows itself while the workers run, each worker
writing its run straight into one shared aux array: the caller's shared-memory block (``into``:
the engine's, 2.6 GB at 32 GiB, written once) or a memfd mapped once the workers are done. A
worker gets only its run's challenges and the header's few values; only the equalities found
violated come back, and the parent names the first as the one-process path does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from multiprocessing.shared_memory import SharedMemory

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS
from cuzk_plugin.filecoin.snap.circuit import UpdateChallengeWitness, UpdatePartitionWitness
from cuzk_plugin.filecoin.snap.params import UpdateParams
from cuzk_plugin.filecoin.snap.witness import (
    Failure,
    UpdateHeader,
    challenge_rows,
    first_mismatch,
    header_values,
    same_header,
    update_layout,
    write_challenges,
    write_header,
)
from cuzk_plugin.filecoin.witness.forked import ForkedWorkers, aux_in_block, kept_pool, mapped_aux, plan_runs

__all__ = ["SnapWitnessPool", "shared_snap_pool", "MIN_AUX_PER_PROCESS"]

#: Fewer challenge aux than this a process are not worth a run of their own: a 2 KiB partition
#: (1.4 M, 0.1 s) stays in one process, 8 MiB (4.1 M) takes two, 32 GiB (75 M) as many as it is given.
MIN_AUX_PER_PROCESS = 2_000_000


def _run(path: str, p: UpdateParams, header: UpdateHeader, challenges: list[UpdateChallengeWitness],
         first: int) -> tuple[list[Failure], float]:
    """In a worker: map the partition's aux file, write challenges ``first`` on into it."""
    t = time.perf_counter()
    lay = update_layout(p)
    with mapped_aux(path, (lay.num_aux, FR_LIMBS)) as aux:
        failures = write_challenges(p, header, challenges, first, challenge_rows(lay, aux)[first:first + len(challenges)])
    return failures, time.perf_counter() - t


class SnapWitnessPool(ForkedWorkers):
    """``workers`` forked processes that compute one update partition (any sector size) at a
    time together, equal to the one-process
    :func:`~cuzk_plugin.filecoin.snap.witness.update_assignment` bit for bit. Create it before
    the process starts threads (fork); close it (or use ``with``) to end the workers."""

    def assignment(self, p: UpdateParams, w: UpdatePartitionWitness, *, partition: int | None = None,
                   into: SharedMemory | None = None, timings: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(inputs (5, 4), aux (num_aux, 4)) as ``update_assignment(p, w, partition=partition,
        into=into)`` gives them, and its :class:`UpdateWitnessMismatch` for a violated equality;
        without ``into`` the aux lies on a memfd that lives as long as the array."""
        if self.closed:
            raise ValueError("the SnapDeals witness pool is closed")
        lay = update_layout(p)
        shape = (lay.num_aux, FR_LIMBS)
        t0 = time.perf_counter()
        header = header_values(p, w)  # what the runs need, on integers: they start at once
        # the header straight into the block where there is one (a copy of its 190 MB at 32 GiB
        # into fresh pages cost 0.6 s on the 2-core VM, a quarter of the runs' time)
        head = (aux_in_block(into, shape)[:lay.header_aux] if into is not None
                else np.zeros((lay.header_aux, FR_LIMBS), dtype=np.uint64))
        written: list = []
        t_header = [0.0]

        def meanwhile() -> None:  # the header's rows, while the workers write theirs; nothing raised
            t = time.perf_counter()  # here while they may still write (held until they end)
            try:
                written.append(write_header(p, w, head))
            except Exception as exc:
                written.append(exc)
            t_header[0] = time.perf_counter() - t

        pieces = [(_run, (p, header, w.challenges[a:b], a)) for a, b in plan_runs(p.challenges, self.workers)]
        results, aux = self.write(shape, into, pieces, meanwhile)
        if isinstance(written[0], Exception):
            raise written[0]
        checked, failures = written[0]
        if not same_header(checked, header):
            raise AssertionError("the header's values differ between the circuit and the vanilla derivation")
        if into is None:
            aux[:lay.header_aux] = head
        t1 = time.perf_counter()
        if timings is not None:
            timings["header (beside the runs)"] = t_header[0]
            timings["runs (workers)"] = t1 - t0
            timings["slowest run"] = max(seconds for _, seconds in results)
        failures += [f for got, _ in results for f in got]
        if failures:  # the first in the partition's order: a header failure before any run's
            raise first_mismatch(partition, failures)
        return header.inputs, aux


def shared_snap_pool(workers: int, *, on_fork: Callable[[int], None] | None = None) -> SnapWitnessPool:
    """This process's pool of ``workers`` (another count replaces it), forked on first use and
    kept for the partitions that follow (:func:`kept_pool`)."""
    return kept_pool(SnapWitnessPool, workers, lambda: SnapWitnessPool(workers, on_fork=on_fork))
