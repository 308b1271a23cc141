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

A task may also write its largest array straight into a block of its own
(:func:`output_block`: a 32 GiB PoRep partition's 4.2 GB aux, written by the witness workers):
export then leaves that array where it is and copies only the rest, so the ref may name
several blocks. Such a block is one the engine recycles where it offered one of that size
(:mod:`cuzk_plugin.engine.host_blocks`: its pages exist and are pinned for the GPU).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import logging.handlers
import multiprocessing
import os
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, fields, replace
from functools import lru_cache, partial
from multiprocessing import resource_tracker, shared_memory
from pathlib import Path

import numpy as np

from cuzk_plugin.engine.circuits import PartitionTask
from cuzk_plugin.engine.host_blocks import HostBlockPool, block_address, free_block
from cuzk_plugin.engine.workers import processes_for_task, shm_block_name, stop_pool, task_processes, worker_init
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

    #: The blocks holding the arrays (the engine unlinks them all).
    blocks: tuple[str, ...]
    #: (field, index into blocks, byte offset, shape, dtype string) per array.
    layout: tuple[tuple[str, int, int, tuple[int, ...], str], ...]
    public_inputs: list[int]
    seconds: float
    pid: int
    #: For a WitnessPartition: its pre-compiled circuit's file and digest (None: a, b, c shared).
    pce_path: str | None = None
    pce_digest: str | None = None
    #: The processes its witness could be split across (the worker's own, or a job head's share).
    processes: int = 1


#: Worker side: the blocks the running task made or took with output_block, by name.
_task_blocks: dict[str, shared_memory.SharedMemory] = {}
#: Worker side: the engine's recycled zero blocks offered to the running task, by size, and
#: those it took (the engine's: never unlinked here).
_offered: dict[int, list[str]] = {}
_taken: set[str] = set()
_in_task = False
#: Blocks output_block made outside a task (tests, tools), kept mapped: see output_block.
_loose: list[shared_memory.SharedMemory] = []


def output_block(nbytes: int) -> shared_memory.SharedMemory:
    """A zero block of exactly ``nbytes`` for the running task's largest array (worker side): an
    array written at its start is exported in place. One the engine offered when it has that
    size (recycled: its pages exist, and are pinned for the GPU), else a new one. The block
    goes with the task's result, or back to the engine (a new one: unlinked) if the task fails."""
    if not _in_task:  # a test or tool calling a task's synthesize: nobody takes the block over,
        shm = shared_memory.SharedMemory(create=True, size=max(nbytes, 1))
        shm.unlink()  # so its name goes now; the mapping stays for the arrays on it (closing
        _loose.append(shm)  # the SharedMemory would unmap it under them) until the process ends
        return shm
    return _task_block(nbytes)


def _task_block(nbytes: int) -> shared_memory.SharedMemory:
    size = max(nbytes, 1)
    if _offered.get(size):
        name = _offered[size].pop()
        shm = shared_memory.SharedMemory(name=name)
        _taken.add(name)
    else:
        shm = shared_memory.SharedMemory(name=shm_block_name(), create=True, size=size)
    _task_blocks[shm.name] = shm
    return shm


def _in_block(arr: np.ndarray) -> tuple[str, int] | None:
    """(block name, byte offset) when ``arr`` is a contiguous view into one of the task's blocks."""
    if not arr.flags.c_contiguous:
        return None
    addr = arr.__array_interface__["data"][0]
    for name, shm in _task_blocks.items():
        base = block_address(shm)
        if base <= addr and addr + arr.nbytes <= base + shm.size:
            return name, addr - base
    return None


def _close_task_blocks(unlink: bool) -> None:
    """Drop the worker's handles of the task's blocks (and the blocks it made, if nobody takes
    them; an offered block stays the engine's, registered for cleanup by the engine)."""
    for name, shm in _task_blocks.items():
        try:
            shm.close()
        except BufferError:  # a view still alive: collect it, or the mapping outlives the task
            import gc
            gc.collect()
            with contextlib.suppress(BufferError):
                shm.close()
        if name in _taken:
            continue
        if unlink:
            _unlink_quietly(shm)
        else:  # the engine owns it from here and unlinks it (Python 3.11 has no track=False)
            resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]
    _task_blocks.clear()
    _taken.clear()
    _offered.clear()


