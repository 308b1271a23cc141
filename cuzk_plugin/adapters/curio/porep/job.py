"""PoRep jobs from Curio: a C1 output (or the envelope around it) becomes one checked witness
per partition, its public inputs, and on demand the synthesized partition the prover takes.

    job = porep_partitions(envelope_or_c1_bytes)
    for k in range(job.num_partitions):
        part, public_inputs = job.synthesize(k)   # SynthesizedPartition, inputs without ONE
        inputs, aux = job.assignment(k)           # the witness alone, for a pre-compiled circuit

The pre-compiled circuit of a sector size (:func:`ensure_porep_pce`) is recorded once from the
same circuit code into the param cache, and checked (digest, sizes) before it is used.

The public inputs are computed as the verifier computes them (challenges as the proof's variant
derives them: from replica_id and seed, synthetic selection, or NI from comm_r; parents from
the graph), not read from the C1, and the C1 is checked against them.
"""

from __future__ import annotations

import itertools
import logging
import time
from concurrent.futures import BrokenExecutor, Executor
from dataclasses import dataclass
from functools import partial
from multiprocessing.shared_memory import SharedMemory
from typing import TYPE_CHECKING

from cuzk_plugin.adapters.curio import json_pieces
from cuzk_plugin.adapters.curio.porep.c1 import (
    C1Envelope,
    C1EnvelopeHeader,
    C1Error,
    C1Output,
    c1_from_json,
    c1_in_envelope,
    check_envelope_size,
    decode_json,
    envelope_from_json,
    plain_envelope,
)
from cuzk_plugin.adapters.curio.porep.partition_check import (
    C1Context,
    PartitionCheck,
    PartitionChecker,
    Roots,
    check_partition_text,
    field_element,
)
from cuzk_plugin.bls12_381.fields import limbs_to_objects
from cuzk_plugin.circuit.fast_cs import FastConstraintSystem, gc_paused
from cuzk_plugin.circuit.pce_record import record_circuit
from cuzk_plugin.circuit.r1cs import synthesize as synthesize_r1cs
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.filecoin.params import PorepParams, porep_params
from cuzk_plugin.filecoin.porep.circuit import PartitionWitness, blank_partition, synthesize_partition
from cuzk_plugin.filecoin.porep.witness import partition_assignment
from cuzk_plugin.filecoin.poseidon import poseidon_hash
from cuzk_plugin.filecoin.proofs import RegisteredSealProof
from cuzk_plugin.formats.pce import ensure_pce

if TYPE_CHECKING:
    from cuzk_plugin.filecoin.porep.witness_pool import WitnessPool

__all__ = ["PorepJob", "PorepPartition", "porep_partitions", "porep_circuit_id", "WitnessError", "ensure_porep_pce",
           "extract_porep_pce", "PCE_CIRCUITS"]

log = logging.getLogger(__name__)


class WitnessError(CircuitError):
    """The C1's values do not satisfy the circuit (e.g. a corrupted Merkle path)."""


_SIZE_IDS = {2 << 10: "2k", 8 << 20: "8m", 512 << 20: "512m", 32 << 30: "32g", 64 << 30: "64g"}


#: Circuit ids with a pre-compiled circuit, and their sector sizes.
PCE_CIRCUITS = {f"porep-{name}": size for size, name in _SIZE_IDS.items()}


def porep_circuit_id(proof: RegisteredSealProof) -> str:
    """The engine's circuit id (``porep-2k`` ... ``porep-64g``): every API version and variant
    (interactive, synthetic, NI) of one sector size shares the v28 PoRep circuit."""
    return f"porep-{_SIZE_IDS[proof.sector_size]}"


