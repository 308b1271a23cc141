"""The PoRep circuit provider for the engine (``cuzk_plugin.engine.circuits.CircuitProvider``).

Register it with ``ProviderRegistry.register(PorepCircuitProvider())`` or the entry point
``cuzk_plugin.circuit_providers``. A request's ``vanilla_proof`` (Curio's C1 envelope) is
parsed and checked once in :meth:`plan`; each partition is then re-parsed and synthesized in a
worker process from the same bytes (a task holds only the bytes and its partition index).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cuzk_plugin.adapters.curio.c1 import C1Error
from cuzk_plugin.adapters.curio.porep import porep_partitions
from cuzk_plugin.engine.circuits import JobPlan, KeySource
from cuzk_plugin.engine.errors import InvalidRequest
from cuzk_plugin.engine.types import ProofKind

__all__ = ["PorepCircuitProvider", "PorepPartitionTask", "PorepKeyGenerator"]

#: Our own (test-only) keys are generated for these circuits; others must be in the param cache.
OWN_SETUP_CIRCUITS = ("porep-2k",)


@dataclass(frozen=True)
class PorepPartitionTask:
    """Synthesize partition ``k`` of the C1 in ``raw`` (envelope or bare C1 JSON)."""

    raw: bytes
    k: int

    def synthesize(self):
        """(SynthesizedPartition, public inputs without ONE); WitnessError if the C1 is corrupt."""
        return porep_partitions(self.raw).synthesize(self.k)


@dataclass(frozen=True)
class PorepKeyGenerator:
    """Our own single-party key for a small PoRep circuit (its blank shape through the same code)."""

    sector_size: str
    path: Path

    def __call__(self) -> None:
        from cuzk_plugin.circuit.fast_cs import FastConstraintSystem
        from cuzk_plugin.filecoin.circuit import blank_partition, synthesize_partition
        from cuzk_plugin.filecoin.params import porep_params
        from cuzk_plugin.groth16.setup import setup

        params = porep_params(self.sector_size)
        cs = FastConstraintSystem()
        synthesize_partition(cs, params, blank_partition(params))
        shape, _, _ = cs.finish()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        setup(shape).save(self.path)


class PorepCircuitProvider:
    """POREP_SEAL_COMMIT: the stacked DRG PoRep circuit of every sector size."""

    kinds = (ProofKind.POREP_SEAL_COMMIT,)

    def plan(self, request, param_cache: Path) -> JobPlan:
        try:
            job = porep_partitions(request.vanilla_proof)
        except C1Error as exc:
            raise InvalidRequest(f"vanilla_proof{exc.path[1:]}: {exc.message}") from None
        tasks = tuple(PorepPartitionTask(bytes(request.vanilla_proof), k) for k in range(job.num_partitions))
        return JobPlan(job.circuit_id, tasks)

    def key_source(self, circuit_id: str, param_cache: Path) -> KeySource | None:
        if not circuit_id.startswith("porep-"):
            return None
        path = param_cache / f"{circuit_id}.params"
        if circuit_id in OWN_SETUP_CIRCUITS:
            size = {"porep-2k": "2KiB"}[circuit_id]
            return KeySource(circuit_id, path, PorepKeyGenerator(size, path))
        return KeySource(circuit_id, path) if path.is_file() else None
