"""Forked processes that write one partition's aux array together, in place.

The PoRep and PoSt witness pools split a partition into pieces that write disjoint rows of one
shared file: the caller's shared-memory block (``into``: the daemon's synthesis worker hands
the engine that very block, so the gigabytes are written once, their pages faulted by every
worker in parallel) or a memfd made here and mapped once the workers are done. Only small
values travel through the pool.

Two rules the engine depends on: nothing is raised while a piece may still write into the
block (the engine zeroes a failed task's block and offers it to the next task), and a worker
that dies (the kernel's out-of-memory killer) fails the partition within a second instead of
leaving it waiting forever for a result that never comes.
"""

from __future__ import annotations

import contextlib
import itertools
import mmap
import multiprocessing
import os
from collections.abc import Callable, Hashable, Iterator, Sequence
from multiprocessing.pool import AsyncResult, Pool
from multiprocessing.shared_memory import SharedMemory
from typing import TypeVar, cast

import numpy as np

from cuzk_plugin.errors import CircuitError

__all__ = ["ForkedWorkers", "WitnessWorkerDied", "aux_in_block", "kept_pool", "mapped_aux", "plan_runs"]

#: How often a wait looks at the workers' health.
_POLL_S = 0.2


class WitnessWorkerDied(CircuitError):
    """A witness worker process ended while computing a piece (killed, out of memory)."""


def aux_in_block(block: SharedMemory, shape: tuple[int, ...]) -> np.ndarray:
    """A partition's uint64 aux array of ``shape`` at the start of ``block`` (a zero block from
    the engine's output_block), which must hold it."""
    nbytes = int(np.prod(shape)) * 8
    if block.size < nbytes:
        raise ValueError(f"the output block holds {block.size} bytes, the aux needs {nbytes}")
    return np.ndarray(shape, np.uint64, buffer=block.buf)


@contextlib.contextmanager
def mapped_aux(path: str, shape: tuple[int, ...]) -> Iterator[np.ndarray]:
    """In a worker: the partition's aux file at ``path`` mapped read-write as a uint64 array of
    ``shape``, unmapped after (or, if a view outlives the block, when it is collected)."""
    fd = os.open(path, os.O_RDWR)
    try:
        mm = mmap.mmap(fd, int(np.prod(shape)) * 8)
    finally:
        os.close(fd)
    try:
        yield np.frombuffer(mm, dtype=np.uint64).reshape(shape)
    finally:
        with contextlib.suppress(BufferError):
            mm.close()


def plan_runs(slots: int, workers: int) -> list[tuple[int, int]]:
    """``workers`` runs (first slot, end) of about equal size covering ``slots`` slots."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    n = max(1, min(workers, slots))
    bounds = [round(k * slots / n) for k in range(n + 1)]
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


class ForkedWorkers:
    """``workers`` processes forked once (create before the process starts threads), running
    pieces that each map the partition's aux file by its path. Close it (or use ``with``)."""

    def __init__(self, workers: int, *, on_fork: Callable[[int], None] | None = None):
        """``on_fork(parent pid)`` runs first in each worker (the daemon's: die with the parent)."""
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self._pool: Pool | None = multiprocessing.get_context("fork").Pool(
            workers, initializer=on_fork, initargs=(os.getpid(),))
        self._pids = self._live_pids()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._pool is None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None

    def _live_pids(self) -> frozenset[int]:
        procs = self._pool._pool if self._pool is not None else []  # type: ignore[attr-defined]
        return frozenset(p.pid for p in procs if p.exitcode is None)

    def write(self, shape: tuple[int, ...], into: SharedMemory | None, pieces: Sequence[tuple[Callable, tuple]],
              started: Callable[[], None] | None = None) -> tuple[list, np.ndarray]:
        """Run ``fn(path, *args)`` for each piece on the workers (``path``: the aux file to map,
        a uint64 array of ``shape``) and return their results in order, and the aux: at the
        start of ``into`` (checked before a worker writes), or else on a memfd mapping that
        lives as long as the array (populated: the caller reads every page, one mapping rather
        than a million faults). ``started`` runs in this process while the workers compute. The
        first failure is raised once every piece has ended."""
        if self._pool is None:
            raise ValueError("the witness worker pool is closed")
        aux = aux_in_block(into, shape) if into is not None else None
        nbytes = int(np.prod(shape)) * 8
        fd = -1 if into is not None else os.memfd_create("cuzk-witness-aux", os.MFD_CLOEXEC)
        try:
            if into is not None:  # POSIX shared memory lies in /dev/shm on Linux
                path = f"/dev/shm/{into.name}"
            else:
                os.ftruncate(fd, nbytes)  # zero pages: what no piece writes stays 0
                path = f"/proc/{os.getpid()}/fd/{fd}"
            jobs = [self._pool.apply_async(fn, (path, *args)) for fn, args in pieces]
            if started is not None:
                started()
            results = self._wait(jobs)
            if aux is None:
                mapping = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE)
                aux = np.ndarray(shape, np.uint64, buffer=mapping)
        finally:
            if fd >= 0:
                os.close(fd)
        return results, aux

    def _wait(self, jobs: list[AsyncResult]) -> list:
        error: BaseException | None = None
        for job in jobs:
            while not job.ready():
                job.wait(_POLL_S)
                if not job.ready() and self._live_pids() != self._pids:
                    # the pool replaces a dead worker but never answers for its piece
                    self.close()
                    raise WitnessWorkerDied("a witness worker process died while computing its piece "
                                            "(killed, or out of memory?); the partition is not proved") from None
        for job in jobs:
            try:
                job.get()
            except BaseException as exc:
                error = error or exc
        if error is not None:
            raise error
        return [job.get() for job in jobs]


_W = TypeVar("_W", bound=ForkedWorkers)
#: This process's pools, one a class: (what it was made for, the pool).
_kept: dict[type, tuple[Hashable, ForkedWorkers]] = {}


def kept_pool(cls: type[_W], key: Hashable, make: Callable[[], _W]) -> _W:
    """This process's pool of ``cls`` made for ``key`` (its worker count, a shape), forked by
    ``make`` on first use and kept for the partitions that follow. Another key replaces it (the
    old workers end); a pool whose worker died (closed) is made again for the next partition."""
    held = _kept.get(cls)
    if held is not None and held[0] == key and not held[1].closed:
        return cast(_W, held[1])
    if held is not None:
        held[1].close()
    pool = make()
    _kept[cls] = (key, pool)
    return pool