@dataclass(frozen=True)
class PorepPartition:
    """One checked partition of a C1: what a synthesis worker needs, and small (a 32 GiB
    partition pickles to ~0.9 MB; its C1 is ~50 MB of JSON and takes seconds to parse)."""

    params: PorepParams
    index: int
    witness: PartitionWitness
    public_inputs: list[int]  #: without ONE

    def circuit(self):
        """(R1CS, inputs, aux). Every constraint is checked as it is enforced; the first one the
        C1's values violate raises :class:`WitnessError` naming the part of the circuit it
        belongs to, before the rest is synthesized."""
        k = self.index
        cs = FastConstraintSystem(check_as_you_go=True)
        regions: list[tuple[int, str]] = []
        with gc_paused():
            try:
                synthesize_partition(cs, self.params, self.witness, regions=regions)
            except CircuitError as exc:
                bad = getattr(exc, "constraint", None)
                if bad is None:
                    raise
                where = next((name for start, name in reversed(regions) if start <= bad), "partition header")
                raise WitnessError(
                    f"partition {k}: the C1's values violate constraint {bad} ({where}); the C1 is "
                    f"corrupted or inconsistent, nothing was proved") from None
            r1cs, inputs, aux = cs.finish()
        self._check_inputs(inputs, "synthesized")
        return r1cs, inputs, aux

    def assignment(self, *, pool: WitnessPool | None = None, into: SharedMemory | None = None):
        """(inputs, aux), (n, 4) uint64 canonical with ONE first, in the recorded circuit's
        variable order, computed without synthesis (by ``pool``'s processes if given; the aux at
        the start of ``into`` if given); a C1 whose values violate the circuit raises (naming
        the partition, challenge and first failing constraint)."""
        with gc_paused():
            if pool is not None:
                inputs, aux = pool.assignment(self.witness, partition=self.index, into=into)
            else:
                inputs, aux = partition_assignment(self.params, self.witness, partition=self.index, into=into)
        self._check_inputs(inputs, "witness's")
        return inputs, aux

    def synthesize(self):
        """(SynthesizedPartition, public inputs without ONE), witness checked."""
        r1cs, inputs, aux = self.circuit()
        return synthesize_r1cs(r1cs, inputs, aux, check=False), list(self.public_inputs)

    def _check_inputs(self, inputs, what: str) -> None:
        if [int(x) for x in limbs_to_objects(inputs[1:])] != self.public_inputs:
            raise WitnessError(f"partition {self.index}: the {what} public inputs differ from the verifier's")


class PorepJob:
    """A checked PoRep C1: per-partition witnesses and public inputs."""

    def __init__(self, seal_proof: RegisteredSealProof, partitions: list[PorepPartition], *,
                 sector_id: int | None = None):
        self.seal_proof = seal_proof
        self.sector_id = sector_id
        self._partitions = partitions

    @property
    def circuit_id(self) -> str:
        return porep_circuit_id(self.seal_proof)

    @property
    def params(self) -> PorepParams:
        return self._partitions[0].params

    @property
    def num_partitions(self) -> int:
        return len(self._partitions)

    def public_inputs(self, k: int) -> list[int]:
        """Partition k's public inputs in rust-fil-proofs' order, ONE excluded."""
        return list(self._partitions[k].public_inputs)

    def witness(self, k: int) -> PartitionWitness:
        return self._partitions[k].witness

    def partition(self, k: int) -> PorepPartition:
        return self._partitions[k]

    # -- synthesis --------------------------------------------------------------------------

    def circuit(self, k: int):
        """(R1CS, inputs, aux) of partition k (:meth:`PorepPartition.circuit`)."""
        return self._partitions[k].circuit()

    def assignment(self, k: int, *, pool: WitnessPool | None = None, into: SharedMemory | None = None):
        """(inputs, aux) of partition k (:meth:`PorepPartition.assignment`)."""
        return self._partitions[k].assignment(pool=pool, into=into)

    def synthesize(self, k: int):
        """(SynthesizedPartition, public inputs without ONE) of partition k, witness checked."""
        return self._partitions[k].synthesize()


#: The largest C1 envelope accepted: a 64 GiB sector's C1 is about 50 MB of JSON, its envelope
#: (base64) about 67 MB; twice that leaves room for formatting.
MAX_C1_BYTES = 128 << 20


#: Leading whitespace looked through for the opening '{' of a C1 (formatted JSON has a few bytes).
_C1_HEAD_BYTES = 4096


def _check_c1_shape(raw: bytes | memoryview | str) -> None:
    """Refuse at once what cannot be a C1 (Curio's envelope and a C1 output are JSON objects):
    a flat 100 MB array would otherwise be decoded (seconds, gigabytes) before being refused."""
    head = raw[:_C1_HEAD_BYTES]
    text = head.encode("utf-8", "replace") if isinstance(head, str) else bytes(head)
    first = text.lstrip(b" \t\r\n")[:1]
    if first != b"{":
        seen = f"start with {first.decode('latin-1')!r}" if first else f"have no '{{' in their first {len(text):,}"
        raise C1Error("$", f"not a JSON C1 envelope or C1 output (both are JSON objects, {{...}}): these "
                           f"{len(raw):,} bytes {seen}; refused before decoding")


#: A C1 at least this large has its partitions checked in planning processes where the caller
#: gives a pool (a 32 GiB C1 is ~49 MB, a partition ~4.9 MB of it; a 512 MiB C1 ~1 MB in all).
PARALLEL_C1_BYTES = 8 << 20