def export_partition(part: SynthesizedPartition | WitnessPartition, public_inputs: list[int],
                     seconds: float) -> SharedPartitionRef:
    """Copy ``part``'s arrays into a new shared-memory block, but for those already in one of the
    task's output blocks (worker side). The task's blocks are left open: :func:`run_task`
    closes them once ``part`` is gone."""
    witness = isinstance(part, WitnessPartition)
    names = _WITNESS_FIELDS if witness else _ARRAY_FIELDS
    blocks = list(_task_blocks)
    placed: dict[str, tuple[int, int]] = {}
    copied: list[tuple[str, np.ndarray]] = []
    for name in names:
        arr = getattr(part, name)
        where = _in_block(arr)
        if where is None:
            copied.append((name, np.ascontiguousarray(arr)))
        else:
            placed[name] = (blocks.index(where[0]), where[1])
    offset = 0
    for name, arr in copied:
        placed[name] = (len(blocks), offset)
        offset += -(-max(arr.nbytes, 1) // _ALIGN) * _ALIGN
    if copied:
        shm = _task_block(offset)
        blocks.append(shm.name)
        for name, arr in copied:
            np.ndarray(arr.shape, arr.dtype, buffer=shm.buf, offset=placed[name][1])[...] = arr
    layout = tuple((name, *placed[name], tuple(getattr(part, name).shape), getattr(part, name).dtype.str) for name in names)
    pce = (part.circuit.path, part.pce.digest) if isinstance(part, WitnessPartition) else (None, None)
    ref = SharedPartitionRef(tuple(blocks), layout, public_inputs, seconds, os.getpid(), *pce)
    if not _in_task:  # called directly (tests, tools): the caller has the blocks from here
        _close_task_blocks(unlink=False)
    return ref


@lru_cache(maxsize=8)
def _mapped_circuit(path: str, digest: str, mtime_ns: int) -> MappedCircuit:
    return MappedCircuit.open(path, expect_digest=digest)


def mapped_circuit(path: str, digest: str) -> MappedCircuit:
    """The engine's mapping of a pre-compiled circuit file (one per file version)."""
    return _mapped_circuit(path, digest, os.stat(path).st_mtime_ns)


class SharedPartition:
    """A partition mapped from shared memory (engine side), reference counted: the owner holds
    one reference, a backend call in flight another (``hold``); the last ``release`` unmaps and
    unlinks the block, so a cancelled job never pulls the memory from under a running call.
    With ``blocks`` (the engine's :class:`HostBlockPool`), its mappings are the pool's and the
    release hands each block back to it (recycled or freed in its thread)."""

    def __init__(self, ref: SharedPartitionRef, blocks: HostBlockPool | None = None):
        self._refs = 1
        self.ref = ref
        self._pool = blocks
        self._blocks: list[shared_memory.SharedMemory] = []  # unregistered by unlink
        self.partition: SynthesizedPartition | WitnessPartition
        try:
            for name in ref.blocks:
                self._blocks.append(blocks.attach(name) if blocks is not None else shared_memory.SharedMemory(name=name))
            views = {name: np.ndarray(shape, np.dtype(dt), buffer=self._blocks[b].buf, offset=off)
                     for name, b, off, shape, dt in ref.layout}
            if ref.pce_path is None or ref.pce_digest is None:
                self.partition = SynthesizedPartition(**views)
            else:
                self.partition = WitnessPartition(mapped_circuit(ref.pce_path, ref.pce_digest), **views)
        except BaseException:
            views = {}
            attached = {shm.name for shm in self._blocks}
            self._free()
            discard(replace(ref, blocks=tuple(n for n in ref.blocks if n not in attached)), blocks)
            raise
        self.nbytes = sum(shm.size for shm in self._blocks)
        #: Its large blocks were recycled, pinned ones (uploaded at the link's speed), not made
        #: for it (uploaded through the staging buffers: 3-5x slower at 32 GiB).
        self.pinned = blocks is not None and blocks.pinned(self._blocks)

    def hold(self) -> None:
        self._refs += 1

    def release(self) -> None:
        self._refs -= 1
        if self._refs > 0 or not self._blocks:
            return
        self.partition = None  # type: ignore[assignment]
        self._free()

    def _free(self) -> None:
        blocks, self._blocks = self._blocks, []
        if self._pool is not None:
            for shm in blocks:
                self._pool.release(shm)
            return
        for shm in blocks:
            free_block(shm)  # a view still alive somewhere (a backend thread): unmapped when collected


def discard(ref: SharedPartitionRef, blocks: HostBlockPool | None = None) -> None:
    """Unlink the blocks of a partition nobody will use (a cancelled job's late result); those
    of the engine's pool go back to it."""
    for name in ref.blocks:
        if blocks is not None and blocks.owns(name):
            blocks.release(blocks.attach(name))
            continue
        try:
            free_block(shared_memory.SharedMemory(name=name))
        except FileNotFoundError:
            continue


def _unlink_quietly(shm: shared_memory.SharedMemory) -> None:
    with contextlib.suppress(FileNotFoundError):
        shm.unlink()


def run_task(task: PartitionTask, offer: tuple[tuple[str, int], ...] = (),
             processes: int | None = None) -> SharedPartitionRef:
    """Worker entry point: synthesize and export to shared memory (``offer``: the engine's
    recycled zero blocks, (name, size), that :func:`output_block` takes where the size fits;
    ``processes``: what :func:`~cuzk_plugin.engine.workers.task_processes` says meanwhile, None:
    the worker's own)."""
    global _in_task
    t0 = time.perf_counter()
    ref = None
    for name, size in offer:
        _offered.setdefault(size, []).append(name)
    _in_task = True
    try:
        with processes_for_task(processes):
            part, public_inputs = task.synthesize()
            share = task_processes()
        ref = replace(export_partition(part, public_inputs, time.perf_counter() - t0), processes=share)
        del part
    except CuzkError:
        raise
    except Exception as exc:  # keep the type and message, but as our error (picklable, clear)
        raise SynthesisFailed(f"{type(exc).__name__}: {exc}") from None
    finally:
        _in_task = False
        _close_task_blocks(unlink=ref is None)
    return ref


class SynthesisPool:
    """A process pool that only ever holds as many tasks as it has workers: the engine keeps
    the priority order, so a CRITICAL partition is next, never behind a FIFO backlog."""

    def __init__(self, workers: int, task_processes: int = 1, warmers: tuple = (), param_cache: Path | None = None):
        """``task_processes``: how many processes a task may fork for one partition
        (:func:`~cuzk_plugin.engine.workers.task_processes` in the worker); ``warmers``: run in
        each worker as it starts (:meth:`ProviderRegistry.worker_warmers`), where
        :func:`~cuzk_plugin.engine.workers.worker_param_cache` is ``param_cache``."""
        self.workers = max(1, workers)
        self.task_processes = max(1, task_processes)
        self.warmers = tuple(warmers)
        self.param_cache = str(param_cache) if param_cache is not None else None
        self._ctx = multiprocessing.get_context("spawn")  # never fork a process that runs gRPC threads
        # The workers' log records (a truncated pre-compiled circuit being recorded again, a
        # warm-up failure) come back to this process's loggers: a spawned worker has no logging
        # set up, and would print bare lines on stderr, dropping everything below WARNING.
        self._log_records = self._ctx.Queue()
        self._log_listener = logging.handlers.QueueListener(self._log_records, _ToOwnLoggers())
        self._log_listener.start()
        self._executor = self._new_executor()

    def _new_executor(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self.workers, mp_context=self._ctx, initializer=worker_init,
                                   initargs=(os.getpid(), self.task_processes, self.warmers, self.param_cache,
                                             self._log_records, logging.getLogger().getEffectiveLevel()))

    def warm_up(self) -> None:
        """Start every worker now (imports take a second), not on the first job."""
        futures = [self._executor.submit(os.getpid) for _ in range(self.workers)]
        for f in futures:
            f.result()

    async def run(self, task: PartitionTask, blocks: HostBlockPool | None = None,
                  circuit_id: str | None = None, processes: int | None = None) -> SharedPartition:
        """Synthesize ``task`` in a worker; cancelling the await discards the late result. With
        ``blocks``, the task is offered the pool's recycled blocks of ``circuit_id``'s sizes;
        ``processes``: the processes it may split its witness across (None: ``task_processes``)."""
        offer = blocks.offer(circuit_id) if blocks is not None and circuit_id is not None else ()
        try:
            cfut = self.submit_raw(partial(run_task, task, offer, processes))
        except BaseException:
            if blocks is not None:
                blocks.returned(offer, (), None)
            raise
        try:
            ref = await asyncio.wrap_future(cfut)
        except asyncio.CancelledError:
            cfut.add_done_callback(partial(_discard_result, blocks=blocks, offer=offer))
            raise
        except BaseException as exc:
            if blocks is not None:
                blocks.returned(offer, (), None)
            if isinstance(exc, BrokenProcessPool):
                log.error("a synthesis worker died (%s); starting a new pool", exc)
                self._executor = self._new_executor()
                raise SynthesisFailed(f"synthesis worker process died: {exc}") from None
            raise
        shared = SharedPartition(ref, blocks)
        if blocks is not None:
            blocks.returned(offer, ref.blocks, circuit_id)
        return shared

    def submit_raw(self, fn) -> Future:
        """Run a picklable callable in a worker (a task, a key generation: the caller holds a
        slot), on a new pool if the last one broke."""
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
        self._log_listener.stop()  # the records the workers sent are handled first
        self._log_records.close()


class _ToOwnLoggers(logging.Handler):
    """Hands a worker's log record to the logger of the same name here (its level, handlers
    and format apply as to the daemon's own records)."""

    def emit(self, record: logging.LogRecord) -> None:
        logger = logging.getLogger(record.name)
        if logger.isEnabledFor(record.levelno):
            logger.handle(record)


def _discard_result(cfut: Future, blocks: HostBlockPool | None = None, offer: tuple = ()) -> None:
    used: tuple[str, ...] = ()
    if not cfut.cancelled() and cfut.exception() is None:
        ref = cfut.result()
        used = ref.blocks
        discard(ref, blocks)
    if blocks is not None:
        blocks.returned(offer, used, None)
