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
import json
import logging
import time
from dataclasses import dataclass
from functools import cached_property
from multiprocessing.shared_memory import SharedMemory
from typing import TYPE_CHECKING, Literal

from cuzk_plugin.adapters.curio import json_pieces
from cuzk_plugin.adapters.curio.porep.c1 import (
    C1Error,
    C1Output,
    ColumnProof,
    MerkleProof,
    c1_from_json,
    envelope_from_json,
)
from cuzk_plugin.bls12_381.fields import R, limbs_to_objects
from cuzk_plugin.circuit.fast_cs import FastConstraintSystem, gc_paused
from cuzk_plugin.circuit.pce_record import record_circuit
from cuzk_plugin.circuit.r1cs import synthesize as synthesize_r1cs
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.filecoin.gadgets.merkle import PathLevel
from cuzk_plugin.filecoin.params import BASE_DEGREE, EXP_DEGREE, PorepParams, porep_params
from cuzk_plugin.filecoin.porep.challenges import porep_challenges
from cuzk_plugin.filecoin.porep.circuit import (
    ChallengeWitness,
    ColumnOpening,
    PartitionWitness,
    blank_partition,
    synthesize_partition,
)
from cuzk_plugin.filecoin.porep.graph import StackedGraph
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


def _fr(d, path: str) -> int:
    x = int.from_bytes(bytes(d), "little")
    if x >= R:
        raise C1Error(path, "is not a field element (>= r)")
    return x


def _level_path(path: str, variant: str, i: int, n_base: int) -> str:
    """JSON path of level i (leaf first) of a Single / Sub / Top proof."""
    if variant == "Single":
        return f"{path}.data.Single.path.path[{i}]"
    if i < n_base:
        return f"{path}.data.{variant}.base_proof.path[{i}]"
    return f"{path}.data.{variant}.{'sub_proof' if i == n_base else 'top_proof'}.path[0]"


_LITTLE: itertools.repeat[Literal["little"]] = itertools.repeat("little")


def _levels(proof: MerkleProof, arities: list[int], path: str, expect_variant: str) -> list[PathLevel]:
    if proof.data.variant != expect_variant:
        raise C1Error(f"{path}.data", f"expected a {expect_variant} proof for this sector size, got {proof.data.variant}")
    levels = proof.data.levels()
    if len(levels) != len(arities):
        raise C1Error(f"{path}.data.{expect_variant}", f"{len(levels)} path levels, expected {len(arities)}")
    n_base = len(arities) - {"Single": 0, "Sub": 1, "Top": 2}[expect_variant]
    out = []
    for i, (el, arity) in enumerate(zip(levels, arities, strict=False)):
        # a 32 GiB C1 holds ~240 K of these hashes: the JSON path is only spelled out for a bad one
        hashes = tuple(map(int.from_bytes, el.hashes, _LITTLE))
        if len(hashes) != arity - 1 or el.index >= arity or max(hashes, default=0) >= R:
            where = _level_path(path, expect_variant, i, n_base)
            if len(hashes) != arity - 1:
                raise C1Error(f"{where}.hashes", f"{len(hashes)} siblings, arity {arity} needs {arity - 1}")
            if el.index >= arity:
                raise C1Error(f"{where}.index", f"{el.index} is not below the arity {arity}")
            j = next(j for j, x in enumerate(hashes) if x >= R)
            raise C1Error(f"{where}.hashes[{j}]", "is not a field element (>= r)")
        out.append(PathLevel(arity, hashes, el.index))
    return out