def porep_partitions(raw: bytes | memoryview | str, *, pool: Executor | None = None) -> PorepJob:
    """A PoRep job from Curio's C1 envelope (``{"SectorNum", "Phase1Out", "SectorSize"}``) or
    from raw C1 JSON bytes; malformed input raises :class:`C1Error` with the field's JSON path.
    ``pool``: processes that check a large C1's partitions side by side (each decodes its own
    part of the JSON); what they refuse is checked again here, in order, which names it."""
    started = time.perf_counter()
    if not raw:
        raise C1Error("$", "empty (PoRep needs Curio's C1 envelope {SectorNum, Phase1Out, SectorSize} or C1 JSON)")
    if len(raw) > MAX_C1_BYTES:  # bounded before JSON expands it (a parsed C1 takes ~20x its bytes)
        raise C1Error("$", f"{len(raw):,} bytes, more than a C1 of any sector size can be ({MAX_C1_BYTES:,})")
    _check_c1_shape(raw)
    # A memoryview (the request body as the server split it) is read where it lies, only its
    # pieces copied for json.loads: a copy of a 65-100 MB body held the GIL for 50-90 ms (0.2 s
    # with other threads about) while other clients' calls waited.
    with gc_paused():  # a 32 GiB C1 is millions of small lists: no GC pass over them while they live
        plain = plain_envelope(raw) if not isinstance(raw, str) else None
        if pool is not None and len(raw) >= PARALLEL_C1_BYTES:
            job = _checked_side_by_side(raw, plain, pool, started)
            if job is not None:
                return job
        if plain is not None:
            c1, sector_id, prefix = c1_in_envelope(*plain), plain[0].SectorNum, "$.Phase1Out"
        else:
            top = decode_json(raw)
            if _is_envelope(top):
                env, c1 = envelope_from_json(top)
                sector_id, prefix = env.SectorNum, "$.Phase1Out"
            else:
                c1, sector_id, prefix = c1_from_json(top), None, "$"
            del top  # freed while GC is still paused: the next pass sees only the job's objects
        ctx = _context(c1, prefix)
        checker, roots = PartitionChecker(ctx), Roots()
        checks = [checker.check(k, proofs, roots) for k, proofs in enumerate(c1.partitions)]
        return _assembled(ctx, checks, roots, sector_id)


def _is_envelope(top) -> bool:
    return isinstance(top, dict) and ("Phase1Out" in top or "SectorNum" in top)


def _context(c1: C1Output, prefix: str) -> C1Context:
    """The C1-wide checks, in the order they name a problem (the seed, the three values as field
    elements, the partition count), and what checking a partition needs."""
    seal_proof = c1.seal_proof
    # NI-PoRep proves more partitions of the same circuit; synthetic PoRep the interactive
    # count (porep-variants-facts.md sections 2 and 6)
    params = porep_params(seal_proof.sector_size, non_interactive=not seal_proof.interactive)
    if not any(c1.seed):
        raise C1Error(f"{prefix}.seed", "all zero (C2 refuses a zero seed for every PoRep variant)")
    for name in ("replica_id", "comm_d", "comm_r"):
        field_element(getattr(c1, name), f"{prefix}.{name}")
    ctx = C1Context(seal_proof, params, c1.replica_id, c1.comm_d, c1.comm_r, c1.seed, prefix)
    if len(c1.partitions) != params.partitions:
        raise C1Error(ctx.base, f"{len(c1.partitions)} partitions, {c1.registered_proof} has {params.partitions}")
    return ctx


def _assembled(ctx: C1Context, checks: list[PartitionCheck], roots: Roots, sector_id: int | None) -> PorepJob:
    """The job from its checked partitions; ``roots``: every challenge's (checked alike)."""
    comm_r_last, comm_c = roots.comm_r_last, roots.comm_c
    if comm_c is None or comm_r_last is None:  # every partition holds challenges (counts checked)
        raise C1Error(ctx.base, "no vanilla proofs")
    replica_id, comm_d, comm_r = (int.from_bytes(v, "little") for v in (ctx.replica_id, ctx.comm_d, ctx.comm_r))
    if poseidon_hash([comm_c, comm_r_last]) != comm_r:
        raise C1Error(f"{ctx.prefix}.comm_r", "is not Poseidon(comm_c, comm_r_last) of the vanilla proofs")
    witness = partial(PartitionWitness, replica_id, comm_d, comm_r, comm_r_last, comm_c)
    partitions = [PorepPartition(ctx.params, k, witness(c.challenges), c.inputs) for k, c in enumerate(checks)]
    return PorepJob(ctx.seal_proof, partitions, sector_id=sector_id)


