"""Recycled shared-memory blocks for partitions' large arrays (engine side).

A 32 GiB PoRep partition's assignment is a 4.17 GB block. Made fresh for every partition, it
costs its writers ~0.9 s of page faults (16 processes; 2.5 s in one), its release an unlink of
0.34 s on the event loop, and its upload runs from pageable memory through the staging
buffers (0.55 s); kept and pinned, its pages are written in 0.08 s and uploaded in 0.076 s
(``bench/synthesis/shm_costs.py`` on the H200 host). So the engine keeps each large block
mapped once, pins it with the GPU backend, and when a partition is done zeroes the block in a
background thread (0.45 s of one core, off every critical path) and offers it to the next
task of the same circuit: the worker writes into it instead of making a block (see
:func:`cuzk_plugin.engine.synthesis.output_block`).

Bounded: at most ``max_free`` zeroed blocks wait for a task; more are freed (a block of another
size than the one coming back first: the longest idle), and blocks idle for ``idle_s`` are
freed too, so an idle daemon gives the memory back, except those of the circuit kept ready
(:meth:`HostBlockPool.prepare`: its key was preloaded, or it was the last one proved). A block
made fresh for a partition costs the device 0.3-0.7 s of idle upload (the first 32 GiB PoRep
after a start at a 24 GiB limit, H200, 2026-12-06: 26.7 s against 22.5 s with every block
pinned), and a provider's proofs often come more than ``idle_s`` apart.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import shared_memory

import numpy as np

from cuzk_plugin.backends.protocol import HostPinning
from cuzk_plugin.engine.workers import shm_block_name

log = logging.getLogger(__name__)
#: Smaller blocks (public inputs, a small partition's arrays) are made and freed as before.
MIN_POOLED_BYTES = 64 << 20


@dataclass(eq=False)
class _Block:
    shm: shared_memory.SharedMemory
    address: int
    pinned: bool = False
    idle_since: float = field(default_factory=time.monotonic)


class HostBlockPool:
    """The engine's large shared-memory blocks: offered zeroed to tasks, recycled on release."""

    def __init__(self, max_free: int, pinner: HostPinning | None = None, idle_s: float = 120.0):
        self.max_free = max(0, max_free)
        self.idle_s = idle_s
        self._pinner = pinner
        self._pin_failed = False  # once: the rest are staged too, no warning a block
        self._lock = threading.Lock()
        self._owned: dict[str, _Block] = {}  # every block the pool maps: free, offered or in use
        self._free: dict[int, list[_Block]] = {}  # by size, zeroed
        self._sizes: dict[str, tuple[int, ...]] = {}  # circuit id -> large block sizes its partitions use
        self._kept: str | None = None  # the circuit whose free blocks the idle trim spares
        self._making: dict[int, int] = {}  # by size: blocks prepare() is making now
        #: the thread's work: a block name to recycle, a block not ours to free, None to trim
        self._work: queue.SimpleQueue[str | shared_memory.SharedMemory | None] = queue.SimpleQueue()
        self._pending = 0  # queued or being worked on
        self._idle = threading.Condition(self._lock)
        self._closed = False
        self._running = True  # the background thread takes work (until closed and empty)
        self._thread = threading.Thread(target=self._loop, name="cuzk-host-blocks", daemon=True)
        self._thread.start()

    # -- the engine's side ------------------------------------------------------------------
    def offer(self, circuit_id: str) -> tuple[tuple[str, int], ...]:
        """Zeroed blocks (name, size) for a task of ``circuit_id``: one of each size its last
        partition used, where one is free. The task uses what fits; :meth:`returned` takes back
        the rest."""
        out = []
        with self._lock:
            for size in self._sizes.get(circuit_id, ()):
                free = self._free.get(size)
                if free:
                    out.append((free.pop().shm.name, size))
        return tuple(out)

    def returned(self, offered: tuple[tuple[str, int], ...], used: tuple[str, ...], circuit_id: str | None) -> None:
        """After a task: the offered blocks it did not use go back (zeroed again: a failed task
        may have written into one); with ``circuit_id``, remember the large sizes it used."""
        for name, _ in offered:
            if name not in used:
                self._queue(name)
        if circuit_id is not None:
            with self._lock:
                sizes = tuple(b.shm.size for n in used if (b := self._owned.get(n)) is not None)
                if sizes:
                    self._sizes[circuit_id] = sizes
                    self._kept = circuit_id

    def prepare(self, circuit_id: str, sizes: tuple[int, ...]) -> int:
        """Make ``circuit_id``'s partitions' large blocks before its first partition (its key is
        being preloaded): zeroed, pinned blocks of ``sizes`` (the circuit's partitions' large
        arrays, from :meth:`KeySupply.partition_blocks`; the sizes its partitions use replace
        them) until the pool maps ``max_free`` of them, its first partitions' blocks included.
        The circuit's blocks are kept ready from then on (the idle trim spares them) until
        another circuit is prepared or proved, or :meth:`forget` is called. Free blocks of other
        sizes make room for them now (the longest idle first), not when idle: preloading three
        keys at a start would otherwise hold three windows' worth (65 GB for PoRep, SnapDeals and
        WindowPoSt 32 GiB) for two minutes. Runs in the caller's thread (seconds: a 4.2 GB block
        is 1-2.5 s of page faults, made four at a time, then pinning); returns the number of
        blocks made."""
        with self._lock:
            if self._closed:
                return 0
            sizes = self._sizes.setdefault(circuit_id, tuple(s for s in sizes if s >= MIN_POOLED_BYTES))
            self._kept = circuit_id
            share = self.max_free // len(sizes) if sizes else 0
            todo = []
            for size in sizes:  # those mapped and those another prepare() is making count too
                have = sum(1 for b in self._owned.values() if b.shm.size == size) + self._making.get(size, 0)
                todo += [size] * max(0, share - have)
            for size in todo:
                self._making[size] = self._making.get(size, 0) + 1
            others = []
            for _ in range(self._free_count() + len(todo) - self.max_free):
                if (block := self._displace(sizes)) is None:
                    break
                others.append(block)
        for block in others:
            self._drop(block)
        if others:
            log.info("host blocks: %d free block(s) of other circuits freed for %s (%.1f GB)", len(others),
                     circuit_id, sum(b.shm.size for b in others) / 1e9)
        if not todo:
            return 0
        t0 = time.perf_counter()
        try:
            with ThreadPoolExecutor(min(4, len(todo)), thread_name_prefix="cuzk-host-blocks-make") as threads:
                made = [b for b in threads.map(self._make, todo) if b is not None]
        finally:
            with self._lock:
                for size in todo:
                    self._making[size] -= 1
        with self._lock:
            closed = self._closed
            if not closed:
                for block in made:
                    self._owned[block.shm.name] = block
                    self._free.setdefault(block.shm.size, []).append(block)
        if closed:  # closed meanwhile: nothing may stay mapped
            for block in made:
                self._drop(block)
            return 0
        log.info("host blocks: %d block(s) of %s made ready for %s in %.1f s (%.1f GB, pinned: %s)", len(made),
                 "/".join(f"{s / 1e9:.2f} GB" for s in sizes), circuit_id, time.perf_counter() - t0,
                 sum(b.shm.size for b in made) / 1e9, "yes" if all(b.pinned for b in made) else "no")
        return len(made)

    def forget(self, circuit_id: str) -> None:
        """``circuit_id``'s key is gone: its free blocks are trimmed when idle, as others are."""
        with self._lock:
            if self._kept == circuit_id:
                self._kept = None

    def attach(self, name: str) -> shared_memory.SharedMemory:
        """The engine's mapping of block ``name``: the pool's own for a recycled block, else a new
        one (adopted by the pool when large: recycled on release)."""
        with self._lock:
            block = self._owned.get(name)
        if block is not None:
            return block.shm
        shm = shared_memory.SharedMemory(name=name)
        if shm.size >= MIN_POOLED_BYTES and not self._closed:
            with self._lock:
                self._owned[name] = _Block(shm, block_address(shm))
        return shm

    def pinned(self, blocks: list[shared_memory.SharedMemory]) -> bool:
        """Whether the large ones of ``blocks`` (a partition's) are all the pool's, page-locked
        (recycled at least once): False where none is large or one was made for its partition."""
        large = [shm.name for shm in blocks if shm.size >= MIN_POOLED_BYTES]
        with self._lock:
            return bool(large) and all((b := self._owned.get(n)) is not None and b.pinned for n in large)

    def owns(self, name: str) -> bool:
        with self._lock:
            return name in self._owned

    def release(self, shm: shared_memory.SharedMemory) -> None:
        """A partition is done with ``shm``: recycled if the pool owns it, else unmapped and
        unlinked; either way in the background thread (never on the event loop)."""
        with self._lock:
            owned = shm.name in self._owned
        self._queue(shm.name if owned else shm)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until the background work queued so far is done (tests, shutdown)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def kept_for(self) -> str | None:
        """The circuit whose blocks are kept ready through idle (:meth:`prepare`)."""
        with self._lock:
            return self._kept

    def stats(self) -> tuple[int, int, int]:
        """(blocks mapped, of them free, bytes mapped)."""
        with self._lock:
            return len(self._owned), self._free_count(), sum(b.shm.size for b in self._owned.values())

    def close(self, timeout: float = 30.0) -> None:
        """Free every free block now and every other one as it is released (waiting up to
        ``timeout`` for the background thread; what it has not freed by then goes with the
        process, as the resource tracker unlinks it)."""
        with self._lock:
            self._closed = True
        self._queue(None)
        self.flush(timeout)

    # -- background ---------------------------------------------------------------------------
    def _queue(self, work: str | shared_memory.SharedMemory | None) -> None:
        with self._lock:
            inline = not self._running  # closed and the thread gone: do it here
            if not inline:
                self._pending += 1
                self._work.put(work)
        if inline:
            self._do(work)

    def _loop(self) -> None:
        """Until closed with nothing left to free; then any later release is done inline."""
        while True:
            with self._lock:
                if self._closed and self._pending == 0 and not self._owned:
                    self._running = False
                    return
            try:
                work = self._work.get(timeout=1.0 if self._closed else max(1.0, self.idle_s / 4))
            except queue.Empty:
                self._trim()
                continue
            try:
                self._do(work)
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()

    def _do(self, work: str | shared_memory.SharedMemory | None) -> None:
        """A name to recycle, a block to free, or None to trim."""
        try:
            if isinstance(work, str):
                self._recycle(work)
            elif work is not None:
                free_block(work)
            else:
                self._trim()
        except Exception:  # never let one block stop the thread that frees the others
            log.exception("host blocks: %s failed", getattr(work, "name", work) or "trim")

    def _recycle(self, name: str) -> None:
        displaced = None
        with self._lock:
            block = self._owned.get(name)
            keep = block is not None and not self._closed and self.max_free > 0
            if block is not None and keep and self._free_count() >= self.max_free:
                displaced = self._displace((block.shm.size,))
                keep = displaced is not None
            if block is not None and not keep:
                del self._owned[name]
        if displaced is not None:
            self._drop(displaced)
        if block is None:
            return
        if not keep:
            self._drop(block)
            return
        self._pin(block)
        ctypes.memset(block.address, 0, block.shm.size)  # ctypes releases the GIL meanwhile
        block.idle_since = time.monotonic()
        with self._lock:
            self._free.setdefault(block.shm.size, []).append(block)

    def _make(self, size: int) -> _Block | None:
        """A new block of ``size``, its pages made (pinned, or written) so that nobody faults
        them in later; None where the host has no room for it (the partition makes its own)."""
        try:
            shm = shared_memory.SharedMemory(name=shm_block_name(os.getpid()), create=True, size=size)
        except OSError as exc:
            log.warning("host blocks: a %.1f GB block could not be made ahead (%s)", size / 1e9, exc)
            return None
        block = _Block(shm, block_address(shm))
        # Its pages made first, then pinned. Made by pinning, six 2.6 GB blocks took 15.7 s four
        # at a time (~1 GB/s, H100 host, 2026-12-06); page faults do run side by side across
        # threads (2 x 1 GiB: 1.8-3.5 s on one thread, 0.6-1.2 s on two, the 2-core VM), so
        # pinning is left only the locking of pages that exist.
        ctypes.memset(block.address, 0, size)
        self._pin(block)
        return block

    def _pin(self, block: _Block) -> None:
        if block.pinned or self._pinner is None or self._pin_failed:
            return
        try:
            self._pinner.pin_host(block.address, block.shm.size)
            block.pinned = True
        except Exception as exc:  # uploads from it go through the staging buffers then
            log.warning("host blocks: pinning %.1f GB failed (%s); uploads from these blocks are staged",
                        block.shm.size / 1e9, exc)
            self._pin_failed = True

    def _free_count(self) -> int:
        return sum(len(v) for v in self._free.values())

    def _displace(self, keep: tuple[int, ...]) -> _Block | None:
        """With the free list full: take out the longest-idle free block of a size not in
        ``keep`` (the lock held), so that the sizes in use now get the places, not those of a
        job that ended (after a PoRep job, its 4.2 GB blocks would otherwise hold them for
        idle_s while every 2.6 GB SnapDeals block was made afresh, unpinned). None where all
        free blocks have those sizes."""
        others = [b for sz, blocks in self._free.items() if sz not in keep for b in blocks]
        if not others:
            return None
        oldest = min(others, key=lambda b: b.idle_since)
        free = self._free[oldest.shm.size]
        free.remove(oldest)
        if not free:
            del self._free[oldest.shm.size]
        del self._owned[oldest.shm.name]
        return oldest

    def _trim(self) -> None:
        """Free the blocks idle longer than idle_s, but those of the circuit kept ready (all free
        ones once closed)."""
        now = time.monotonic()
        with self._lock:
            gone = []
            kept = set(self._sizes.get(self._kept, ())) if self._kept is not None else set()
            for size, blocks in list(self._free.items()):
                keep = [b for b in blocks if not self._closed and (size in kept or now - b.idle_since < self.idle_s)]
                gone += [b for b in blocks if b not in keep]
                if keep:
                    self._free[size] = keep
                else:
                    del self._free[size]
            for b in gone:
                del self._owned[b.shm.name]
        for b in gone:
            self._drop(b)
        if gone:
            log.info("host blocks: freed %d idle block(s) (%.1f GB)", len(gone), sum(b.shm.size for b in gone) / 1e9)

    def _drop(self, block: _Block) -> None:
        if block.pinned and self._pinner is not None:
            with contextlib.suppress(Exception):
                self._pinner.unpin_host(block.address)
        free_block(block.shm)


def block_address(shm: shared_memory.SharedMemory) -> int:
    """Where ``shm`` is mapped in this process."""
    return np.ndarray((shm.size,), np.uint8, buffer=shm.buf).__array_interface__["data"][0]


def free_block(shm: shared_memory.SharedMemory) -> None:
    """Unmap and unlink (a view still alive somewhere: the mapping goes when it is collected)."""
    with contextlib.suppress(BufferError):
        shm.close()
    with contextlib.suppress(FileNotFoundError):
        shm.unlink()
