"""Circuit providers: the seam between a proof request and the partitions that prove it.

A provider turns a :class:`ProofRequest` of its kinds into a :class:`JobPlan` (a circuit id
and one picklable :class:`PartitionTask` per partition, synthesized in a worker process), and
says where a circuit id's proving key comes from (:class:`KeySource`). The registry holds one
provider per proof kind. The engine knows circuits only through this interface: the providers
live in :mod:`cuzk_plugin.adapters` (handed in by the daemon), and third-party plug-ins register
through the entry-point group ``cuzk_plugin.circuit_providers`` (an object or a zero-argument
factory) or :meth:`ProviderRegistry.register`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from cuzk_plugin.engine.errors import CircuitUnavailable, InvalidRequest
from cuzk_plugin.engine.types import ProofKind, ProofRequest

if TYPE_CHECKING:
    from cuzk_plugin.filecoin.param_files import ParamFiles
    from cuzk_plugin.formats.partition import SynthesizedPartition

log = logging.getLogger(__name__)
PROVIDER_GROUP = "cuzk_plugin.circuit_providers"
#: The most partitions one job may ask for (any provider).
MAX_PARTITIONS = 1024


class PartitionTask(Protocol):
    """Picklable work for a synthesis worker process (keep it small: no large arrays)."""

    def synthesize(self) -> tuple[SynthesizedPartition, list[int]]:
        """The partition and its public inputs (ONE excluded, as the verifier takes them)."""
        ...


@dataclass(frozen=True)
class JobPlan:
    """What a request becomes: the circuit to prove with and one task per partition."""

    circuit_id: str
    tasks: tuple[PartitionTask, ...]


@dataclass(frozen=True)
class KeySource:
    """Where a circuit's `.params` lives and, for our own circuits, how to make it."""

    circuit_id: str
    path: Path
    #: Picklable zero-argument callable writing ``path`` (run once, in a worker process); None: must exist.
    generate: object | None = None
    #: A Filecoin circuit's files (checked at load; its verifying key is pinned to Filecoin's);
    #: None: the key is pinned to the digest recorded beside it when it was made or first loaded.
    filecoin: ParamFiles | None = None
    #: A key made here for a Filecoin circuit (tests only): never Filecoin's, named so everywhere.
    test_key: bool = False
    #: A test key made on each lane instead of a file (see :mod:`cuzk_plugin.engine.device_key`):
    #: a picklable zero-argument callable returning the pre-compiled circuit's path (recording it
    #: first if missing). ``path`` is then never written.
    device_key: object | None = None


@runtime_checkable
class CircuitProvider(Protocol):
    """One family of circuits (PoRep, synthetic, registered, ...)."""

    kinds: tuple[ProofKind, ...]

    def plan(self, request: ProofRequest, param_cache: Path) -> JobPlan:
        """Validate the request (raise InvalidRequest naming the field) and split it into partitions;
        raise CircuitUnavailable when the circuit cannot be proved here."""
        ...

    def key_source(self, circuit_id: str, param_cache: Path) -> KeySource | None:
        """The key of ``circuit_id`` if this provider owns that id, else None."""
        ...


class ProviderRegistry:
    """Providers by proof kind: the given ones (the daemon passes
    :func:`cuzk_plugin.adapters.builtin_providers`), then entry-point plug-ins (which replace them)."""

    def __init__(self, providers: list[CircuitProvider] | None = None, *, load_plugins: bool = True):
        self._by_kind: dict[ProofKind, CircuitProvider] = {}
        for provider in providers or []:
            self.register(provider)
        if load_plugins:
            self._load_plugins()

    def register(self, provider: CircuitProvider) -> None:
        for kind in provider.kinds:
            self._by_kind[ProofKind(kind)] = provider

    def _load_plugins(self) -> None:
        for ep in entry_points(group=PROVIDER_GROUP):
            try:
                obj = ep.load()
                provider = obj() if isinstance(obj, type) or not hasattr(obj, "kinds") else obj
                self.register(provider)
                log.info("circuit provider '%s' registered for %s", ep.name, ", ".join(ProofKind(k).name for k in provider.kinds))
            except Exception:
                log.exception("circuit provider plug-in '%s' failed to load; its kinds keep their previous provider", ep.name)

    def plan(self, request: ProofRequest, param_cache: Path) -> JobPlan:
        provider = self._by_kind.get(request.kind)
        if provider is None:
            known = ", ".join(f"{k.name}={int(k)}" for k in sorted(self._by_kind))
            raise InvalidRequest(f"proof_kind: {int(request.kind)} is not a kind this daemon proves ({known})")
        return provider.plan(request, param_cache)

    def start(self, param_cache: Path) -> None:
        """At engine start: each provider's optional ``start(param_cache)`` (processes it plans
        with, warmed before the first request)."""
        for provider in dict.fromkeys(self._by_kind.values()):
            if (start := getattr(provider, "start", None)) is not None:
                try:
                    start(param_cache)
                except Exception:  # it plans without them: slower, never refused
                    log.exception("provider %s failed to start its planning processes", type(provider).__name__)

    def close(self) -> None:
        """At engine stop: each provider's optional ``close()``."""
        for provider in dict.fromkeys(self._by_kind.values()):
            if (close := getattr(provider, "close", None)) is not None:
                close()

    def worker_warmers(self) -> tuple[object, ...]:
        """The providers' ``warm_worker`` (an optional attribute: a picklable zero-argument
        callable), run in every synthesis worker as it starts, so that what a provider computes
        once per process (constants, layouts) is never on a latency-critical proof's path."""
        return tuple(w for p in dict.fromkeys(self._by_kind.values()) if (w := getattr(p, "warm_worker", None)))

    def key_source(self, circuit_id: str, param_cache: Path) -> KeySource:
        for provider in dict.fromkeys(self._by_kind.values()):
            source = provider.key_source(circuit_id, param_cache)
            if source is not None:
                return source
        raise CircuitUnavailable(f"unknown circuit '{circuit_id}': no {circuit_id}.params in {param_cache} and no provider makes it")


def param_cache_dir(path: Path) -> Path:
    """The param cache, expanded (``~``) and created if missing."""
    path = Path(os.path.expanduser(path))
    path.mkdir(parents=True, exist_ok=True)
    return path
