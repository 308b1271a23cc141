"""PoSt jobs from Curio: the request's vanilla proofs become one checked Fallback PoSt
partition (its slots' witnesses and public inputs), synthesized on demand.

    job = PostJob.from_fields(registered_proof, randomness, vanilla_proofs, partition_index)
    part, public_inputs = job.synthesize()

The public inputs are computed as the verifier computes them (leaf challenges from the
randomness, sector ids and positions; post-facts.md section 3), and every vanilla inclusion
proof must open exactly those leaves (rust's FallbackPoSt::verify checks the same), must end
at its sector's comm_r_last, and comm_r must be Poseidon(comm_c, comm_r_last). Sibling hashes
are checked by the circuit itself as it is synthesized: the first violated constraint names
the inclusion proof it came from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuzk_plugin.adapters.curio.post import decode_sector_proofs
from cuzk_plugin.bls12_381.fields import FR_LIMBS, ints_to_limbs, limbs_to_objects
from cuzk_plugin.circuit.fast_cs import FastConstraintSystem
from cuzk_plugin.circuit.r1cs import synthesize as synthesize_r1cs
from cuzk_plugin.errors import CircuitError, CuzkError
from cuzk_plugin.filecoin.post_challenges import check_randomness, slot_challenges
from cuzk_plugin.filecoin.post_circuit import SlotWitness, post_public_inputs, synthesize_post
from cuzk_plugin.filecoin.post_proofs import PostKind, RegisteredPoStProof, post_circuit_id, post_proof_by_number
from cuzk_plugin.filecoin.post_vanilla import FallbackPoStSectorProof
from cuzk_plugin.filecoin.witness.poseidon import poseidon_num_aux
from cuzk_plugin.filecoin.witness.poseidon_cpu import poseidon_into
from cuzk_plugin.filecoin.witness.post import PostWitnessMismatch, post_assignment

__all__ = ["PostJob", "PostRequestError", "PostWitnessError"]

_U64 = 1 << 64


class PostRequestError(CuzkError, ValueError):
    """A PoSt request that is malformed or inconsistent; ``field`` names the bad field."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class PostWitnessError(CircuitError):
    """The vanilla proofs' values violate the circuit (e.g. a corrupted sibling hash)."""


def _proof_path(i: int) -> str:
    return f"vanilla_proofs[{i}].vanilla_proof.sectors[0]"


def _comm_r_ok(sectors: tuple[FallbackPoStSectorProof, ...]) -> list[bool]:
    """Per sector, whether comm_r = Poseidon(comm_c, comm_r_last): all in one C call where it
    is built (a 2349-sector partition: ~0.05 s, not 1.2 s of Python ints)."""
    n, num_aux = len(sectors), poseidon_num_aux(2)
    pairs = ints_to_limbs(v for s in sectors for v in (s.sectors[0].comm_c, s.sectors[0].comm_r_last))
    aux = np.empty((n, num_aux, FR_LIMBS), dtype=np.uint64)
    digest = poseidon_into(2, pairs.reshape(n, 2, FR_LIMBS), aux, np.arange(n, dtype=np.int64) * num_aux * FR_LIMBS)
    want = ints_to_limbs(s.comm_r for s in sectors).reshape(n, FR_LIMBS)
    return (digest == want).all(axis=1).tolist()


