"""The GPU stage of a partition: a worker slot, the key HOT on its lane, the backend call, and
what happens when the call fails.

A partition takes a worker of a lane (by priority, then same circuit: :class:`.sched.SlotPool`),
makes the job's key HOT on that lane, and runs prove_start / prove_finish / assemble on a
worker thread (:func:`.lanes.prove_step`). A transient fault is retried on the same lane
(tenacity, [gpus] retry_attempts); a partition out of device memory beside others runs once more
alone on its lane, and out of memory alone under a residency plan, the lane plans with less room
and the partition runs again on a copy of its key planned afresh (up to REPLANS times); any
other backend error moves it to another lane, a fallback backend's lanes
only after every primary one, and fails it once no lane is left. A lane that gives up on
LANE_STRIKES partitions in a row rests for LANE_REST_S (used only if no other lane is left).

A cancelled partition whose backend call already runs keeps its worker, key reference and
partition memory until the call returns (the job's cancel flag interrupts it within a second).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from concurrent.futures import Executor
from functools import partial

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt, wait_exponential

from cuzk_plugin.config import Config
from cuzk_plugin.engine.device_key import DeviceKey
from cuzk_plugin.engine.job import Job
from cuzk_plugin.engine.key_supply import KeySupply
from cuzk_plugin.engine.lanes import Lane, PartitionCancelled, device_stages, prove_step
from cuzk_plugin.engine.metrics import EngineMetrics
from cuzk_plugin.engine.sched import SlotPool, WorkerSlot
from cuzk_plugin.engine.synthesis import SharedPartition
from cuzk_plugin.engine.types import loggable
from cuzk_plugin.errors import BackendError, DeviceOutOfMemory, TransientBackendError
from cuzk_plugin.formats.params import ProvingKey
from cuzk_plugin.formats.proof import Proof

log = logging.getLogger(__name__)
#: Partitions in a row a lane gives up on before it is set aside (a dead device would otherwise,
#: always idle, be every partition's first try), and for how long; a success ends the rest.
LANE_STRIKES = 3
LANE_REST_S = 60.0


#: Times a partition that ran out of device memory alone on its lane is proved again, each time
#: under a plan with less room (Lane.shrink_room).
REPLANS = 3


class GpuStage:
    """Proves partitions on the worker slots of ``lanes``; ``primary_lanes``: the lanes of the
    first backend (a fallback backend's lanes take a partition only after it failed on every one
    of these)."""

    def __init__(self, config: Config, lanes: list[Lane], primary_lanes: frozenset[str], slots: SlotPool,
                 keys: KeySupply, metrics: EngineMetrics, gpu_threads: Executor):
        self.config = config
        self._lane_by_name = {lane.name: lane for lane in lanes}
        self._primary_lanes = primary_lanes
        self.slots = slots
        self.keys = keys
        self.srs = keys.srs
        self.metrics = metrics
        self._gpu_threads = gpu_threads
        self._lane_strikes: dict[str, int] = {}
        #: Held while a partition that ran out of device memory gathers every worker of its lane.
        self._alone_on_lane = asyncio.Lock()
        self._lane_rest_until: dict[str, float] = {}
        #: CUZK_TIMING=1: a timing line on stderr for each partition proved (the engine sets it).
        self.timing_lines = False

    async def prove(self, job: Job, p: int, shared: SharedPartition, key: ProvingKey | DeviceKey, okey: tuple) -> Proof:
        """Retry transient faults on one lane, then move to the next lane, then give up."""
        excluded: list[str] = []
        failures: list[str] = []
        while True:
            allowed = frozenset(name for name in self.slots.lanes() if name not in excluded)
            healthy = frozenset(name for name in allowed if not self.lane_resting(name))
            # A resting lane only when no other is left; a fallback backend only after the primary.
            allowed = (healthy & self._primary_lanes) or healthy or (allowed & self._primary_lanes) or allowed
            if not allowed:
                raise BackendError(f"partition {p} failed on every lane: " + "; ".join(failures))
            pinned: list[str] = []  # the lane of the first attempt; retries stay on it

            def _log_retry(state: RetryCallState, pinned: list[str] = pinned) -> None:
                exc = state.outcome.exception() if state.outcome else None
                lane = pinned[0] if pinned else "?"
                self.metrics.retries.labels(lane).inc()
                log.warning("job %s partition %d: transient fault on %s (attempt %d): %s; retrying",
                            loggable(job.id), p, lane, state.attempt_number, exc)

            try:
                async for attempt in AsyncRetrying(
                    retry=retry_if_exception_type(TransientBackendError),
                    stop=stop_after_attempt(self.config.gpus.retry_attempts),
                    wait=wait_exponential(multiplier=0.05, max=2.0), before_sleep=_log_retry, reraise=True,
                ):
                    with attempt:
                        lanes = frozenset(pinned) if pinned else allowed
                        n = attempt.retry_state.attempt_number
                        try:
                            return await self._gpu_attempt(job, p, shared, key, okey, lanes, pinned, n)
                        except DeviceOutOfMemory as exc:
                            # Partitions in flight beside it took the memory (a 73 GB WindowPoSt key
                            # leaves room for one 2^27 partition, not two): once more, alone.
                            if self.slots.workers_of(pinned[0]) < 2:
                                raise
                            log.warning("job %s partition %d: out of device memory on %s beside other partitions "
                                        "(%s); retrying it alone on the lane", loggable(job.id), p, pinned[0], exc)
                            self.metrics.retries.labels(pinned[0]).inc()
                            return await self._gpu_attempt(job, p, shared, key, okey, frozenset(pinned), pinned, n,
                                                           alone=True)
            except BackendError as exc:
                lane = pinned[0] if pinned else "?"
                excluded.append(lane)
                failures.append(f"{lane}: {type(exc).__name__}: {exc}")
                self.metrics.lane_failures.labels(lane).inc()
                self._lane_gave_up(lane)
                if len(excluded) < len(self.slots.lanes()):
                    self.metrics.failovers.labels(lane).inc()
                    log.warning("job %s partition %d: giving up on lane %s (%s); moving to another lane",
                                loggable(job.id), p, lane, exc)
        raise AssertionError("unreachable")

    async def _take_workers(self, okey: tuple, circuit_id: str, lanes: frozenset[str], alone: bool) -> list[WorkerSlot]:
        """A worker of one of ``lanes``; ``alone``: every worker of that lane (the first is the
        one to prove with), gathered one by one as they free up, one gatherer at a time (so two
        never hold half a lane each)."""
        if not alone:
            return [await self.slots.acquire(okey, circuit_id, lanes)]
        async with self._alone_on_lane:
            held = [await self.slots.acquire(okey, circuit_id, lanes)]
            try:
                while len(held) < self.slots.workers_of(held[0].lane):
                    held.append(await self.slots.acquire(okey, circuit_id, frozenset({held[0].lane})))
            except BaseException:
                for slot in held:
                    self.slots.release(slot)
                raise
        return held

    async def _gpu_attempt(self, job: Job, p: int, shared: SharedPartition, key: ProvingKey | DeviceKey, okey: tuple,
                           lanes: frozenset[str], pinned: list[str], attempt: int, alone: bool = False) -> Proof:
        slot, *beside = await self._take_workers(okey, job.circuit_id, lanes, alone)
        if not pinned:
            pinned.append(slot.lane)
        lane = self._lane_by_name[slot.lane]
        for held in (slot, *beside):
            held.busy_job, held.busy_kind = job.id, job.kind.label
            held.busy_partition, held.busy_since = p, time.perf_counter()
        self.srs.add_ref(job.circuit_id, slot.lane)
        fut: asyncio.Future | None = None
        try:
            t0 = time.perf_counter()
            _, handle = await self.srs.hot(job.circuit_id, lane.name, self.keys.loader(lane, job.circuit_id, shared.partition))
            t1 = time.perf_counter()
            if t1 - t0 > 0.001:
                job.timings.srs_load_sum += t1 - t0
                job.event("srs", p, slot.name, t0, t1, attempt)
            if job.cancel_flag.is_set():  # cancelled while the key loaded: no backend call at all
                raise PartitionCancelled()
            loop = asyncio.get_running_loop()
            shared.hold()
            # Out of memory with the lane to itself, under a residency plan: the plan was too generous
            # for this device. The lane plans with less room, the key's copy there is planned again
            # (more of it streamed) and the partition proves again, up to REPLANS times.
            exclusive = alone or self.slots.workers_of(slot.lane) < 2
            for replan in range(REPLANS + 1):
                fut = loop.run_in_executor(self._gpu_threads, _prove_unless_cancelled, lane, handle, shared.partition,
                                           key.vk, job.cancel_flag)
                try:
                    proof, times = await asyncio.shield(fut)
                    break
                except DeviceOutOfMemory as exc:
                    if not (exclusive and lane.streams_keys and replan < REPLANS) or job.cancel_flag.is_set():
                        raise
                    room = lane.shrink_room()
                    log.warning("job %s partition %d: out of device memory alone on %s (%s); planning keys there "
                                "with %.1f GB from now on and proving it again", loggable(job.id), p, lane.name, exc,
                                room / 1e9)
                    self.srs.replan_copy(job.circuit_id, lane.name)
                    _, handle = await self.srs.hot(job.circuit_id, lane.name,
                                                   self.keys.loader(lane, job.circuit_id, shared.partition))
        except PartitionCancelled:
            raise asyncio.CancelledError() from None
        finally:
            if fut is not None and not fut.done():
                # Cancelled while the backend call runs (the cancel flag interrupts it): its slot,
                # key and partition memory stay taken until the call returns.
                fut.add_done_callback(partial(self._release_after_cancel, slot, job.circuit_id, shared, beside))
            else:
                self._release_gpu(slot, job.circuit_id, shared if fut is not None else None, beside)
        job.lanes_used.add(lane.name)
        job.event("gpu_start", p, slot.name, times.start, times.started, attempt)
        job.event("gpu_finish", p, slot.name, times.started, times.assembled, attempt)
        for stage, t_start, t_end in device_stages(times):
            job.event(stage, p, slot.name, t_start, t_end, attempt)
        job.timings.gpu_compute_sum += times.assembled - times.start
        self.metrics.stage.labels("gpu").observe(times.assembled - times.start)
        if self.timing_lines:
            print(f"CUZK_TIMING: job={loggable(job.id)} partition={p} lane={slot.name} "
                  f"synthesis_ms={shared.ref.seconds * 1e3:.0f} pce={int(shared.ref.pce_path is not None)} "
                  f"synthesis_processes={shared.ref.processes} host_pinned={int(shared.pinned)} "
                  f"host_evaluate_ms={times.evaluate_s * 1e3:.0f} prove_start_ms={(times.started - times.start) * 1e3:.0f} "
                  f"prove_finish_ms={(times.finished - times.started) * 1e3:.0f} "
                  f"assemble_ms={(times.assembled - times.finished) * 1e3:.0f} "
                  f"gpu_total_ms={(times.assembled - times.start) * 1e3:.0f}"
                  + "".join(f" device_{k}_ms={v:.0f}" for k, v in times.device_ms.items()), file=sys.stderr, flush=True)
        self.metrics.partitions.labels(lane.name).inc()
        self._lane_strikes[lane.name] = 0
        self._lane_rest_until.pop(lane.name, None)
        return proof

    def lane_resting(self, lane: str) -> bool:
        """The lane gave up on LANE_STRIKES partitions in a row and rests (LANE_REST_S)."""
        return time.monotonic() < self._lane_rest_until.get(lane, 0.0)

    def _lane_gave_up(self, lane: str) -> None:
        strikes = self._lane_strikes[lane] = self._lane_strikes.get(lane, 0) + 1
        if strikes >= LANE_STRIKES and not self.lane_resting(lane):
            self._lane_rest_until[lane] = time.monotonic() + LANE_REST_S
            log.warning("lane %s: gave up on %d partitions in a row; set aside for %.0fs (used only if no other "
                        "lane is left)", lane, strikes, LANE_REST_S)

    def _release_after_cancel(self, slot: WorkerSlot, circuit_id: str, shared: SharedPartition,
                              beside: list[WorkerSlot], call: asyncio.Future) -> None:
        """A cancelled partition's backend call returned: its slot, key and memory are free. Its
        outcome (the interrupted call's error, as a rule) is of no use: taken, so asyncio does
        not log "Future exception was never retrieved"."""
        if not call.cancelled() and call.exception() is not None:
            log.debug("a cancelled partition's backend call ended with %s", type(call.exception()).__name__)
        self._release_gpu(slot, circuit_id, shared, beside)

    def _release_gpu(self, slot: WorkerSlot, circuit_id: str, shared: SharedPartition | None,
                     beside: list[WorkerSlot]) -> None:
        if shared is not None:
            shared.release()
        self.srs.drop_ref(circuit_id, slot.lane)
        for other in beside:
            self.slots.release(other)
        self.slots.release(slot)


def _prove_unless_cancelled(lane: Lane, handle, partition, vk, cancelled) -> tuple[Proof, object]:
    """prove_step, unless the job was cancelled while the call waited for a thread."""
    if cancelled.is_set():
        raise PartitionCancelled()
    return prove_step(lane, handle, partition, vk, cancelled)
