"""SnapDeals (SNAP_DEALS_UPDATE) from Curio: the bincode PartitionProofs of ``vanilla_proofs``
decoded and checked, and the provider that proves them with the EmptySectorUpdate circuit
(/work/shared/specs/snap-facts.md sections 5, 6 and 9; curio-adapter-facts.md section 5).

The bytes are hostile. Every count is checked against what the sector size prescribes (and
against the bytes left) before anything is allocated; every 32-byte value must be a canonical
field element; variant tags must be the size's; nothing may trail. A refusal is a
:class:`SnapDecodeError` naming the field and its first byte
(``vanilla_proofs[0].challenge_proofs[3].proof_r_old.Single.path[1].hashes[4] (byte 1234)``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from cuzk_plugin.adapters.curio.bincode import BincodeError, BincodeReader
from cuzk_plugin.adapters.curio.keys import BlankCircuitKey, CircuitFile, filecoin_key_source, plan_filecoin_key
from cuzk_plugin.bls12_381.fields import R, less_than_modulus, limbs_to_ints
from cuzk_plugin.circuit.fast_cs import gc_paused
from cuzk_plugin.engine.circuits import JobPlan, KeySource
from cuzk_plugin.engine.errors import InvalidRequest
from cuzk_plugin.engine.types import ProofKind, ProofRequest
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.filecoin.poseidon import poseidon_hash
from cuzk_plugin.filecoin.snap.params import (
    UpdateParams,
    update_params,
    update_proof_size,
)
from cuzk_plugin.filecoin.snap.vanilla import (
    ChallengeProof,
    PartitionProof,
    partition_challenges,
    path_index,
    verify_partition,
)
from cuzk_plugin.filecoin.trees import MerklePath

__all__ = [
    "SnapCircuitProvider",
    "SnapDecodeError",
    "SnapJob",
    "SnapKeyGenerator",
    "snap_test_key",
    "snap_test_key_circuit",
    "SnapPartitionTask",
    "SnapWitnessError",
    "decode_partition_proof",
    "snap_circuit_id",
    "snap_job",
    "SNAP_CIRCUITS",
    "ensure_snap_pce",
    "extract_snap_pce",
]

_SIZE_IDS = {2 << 10: "2k", 8 << 20: "8m", 512 << 20: "512m", 32 << 30: "32g", 64 << 30: "64g"}
_VARIANTS = ("Single", "Sub", "Top")
#: Circuits whose test key ([srs] allow_test_keys) can also be made without the pre-compiled circuit
#: (``CUZK_DISABLE_PCE=1``): a single-party setup of the blank circuit, to a file (~half an hour at 2 KiB).
OWN_SETUP_CIRCUITS = ("snap-2k",)
#: Every update circuit id (``snap-2k`` ... ``snap-64g``) -> its sector size.
SNAP_CIRCUITS = {f"snap-{name}": size for size, name in _SIZE_IDS.items()}


class SnapDecodeError(BincodeError):
    """A malformed PartitionProof; ``path`` names the field, ``offset`` its first byte."""


class SnapWitnessError(CircuitError):
    """A well-formed PartitionProof whose values the vanilla verifier or the circuit refuses."""


def _reader(raw: bytes) -> BincodeReader:
    return BincodeReader(raw, SnapDecodeError)


def _inclusion_path(r: BincodeReader, path: str, arities: list[int]) -> list[tuple[list[int], int]]:
    r.count(path, 16, len(arities))
    levels = []
    for i, arity in enumerate(arities):
        where = f"{path}[{i}]"
        r.count(f"{where}.hashes", 32, arity - 1)
        siblings = [r.fr(f"{where}.hashes[{j}]") for j in range(arity - 1)]
        at = r.pos
        index = r.u64(f"{where}.index")
        if index >= arity:
            raise SnapDecodeError(f"{where}.index", at, f"{index} is not below the arity {arity}")
        levels.append((siblings, index))
    return levels


def _merkle(r: BincodeReader, path: str, arities: list[int], upper: int) -> MerklePath:
    """A bincode MerkleProof of the expected variant (0 Single, 1 Sub, 2 Top) as a MerklePath."""
    at = r.pos
    tag = r.u32(f"{path}.variant")
    if tag != upper:
        known = _VARIANTS[tag] if tag < len(_VARIANTS) else f"unknown variant {tag}"
        raise SnapDecodeError(f"{path}.variant", at, f"{known}, this sector size's tree needs {_VARIANTS[upper]}")
    name = f"{path}.{_VARIANTS[upper]}"
    if upper == 0:
        root, leaf = r.fr(f"{name}.root"), r.fr(f"{name}.leaf")
        levels = _inclusion_path(r, f"{name}.path", arities)
    else:
        n_base = len(arities) - upper
        levels = _inclusion_path(r, f"{name}.base_proof", arities[:n_base])
        levels += _inclusion_path(r, f"{name}.sub_proof", arities[n_base:n_base + 1])
        if upper == 2:
            levels += _inclusion_path(r, f"{name}.top_proof", arities[n_base + 1:])
        root, leaf = r.fr(f"{name}.root"), r.fr(f"{name}.leaf")
    return MerklePath(leaf, root, levels, list(arities))


@dataclass(frozen=True)
class _ProofLayout:
    """Where everything sits in a well-formed PartitionProof of one sector size (its length is
    fixed by the size): the bytes that must equal the template (counts, variant tags), the
    32-byte field elements, the path positions with their arities, in the reader's order."""

    size: int
    fixed_at: np.ndarray  #: (k,) int64 byte offsets of the counts' and tags' bytes
    fixed: np.ndarray  #: (k,) uint8: what those bytes must be
    fr_at: np.ndarray  #: (f,) int64 offsets of the field elements, in reading order
    index_at: np.ndarray  #: (i,) int64 offsets of the u64 path positions, in reading order
    arity: np.ndarray  #: (i,) uint64: each position's arity


