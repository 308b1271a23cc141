"""SYNTHETIC jobs: Filecoin-shaped partitions of 2^k constraints with random witnesses (benchmarks, demo)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cuzk_plugin.engine.circuits import MAX_PARTITIONS, JobPlan, KeySource
from cuzk_plugin.engine.errors import InvalidRequest
from cuzk_plugin.engine.types import ProofKind, ProofRequest

if TYPE_CHECKING:
    from cuzk_plugin.formats.partition import SynthesizedPartition

__all__ = ["SYNTHETIC_LOG2_RANGE", "SyntheticProvider", "SyntheticTask", "SyntheticKeyGenerator", "synthetic_circuit_id"]

SYNTHETIC_LOG2_RANGE = (2, 20)


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

        r1cs, inputs, aux = filecoin_like(1 << self.log2, seed=self.seed).finish_witness()
        return synthesize(r1cs, inputs, aux), limbs_to_ints(inputs)[1:]


@dataclass(frozen=True)
class SyntheticKeyGenerator:
    """Our own (test-only, single-party) key for the synthetic circuit of 2^log2 constraints."""

    log2: int
    path: Path

    @property
    def log2_constraints(self) -> int:
        """The key's size, checked by the engine against [srs] max_generated_log2 before generating."""
        return self.log2

    def __call__(self) -> None:
        from cuzk_plugin.circuit.examples import filecoin_like
        from cuzk_plugin.groth16.setup import setup

        shape, _, _ = filecoin_like(1 << self.log2, seed=0).finish()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        setup(shape).save(self.path)


class SyntheticProvider:
    """SYNTHETIC: n partitions of 2^k constraints with random Filecoin-like witnesses."""

    kinds: tuple[ProofKind, ...] = (ProofKind.SYNTHETIC,)

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
        m = re.fullmatch(r"synthetic-k([0-9]+)", circuit_id)
        if not m or not SYNTHETIC_LOG2_RANGE[0] <= int(m.group(1)) <= SYNTHETIC_LOG2_RANGE[1]:
            return None
        if circuit_id != synthetic_circuit_id(int(m.group(1))):
            return None  # one name a key: "synthetic-k04" is not another file for synthetic-k4
        path = param_cache / f"{circuit_id}.params"
        return KeySource(circuit_id, path, SyntheticKeyGenerator(int(m.group(1)), path))
