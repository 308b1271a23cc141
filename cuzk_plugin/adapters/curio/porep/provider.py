"""The PoRep circuit provider for the engine (``cuzk_plugin.engine.circuits.CircuitProvider``).

Register it with ``ProviderRegistry.register(PorepCircuitProvider())`` or the entry point
``cuzk_plugin.circuit_providers``. A request's ``vanilla_proof`` (Curio's C1 envelope) is
parsed and checked once in :meth:`plan`; each partition's checked witness then goes to a worker
process, which computes its assignment: the backend evaluates a, b, c from the sector size's
pre-compiled circuit (extracted into the param cache on first use). ``CUZK_DISABLE_PCE=1``
falls back to the reference synthesis (every constraint built in Python, a, b, c on the host),
for debugging.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from concurrent.futures import BrokenExecutor, Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cuzk_plugin.adapters.curio.keys import BlankCircuitKey, CircuitFile, filecoin_key_source, pce_enabled, plan_filecoin_key
from cuzk_plugin.adapters.curio.porep.c1 import C1Error
from cuzk_plugin.adapters.curio.porep.job import (
    PARALLEL_C1_BYTES,
    PCE_CIRCUITS,
    PorepPartition,
    ensure_porep_pce,
    porep_partitions,
)
from cuzk_plugin.engine.circuits import JobPlan, KeySource
from cuzk_plugin.engine.errors import InvalidRequest
from cuzk_plugin.engine.synthesis import output_block
from cuzk_plugin.engine.types import ProofKind
from cuzk_plugin.engine.workers import die_with_parent, task_processes, worker_param_cache
from cuzk_plugin.filecoin.porep.witness_layout import porep_layout
from cuzk_plugin.filecoin.porep.witness_pool import shared_pool
from cuzk_plugin.formats.pce import cached_circuits

__all__ = ["PorepCircuitProvider", "PorepPartitionTask", "PorepKeyGenerator", "PlanningProcesses"]

log = logging.getLogger(__name__)

#: The most processes that check a large C1's partitions side by side: one a partition of an
#: interactive 32 GiB or 64 GiB PoRep (each ~4.9 MB of its JSON, ~0.2 s of a core).
PLANNERS = 10
#: Sector sizes whose C1 is large enough to be checked side by side (PARALLEL_C1_BYTES).
LARGE_SECTOR = 32 << 30

#: Sector sizes whose test key is a file made here (a single-party setup of the blank circuit on
#: the host); larger ones take hours and tens of GB that way, so their test keys are made on the
#: lanes from the pre-compiled circuit (:func:`porep_test_key_circuit`).
TEST_KEY_SIZES = {"porep-2k": "2KiB"}


def warm_porep_worker() -> None:
    """Run once in each synthesis worker as it starts: the partition layout of every PoRep size
    whose pre-compiled circuit is in the param cache (the sizes this daemon proves), whose
    SHA-256 compressions are otherwise traced and compiled in the worker's first partition: ~5
    s of one core for 32 GiB (a fresh worker's first 32 GiB partition: 10.3 s without this, 3.2
    s with it, bench/synthesis/README.md). A daemon without such a file (tests, PoSt-only)
    pays nothing."""
    from cuzk_plugin.filecoin.params import porep_params

    for circuit_id in cached_circuits(worker_param_cache(), PCE_CIRCUITS):
        porep_layout(porep_params(PCE_CIRCUITS[circuit_id]))


def _planner_init(parent_pid: int) -> None:
    """A planning process's start: it dies with the daemon, and unpickling this function has
    imported the C1 checks (pydantic, the graph) before the first plan needs them."""
    die_with_parent(parent_pid)


class PlanningProcesses(Executor):
    """Spawned processes that check a large C1's partitions side by side. Where one of them
    died (killed for memory, say), the next submit starts new ones: a crash costs the plan that
    saw it its side-by-side check (it is checked in turn), not every later plan."""

    def __init__(self, processes: int):
        self.processes = processes
        self._lock = threading.Lock()
        self._pool = self._started()

    def _started(self) -> ProcessPoolExecutor:
        pool = ProcessPoolExecutor(self.processes, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_planner_init, initargs=(os.getpid(),))
        for _ in range(self.processes):  # every process starts now, not under the first plan
            pool.submit(os.getpid)
        return pool

    def submit(self, fn, /, *args, **kwargs) -> Future:
        with self._lock:
            pool = self._pool
        try:
            return pool.submit(fn, *args, **kwargs)
        except BrokenExecutor:
            with self._lock:
                if self._pool is pool:
                    log.warning("a PoRep planning process died; starting %d new ones", self.processes)
                    pool.shutdown(wait=False, cancel_futures=True)
                    self._pool = self._started()
                pool = self._pool
            return pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            pool = self._pool
        pool.shutdown(wait=wait, cancel_futures=cancel_futures)


@dataclass(frozen=True)
class PorepPartitionTask:
    """One partition of a C1 the plan parsed and checked (the partition's witness travels, ~0.9
    MB at 32 GiB, not the ~50 MB C1); ``pce_cache`` is the param cache holding (or to hold) the
    pre-compiled circuit ``circuit_id``, None for the reference path."""

    partition: PorepPartition
    circuit_id: str
    pce_cache: str | None = None

    def synthesize(self):
        """(WitnessPartition on the mapped pre-compiled circuit, or SynthesizedPartition on the
        reference path; public inputs without ONE). A corrupt C1 raises naming the partition."""
        from cuzk_plugin.formats.partition import WitnessPartition
        from cuzk_plugin.formats.pce import MappedCircuit

        part = self.partition
        if self.pce_cache is None or not pce_enabled() or self.circuit_id not in PCE_CIRCUITS:
            return part.synthesize()
        circuit = MappedCircuit.open(ensure_porep_pce(self.circuit_id, self.pce_cache))
        processes = task_processes()
        pool = shared_pool(part.params, processes, on_fork=die_with_parent) if processes > 1 else None
        # the aux straight into the block the engine maps: 4.2 GB at 32 GiB, never copied
        into = output_block(porep_layout(part.params).aux_nbytes)
        inputs, aux = part.assignment(pool=pool, into=into)
        return WitnessPartition(circuit, inputs, aux), list(part.public_inputs)


@dataclass(frozen=True)
class PorepKeyGenerator(BlankCircuitKey):
    """A TEST key for a small PoRep circuit (see :class:`BlankCircuitKey`)."""

    sector_size: str
    path: Path

    def synthesize_blank(self, cs) -> None:
        from cuzk_plugin.filecoin.params import porep_params
        from cuzk_plugin.filecoin.porep.circuit import blank_partition, synthesize_partition

        params = porep_params(self.sector_size)
        synthesize_partition(cs, params, blank_partition(params))


def porep_test_key(circuit_id: str, path: Path) -> PorepKeyGenerator | None:
    """The generator of a PoRep test key (``[srs] allow_test_keys``), where the size allows one."""
    size = TEST_KEY_SIZES.get(circuit_id)
    return PorepKeyGenerator(size, path) if size else None


def porep_test_key_circuit(circuit_id: str, param_cache: Path) -> CircuitFile | None:
    """Sizes without a file test key get one made on each lane from the pre-compiled circuit."""
    if circuit_id in TEST_KEY_SIZES or circuit_id not in PCE_CIRCUITS or not pce_enabled():
        return None
    return CircuitFile(ensure_porep_pce, circuit_id, str(param_cache))


class PorepCircuitProvider:
    """POREP_SEAL_COMMIT: the stacked DRG PoRep circuit of every sector size, proved with
    Filecoin's parameter files (a test key only with ``allow_test_keys``)."""

    kinds: tuple[ProofKind, ...] = (ProofKind.POREP_SEAL_COMMIT,)
    #: See :meth:`ProviderRegistry.worker_warmers`.
    warm_worker = staticmethod(warm_porep_worker)

    def __init__(self, *, allow_test_keys: bool = False):
        self.allow_test_keys = allow_test_keys
        self._planners: PlanningProcesses | None = None
        self._planners_lock = threading.Lock()

    def start(self, param_cache: Path | None) -> None:
        """At daemon start: the planning processes (spawned, ~1 s of imports each), where this
        daemon proves a large sector (its pre-compiled circuit in the param cache); else the
        first large C1 that is one (checked in turn itself) starts them: a flood of hostile
        large bodies never does."""
        if any(PCE_CIRCUITS[c] >= LARGE_SECTOR for c in cached_circuits(param_cache, PCE_CIRCUITS)):
            self._start_planners()

    def close(self) -> None:
        """Stop the planning processes (a plan still running falls back to checking in turn)."""
        with self._planners_lock:
            pool, self._planners = self._planners, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _start_planners(self) -> PlanningProcesses | None:
        """The planning processes, started once where the host has two cores or more."""
        with self._planners_lock:
            processes = min(PLANNERS, os.cpu_count() or 1)
            if self._planners is None and processes >= 2:
                self._planners = PlanningProcesses(processes)
                log.info("PoRep plans: a large C1's partitions are checked in %d processes side by side", processes)
            return self._planners

    def plan(self, request, param_cache: Path | None) -> JobPlan:
        raw = request.vanilla_proof
        pool = self._planners
        try:
            job = porep_partitions(raw, pool=pool)
        except C1Error as exc:
            raise InvalidRequest(f"vanilla_proof{exc.path[1:]}: {exc.message}") from None
        if pool is None and len(raw) >= PARALLEL_C1_BYTES:
            self._start_planners()  # for the next one, once a large C1 proved to be one
        circuit_id = plan_filecoin_key(job.circuit_id, param_cache, allow_test_keys=self.allow_test_keys,
                                       make_test_key=porep_test_key, test_key_circuit=porep_test_key_circuit)
        pce_cache = str(param_cache) if param_cache is not None else None
        tasks = tuple(PorepPartitionTask(job.partition(k), job.circuit_id, pce_cache) for k in range(job.num_partitions))
        return JobPlan(circuit_id, tasks)

    def key_source(self, circuit_id: str, param_cache: Path | None) -> KeySource | None:
        return filecoin_key_source(circuit_id, param_cache, kinds=("porep",), allow_test_keys=self.allow_test_keys,
                                   make_test_key=porep_test_key, test_key_circuit=porep_test_key_circuit)