@lru_cache(maxsize=8)
def _proof_layout(p: UpdateParams) -> _ProofLayout:
    """Walk the structure :func:`_decode_slowly` reads, recording offsets instead of reading."""
    fixed: list[tuple[int, bytes]] = []
    frs: list[int] = []
    indices: list[tuple[int, int]] = []
    at = 0

    def const(value: bytes) -> None:
        nonlocal at
        fixed.append((at, value))
        at += len(value)

    def fr_slots(n: int) -> None:
        nonlocal at
        frs.extend(range(at, at + 32 * n, 32))
        at += 32 * n

    def inclusion(arities: list[int]) -> None:
        nonlocal at
        const(struct.pack("<Q", len(arities)))
        for arity in arities:
            const(struct.pack("<Q", arity - 1))
            fr_slots(arity - 1)
            indices.append((at, arity))
            at += 8

    def merkle(arities: list[int], upper: int) -> None:
        const(struct.pack("<I", upper))
        if upper == 0:
            fr_slots(2)  # root, leaf
            inclusion(arities)
            return
        n_base = len(arities) - upper
        inclusion(arities[:n_base])
        inclusion(arities[n_base:n_base + 1])
        if upper == 2:
            inclusion(arities[n_base + 1:])
        fr_slots(2)  # root, leaf

    upper = p.porep.upper_levels
    fr_slots(1)  # comm_c
    const(struct.pack("<Q", p.apex_leaves))
    fr_slots(p.apex_leaves)
    const(struct.pack("<Q", p.challenges))
    for _ in range(p.challenges):
        merkle(p.tree_r_arities, upper)
        merkle([2] * p.challenge_bit_len, 0)
        merkle(p.tree_r_arities, upper)
    fixed_at = np.concatenate([np.arange(a, a + len(v)) for a, v in fixed])
    fixed_bytes = np.frombuffer(b"".join(v for _, v in fixed), dtype=np.uint8)
    return _ProofLayout(at, fixed_at, fixed_bytes, np.array(frs, dtype=np.int64),
                        np.array([a for a, _ in indices], dtype=np.int64),
                        np.array([n for _, n in indices], dtype=np.uint64))


