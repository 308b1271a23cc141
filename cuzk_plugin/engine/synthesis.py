"""Synthesis in worker processes, with the partition handed back through shared memory.

A worker runs a :class:`PartitionTask`, copies the partition's arrays into one
``multiprocessing.shared_memory`` block and returns only a small :class:`SharedPartitionRef`
(block name, array layout, public inputs). The engine maps the block and builds the
:class:`SynthesizedPartition` on views of it: the large arrays are never pickled. The engine
unlinks the block when the partition's proof is done (or abandoned).

A task may return a :class:`WitnessPartition` instead (the assignment of a pre-compiled
circuit, for backends that evaluate a, b, c themselves): then only the assignment travels, and
the engine maps the circuit from its file (path and digest in the ref); the lane swaps in its
device-resident copy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, fields
from functools import lru_cache
from multiprocessing import resource_tracker, shared_memory

import numpy as np

from cuzk_plugin.engine.circuits import PartitionTask
from cuzk_plugin.engine.workers import shm_block_name, stop_pool, worker_init
from cuzk_plugin.errors import CuzkError
from cuzk_plugin.formats.partition import SynthesizedPartition, WitnessPartition
from cuzk_plugin.formats.pce import MappedCircuit

log = logging.getLogger(__name__)
_ALIGN = 64
_ARRAY_FIELDS = tuple(f.name for f in fields(SynthesizedPartition))
_WITNESS_FIELDS = ("input_assignment", "aux_assignment")


class SynthesisFailed(CuzkError):
    """A task raised in its worker (bad witness, unsatisfied constraint) or the worker died."""


@dataclass(frozen=True)
class SharedPartitionRef:
    """Where a synthesized partition lies in shared memory (small: this is what is pickled)."""

    shm_name: str
    #: (field, byte offset, shape, dtype string) per SynthesizedPartition array.
    layout: tuple[tuple[str, int, tuple[int, ...], str], ...]
    public_inputs: list[int]
    seconds: float
    pid: int
    #: For a WitnessPartition: its pre-compiled circuit's file and digest (None: a, b, c shared).
    pce_path: str | None = None
    pce_digest: str | None = None


def export_partition(part: SynthesizedPartition | WitnessPartition, public_inputs: list[int],
                     seconds: float) -> SharedPartitionRef:
    """Copy ``part``'s arrays into a new shared-memory block (worker side)."""
    witness = isinstance(part, WitnessPartition)
    names = _WITNESS_FIELDS if witness else _ARRAY_FIELDS
    arrays = [(name, np.ascontiguousarray(getattr(part, name))) for name in names]
    layout, offset = [], 0
    for name, arr in arrays:
        layout.append((name, offset, tuple(arr.shape), arr.dtype.str))
        offset += -(-max(arr.nbytes, 1) // _ALIGN) * _ALIGN
    shm = shared_memory.SharedMemory(name=shm_block_name(), create=True, size=max(offset, 1))
    try:
        for (_name, arr), (_, off, _, _) in zip(arrays, layout, strict=True):
            np.ndarray(arr.shape, arr.dtype, buffer=shm.buf, offset=off)[...] = arr
    except BaseException:
        shm.close()
        shm.unlink()
        raise
    # The engine owns the block from here: it unlinks it (Python 3.11 has no track=False).
    resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]
    shm.close()
    pce = (part.circuit.path, part.pce.digest) if isinstance(part, WitnessPartition) else (None, None)
    return SharedPartitionRef(shm.name, tuple(layout), public_inputs, seconds, os.getpid(), *pce)


@lru_cache(maxsize=8)
def _mapped_circuit(path: str, digest: str, mtime_ns: int) -> MappedCircuit:
    return MappedCircuit.open(path, expect_digest=digest)


def mapped_circuit(path: str, digest: str) -> MappedCircuit:
    """The engine's mapping of a pre-compiled circuit file (one per file version)."""
    return _mapped_circuit(path, digest, os.stat(path).st_mtime_ns)


