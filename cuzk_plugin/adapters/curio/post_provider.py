"""The WindowPoSt and WinningPoSt circuit provider for the engine.

A request (Curio's WINDOW_POST_PARTITION / WINNING_POST, post-facts.md section 7) is decoded
and checked once in :meth:`PostCircuitProvider.plan`; its one partition is decoded again and
synthesized in a worker process from the same fields. Both kinds keep their default
priorities (WinningPoSt CRITICAL, WindowPoSt HIGH; engine/types.py) unless the request sets
one, and the engine self-verifies the proof before it is returned.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cuzk_plugin.adapters.curio.post import PostDecodeError
from cuzk_plugin.adapters.curio.post_job import PostJob, PostRequestError
from cuzk_plugin.engine.circuits import JobPlan, KeySource
from cuzk_plugin.engine.errors import InvalidRequest
from cuzk_plugin.engine.types import ProofKind, ProofRequest
from cuzk_plugin.filecoin.post_proofs import PostKind

__all__ = ["PostCircuitProvider", "PostPartitionTask", "PostKeyGenerator", "OWN_SETUP_CIRCUITS"]

#: Our own (test-only) keys are generated for these circuits; others must be in the param cache.
OWN_SETUP_CIRCUITS = {"winning-2k": (PostKind.WINNING, 2 << 10), "wpost-2k": (PostKind.WINDOW, 2 << 10)}

_KINDS = {ProofKind.WINNING_POST: PostKind.WINNING, ProofKind.WINDOW_POST_PARTITION: PostKind.WINDOW}


@dataclass(frozen=True)
class PostPartitionTask:
    """Synthesize the PoSt partition of these request fields (picklable, bytes only)."""

    registered_proof: int
    randomness: bytes
    vanilla_proofs: tuple[bytes, ...]
    partition_index: int

    def synthesize(self):
        """(SynthesizedPartition, public inputs without ONE); PostWitnessError if corrupt."""
        job = PostJob.from_fields(self.registered_proof, self.randomness, self.vanilla_proofs, self.partition_index)
        return job.synthesize()


@dataclass(frozen=True)
class PostKeyGenerator:
    """Our own single-party key for a small PoSt circuit (its blank shape through the same code)."""

    kind: PostKind
    sector_size: int
    path: Path

    def __call__(self) -> None:
        from cuzk_plugin.circuit.fast_cs import FastConstraintSystem
        from cuzk_plugin.filecoin.post_circuit import blank_slots, synthesize_post
        from cuzk_plugin.filecoin.post_proofs import post_shape
        from cuzk_plugin.groth16.setup import setup

        shape = post_shape(self.kind, self.sector_size)
        cs = FastConstraintSystem()
        synthesize_post(cs, shape, blank_slots(shape))
        r1cs, _, _ = cs.finish()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        setup(r1cs).save(self.path)


class PostCircuitProvider:
    """WINDOW_POST_PARTITION and WINNING_POST: the Fallback PoSt circuit of every sector size."""

    kinds = (ProofKind.WINDOW_POST_PARTITION, ProofKind.WINNING_POST)

    def plan(self, request: ProofRequest, param_cache: Path) -> JobPlan:
        if not request.vanilla_proofs or any(len(v) == 0 for v in request.vanilla_proofs):
            raise InvalidRequest("vanilla_proofs: empty (PoSt needs the per-sector vanilla proofs)")
        kind = _KINDS[request.kind]
        try:
            job = PostJob.from_fields(request.registered_proof, request.randomness, request.vanilla_proofs,
                                      request.partition_index, kind=kind, sector_size=request.sector_size)
        except PostRequestError as exc:
            raise InvalidRequest(str(exc)) from None
        except PostDecodeError as exc:
            raise InvalidRequest(str(exc)) from None
        task = PostPartitionTask(request.registered_proof, bytes(request.randomness),
                                 tuple(bytes(v) for v in request.vanilla_proofs), request.partition_index)
        return JobPlan(job.circuit_id, (task,))

    def key_source(self, circuit_id: str, param_cache: Path) -> KeySource | None:
        if not circuit_id.startswith(("winning-", "wpost-")):
            return None
        path = param_cache / f"{circuit_id}.params"
        if circuit_id in OWN_SETUP_CIRCUITS:
            kind, size = OWN_SETUP_CIRCUITS[circuit_id]
            return KeySource(circuit_id, path, PostKeyGenerator(kind, size, path))
        return KeySource(circuit_id, path) if path.is_file() else None