@lru_cache(maxsize=16)
def _sibling_spans(arities: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """Each level's siblings as (start, stop) among a path's values (leaf level first)."""
    spans, at = [], 0
    for arity in arities:
        spans.append((at, at + arity - 1))
        at += arity - 1
    return tuple(spans)


def _decode_fast(raw: bytes, p: UpdateParams) -> PartitionProof | None:
    """The PartitionProof of well-formed bytes, read with numpy against the size's layout; None
    for anything else (the caller then reads it field by field to name what is wrong). Accepts
    exactly what :func:`_decode_slowly` accepts: the same length, counts, tags, positions below
    their arity and canonical field elements."""
    lay = _proof_layout(p)
    if len(raw) != lay.size:
        return None
    b = np.frombuffer(raw, dtype=np.uint8)
    if not np.array_equal(b[lay.fixed_at], lay.fixed):
        return None
    index = b[lay.index_at[:, None] + np.arange(8)].copy().view("<u8")[:, 0]
    if (index >= lay.arity).any():
        return None
    limbs = b[lay.fr_at[:, None] + np.arange(32)].copy().view("<u8")  # (f, 4), least significant first
    if not less_than_modulus(limbs, R).all():
        return None
    values = limbs_to_ints(limbs)
    positions = index.tolist()
    vi = pi = 0  # next value, next position, in reading order

    def merkle(arities: list[int], upper: int) -> MerklePath:
        nonlocal vi, pi
        at = vi + 2 if upper == 0 else vi  # a Single path's root and leaf come first, the others' last
        lv = [(values[at + a:at + b], positions[pi + j]) for j, (a, b) in enumerate(_sibling_spans(tuple(arities)))]
        pi += len(arities)
        end = at + sum(arities) - len(arities)
        root_at = vi if upper == 0 else end
        vi = end if upper == 0 else end + 2
        return MerklePath(values[root_at + 1], values[root_at], lv, list(arities))

    upper = p.porep.upper_levels
    comm_c = values[0]
    apex = values[1:1 + p.apex_leaves]
    vi = 1 + p.apex_leaves
    tree_r, tree_d = p.tree_r_arities, [2] * p.challenge_bit_len
    proofs = [ChallengeProof(merkle(tree_r, upper), merkle(tree_d, 0), merkle(tree_r, upper))
              for _ in range(p.challenges)]
    return PartitionProof(comm_c, apex, proofs)


def decode_partition_proof(raw: bytes, p: UpdateParams, path: str = "vanilla_proof") -> PartitionProof:
    """One bincode PartitionProof {comm_c, apex_leafs, challenge_proofs} of sector size ``p``.
    Well-formed bytes are read in one numpy pass (a 32 GiB request's 16 partitions: ~0.6 s field
    by field on the 2-core machine); anything else is read field by field, which names the field."""
    return _decode_fast(raw, p) or _decode_slowly(raw, p, path)


def _decode_slowly(raw: bytes, p: UpdateParams, path: str) -> PartitionProof:
    """:func:`decode_partition_proof` a field at a time: the refusal names the field and its byte."""
    r = _reader(raw)
    upper = p.porep.upper_levels
    tree_r, tree_d = p.tree_r_arities, [2] * p.challenge_bit_len
    comm_c = r.fr(f"{path}.comm_c")
    r.count(f"{path}.apex_leafs", 32, p.apex_leaves)
    apex = [r.fr(f"{path}.apex_leafs[{i}]") for i in range(p.apex_leaves)]
    r.count(f"{path}.challenge_proofs", 3 * (4 + 64 + 8), p.challenges)
    proofs = []
    for i in range(p.challenges):
        where = f"{path}.challenge_proofs[{i}]"
        proofs.append(ChallengeProof(_merkle(r, f"{where}.proof_r_old", tree_r, upper),
                                     _merkle(r, f"{where}.proof_d_new", tree_d, 0),
                                     _merkle(r, f"{where}.proof_r_new", tree_r, upper)))
    if r.left:
        raise SnapDecodeError(path, r.pos, f"{r.left} bytes after the PartitionProof")
    return PartitionProof(comm_c, apex, proofs)


def snap_circuit_id(sector_size: int) -> str:
    return f"snap-{_SIZE_IDS[sector_size]}"


def extract_snap_pce(circuit_id: str, path) -> str:
    """Record the update circuit ``circuit_id`` (e.g. ``snap-32g``) into ``path`` by streaming its
    blank partition through the recorder (bounded memory); the digest."""
    from cuzk_plugin.circuit.pce_record import record_circuit
    from cuzk_plugin.filecoin.snap.circuit import blank_update_partition, synthesize_update_partition

    if circuit_id not in SNAP_CIRCUITS:
        raise ValueError(f"no pre-compiled update circuit '{circuit_id}' (known: {', '.join(SNAP_CIRCUITS)})")
    p = update_params(SNAP_CIRCUITS[circuit_id])
    return record_circuit(lambda cs: synthesize_update_partition(cs, p, blank_update_partition(p)), path, circuit_id)


def ensure_snap_pce(circuit_id: str, param_cache) -> str:
    """The path of ``circuit_id``'s pre-compiled circuit in ``param_cache`` (recorded on first use)."""
    from cuzk_plugin.formats.pce import ensure_pce

    return ensure_pce(circuit_id, param_cache, extract_snap_pce)


def _comm(request: ProofRequest, name: str) -> int:
    raw = getattr(request, name)
    if len(raw) != 32:
        raise InvalidRequest(f"{name}: expected 32 bytes, got {len(raw)}")
    x = int.from_bytes(raw, "little")
    if x >= R:
        raise InvalidRequest(f"{name}: not a canonical field element (>= r)")
    return x


@dataclass(frozen=True)
class SnapJob:
    """A checked SnapDeals request: its sector size and decoded partitions."""

    params: UpdateParams
    comm_r_old: int
    comm_d_new: int
    comm_r_new: int
    partitions: tuple[PartitionProof, ...]

    @property
    def circuit_id(self) -> str:
        return snap_circuit_id(self.params.sector_size)

    def public_inputs(self, k: int) -> list[int]:
        """Partition k's inputs, ONE excluded: k_and_h_select, comm_r_old, comm_d_new, comm_r_new."""
        return [self.params.k_and_h_select(k), self.comm_r_old, self.comm_d_new, self.comm_r_new]


def _check_structure(p: UpdateParams, proof: PartitionProof, k: int, comm_r_old: int, comm_r_new: int,
                     where: str, comm_r_of: dict[tuple[int, int], int]) -> None:
    """The cheap checks of plan time: path indices are the derived challenges, one root per
    tree, comm_r_old / comm_r_new = Poseidon(comm_c, root) (``comm_r_of`` keeps the hashes
    computed: every partition of a request carries the same comm_c and roots)."""
    challenges = partition_challenges(p, comm_r_new, k)
    first = proof.challenge_proofs[0]
    for i, (cp, c) in enumerate(zip(proof.challenge_proofs, challenges, strict=False)):
        for name in ("proof_r_old", "proof_d_new", "proof_r_new"):
            path = getattr(cp, name)
            if path_index(path) != c:
                raise InvalidRequest(f"{where}.challenge_proofs[{i}].{name}: path addresses node {path_index(path)}, "
                                     f"comm_r_new derives challenge {c}")
        for name in ("proof_r_old", "proof_r_new"):
            if getattr(cp, name).root != getattr(first, name).root:
                raise InvalidRequest(f"{where}.challenge_proofs[{i}].{name}.root: differs from challenge 0's")
    for name, comm, root in (("comm_r_old", comm_r_old, first.proof_r_old.root),
                             ("comm_r_new", comm_r_new, first.proof_r_new.root)):
        pair = (proof.comm_c, root)
        if pair not in comm_r_of:
            comm_r_of[pair] = poseidon_hash(list(pair))
        if comm_r_of[pair] != comm:
            raise InvalidRequest(f"{where}.comm_c: Poseidon(comm_c, TreeR root) is not the request's {name}")


def snap_job(request: ProofRequest) -> SnapJob:
    """Validate a SNAP_DEALS_UPDATE request and decode its partitions; InvalidRequest names the field."""
    try:
        size = update_proof_size(request.registered_proof)
    except ValueError as exc:
        raise InvalidRequest(f"registered_proof: {exc}") from None
    p = update_params(size)
    comm_r_old, comm_d_new, comm_r_new = (_comm(request, n) for n in ("comm_r_old", "comm_d_new", "comm_r_new"))
    if len(request.vanilla_proofs) != p.partitions:
        raise InvalidRequest(f"vanilla_proofs: {len(request.vanilla_proofs)} partition proofs, "
                             f"update proof {request.registered_proof} has {p.partitions}")
    parts = []
    comm_r_of: dict[tuple[int, int], int] = {}
    with gc_paused():  # ~70 K small lists a 32 GiB partition, none of them cyclic
        for k, raw in enumerate(request.vanilla_proofs):
            where = f"vanilla_proofs[{k}]"
            try:
                proof = decode_partition_proof(raw, p, where)
            except SnapDecodeError as exc:
                raise InvalidRequest(str(exc)) from None
            _check_structure(p, proof, k, comm_r_old, comm_r_new, where, comm_r_of)
            parts.append(proof)
    return SnapJob(p, comm_r_old, comm_d_new, comm_r_new, tuple(parts))


#: the fast witness's failing regions -> the PartitionProof field they come from
_REGION_FIELDS = {"TreeR old inclusion": "proof_r_old", "TreeR new inclusion": "proof_r_new",
                  "TreeD inclusion up to its apex leaf": "proof_d_new"}


@dataclass(frozen=True)
class SnapPartitionTask:
    """Partition ``k`` from its bincode PartitionProof (a worker process re-decodes); ``pce_cache``
    is the param cache holding (or to hold) the pre-compiled circuit, None for the reference path."""

    registered_proof: int
    raw: bytes
    k: int
    comm_r_old: int
    comm_d_new: int
    comm_r_new: int
    pce_cache: str | None = None

    def _witness(self, *, verify: bool = True):
        """(params, the partition's UpdatePartitionWitness); with ``verify`` the vanilla verifier's
        checks first (Python hashes of every path: seconds a partition at 32 GiB)."""
        from cuzk_plugin.filecoin.snap.circuit import witness_from_proof
        from cuzk_plugin.filecoin.snap.vanilla import UpdateProofError

        p = update_params(update_proof_size(self.registered_proof))
        where = f"vanilla_proofs[{self.k}]"
        proof = decode_partition_proof(self.raw, p, where)
        if verify:
            try:
                verify_partition(p, proof, self.k, self.comm_r_old, self.comm_d_new, self.comm_r_new, prefix=where)
            except UpdateProofError as exc:
                raise SnapWitnessError(f"{exc}; nothing was proved") from None
        return p, witness_from_proof(p, proof, self.k, self.comm_r_old, self.comm_d_new, self.comm_r_new)

    def circuit(self):
        """(R1CS, inputs, aux) by the reference synthesis, every constraint checked as it is enforced."""
        from cuzk_plugin.circuit.fast_cs import FastConstraintSystem, gc_paused
        from cuzk_plugin.filecoin.snap.circuit import synthesize_update_partition

        p, w = self._witness()
        cs = FastConstraintSystem(check_as_you_go=True)
        regions: list[tuple[int, str]] = []
        try:
            with gc_paused():
                synthesize_update_partition(cs, p, w, regions=regions)
        except CircuitError as exc:
            bad = getattr(exc, "constraint", None)
            if bad is None:
                raise
            part = next((name for start, name in reversed(regions) if start <= bad), "partition header")
            raise SnapWitnessError(f"partition {self.k}: the proof's values violate constraint {bad} ({part}); "
                                   f"nothing was proved") from None
        return cs.finish()

    def assignment(self, into=None):
        """(inputs, aux) as (n, 4) uint64 canonical, ONE first, in the circuit's variable order,
        computed without synthesis (:mod:`cuzk_plugin.filecoin.snap.witness`). The witness checks
        every equality of the circuit itself, so the vanilla verifier does not run first (plan
        time checked the indices, roots and comm_c); a violation names the proof's field. The aux
        is written into the zero block ``into`` where given. A large partition's challenges are
        split over ``[synthesis] witness_processes`` forked processes
        (:mod:`cuzk_plugin.filecoin.snap.witness_pool`)."""
        from cuzk_plugin.engine.workers import die_with_parent, task_processes
        from cuzk_plugin.filecoin.snap.witness import UpdateWitnessMismatch, update_assignment, update_layout
        from cuzk_plugin.filecoin.snap.witness_pool import MIN_AUX_PER_PROCESS, shared_snap_pool

        p, w = self._witness(verify=False)
        lay = update_layout(p)  # traced SHA-256 programs (~1.2 s once) before a pool forks: its workers inherit them
        processes = min(task_processes(), p.challenges * lay.challenge_aux // MIN_AUX_PER_PROCESS)
        try:
            if processes > 1:
                pool = shared_snap_pool(processes, on_fork=die_with_parent)
                return pool.assignment(p, w, partition=self.k, into=into)
            return update_assignment(p, w, partition=self.k, into=into)
        except UpdateWitnessMismatch as exc:
            where = f"vanilla_proofs[{self.k}]"
            if exc.challenge is not None:
                where += f".challenge_proofs[{exc.challenge}].{_REGION_FIELDS.get(exc.region, '')}".rstrip(".")
            else:
                where += ".comm_c" if exc.region.startswith("comm_r") else ".apex_leafs"
            raise SnapWitnessError(f"{where}: {exc}; nothing was proved") from None

    def _checked_inputs(self, inputs) -> list[int]:
        from cuzk_plugin.bls12_381.fields import limbs_to_objects

        got = [int(x) for x in limbs_to_objects(inputs[1:])]
        expected = update_params(update_proof_size(self.registered_proof)).k_and_h_select(self.k)
        if got != [expected, self.comm_r_old, self.comm_d_new, self.comm_r_new]:
            raise SnapWitnessError(f"partition {self.k}: the witness's public inputs differ from the verifier's")
        return got

    def synthesize(self):
        """(WitnessPartition on the mapped pre-compiled circuit, or SynthesizedPartition on the
        reference path (``CUZK_DISABLE_PCE=1`` or no param cache); public inputs without ONE)."""
        from cuzk_plugin.adapters.curio.provider import pce_enabled

        if self.pce_cache is not None and pce_enabled():
            from cuzk_plugin.engine.synthesis import output_block
            from cuzk_plugin.filecoin.snap.witness import update_layout
            from cuzk_plugin.formats.partition import WitnessPartition
            from cuzk_plugin.formats.pce import MappedCircuit

            # the aux straight into the block the engine maps (2.6 GB at 32 GiB), never copied
            lay = update_layout(update_params(update_proof_size(self.registered_proof)))
            inputs, aux = self.assignment(into=output_block(lay.aux_nbytes))
            got = self._checked_inputs(inputs)
            circuit = MappedCircuit.open(ensure_snap_pce(snap_circuit_id(update_proof_size(self.registered_proof)),
                                                         self.pce_cache))
            return WitnessPartition(circuit, inputs, aux), got
        from cuzk_plugin.circuit.r1cs import synthesize as synthesize_r1cs

        r1cs, inputs, aux = self.circuit()
        got = self._checked_inputs(inputs)
        return synthesize_r1cs(r1cs, inputs, aux, check=False), got


@dataclass(frozen=True)
class SnapKeyGenerator(BlankCircuitKey):
    """A TEST key for a small update circuit (see :class:`BlankCircuitKey`)."""

    sector_size: int
    path: Path

    def synthesize_blank(self, cs) -> None:
        from cuzk_plugin.filecoin.snap.circuit import blank_update_partition, synthesize_update_partition

        p = update_params(self.sector_size)
        synthesize_update_partition(cs, p, blank_update_partition(p))


def snap_test_key(circuit_id: str, path: Path) -> SnapKeyGenerator | None:
    """The generator of an update-circuit test key file, only where the pre-compiled circuit is off
    (``CUZK_DISABLE_PCE=1``) and the size allows one; else :func:`snap_test_key_circuit` applies."""
    from cuzk_plugin.adapters.curio.provider import pce_enabled

    return SnapKeyGenerator(2 << 10, path) if circuit_id in OWN_SETUP_CIRCUITS and not pce_enabled() else None


def snap_test_key_circuit(circuit_id: str, param_cache: Path) -> CircuitFile | None:
    """Every size's test key is made on each lane from the pre-compiled circuit (the 2 KiB one, 2^21,
    in minutes on a 2-core host, against half an hour for the blank-circuit setup)."""
    from cuzk_plugin.adapters.curio.provider import pce_enabled

    if circuit_id not in SNAP_CIRCUITS or not pce_enabled():
        return None
    return CircuitFile(ensure_snap_pce, circuit_id, str(param_cache))


def warm_snap_worker() -> None:
    """Run once in each synthesis worker as it starts: the partition layout (its traced SHA-256
    programs, ~1.2 s) of every update size whose pre-compiled circuit is in the param cache
    (see :func:`~cuzk_plugin.adapters.curio.provider.warm_porep_worker`)."""
    from cuzk_plugin.engine.workers import worker_param_cache
    from cuzk_plugin.filecoin.snap.witness import update_layout
    from cuzk_plugin.formats.pce import cached_circuits

    for circuit_id in cached_circuits(worker_param_cache(), SNAP_CIRCUITS):
        update_layout(update_params(SNAP_CIRCUITS[circuit_id]))


class SnapCircuitProvider:
    """SNAP_DEALS_UPDATE: the EmptySectorUpdate circuit of every sector size, proved with
    Filecoin's parameter files (a test key only with ``allow_test_keys``)."""

    kinds: tuple[ProofKind, ...] = (ProofKind.SNAP_DEALS_UPDATE,)
    #: See :meth:`ProviderRegistry.worker_warmers`.
    warm_worker = staticmethod(warm_snap_worker)

    def __init__(self, *, allow_test_keys: bool = False):
        self.allow_test_keys = allow_test_keys

    def plan(self, request: ProofRequest, param_cache: Path | None) -> JobPlan:
        job = snap_job(request)
        circuit_id = plan_filecoin_key(job.circuit_id, param_cache, allow_test_keys=self.allow_test_keys,
                                       make_test_key=snap_test_key, test_key_circuit=snap_test_key_circuit)
        pce_cache = str(param_cache) if param_cache is not None else None
        tasks = tuple(SnapPartitionTask(request.registered_proof, bytes(raw), k, job.comm_r_old, job.comm_d_new,
                                        job.comm_r_new, pce_cache) for k, raw in enumerate(request.vanilla_proofs))
        return JobPlan(circuit_id, tasks)

    def key_source(self, circuit_id: str, param_cache: Path | None) -> KeySource | None:
        return filecoin_key_source(circuit_id, param_cache, kinds=("snap",), allow_test_keys=self.allow_test_keys,
                                   make_test_key=snap_test_key, test_key_circuit=snap_test_key_circuit)