def _path_index(levels: list[PathLevel]) -> int:
    index, scale = 0, 1
    for lv in levels:
        assert lv.index is not None  # parsed levels always carry their position
        index += lv.index * scale
        scale *= lv.arity
    return index


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

    def __init__(self, c1: C1Output, *, sector_id: int | None = None, prefix: str = "$"):
        self.c1 = c1
        self.sector_id = sector_id
        self.prefix = prefix
        self.seal_proof = c1.seal_proof
        # NI-PoRep proves more partitions of the same circuit; synthetic PoRep the interactive
        # count (porep-variants-facts.md sections 2 and 6)
        self.params: PorepParams = porep_params(self.seal_proof.sector_size,
                                                non_interactive=not self.seal_proof.interactive)
        if not any(c1.seed):
            raise C1Error(f"{prefix}.seed", "all zero (C2 refuses a zero seed for every PoRep variant)")
        self._partitions = self._build()

    @property
    def circuit_id(self) -> str:
        return porep_circuit_id(self.seal_proof)

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

    @cached_property
    def graph(self) -> StackedGraph:
        return StackedGraph(self.params.nodes, self.seal_proof.porep_id,
                            legacy_predecessor=self.seal_proof.api_version == "1.0.0")

    # -- building and checking --------------------------------------------------------------

    def _build(self) -> list[PorepPartition]:
        p, c1, pre = self.params, self.c1, self.prefix
        replica_id = _fr(c1.replica_id, f"{pre}.replica_id")
        comm_d = _fr(c1.comm_d, f"{pre}.comm_d")
        comm_r = _fr(c1.comm_r, f"{pre}.comm_r")
        parts = c1.partitions
        base = f"{pre}.vanilla_proofs.{self.seal_proof.v1_name}"
        if len(parts) != p.partitions:
            raise C1Error(base, f"{len(parts)} partitions, {c1.registered_proof} has {p.partitions}")
        tree_variant = p.tree_variant
        comm_r_last: int | None = None
        comm_c: int | None = None
        out = []
        for k, proofs in enumerate(parts):
            if len(proofs) != p.challenges_per_partition:
                raise C1Error(f"{base}[{k}]", f"{len(proofs)} challenges, expected {p.challenges_per_partition}")
            expected = porep_challenges(self.seal_proof.challenge_kind, replica_id=c1.replica_id,
                                        comm_r=c1.comm_r, seed=c1.seed, nodes=p.nodes,
                                        challenges_per_partition=p.challenges_per_partition, partition=k)
            challenges, inputs = [], [replica_id, comm_d, comm_r]
            for i, (vp, challenge) in enumerate(zip(proofs, expected, strict=False)):
                path = f"{base}[{k}][{i}]"
                ch = self._challenge(vp, challenge, path, tree_variant, comm_d)
                root_r = _fr(vp.comm_r_last_proof.data.proof.root, f"{path}.comm_r_last_proof.root")
                root_c = _fr(vp.replica_column_proofs.c_x.inclusion_proof.data.proof.root,
                             f"{path}.replica_column_proofs.c_x.inclusion_proof.root")
                if comm_r_last is None:
                    comm_r_last, comm_c = root_r, root_c
                elif root_r != comm_r_last:
                    raise C1Error(f"{path}.comm_r_last_proof", "inconsistent comm_r_last across challenges")
                elif root_c != comm_c:
                    raise C1Error(f"{path}.replica_column_proofs.c_x", "inconsistent comm_c across challenges")
                challenges.append(ch)
                drg = self.graph.drg_parents(challenge)
                exp = self.graph.exp_parents(challenge)
                inputs += [challenge, *drg, *exp, challenge, challenge, challenge]
            out.append((challenges, inputs))
        if comm_c is None or comm_r_last is None:  # every partition holds challenges (counts checked above)
            raise C1Error(base, "no vanilla proofs")
        if poseidon_hash([comm_c, comm_r_last]) != comm_r:
            raise C1Error(f"{pre}.comm_r", "is not Poseidon(comm_c, comm_r_last) of the vanilla proofs")
        return [
            PorepPartition(p, k, PartitionWitness(replica_id, comm_d, comm_r, comm_r_last, comm_c, chs), inputs)
            for k, (chs, inputs) in enumerate(out)
        ]

    def _column(self, cp: ColumnProof, node: int, path: str, variant: str) -> ColumnOpening:
        p = self.params
        if cp.column.index != node:
            raise C1Error(f"{path}.column.index", f"is {cp.column.index}, the graph says {node}")
        if len(cp.column.rows) != p.layers:
            raise C1Error(f"{path}.column.rows", f"{len(cp.column.rows)} rows, the sector has {p.layers} layers")
        levels = _levels(cp.inclusion_proof, p.tree_arities, f"{path}.inclusion_proof", variant)
        if _path_index(levels) != node:
            raise C1Error(f"{path}.inclusion_proof", f"path indices address node {_path_index(levels)}, not {node}")
        rows: list[int | None] = [_fr(r, f"{path}.column.rows[{j}]") for j, r in enumerate(cp.column.rows)]
        return ColumnOpening(rows, levels)

    def _challenge(self, vp, challenge: int, path: str, variant: str, comm_d: int) -> ChallengeWitness:
        p = self.params
        if len(vp.labeling_proofs) != p.layers:
            raise C1Error(f"{path}.labeling_proofs", f"{len(vp.labeling_proofs)} proofs, expected {p.layers}")
        node = vp.labeling_proofs[0].node
        if node != challenge:
            raise C1Error(f"{path}.labeling_proofs[0].node",
                          f"challenge {node}, but the {self.seal_proof.challenge_kind} derivation gives {challenge}")
        d_levels = _levels(vp.comm_d_proofs, [2] * p.data_levels, f"{path}.comm_d_proofs", "Single")
        if _path_index(d_levels) != challenge:
            raise C1Error(f"{path}.comm_d_proofs", f"path addresses node {_path_index(d_levels)}, not {challenge}")
        if _fr(vp.comm_d_proofs.data.proof.root, f"{path}.comm_d_proofs.root") != comm_d:
            raise C1Error(f"{path}.comm_d_proofs.data.Single.root", "is not comm_d")
        r_levels = _levels(vp.comm_r_last_proof, p.tree_arities, f"{path}.comm_r_last_proof", variant)
        rcp = vp.replica_column_proofs
        c_levels = _levels(rcp.c_x.inclusion_proof, p.tree_arities, f"{path}.replica_column_proofs.c_x.inclusion_proof", variant)
        for what, levels in (("comm_r_last_proof", r_levels), ("replica_column_proofs.c_x.inclusion_proof", c_levels)):
            if _path_index(levels) != challenge:
                raise C1Error(f"{path}.{what}", f"path addresses node {_path_index(levels)}, not {challenge}")
        drg_nodes, exp_nodes = self.graph.drg_parents(challenge), self.graph.exp_parents(challenge)
        if len(rcp.drg_parents) != BASE_DEGREE:
            raise C1Error(f"{path}.replica_column_proofs.drg_parents", f"{len(rcp.drg_parents)} columns, expected {BASE_DEGREE}")
        if len(rcp.exp_parents) != EXP_DEGREE:
            raise C1Error(f"{path}.replica_column_proofs.exp_parents", f"{len(rcp.exp_parents)} columns, expected {EXP_DEGREE}")
        drg = [self._column(cp, n, f"{path}.replica_column_proofs.drg_parents[{j}]", variant)
               for j, (cp, n) in enumerate(zip(rcp.drg_parents, drg_nodes, strict=False))]
        exp = [self._column(cp, n, f"{path}.replica_column_proofs.exp_parents[{j}]", variant)
               for j, (cp, n) in enumerate(zip(rcp.exp_parents, exp_nodes, strict=False))]
        data_leaf = _fr(vp.comm_d_proofs.data.proof.leaf, f"{path}.comm_d_proofs.data.Single.leaf")
        return ChallengeWitness(challenge, data_leaf, d_levels, drg, exp, r_levels, c_levels)

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


