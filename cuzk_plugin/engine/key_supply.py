"""Where the engine's keys come from: the SRS manager, and the rules it is fed with.

The SRS manager (:mod:`.srs`) tiers keys and keeps them within the memory budget; what it is
given comes from here, so a client's circuit id never reaches a path, a process or a device
unchecked: a key's file lies inside the param cache (whatever a provider or a symlink says), a
key generation is bounded by [srs] max_generated_log2 and runs in a process of its own that
dies with its waiting caller, and a lane loads a key told the device bytes of the circuit its
partitions bring beside it (so its residency plan leaves room for that circuit). Preload and
evict (the PreloadSRS and EvictSRS calls) check the id the same way.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from functools import partial
from pathlib import Path
from typing import Any

from cuzk_plugin.config import Config
from cuzk_plugin.engine.circuits import KeySource, ProviderRegistry
from cuzk_plugin.engine.errors import CircuitUnavailable, InvalidRequest
from cuzk_plugin.engine.lanes import Lane
from cuzk_plugin.engine.residency import CircuitFootprint
from cuzk_plugin.engine.sched import PrioritySemaphore, order_key
from cuzk_plugin.engine.srs import SrsManager
from cuzk_plugin.engine.synthesis import mapped_circuit
from cuzk_plugin.engine.types import Priority, circuit_id_problem
from cuzk_plugin.engine.workers import run_killable
from cuzk_plugin.filecoin.param_files import filecoin_cache_dirs, is_test_key_id
from cuzk_plugin.formats.partition import WitnessPartition
from cuzk_plugin.formats.pce import PceError, load_pce, pce_path, read_header

log = logging.getLogger(__name__)


def circuit_pce_file(param_cache: Path, circuit_id: str) -> Path:
    """Where the pre-compiled circuit of ``circuit_id``'s partitions lies (a TEST key's is its
    Filecoin circuit's)."""
    return pce_path(param_cache, is_test_key_id(circuit_id) or circuit_id)


class KeySupply:
    """Owns the SRS manager (``srs``) of ``lanes``; a key generation takes one of ``synth_slots``."""

    def __init__(self, config: Config, providers: ProviderRegistry, param_cache: Path, lanes: list[Lane], *,
                 io_threads: Executor, synth_slots: PrioritySemaphore):
        self.config = config
        self.providers = providers
        self.param_cache = param_cache
        self.lanes = lanes
        self._io_threads = io_threads
        self._synth_slots = synth_slots
        self.srs = SrsManager(
            resolve=self.source,
            budget_bytes=config.memory.budget_bytes(), min_idle_s=config.memory.eviction_min_idle,
            run_blocking=self._blocking, generate=self.generate,
        )

    async def _blocking(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self._io_threads, partial(fn, *args))

    def source(self, circuit_id: str) -> KeySource:
        """The key of ``circuit_id``, refused unless the id is one ASCII file stem and the path
        lies inside the param cache (whatever a provider or a symlink says)."""
        problem = circuit_id_problem(circuit_id)
        if problem:
            raise InvalidRequest(problem)
        source = self.providers.key_source(circuit_id, self.param_cache)
        cache = self.param_cache.resolve()
        # Filecoin's files (named by a fixed table, never by the request) may also sit in $FIL_PROOFS_PARAMETER_CACHE
        roots = [cache] + ([d.resolve() for d in filecoin_cache_dirs(self.param_cache)] if source.filecoin else [])
        if not any(source.path.resolve().is_relative_to(root) for root in roots):
            raise CircuitUnavailable(f"key of '{circuit_id}' resolves outside the param cache {cache}; refused")
        return source

    async def generate(self, generate) -> None:
        """Run a key generation (CPU-heavy setup) in a process of its own, bounded by
        [srs] max_generated_log2 and killed when the waiting caller is cancelled."""
        # The declared size may take a shape pass to compute: off the event loop.
        log2 = await self._blocking(getattr, generate, "log2_constraints", None)
        if log2 is None:
            log.warning("key generation by %s: size not declared (log2_constraints); not bounded by "
                        "[srs] max_generated_log2", type(generate).__name__)
        limit = self.config.srs.max_generated_log2
        if log2 is not None and log2 > limit:
            raise CircuitUnavailable(f"generating a key of 2^{log2} constraints is refused: [srs] max_generated_log2 = {limit}")
        # It takes one synthesis slot for its duration (ahead of partitions: they wait for the key).
        await self._synth_slots.acquire(order_key(Priority.CRITICAL, -1, 0))
        try:
            await run_killable(generate, what=f"key generation ({type(generate).__name__})")
        finally:
            self._synth_slots.release()

    def loader(self, lane: Lane, circuit_id: str, part: Any = None) -> Callable[[Any], Any]:
        """``lane.load_srs`` told the key's circuit id and the device bytes of the circuit its
        partitions load beside it (the partition's own, or the pre-compiled circuit of that name
        in the param cache: a TEST key's is its Filecoin circuit's), so the residency plan
        leaves room for it. A preload (no partition) also loads that circuit as the plan says,
        so that the first proof does not wait for it (8-9 s for a 32 GiB PoRep's rows pinned)."""
        def load(key: Any) -> Any:  # only when the key is not HOT on the lane yet (off the event loop)
            circuit = pce = None
            if isinstance(part, WitnessPartition):
                circuit = CircuitFootprint.of(part.circuit.circuit)
            else:
                path = circuit_pce_file(self.param_cache, circuit_id)
                if path.is_file():  # mapped, not read: its header and row pointers size it
                    pce = load_pce(path, verify=False)
                    circuit = CircuitFootprint.of(pce)
            handle = lane.load_srs(key, circuit_id=circuit_id, circuit=circuit)
            if part is None and pce is not None:
                try:  # the mapping partitions use (its digest verified once per file version)
                    handle.circuit(mapped_circuit(str(path), pce.digest))
                except BaseException:
                    handle.release()
                    raise
            return handle

        return load

    def partition_blocks(self, circuit_id: str) -> tuple[int, ...]:
        """The large blocks a partition of ``circuit_id`` writes its witness into, in bytes: its
        (num_aux, 4) uint64 aux (4.17 GB for a 32 GiB PoRep), read from the pre-compiled
        circuit's header; () where the circuit has none in the param cache."""
        path = circuit_pce_file(self.param_cache, circuit_id)
        if not path.is_file():
            return ()
        try:
            return (read_header(path).num_aux * 4 * 8,)
        except PceError as exc:  # its partitions make their own blocks (and find the fault)
            log.warning("host blocks for %s: not made ahead (%s)", circuit_id, exc)
            return ()

    async def preload(self, circuit_id: str) -> tuple[bool, float]:
        """Make a key HOT on every lane: (already_loaded, seconds)."""
        problem = circuit_id_problem(circuit_id)
        if problem:
            raise InvalidRequest(problem)
        handles = self.srs.lanes_of(circuit_id)
        already = all(lane.name in handles for lane in self.lanes)
        t0 = time.perf_counter()
        if not already:
            try:
                for lane in self.lanes:
                    await self.srs.hot(circuit_id, lane.name, self.loader(lane, circuit_id))
            except (CircuitUnavailable, FileNotFoundError) as exc:
                raise CircuitUnavailable(f"circuit_id: {exc}") from None
        return already, time.perf_counter() - t0

    async def evict(self, circuit_id: str) -> tuple[bool, int]:
        problem = circuit_id_problem(circuit_id)
        if problem:
            raise InvalidRequest(problem)
        return await self.srs.evict(circuit_id)
