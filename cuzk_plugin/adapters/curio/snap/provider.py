"""The SnapDeals circuit provider for the engine: which keys an update circuit uses (Filecoin's
parameter files, or a test key) and the jobs it proves (:mod:`.job`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cuzk_plugin.adapters.curio.keys import BlankCircuitKey, CircuitFile, filecoin_key_source, pce_enabled, plan_filecoin_key
from cuzk_plugin.adapters.curio.snap.job import SNAP_CIRCUITS, SnapPartitionTask, ensure_snap_pce, snap_job
from cuzk_plugin.engine.circuits import JobPlan, KeySource
from cuzk_plugin.engine.types import ProofKind, ProofRequest
from cuzk_plugin.filecoin.snap.params import (
    update_params,
)

__all__ = ["SnapCircuitProvider", "SnapKeyGenerator", "snap_test_key", "snap_test_key_circuit", "warm_snap_worker"]

#: Circuits whose test key ([srs] allow_test_keys) can also be made without the pre-compiled circuit
#: (``CUZK_DISABLE_PCE=1``): a single-party setup of the blank circuit, to a file (~half an hour at 2 KiB).
OWN_SETUP_CIRCUITS = ("snap-2k",)


@dataclass(frozen=True)
class SnapKeyGenerator(BlankCircuitKey):
    """A TEST key for a small update circuit (see :class:`BlankCircuitKey`)."""

    sector_size: int
    path: Path

    def synthesize_blank(self, cs) -> None:
        from cuzk_plugin.filecoin.snap.circuit import blank_update_partition, synthesize_update_partition

        p = update_params(self.sector_size)
        synthesize_update_partition(cs, p, blank_update_partition(p))


def snap_test_key(circuit_id: str, path: Path) -> SnapKeyGenerator | None:
    """The generator of an update-circuit test key file, only where the pre-compiled circuit is off
    (``CUZK_DISABLE_PCE=1``) and the size allows one; else :func:`snap_test_key_circuit` applies."""

    return SnapKeyGenerator(2 << 10, path) if circuit_id in OWN_SETUP_CIRCUITS and not pce_enabled() else None


def snap_test_key_circuit(circuit_id: str, param_cache: Path) -> CircuitFile | None:
    """Every size's test key is made on each lane from the pre-compiled circuit (the 2 KiB one, 2^21,
    in minutes on a 2-core host, against half an hour for the blank-circuit setup)."""

    if circuit_id not in SNAP_CIRCUITS or not pce_enabled():
        return None
    return CircuitFile(ensure_snap_pce, circuit_id, str(param_cache))


def warm_snap_worker() -> None:
    """Run once in each synthesis worker as it starts: the partition layout (its traced SHA-256
    programs, ~1.2 s) of every update size whose pre-compiled circuit is in the param cache
    (see :func:`~cuzk_plugin.adapters.curio.porep.provider.warm_porep_worker`)."""
    from cuzk_plugin.engine.workers import worker_param_cache
    from cuzk_plugin.filecoin.snap.witness import update_layout
    from cuzk_plugin.formats.pce import cached_circuits

    for circuit_id in cached_circuits(worker_param_cache(), SNAP_CIRCUITS):
        update_layout(update_params(SNAP_CIRCUITS[circuit_id]))


class SnapCircuitProvider:
    """SNAP_DEALS_UPDATE: the EmptySectorUpdate circuit of every sector size, proved with
    Filecoin's parameter files (a test key only with ``allow_test_keys``)."""

    kinds: tuple[ProofKind, ...] = (ProofKind.SNAP_DEALS_UPDATE,)
    #: See :meth:`ProviderRegistry.worker_warmers`.
    warm_worker = staticmethod(warm_snap_worker)

    def __init__(self, *, allow_test_keys: bool = False):
        self.allow_test_keys = allow_test_keys

    def plan(self, request: ProofRequest, param_cache: Path | None) -> JobPlan:
        job = snap_job(request)
        circuit_id = plan_filecoin_key(job.circuit_id, param_cache, allow_test_keys=self.allow_test_keys,
                                       make_test_key=snap_test_key, test_key_circuit=snap_test_key_circuit)
        pce_cache = str(param_cache) if param_cache is not None else None
        tasks = tuple(SnapPartitionTask(request.registered_proof, bytes(raw), k, job.comm_r_old, job.comm_d_new,
                                        job.comm_r_new, pce_cache) for k, raw in enumerate(request.vanilla_proofs))
        return JobPlan(circuit_id, tasks)

    def key_source(self, circuit_id: str, param_cache: Path | None) -> KeySource | None:
        return filecoin_key_source(circuit_id, param_cache, kinds=("snap",), allow_test_keys=self.allow_test_keys,
                                   make_test_key=snap_test_key, test_key_circuit=snap_test_key_circuit)