def porep_partitions(raw: bytes | memoryview | str) -> PorepJob:
    """A PoRep job from Curio's C1 envelope (``{"SectorNum", "Phase1Out", "SectorSize"}``) or
    from raw C1 JSON bytes; malformed input raises :class:`C1Error` with the field's JSON path."""
    if not raw:
        raise C1Error("$", "empty (PoRep needs Curio's C1 envelope {SectorNum, Phase1Out, SectorSize} or C1 JSON)")
    if len(raw) > MAX_C1_BYTES:  # bounded before JSON expands it (a parsed C1 takes ~20x its bytes)
        raise C1Error("$", f"{len(raw):,} bytes, more than a C1 of any sector size can be ({MAX_C1_BYTES:,})")
    _check_c1_shape(raw)
    text = bytes(raw) if isinstance(raw, memoryview) else raw
    with gc_paused():  # a 32 GiB C1 is millions of small lists: no GC pass over them while they live
        try:  # in pieces: one json.loads of a 49 MB C1 would hold the GIL ~1.5 s (json_pieces)
            top = json_pieces.loads(text)
        except json_pieces.NestingError as exc:
            raise C1Error("$", f"{exc} (a C1 nests about 10 levels)") from None
        except json_pieces.ShapeError as exc:
            raise C1Error("$", f"the JSON {exc} (a C1's longest arrays hold a few hundred); refused before decoding") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise C1Error("$", f"not a JSON C1 envelope ({exc})") from None
        if isinstance(top, dict) and ("Phase1Out" in top or "SectorNum" in top):
            env, c1 = envelope_from_json(top)
            sector_id, prefix = env.SectorNum, "$.Phase1Out"
        else:
            c1, sector_id, prefix = c1_from_json(top), None, "$"
        del top  # freed while GC is still paused: the next pass sees only the job's objects
        return PorepJob(c1, sector_id=sector_id, prefix=prefix)


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