def _partition_text(path: json_pieces.JsonPath) -> bool:
    """A partition's list in a C1 (``vanilla_proofs.<name>[k]``): left as text for a process."""
    return len(path) == 3 and path[0] == "vanilla_proofs" and isinstance(path[2], int)


def _checked_side_by_side(text: bytes | memoryview | str, plain: tuple[C1EnvelopeHeader, bytes] | None, pool: Executor,
                          started: float | None = None) -> PorepJob | None:
    """The job, each partition decoded and checked in a process of ``pool``; None where anything
    is not as a well-formed C1's (the caller then checks it in order, naming the problem).
    ``plain``: ``text`` read as a plain envelope (:func:`plain_envelope`), or None; ``started``:
    when the caller got the body (perf_counter; default: now)."""
    t0 = time.perf_counter()
    started = t0 if started is None else started
    try:
        if plain is None and not isinstance(text, str) and json_pieces.find(text, b'"vanilla_proofs"') < 0:
            return None  # neither a plain envelope nor a C1: decoded once, in turn (a hostile body too)
        sector_id, prefix, env = None, "$", None
        if plain is not None:
            env, top = plain[0], decode_json(plain[1], keep_raw=_partition_text)
        else:
            top = decode_json(text, keep_raw=_partition_text)
            if _is_envelope(top):
                whole = C1Envelope.model_validate(top)
                env, top = whole.header(), decode_json(whole.c1_bytes(), keep_raw=_partition_text)
        if env is not None:
            sector_id, prefix = env.SectorNum, "$.Phase1Out"
        proofs = top.get("vanilla_proofs") if isinstance(top, dict) else None
        if not isinstance(proofs, dict) or len(proofs) != 1:
            return None
        (name, parts), = proofs.items()
        if not isinstance(parts, list) or not all(isinstance(p, json_pieces.RawJSON) for p in parts):
            return None
        c1 = c1_from_json({**top, "vanilla_proofs": {name: [[] for _ in parts]}}, prefix=prefix)
        if env is not None:
            check_envelope_size(env, c1)
        ctx = _context(c1, prefix)
        t1 = time.perf_counter()
        results = list(pool.map(check_partition_text, itertools.repeat(ctx), range(len(parts)), parts))
        checks = [c for c in results if c is not None]
        if len(checks) != len(parts) or any(c.roots != checks[0].roots for c in checks):
            return None
        t2 = time.perf_counter()
        job = _assembled(ctx, checks, checks[0].roots, sector_id)
        # The plan is on every proof's critical path: where its time goes, for the operator's log.
        log.info("C1 of %s checked side by side: read in %.3fs, split in %.3fs, %d partitions checked in %.3fs, "
                 "assembled in %.3fs", ctx.seal_proof.name, t0 - started, t1 - t0, len(parts), t2 - t1,
                 time.perf_counter() - t2)
        return job
    except (ValueError, TypeError):  # C1Error, pydantic's ValidationError
        return None
    except BrokenExecutor as exc:
        log.warning("the C1's partitions are checked in this thread: the planning processes failed (%s)", exc)
        return None


def extract_porep_pce(circuit_id: str, path, *, progress_every_s: float = 10.0) -> str:
    """Record the PoRep circuit ``circuit_id`` (e.g. ``porep-32g``) into ``path``; the digest."""
    if circuit_id not in PCE_CIRCUITS:
        raise ValueError(f"no pre-compiled PoRep circuit '{circuit_id}' (known: {', '.join(PCE_CIRCUITS)})")
    params = porep_params(PCE_CIRCUITS[circuit_id])
    t0 = time.perf_counter()
    last = [t0]

    def progress(rows: int) -> None:
        now = time.perf_counter()
        if now - last[0] >= progress_every_s:
            last[0] = now
            log.info("pce %s: %d constraints recorded (%.0fs)", circuit_id, rows, now - t0)

    with gc_paused():
        return record_circuit(lambda cs: synthesize_partition(cs, params, blank_partition(params)), path,
                              circuit_id, progress=progress)


def ensure_porep_pce(circuit_id: str, param_cache) -> str:
    """The path of ``circuit_id``'s pre-compiled circuit in ``param_cache`` (recorded on first use)."""
    return ensure_pce(circuit_id, param_cache, extract_porep_pce)
