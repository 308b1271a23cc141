"""The WindowPoSt and WinningPoSt circuit provider for the engine.

A request (Curio's WINDOW_POST_PARTITION / WINNING_POST, post-facts.md section 7) is decoded
and checked once in :meth:`PostCircuitProvider.plan`, into limb arrays; a worker process
receives those arrays and computes the partition's witness without synthesis
(:mod:`cuzk_plugin.filecoin.post.witness_slots`), split over ``[synthesis] witness_processes``
forked processes for a large partition, straight into the shared-memory block the engine maps:
the backend evaluates a, b, c from the circuit's pre-compiled file (``pce-<id>`` in the param
cache, recorded from the blank circuit on first use). ``CUZK_DISABLE_PCE=1`` falls back to the reference synthesis. Both kinds keep their default
priorities (WinningPoSt CRITICAL, WindowPoSt HIGH; engine/types.py) unless the request sets
one, and the engine self-verifies the proof before it is returned.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from cuzk_plugin.adapters.curio.keys import BlankCircuitKey, CircuitFile, filecoin_key_source, pce_enabled, plan_filecoin_key
from cuzk_plugin.adapters.curio.post.job import PostJob, PostPartition, PostRequestError
from cuzk_plugin.adapters.curio.post.vanilla import PostDecodeError
from cuzk_plugin.engine.circuits import JobPlan, KeySource
from cuzk_plugin.engine.errors import InvalidRequest
from cuzk_plugin.engine.synthesis import output_block
from cuzk_plugin.engine.types import ProofKind, ProofRequest
from cuzk_plugin.engine.workers import die_with_parent, task_processes
from cuzk_plugin.filecoin.post.params import WINDOW_SECTORS, PostKind, post_circuit_id, post_shape

__all__ = ["PostCircuitProvider", "PostPartitionTask", "PostKeyGenerator", "post_test_key", "TEST_KEY_CIRCUITS",
           "POST_CIRCUITS", "ensure_post_pce", "extract_post_pce"]

log = logging.getLogger(__name__)

#: Every PoSt circuit id: (kind, sector size).
POST_CIRCUITS = {post_circuit_id(k, size): (k, size) for k in PostKind for size in WINDOW_SECTORS}

#: Test keys ([srs] allow_test_keys) made as files here; the other sizes' test keys are made on
#: each lane from the pre-compiled circuit (:func:`post_test_key_circuit`).
TEST_KEY_CIRCUITS = {"winning-2k": (PostKind.WINNING, 2 << 10), "wpost-2k": (PostKind.WINDOW, 2 << 10)}

_KINDS = {ProofKind.WINNING_POST: PostKind.WINNING, ProofKind.WINDOW_POST_PARTITION: PostKind.WINDOW}


def extract_post_pce(circuit_id: str, path) -> str:
    """Record the PoSt circuit ``circuit_id`` (e.g. ``winning-32g``) into ``path``; the digest."""
    from cuzk_plugin.circuit.pce_record import record_circuit
    from cuzk_plugin.filecoin.post.circuit import blank_slots, synthesize_post

    kind, size = POST_CIRCUITS[circuit_id]
    shape = post_shape(kind, size)
    return record_circuit(lambda cs: synthesize_post(cs, shape, blank_slots(shape)), path, circuit_id)


def ensure_post_pce(circuit_id: str, param_cache) -> str:
    """The path of ``circuit_id``'s pre-compiled circuit in ``param_cache`` (recorded on first use)."""
    from cuzk_plugin.formats.pce import ensure_pce

    return ensure_pce(circuit_id, param_cache, extract_post_pce)


