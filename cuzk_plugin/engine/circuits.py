"""Circuit providers: the seam between a proof request and the partitions that prove it.

A provider turns a :class:`ProofRequest` of its kinds into a :class:`JobPlan` (a circuit id
and one picklable :class:`PartitionTask` per partition, synthesized in a worker process), and
says where a circuit id's proving key comes from (:class:`KeySource`). The registry holds one
provider per proof kind; plug-ins (e.g. the Filecoin PoRep circuit) register through the
entry-point group ``cuzk_plugin.circuit_providers`` (an object or a zero-argument factory) or
:meth:`ProviderRegistry.register`, replacing the placeholder that answers "circuit missing".
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import logging
import os
import re
import tempfile
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from cuzk_plugin.engine.errors import CircuitUnavailable, InvalidRequest
from cuzk_plugin.engine.types import ProofKind, ProofRequest

if TYPE_CHECKING:
    from cuzk_plugin.circuit.partition import SynthesizedPartition

log = logging.getLogger(__name__)
PROVIDER_GROUP = "cuzk_plugin.circuit_providers"
SYNTHETIC_LOG2_RANGE = (2, 20)
MAX_PARTITIONS = 1024
_CIRCUIT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


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


# ---------------------------------------------------------------------------------------------
# Synthetic Filecoin-shaped partitions


def synthetic_circuit_id(log2: int) -> str:
    return f"synthetic-k{log2}"


@dataclass(frozen=True)
class SyntheticTask:
    """filecoin_like(2^log2, seed): mostly 0/1 aux values, a few large products."""

    log2: int
    seed: int

    def synthesize(self) -> tuple[SynthesizedPartition, list[int]]:
        from cuzk_plugin.bls12_381.fields import limbs_to_ints
        from cuzk_plugin.circuit.examples import filecoin_like
        from cuzk_plugin.circuit.r1cs import synthesize

        r1cs, inputs, aux = filecoin_like(1 << self.log2, seed=self.seed).finish()
        return synthesize(r1cs, inputs, aux), limbs_to_ints(inputs)[1:]


@dataclass(frozen=True)
class SyntheticKeyGenerator:
    """Our own (test-only, single-party) key for the synthetic circuit of 2^log2 constraints."""

    log2: int
    path: Path

    def __call__(self) -> None:
        from cuzk_plugin.circuit.examples import filecoin_like
        from cuzk_plugin.groth16.setup import setup

        shape, _, _ = filecoin_like(1 << self.log2, seed=0).finish()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        setup(shape).save(self.path)


class SyntheticProvider:
    """SYNTHETIC: n partitions of 2^k constraints with random Filecoin-like witnesses."""

    kinds = (ProofKind.SYNTHETIC,)

    def plan(self, request: ProofRequest, param_cache: Path) -> JobPlan:
        spec = request.synthetic
        if spec is None:
            raise InvalidRequest("synthetic: a SYNTHETIC job needs the 'synthetic' field (log2_constraints, partitions, seed)")
        lo, hi = SYNTHETIC_LOG2_RANGE
        if not lo <= spec.log2_constraints <= hi:
            raise InvalidRequest(f"synthetic.log2_constraints: {spec.log2_constraints} is outside [{lo}, {hi}]")
        n = spec.partitions or 1
        if n > MAX_PARTITIONS:
            raise InvalidRequest(f"synthetic.partitions: {n} exceeds {MAX_PARTITIONS}")
        tasks = tuple(SyntheticTask(spec.log2_constraints, spec.seed + p) for p in range(n))
        return JobPlan(synthetic_circuit_id(spec.log2_constraints), tasks)

    def key_source(self, circuit_id: str, param_cache: Path) -> KeySource | None:
        m = re.fullmatch(r"synthetic-k(\d+)", circuit_id)
        if not m or not SYNTHETIC_LOG2_RANGE[0] <= int(m.group(1)) <= SYNTHETIC_LOG2_RANGE[1]:
            return None
        path = param_cache / f"{circuit_id}.params"
        return KeySource(circuit_id, path, SyntheticKeyGenerator(int(m.group(1)), path))


# ---------------------------------------------------------------------------------------------
# Registered circuits: <id>.r1cs (circom) + <id>.params in the param cache


@functools.lru_cache(maxsize=8)
def _read_r1cs_cached(path: str, mtime_ns: int):
    from cuzk_plugin.circuit.circom import read_r1cs

    return read_r1cs(path)


@dataclass(frozen=True)
class CircomWitnessTask:
    """Synthesize a circom witness (.wtns bytes) against a circom .r1cs."""

    r1cs_path: Path
    wtns: bytes

    def synthesize(self) -> tuple[SynthesizedPartition, list[int]]:
        from cuzk_plugin.bls12_381.fields import limbs_to_ints
        from cuzk_plugin.circuit.circom import read_wtns, split_witness
        from cuzk_plugin.circuit.r1cs import synthesize

        r1cs, _info = _read_r1cs_cached(str(self.r1cs_path), self.r1cs_path.stat().st_mtime_ns)
        with tempfile.NamedTemporaryFile(suffix=".wtns") as fh:
            fh.write(self.wtns)
            fh.flush()
            witness = read_wtns(fh.name)
        inputs, aux = split_witness(r1cs, witness)
        return synthesize(r1cs, inputs, aux), limbs_to_ints(inputs)[1:]


class RegisteredCircuitProvider:
    """REGISTERED_CIRCUIT: any circom circuit whose `.r1cs` and `.params` sit in the param cache."""

    kinds = (ProofKind.REGISTERED_CIRCUIT,)

    def plan(self, request: ProofRequest, param_cache: Path) -> JobPlan:
        spec = request.registered
        if spec is None:
            raise InvalidRequest("registered: a REGISTERED_CIRCUIT job needs the 'registered' field (circuit_id, witnesses)")
        if not _CIRCUIT_ID.fullmatch(spec.circuit_id):
            raise InvalidRequest(f"registered.circuit_id: {spec.circuit_id!r} is not a file stem ([A-Za-z0-9._-], no '/')")
        if not spec.witnesses:
            raise InvalidRequest("registered.witnesses: empty (one .wtns per partition)")
        if len(spec.witnesses) > MAX_PARTITIONS:
            raise InvalidRequest(f"registered.witnesses: {len(spec.witnesses)} partitions exceed {MAX_PARTITIONS}")
        for i, w in enumerate(spec.witnesses):
            if not w.startswith(b"wtns"):
                raise InvalidRequest(f"registered.witnesses[{i}]: not a circom .wtns file (bad magic {w[:4]!r})")
        r1cs, params = (param_cache / f"{spec.circuit_id}{ext}" for ext in (".r1cs", ".params"))
        missing = [p.name for p in (r1cs, params) if not p.is_file()]
        if missing:
            raise CircuitUnavailable(f"circuit '{spec.circuit_id}' is not registered: {', '.join(missing)} missing in {param_cache}")
        return JobPlan(spec.circuit_id, tuple(CircomWitnessTask(r1cs, w) for w in spec.witnesses))

    def key_source(self, circuit_id: str, param_cache: Path) -> KeySource | None:
        if not _CIRCUIT_ID.fullmatch(circuit_id):
            return None
        path = param_cache / f"{circuit_id}.params"
        return KeySource(circuit_id, path) if path.is_file() else None


# ---------------------------------------------------------------------------------------------
# Filecoin kinds: validated here, proved by a provider that plugs in later

SECTOR_SIZES = {2 << 10: "2k", 8 << 20: "8m", 512 << 20: "512m", 32 << 30: "32g", 64 << 30: "64g"}
_SEAL_SIZES = {"2KiB": "2k", "8MiB": "8m", "512MiB": "512m", "32GiB": "32g", "64GiB": "64g"}
_POST_SIZES = ("2k", "8m", "512m", "32g", "64g")


class FilecoinCircuitPending:
    """PoRep, SnapDeals, WindowPoSt and WinningPoSt until their circuits are plugged in.

    Checks the request as Curio sends it (so bad input is refused the same way it will be
    later), names the circuit it would need, then answers :class:`CircuitUnavailable`: the job
    FAILS with that message, never with a fake proof.
    """

    kinds = (ProofKind.POREP_SEAL_COMMIT, ProofKind.SNAP_DEALS_UPDATE, ProofKind.WINDOW_POST_PARTITION, ProofKind.WINNING_POST)

    def plan(self, request: ProofRequest, param_cache: Path) -> JobPlan:
        circuit_id, what = self.circuit_for(request)
        raise CircuitUnavailable(
            f"circuit {circuit_id} ({what}) is not available in this build: no circuit provider for "
            f"{request.kind.name} is registered (entry-point group '{PROVIDER_GROUP}')"
        )

    def key_source(self, circuit_id: str, param_cache: Path) -> KeySource | None:
        return None

    @staticmethod
    def circuit_for(request: ProofRequest) -> tuple[str, str]:
        """(circuit id, description) from a validated Filecoin request; raises InvalidRequest."""
        if request.kind == ProofKind.POREP_SEAL_COMMIT:
            return _porep_circuit(request)
        if request.kind == ProofKind.SNAP_DEALS_UPDATE:
            if not request.vanilla_proofs:
                raise InvalidRequest("vanilla_proofs: empty (SnapDeals needs one vanilla proof per partition)")
            for name in ("comm_r_old", "comm_r_new", "comm_d_new"):
                if len(getattr(request, name)) != 32:
                    raise InvalidRequest(f"{name}: expected 32 bytes, got {len(getattr(request, name))}")
            size = _size_label(request.registered_proof, range(0, 5), "SnapDeals")
            return f"snap-{size}", "SnapDeals update"
        if not request.vanilla_proofs or any(len(v) == 0 for v in request.vanilla_proofs):
            raise InvalidRequest("vanilla_proofs: empty (PoSt needs the per-sector vanilla proofs)")
        if len(request.randomness) != 32:
            raise InvalidRequest(f"randomness: expected 32 bytes, got {len(request.randomness)}")
        if request.kind == ProofKind.WINNING_POST:
            return f"winning-{_size_label(request.registered_proof, range(0, 5), 'WinningPoSt')}", "WinningPoSt"
        return f"wpost-{_size_label(request.registered_proof, range(5, 15), 'WindowPoSt')}", "WindowPoSt partition"


def _size_label(registered_proof: int, allowed: range, what: str) -> str:
    if registered_proof not in allowed:
        raise InvalidRequest(f"registered_proof: {registered_proof} is not a {what} proof type ({allowed.start}-{allowed.stop - 1})")
    return _POST_SIZES[registered_proof % 5]


def _porep_circuit(request: ProofRequest) -> tuple[str, str]:
    raw = request.vanilla_proof
    if not raw:
        raise InvalidRequest("vanilla_proof: empty (PoRep needs the C1 envelope {SectorNum, Phase1Out, SectorSize})")
    try:
        envelope = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidRequest(f"vanilla_proof: not a JSON C1 envelope ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(envelope, dict) or not isinstance(envelope.get("Phase1Out"), str):
        raise InvalidRequest("vanilla_proof: the C1 envelope must be an object with a base64 string 'Phase1Out'")
    try:
        c1 = json.loads(base64.b64decode(envelope["Phase1Out"], validate=True))
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequest(f"vanilla_proof.Phase1Out: not base64 of the C1 output JSON ({exc})") from None
    name = c1.get("registered_proof") if isinstance(c1, dict) else None
    m = re.fullmatch(r"StackedDrg(2KiB|8MiB|512MiB|32GiB|64GiB)V1(_1|_1_Feat_SyntheticPoRep|_2_Feat_NonInteractivePoRep)?", str(name))
    if not m:
        raise InvalidRequest(f"vanilla_proof.Phase1Out.registered_proof: unknown seal proof {name!r}")
    return f"porep-{_SEAL_SIZES[m.group(1)]}", f"PoRep SealCommit {name}"


# ---------------------------------------------------------------------------------------------


class ProviderRegistry:
    """Providers by proof kind; built-ins first, then entry-point plug-ins (which replace them)."""

    def __init__(self, providers: list[CircuitProvider] | None = None, *, load_plugins: bool = True):
        self._by_kind: dict[ProofKind, CircuitProvider] = {}
        for provider in providers or [FilecoinCircuitPending(), SyntheticProvider(), RegisteredCircuitProvider()]:
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
                log.exception("circuit provider plug-in '%s' failed to load; its kinds keep the built-in answer", ep.name)

    def plan(self, request: ProofRequest, param_cache: Path) -> JobPlan:
        provider = self._by_kind.get(request.kind)
        if provider is None:
            known = ", ".join(f"{k.name}={int(k)}" for k in sorted(self._by_kind))
            raise InvalidRequest(f"proof_kind: {int(request.kind)} is not a kind this daemon proves ({known})")
        return provider.plan(request, param_cache)

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
