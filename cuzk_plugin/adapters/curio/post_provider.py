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

from cuzk_plugin.adapters.curio.keys import filecoin_key_source, plan_filecoin_key
from cuzk_plugin.adapters.curio.post import PostDecodeError
from cuzk_plugin.adapters.curio.post_job import PostJob, PostRequestError
from cuzk_plugin.engine.circuits import JobPlan, KeySource
from cuzk_plugin.engine.errors import InvalidRequest
from cuzk_plugin.engine.types import ProofKind, ProofRequest
from cuzk_plugin.filecoin.post_proofs import PostKind

__all__ = ["PostCircuitProvider", "PostPartitionTask", "PostKeyGenerator", "post_test_key", "TEST_KEY_CIRCUITS"]

#: Test keys ([srs] allow_test_keys) can be made here for these circuits; others need Filecoin's files.
TEST_KEY_CIRCUITS = {"winning-2k": (PostKind.WINNING, 2 << 10), "wpost-2k": (PostKind.WINDOW, 2 << 10)}

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
    """A TEST key for a small PoSt circuit ([srs] allow_test_keys): a single-party setup of its
    blank shape through the same code; Filecoin's verifier rejects its proofs."""

    kind: PostKind
    sector_size: int
    path: Path

    @property
    def log2_constraints(self) -> int:
        """The key's domain (constraints + inputs), checked against [srs] max_generated_log2."""
        from cuzk_plugin.filecoin.gadgets.shape import ShapeConstraintSystem
        from cuzk_plugin.filecoin.post_circuit import blank_slots, synthesize_post
        from cuzk_plugin.filecoin.post_proofs import post_shape

        shape = post_shape(self.kind, self.sector_size)
        cs = ShapeConstraintSystem()
        synthesize_post(cs, shape, blank_slots(shape))
        return (cs.num_constraints + cs.num_inputs - 1).bit_length()

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


def post_test_key(circuit_id: str, path: Path) -> PostKeyGenerator | None:
    """The generator of a PoSt test key ([srs] allow_test_keys), where the size allows one."""
    spec = TEST_KEY_CIRCUITS.get(circuit_id)
    return PostKeyGenerator(spec[0], spec[1], path) if spec else None


class PostCircuitProvider:
    """WINDOW_POST_PARTITION and WINNING_POST: the Fallback PoSt circuit of every sector size,
    proved with Filecoin's parameter files (a test key only with ``allow_test_keys``)."""

    kinds = (ProofKind.WINDOW_POST_PARTITION, ProofKind.WINNING_POST)

    def __init__(self, *, allow_test_keys: bool = False):
        self.allow_test_keys = allow_test_keys

    def plan(self, request: ProofRequest, param_cache: Path | None) -> JobPlan:
        if not request.vanilla_proofs or any(len(v) == 0 for v in request.vanilla_proofs):
            raise InvalidRequest("vanilla_proofs: empty (PoSt needs the per-sector vanilla proofs)")
        kind = _KINDS[request.kind]
        try:
            job = PostJob.from_fields(request.registered_proof, request.randomness, request.vanilla_proofs,
                                      request.partition_index, kind=kind, sector_size=request.sector_size)
        except (PostRequestError, PostDecodeError) as exc:
            raise InvalidRequest(str(exc)) from None
        # The key before any synthesis: a missing Filecoin file fails the job here, naming the paths.
        circuit_id = plan_filecoin_key(job.circuit_id, param_cache, allow_test_keys=self.allow_test_keys,
                                       make_test_key=post_test_key)
        task = PostPartitionTask(request.registered_proof, bytes(request.randomness),
                                 tuple(bytes(v) for v in request.vanilla_proofs), request.partition_index)
        return JobPlan(circuit_id, (task,))

    def key_source(self, circuit_id: str, param_cache: Path | None) -> KeySource | None:
        return filecoin_key_source(circuit_id, param_cache, kinds=("wpost", "winning"),
                                   allow_test_keys=self.allow_test_keys, make_test_key=post_test_key)
