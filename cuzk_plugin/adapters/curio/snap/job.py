"""SnapDeals jobs from Curio: a request's decoded PartitionProofs (:mod:`.vanilla`) checked against
the request's commitments, and each partition's witness computed for the EmptySectorUpdate
circuit (in this process or over forked workers), with the pre-compiled circuits they run on.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuzk_plugin.adapters.curio.keys import pce_enabled
from cuzk_plugin.adapters.curio.snap.vanilla import SnapDecodeError, decode_partition_proof
from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.circuit.fast_cs import gc_paused
from cuzk_plugin.engine.errors import InvalidRequest
from cuzk_plugin.engine.types import ProofRequest
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.filecoin.poseidon import poseidon_hash
from cuzk_plugin.filecoin.snap.params import (
    UpdateParams,
    update_params,
    update_proof_size,
)
from cuzk_plugin.filecoin.snap.vanilla import (
    PartitionProof,
    partition_challenges,
    path_index,
    verify_partition,
)

__all__ = ["SnapJob", "SnapPartitionTask", "SnapWitnessError", "snap_circuit_id", "snap_job", "SNAP_CIRCUITS",
           "ensure_snap_pce", "extract_snap_pce"]

_SIZE_IDS = {2 << 10: "2k", 8 << 20: "8m", 512 << 20: "512m", 32 << 30: "32g", 64 << 30: "64g"}
#: Every update circuit id (``snap-2k`` ... ``snap-64g``) -> its sector size.
SNAP_CIRCUITS = {f"snap-{name}": size for size, name in _SIZE_IDS.items()}


class SnapWitnessError(CircuitError):
    """A well-formed PartitionProof whose values the vanilla verifier or the circuit refuses."""


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
