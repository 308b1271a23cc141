"""REGISTERED_CIRCUIT jobs: a circom circuit whose `.r1cs` and `.params` sit in the param cache."""

from __future__ import annotations

import functools
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cuzk_plugin.engine.circuits import MAX_PARTITIONS, JobPlan, KeySource
from cuzk_plugin.engine.errors import CircuitUnavailable, InvalidRequest
from cuzk_plugin.engine.types import ProofKind, ProofRequest

if TYPE_CHECKING:
    from cuzk_plugin.formats.partition import SynthesizedPartition

__all__ = ["RegisteredCircuitProvider", "CircomWitnessTask"]

_CIRCUIT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


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

    kinds: tuple[ProofKind, ...] = (ProofKind.REGISTERED_CIRCUIT,)

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