class SharedPartition:
    """A partition mapped from shared memory (engine side), reference counted: the owner holds
    one reference, a backend call in flight another (``hold``); the last ``release`` unmaps and
    unlinks the block, so a cancelled job never pulls the memory from under a running call."""

    def __init__(self, ref: SharedPartitionRef):
        self._refs = 1
        self.ref = ref
        self._shm: shared_memory.SharedMemory | None = shared_memory.SharedMemory(name=ref.shm_name)  # unregistered by unlink
        self.partition: SynthesizedPartition | WitnessPartition
        views = {name: np.ndarray(shape, np.dtype(dt), buffer=self._shm.buf, offset=off) for name, off, shape, dt in ref.layout}
        try:
            if ref.pce_path is None or ref.pce_digest is None:
                self.partition = SynthesizedPartition(**views)
            else:
                self.partition = WitnessPartition(mapped_circuit(ref.pce_path, ref.pce_digest), **views)
        except BaseException:
            views.clear()
            self._shm.close()
            _unlink_quietly(self._shm)
            raise
        self.nbytes = self._shm.size

    def hold(self) -> None:
        self._refs += 1

    def release(self) -> None:
        self._refs -= 1
        if self._refs > 0 or self._shm is None:
            return
        self.partition = None  # type: ignore[assignment]
        shm, self._shm = self._shm, None
        try:
            shm.close()
        except BufferError:  # a view still alive somewhere (a backend thread): unlink anyway
            log.debug("shared partition %s still referenced at release (unmapped when collected)", self.ref.shm_name)
        _unlink_quietly(shm)


def discard(ref: SharedPartitionRef) -> None:
    """Unlink a block whose partition nobody will use (a cancelled job's late result)."""
    try:
        shm = shared_memory.SharedMemory(name=ref.shm_name)
    except FileNotFoundError:
        return
    shm.close()
    _unlink_quietly(shm)


def _unlink_quietly(shm: shared_memory.SharedMemory) -> None:
    with contextlib.suppress(FileNotFoundError):
        shm.unlink()


def run_task(task: PartitionTask) -> SharedPartitionRef:
    """Worker entry point: synthesize and export to shared memory."""
    t0 = time.perf_counter()
    try:
        part, public_inputs = task.synthesize()
    except CuzkError:
        raise
    except Exception as exc:  # keep the type and message, but as our error (picklable, clear)
        raise SynthesisFailed(f"{type(exc).__name__}: {exc}") from None
    return export_partition(part, public_inputs, time.perf_counter() - t0)


class SynthesisPool:
    """A process pool that only ever holds as many tasks as it has workers: the engine keeps
    the priority order, so a CRITICAL partition is next, never behind a FIFO backlog."""

    def __init__(self, workers: int):
        self.workers = max(1, workers)
        self._executor = self._new_executor()

    def _new_executor(self) -> ProcessPoolExecutor:
        ctx = multiprocessing.get_context("spawn")  # never fork a process that runs gRPC threads
        return ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=worker_init, initargs=(os.getpid(),))

    def warm_up(self) -> None:
        """Start every worker now (imports take a second), not on the first job."""
        futures = [self._executor.submit(os.getpid) for _ in range(self.workers)]
        for f in futures:
            f.result()

    async def run(self, task: PartitionTask) -> SharedPartition:
        """Synthesize ``task`` in a worker; cancelling the await discards the late result."""
        try:
            cfut: Future = self._executor.submit(run_task, task)
        except BrokenProcessPool:
            self._executor = self._new_executor()
            cfut = self._executor.submit(run_task, task)
        try:
            ref = await asyncio.wrap_future(cfut)
        except asyncio.CancelledError:
            cfut.add_done_callback(_discard_result)
            raise
        except BrokenProcessPool as exc:
            log.error("a synthesis worker died (%s); starting a new pool", exc)
            self._executor = self._new_executor()
            raise SynthesisFailed(f"synthesis worker process died: {exc}") from None
        return SharedPartition(ref)

    def submit_raw(self, fn) -> Future:
        """Run a picklable callable in a worker (key generation); the caller holds a slot."""
        try:
            return self._executor.submit(fn)
        except BrokenProcessPool:
            self._executor = self._new_executor()
            return self._executor.submit(fn)

    def shutdown(self, timeout: float | None = None) -> None:
        """Stop the workers; with ``timeout``, kill those still synthesizing after that long."""
        if timeout is None:
            self._executor.shutdown(wait=True, cancel_futures=True)
        else:
            stop_pool(self._executor, timeout)


def _discard_result(cfut: Future) -> None:
    if not cfut.cancelled() and cfut.exception() is None:
        discard(cfut.result())