@dataclass(frozen=True)
class PostJob:
    """One checked PoSt partition."""

    proof: RegisteredPoStProof
    randomness: bytes
    partition_index: int
    sectors: tuple[FallbackPoStSectorProof, ...]
    slots: tuple[SlotWitness, ...]
    public_inputs: tuple[int, ...]  #: without ONE, in rust-fil-proofs' order
    #: per slot, (index of the vanilla proof, index of its first inclusion proof) it came from
    origins: tuple[tuple[int, int], ...]

    @property
    def circuit_id(self) -> str:
        return post_circuit_id(self.proof.kind, self.proof.sector_size)

    @property
    def shape(self):
        return self.proof.shape

    @classmethod
    def from_fields(cls, registered_proof: int, randomness: bytes, vanilla_proofs: tuple[bytes, ...] | list[bytes],
                    partition_index: int = 0, *, kind: PostKind | None = None, sector_size: int = 0) -> PostJob:
        """Decode and check a request's PoSt fields; :class:`PostRequestError` or
        :class:`PostDecodeError` name the bad field."""
        try:
            proof = post_proof_by_number(registered_proof)
        except ValueError as exc:
            raise PostRequestError("registered_proof", str(exc)) from None
        if kind is not None and proof.kind is not kind:
            first = 0 if kind is PostKind.WINNING else 5
            last = 4 if kind is PostKind.WINNING else 14
            what = "WinningPoSt" if kind is PostKind.WINNING else "WindowPoSt"
            raise PostRequestError("registered_proof", f"{registered_proof} is not a {what} proof type ({first}-{last})")
        if sector_size and sector_size != proof.sector_size:
            raise PostRequestError("sector_size", f"{sector_size}, but {proof.go_name} proves {proof.sector_size}-byte sectors")
        try:
            check_randomness(randomness)
        except ValueError as exc:
            raise PostRequestError("randomness", str(exc)) from None
        shape = proof.shape
        if proof.kind is PostKind.WINNING:
            if partition_index:
                raise PostRequestError("partition_index", f"{partition_index}: a WinningPoSt has one partition (0)")
            if len(vanilla_proofs) != 1:
                raise PostRequestError("vanilla_proofs", f"{len(vanilla_proofs)} entries, a WinningPoSt proves exactly 1 sector")
        else:
            if not 1 <= len(vanilla_proofs) <= shape.vanilla_sectors:
                raise PostRequestError("vanilla_proofs", f"{len(vanilla_proofs)} entries, a {proof.go_name} partition "
                                                         f"proves 1 to {shape.vanilla_sectors} sectors")
            if not 0 <= partition_index * shape.sector_slots + shape.sector_slots <= _U64:
                raise PostRequestError("partition_index", f"{partition_index} puts sector indices past u64")
        sectors = decode_sector_proofs([bytes(raw) for raw in vanilla_proofs], shape,
                                       [f"vanilla_proofs[{i}]" for i in range(len(vanilla_proofs))])
        challenges = slot_challenges(proof, randomness, [s.sector_id for s in sectors], partition_index)
        comm_r_ok = _comm_r_ok(sectors)
        for i, s in enumerate(sectors):
            cls._check_sector(proof, s, i, challenges, comm_r_ok[i])
        slots, origins, comm_rs = [], [], []
        built: dict[tuple[int, int], SlotWitness] = {}  # padded slots share their sector's witness
        for k in range(len(challenges)):
            if proof.kind is PostKind.WINNING:
                i, first = 0, k
            else:
                i, first = min(k, len(sectors) - 1), 0
            s = sectors[i]
            if (i, first) not in built:
                sp = s.sectors[0]
                inclusions = sp.inclusion_proofs[first:first + shape.challenges_per_slot]
                built[i, first] = SlotWitness(s.comm_r, sp.comm_c, sp.comm_r_last, tuple(m.leaf for m in inclusions),
                                              tuple(tuple(m.path_levels()) for m in inclusions))
            slots.append(built[i, first])
            origins.append((i, first))
            comm_rs.append(s.comm_r)
        inputs = post_public_inputs(comm_rs, challenges)
        return cls(proof, bytes(randomness), partition_index, sectors, tuple(slots), tuple(inputs), tuple(origins))

    @staticmethod
    def _check_sector(proof: RegisteredPoStProof, s: FallbackPoStSectorProof, i: int, challenges: list[list[int]],
                      comm_r_ok: bool) -> None:
        """What the decoder cannot see (it checked every count, variant and index against the
        shape): comm_r (``comm_r_ok``: it is Poseidon(comm_c, comm_r_last)), the roots, and that
        each path opens the leaf the randomness challenges."""
        sp = s.sectors[0]
        path = _proof_path(i)
        if not comm_r_ok:
            raise PostRequestError(f"vanilla_proofs[{i}].comm_r", f"is not Poseidon({path}.comm_c, {path}.comm_r_last): "
                                                                  "one of the three is corrupt")
        expected = [c for slot in challenges for c in slot] if proof.kind is PostKind.WINNING else challenges[i]
        if len(sp.inclusion_proofs) != len(expected):
            raise PostRequestError(f"{path}.inclusion_proofs", f"{len(sp.inclusion_proofs)} entries, the randomness "
                                                               f"challenges {len(expected)} leaves of sector {s.sector_id}")
        for j, (m, leaf) in enumerate(zip(sp.inclusion_proofs, expected, strict=True)):
            mp = f"{path}.inclusion_proofs[{j}].{m.variant}"
            if m.root != sp.comm_r_last:
                raise PostRequestError(f"{mp}.root", f"is not {path}.comm_r_last")
            if m.leaf_index != leaf:
                raise PostRequestError(f"{mp}", f"path indices open leaf {m.leaf_index}, the randomness and sector id "
                                                f"{s.sector_id} challenge leaf {leaf}")

    # -- synthesis --------------------------------------------------------------------------

    def _slot_field(self, slot: int, challenge: int) -> str:
        i, first = self.origins[slot]
        return f"{_proof_path(i)}.inclusion_proofs[{first + challenge}]"

    def circuit(self):
        """(R1CS, inputs, aux). Every constraint is checked as it is enforced; the first one
        the vanilla proofs violate raises :class:`PostWitnessError` naming its inclusion proof."""
        cs = FastConstraintSystem(check_as_you_go=True)
        regions: list[tuple[int, str]] = []
        try:
            synthesize_post(cs, self.shape, list(self.slots), regions=regions)
        except CircuitError as exc:
            bad = getattr(exc, "constraint", None)
            if bad is None:
                raise
            where = next((name for start, name in reversed(regions) if start <= bad), "?")
            slot, _, rest = where.partition(" challenge ")
            field = where
            if rest:
                field = self._slot_field(int(slot.split()[1]), int(rest.split(":")[0]))
            raise PostWitnessError(f"{field}: violates constraint {bad} of the {self.circuit_id} circuit ({where}); "
                                   "the vanilla proof is corrupted, nothing was proved") from None
        r1cs, inputs, aux = cs.finish()
        got = [int(x) for x in limbs_to_objects(inputs[1:])]
        if got != list(self.public_inputs):
            raise PostWitnessError("synthesized public inputs differ from the verifier's")
        return r1cs, inputs, aux

    def assignment(self):
        """(inputs, aux) as (n, 4) uint64 canonical, ONE first, in the circuit's variable order,
        computed without synthesis (:mod:`cuzk_plugin.filecoin.witness.post`); vanilla proofs
        whose values violate the circuit raise :class:`PostWitnessError` naming the field."""
        try:
            inputs, aux = post_assignment(self.shape, list(self.slots))
        except PostWitnessMismatch as exc:
            i, _ = self.origins[exc.slot]
            field = f"vanilla_proofs[{i}].comm_r" if exc.challenge is None else self._slot_field(exc.slot, exc.challenge)
            raise PostWitnessError(f"{field}: violates constraint {exc.constraint} of the {self.circuit_id} circuit "
                                   f"({exc}); the vanilla proof is corrupted, nothing was proved") from None
        got = [int(x) for x in limbs_to_objects(inputs[1:])]
        if got != list(self.public_inputs):
            raise PostWitnessError("the witness's public inputs differ from the verifier's")
        return inputs, aux

    def synthesize(self):
        """(SynthesizedPartition, public inputs without ONE), witness checked (the reference
        synthesis: every constraint built in Python)."""
        r1cs, inputs, aux = self.circuit()
        return synthesize_r1cs(r1cs, inputs, aux, check=False), list(self.public_inputs)