@dataclass(frozen=True)
class PostPartitionTask:
    """The PoSt partition the plan decoded and checked (picklable: its limb arrays, ~54 MB for a
    32 GiB Window partition, so the worker decodes nothing); ``pce_cache`` is the param cache
    holding (or to hold) the pre-compiled circuit, None for the reference path."""

    partition: PostPartition
    pce_cache: str | None = None

    def synthesize(self):
        """(WitnessPartition on the mapped pre-compiled circuit, or SynthesizedPartition on the
        reference path; public inputs without ONE); PostWitnessError if the proofs are corrupt."""
        from cuzk_plugin.filecoin.post.witness_pool import MIN_PATHS_PER_PROCESS, shared_post_pool
        from cuzk_plugin.filecoin.post.witness_slots import post_layout
        from cuzk_plugin.formats.partition import WitnessPartition
        from cuzk_plugin.formats.pce import MappedCircuit

        part = self.partition
        if self.pce_cache is None or not pce_enabled():
            return part.synthesize()
        circuit = MappedCircuit.open(ensure_post_pce(part.circuit_id, self.pce_cache))
        paths = part.slots_values.rows * part.shape.challenges_per_slot
        processes = min(task_processes(), paths // MIN_PATHS_PER_PROCESS)
        pool = shared_post_pool(processes, on_fork=die_with_parent) if processes > 1 else None
        # the aux straight into the block the engine maps: 4.06 GB for a 32 GiB Window partition, never copied
        into = output_block(post_layout(part.shape).aux_nbytes)
        inputs, aux = part.assignment(pool=pool, into=into)
        return WitnessPartition(circuit, inputs, aux), list(part.public_inputs)


@dataclass(frozen=True)
class PostKeyGenerator(BlankCircuitKey):
    """A TEST key for a small PoSt circuit (see :class:`BlankCircuitKey`)."""

    kind: PostKind
    sector_size: int
    path: Path

    def synthesize_blank(self, cs) -> None:
        from cuzk_plugin.filecoin.post.circuit import blank_slots, synthesize_post

        shape = post_shape(self.kind, self.sector_size)
        synthesize_post(cs, shape, blank_slots(shape))


def post_test_key(circuit_id: str, path: Path) -> PostKeyGenerator | None:
    """The generator of a PoSt test key ([srs] allow_test_keys), where the size allows one."""
    spec = TEST_KEY_CIRCUITS.get(circuit_id)
    return PostKeyGenerator(spec[0], spec[1], path) if spec else None


def post_test_key_circuit(circuit_id: str, param_cache: Path) -> CircuitFile | None:
    """Sizes without a file test key get one made on each lane from the pre-compiled circuit."""
    if circuit_id in TEST_KEY_CIRCUITS or circuit_id not in POST_CIRCUITS or not pce_enabled():
        return None
    return CircuitFile(ensure_post_pce, circuit_id, str(param_cache))


def warm_post_worker() -> None:
    """Run once in each synthesis worker as it starts: what a PoSt partition would otherwise
    compute on its first run there (the native Poseidon of arities 2 and 8 and their
    constants, the Winning layouts of 32 and 64 GiB): ~0.8 s on the H200 host, more than a
    WinningPoSt proof's 0.5 s."""
    from cuzk_plugin.filecoin.post.witness_slots import post_layout
    from cuzk_plugin.filecoin.witness.poseidon_cpu import native_poseidon

    for arity in (2, 8):
        native_poseidon(arity)
    for size in (32 << 30, 64 << 30):
        post_layout(post_shape(PostKind.WINNING, size))


class PostCircuitProvider:
    """WINDOW_POST_PARTITION and WINNING_POST: the Fallback PoSt circuit of every sector size,
    proved with Filecoin's parameter files (a test key only with ``allow_test_keys``)."""

    kinds: tuple[ProofKind, ...] = (ProofKind.WINDOW_POST_PARTITION, ProofKind.WINNING_POST)
    #: See :meth:`ProviderRegistry.worker_warmers`.
    warm_worker = staticmethod(warm_post_worker)

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
                                       make_test_key=post_test_key, test_key_circuit=post_test_key_circuit)
        task = PostPartitionTask(job.partition, str(param_cache) if param_cache is not None else None)
        return JobPlan(circuit_id, (task,))

    def key_source(self, circuit_id: str, param_cache: Path | None) -> KeySource | None:
        return filecoin_key_source(circuit_id, param_cache, kinds=("wpost", "winning"),
                                   allow_test_keys=self.allow_test_keys, make_test_key=post_test_key,
                                   test_key_circuit=post_test_key_circuit)
