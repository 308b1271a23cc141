"""Priority-ordered admission: who gets the next synthesis slot and the next GPU worker.

Every waiter carries (priority, job sequence, partition): a higher priority always goes first,
then the older job, then the lower partition. A CRITICAL WinningPoSt partition therefore takes
the very next free slot however many PoRep partitions are waiting; it only waits for work that
already started. Cancelling a waiting coroutine removes it from the queue.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from dataclasses import dataclass, field


@dataclass(order=True)
class _Waiter:
    key: tuple
    future: asyncio.Future = field(compare=False)
    allowed: frozenset[str] | None = field(compare=False, default=None)
    circuit_id: str = field(compare=False, default="")


def order_key(priority: int, job_seq: int, partition: int) -> tuple:
    return (-int(priority), job_seq, partition)


class PrioritySemaphore:
    """A counting semaphore whose waiters are served by :func:`order_key`, not by arrival."""

    def __init__(self, value: int):
        self._value = value
        self._waiters: list[_Waiter] = []
        self._tie = itertools.count()

    @property
    def waiting(self) -> int:
        return sum(1 for w in self._waiters if not w.future.done())

    @property
    def free(self) -> bool:
        """A slot can be taken now without waiting."""
        return self._value > 0 and not self.waiting

    async def acquire(self, key: tuple, *, bypass: bool = False) -> None:
        """Take a slot; ``bypass`` takes one even when none is free."""
        if bypass or self.free:
            self._value -= 1
            return
        fut = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, _Waiter((*key, next(self._tie)), fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()  # granted while being cancelled: hand the slot on
            raise

    def release(self) -> None:
        self._value += 1
        while self._waiters and self._value > 0:
            waiter = heapq.heappop(self._waiters)
            if not waiter.future.done():
                self._value -= 1
                waiter.future.set_result(None)


class JobGate:
    """At most ``limit`` jobs in a stage at once, whatever their partition count (cuzk's
    ``synthesis_concurrency`` counts proofs, not partitions); 0: no limit. A job enters with
    its first partition and leaves with its last, or when it ends."""

    def __init__(self, limit: int):
        self.limit = limit
        self._sem = PrioritySemaphore(limit) if limit else None

    def ticket(self, partitions: int, *, exempt: bool = False) -> JobTicket:
        """A job's pass; ``exempt`` (a CRITICAL job) enters without waiting, and still counts."""
        return JobTicket(self._sem, partitions, exempt)


class JobTicket:
    """One job's pass through a :class:`JobGate`."""

    def __init__(self, sem: PrioritySemaphore | None, partitions: int, exempt: bool):
        self._sem = sem
        self._left = partitions
        self._exempt = exempt
        self._held = False
        self._entering = asyncio.Lock()

    async def enter(self, key: tuple) -> None:
        """Wait (in ``key`` order) until the job may start a partition; at once after its first."""
        if self._sem is None or self._held:
            return
        async with self._entering:
            if not self._held and self._left > 0:
                await self._sem.acquire(key, bypass=self._exempt)
                self._held = True

    def partition_done(self) -> None:
        """One partition left the stage; the last one takes the job out of the gate."""
        self._left -= 1
        if self._left <= 0:
            self.leave()

    def leave(self) -> None:
        if self._held:
            self._held = False
            self._left = 0
            assert self._sem is not None
            self._sem.release()


@dataclass
class WorkerSlot:
    """One GPU worker: a (backend, device) lane and the worker's index on it."""

    lane: str
    worker: int
    last_circuit: str = ""
    #: Consecutive partitions of last_circuit (capped by max_batch_size when others wait).
    streak: int = 0
    busy_job: str = ""
    busy_kind: str = ""
    #: The partition being proved and since when (perf_counter), for the status page.
    busy_partition: int = -1
    busy_since: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.lane}/w{self.worker}"


class SlotPool:
    """The GPU workers of every lane. A freed worker goes to the best waiter allowed on its lane:
    highest priority first; among equals (``sort_by_type``) one of the circuit it just proved,
    up to ``max_batch`` in a row. A waiter given the choice takes a worker of the least busy lane,
    so the partitions of a job spread over every device before a device runs two at once."""

    def __init__(self, slots: list[WorkerSlot], *, sort_by_type: bool = True, max_batch: int = 4):
        self.slots = slots
        self._free: list[WorkerSlot] = list(slots)
        self._waiters: list[_Waiter] = []
        self._tie = itertools.count()
        self.sort_by_type = sort_by_type
        self.max_batch = max_batch

    @property
    def idle(self) -> list[WorkerSlot]:
        return list(self._free)

    def lanes(self) -> list[str]:
        return list(dict.fromkeys(s.lane for s in self.slots))

    def workers_of(self, lane: str) -> int:
        return sum(s.lane == lane for s in self.slots)

    async def acquire(self, key: tuple, circuit_id: str, allowed: frozenset[str] | None = None) -> WorkerSlot:
        live = [w for w in self._waiters if not w.future.done()]
        if not live:
            slot = self._pick_free(circuit_id, allowed)
            if slot is not None:
                return slot
        fut = asyncio.get_running_loop().create_future()
        waiter = _Waiter((*key, next(self._tie)), fut, allowed, circuit_id)
        heapq.heappush(self._waiters, waiter)
        self._dispatch()
        try:
            return await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release(fut.result())
            raise

    def _pick_free(self, circuit_id: str, allowed: frozenset[str] | None) -> WorkerSlot | None:
        candidates = [s for s in self._free if allowed is None or s.lane in allowed]
        if not candidates:
            return None
        busy = self._busy_by_lane()
        least = min(busy[s.lane] for s in candidates)
        candidates = [s for s in candidates if busy[s.lane] == least]
        same = [s for s in candidates if self._batching(s, circuit_id)] if self.sort_by_type else []
        slot = (same or candidates)[0]
        self._free.remove(slot)
        slot.streak = slot.streak + 1 if slot.last_circuit == circuit_id else 1
        slot.last_circuit = circuit_id
        return slot

    def _busy_by_lane(self) -> dict[str, int]:
        free = {id(s) for s in self._free}
        busy = dict.fromkeys(self.lanes(), 0)
        for s in self.slots:
            busy[s.lane] += id(s) not in free
        return busy

    def _batching(self, slot: WorkerSlot, circuit_id: str) -> bool:
        return slot.last_circuit == circuit_id and slot.streak < self.max_batch

    def release(self, slot: WorkerSlot) -> None:
        slot.busy_job = slot.busy_kind = ""
        slot.busy_partition = -1
        self._free.append(slot)
        self._dispatch()

    def _dispatch(self) -> None:
        """Hand free workers to waiters, best waiter first."""
        while self._free and self._waiters:
            live = sorted(w for w in self._waiters if not w.future.done())
            self._waiters = live
            if not live:
                return
            granted = False
            top = live[0].key[0]
            # Waiters of the top priority, the one matching a free worker's circuit first.
            tier = [w for w in live if w.key[0] == top]
            if self.sort_by_type:
                tier.sort(key=lambda w: (not any(self._batching(s, w.circuit_id) for s in self._free), w.key))
            for waiter in tier + [w for w in live if w.key[0] != top]:
                slot = self._pick_free(waiter.circuit_id, waiter.allowed)
                if slot is not None:
                    self._waiters.remove(waiter)
                    waiter.future.set_result(slot)
                    granted = True
                    break
            if not granted:
                return
