"""PoSt jobs from Curio: the request's vanilla proofs become one checked Fallback PoSt
partition (its slots' values as limb arrays and its public inputs), synthesized on demand.

    job = PostJob.from_fields(registered_proof, randomness, vanilla_proofs, partition_index)
    inputs, aux = job.partition.assignment()      # what a synthesis worker does with job.partition

The public inputs are computed as the verifier computes them (leaf challenges from the
randomness, sector ids and positions; post-facts.md section 3), and every vanilla inclusion
proof must open exactly those leaves (rust's FallbackPoSt::verify checks the same), must end
at its sector's comm_r_last, and comm_r must be Poseidon(comm_c, comm_r_last). Sibling hashes
are checked by the circuit itself as it is synthesized: the first violated constraint names
the inclusion proof it came from.

The entries are decoded once, straight into numpy limb arrays (every entry of a shape has one
byte layout; :mod:`cuzk_plugin.adapters.curio.post.vanilla` checks it): a 32 GiB Window partition's
2349 entries in ~0.5 s, where building Python ints of their 1.7 M field elements took ~3 s, and
a synthesis worker receives these arrays (:class:`PostPartition`, ~54 MB) instead of decoding
the request again.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from cuzk_plugin.adapters.curio.post.vanilla import _gather, _layout, decode_sector_proof, decode_sector_proofs
from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, less_than_modulus, limbs_to_ints
from cuzk_plugin.circuit.fast_cs import FastConstraintSystem
from cuzk_plugin.circuit.r1cs import synthesize as synthesize_r1cs
from cuzk_plugin.errors import CircuitError, CuzkError
from cuzk_plugin.filecoin.post.challenges import check_randomness, slot_challenges
from cuzk_plugin.filecoin.post.circuit import SlotWitness, synthesize_post
from cuzk_plugin.filecoin.post.params import PostKind, PostShape, RegisteredPoStProof, post_circuit_id, post_proof_by_number
from cuzk_plugin.filecoin.post.vanilla import FallbackPoStSectorProof, encode_sector_proof
from cuzk_plugin.filecoin.post.witness import post_assignment
from cuzk_plugin.filecoin.post.witness_pool import PostWitnessPool
from cuzk_plugin.filecoin.post.witness_slots import PostWitnessMismatch, SlotArrays
from cuzk_plugin.filecoin.witness.poseidon import poseidon_num_aux
from cuzk_plugin.filecoin.witness.poseidon_cpu import poseidon_into

__all__ = ["PostJob", "PostPartition", "PostRequestError", "PostWitnessError"]

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


@dataclass(frozen=True, eq=False)
class _Sectors:
    """A request's entries as arrays, one row an entry, ``ch`` its inclusion proofs."""

    sector_id: np.ndarray  #: (n,) uint64
    comm_r: np.ndarray  #: (n, 4) uint64 limbs, as every value below
    comm_c: np.ndarray
    comm_r_last: np.ndarray
    root: np.ndarray  #: (n, ch, 4)
    leaf: np.ndarray  #: (n, ch, 4)
    siblings: np.ndarray  #: (n, ch, sum of arity - 1, 4), leaf level first
    index: np.ndarray  #: (n, ch, levels) uint64


def _field_elements(rows: np.ndarray, at: np.ndarray) -> np.ndarray:
    """(n, len(at), 4) uint64: the 32-byte little-endian values at byte offsets ``at`` of each
    row, copied a run of adjacent fields at a time (a level's siblings, root and leaf: ~110
    slices for a 32 GiB Window entry; one fancy index of every byte took 4x as long)."""
    n, count = rows.shape[0], at.shape[0]
    out = np.empty((n, 32 * count), dtype=np.uint8)
    cuts = [0, *(np.flatnonzero(np.diff(at) != 32) + 1).tolist(), count]
    for a, b in itertools.pairwise(cuts):
        src = int(at[a])
        out[:, 32 * a:32 * b] = rows[:, src:src + 32 * (b - a)]
    return out.view("<u8").reshape(n, count, FR_LIMBS)


def _entry_rows(raws: list[bytes], shape: PostShape, paths: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(rows (n, length) uint8, field elements (n, count, 4) uint64) of entries in ``shape``'s
    one byte layout, each count, variant, index and field element checked as
    :func:`decode_sector_proofs` checks them, without building its Python objects; an entry
    they refuse goes through :func:`decode_sector_proof`, which names the first bad field."""
    lay = _layout(shape)
    n = len(raws)
    same = np.array([len(raw) == lay.length for raw in raws])
    if same.all():
        rows = np.frombuffer(b"".join(raws), dtype=np.uint8).reshape(n, lay.length)
    else:
        rows = np.zeros((n, lay.length), dtype=np.uint8)
        sel = np.flatnonzero(same)
        rows[sel] = np.frombuffer(b"".join(raws[i] for i in sel), dtype=np.uint8).reshape(sel.size, lay.length)

    frs = _field_elements(rows, lay.fr_at)
    good = same & (_gather(rows, lay.u64_at, 8) == lay.u64_want).all(axis=1)
    good &= (_gather(rows, lay.tag_at, 4) == lay.tag_want).all(axis=1)
    good &= (_gather(rows, lay.index_at, 8) < lay.index_below).all(axis=1)
    good &= less_than_modulus(frs, R).all(axis=1)
    if not good.all():
        rows = rows.copy()
        for i in np.flatnonzero(~good).tolist():  # raises, naming the field, for any entry these checks refuse
            rows[i] = np.frombuffer(encode_sector_proof(decode_sector_proof(raws[i], paths[i], shape)), dtype=np.uint8)
        frs = _field_elements(rows, lay.fr_at)
    return rows, frs


def _decode(raws: list[bytes], shape: PostShape) -> _Sectors:
    """Every entry of a request as arrays (:class:`PostDecodeError` names a bad field)."""
    rows, frs = _entry_rows(raws, shape, [f"vanilla_proofs[{i}]" for i in range(len(raws))])
    n, ch, arities = len(raws), shape.vanilla_challenges, shape.tree_arities
    n_sibs = sum(a - 1 for a in arities)
    body = frs[:, 1:1 + ch * (n_sibs + 2)].reshape(n, ch, n_sibs + 2, FR_LIMBS)  # per inclusion proof
    if shape.variant == "Single":  # root, leaf, then the path
        root, leaf, sibs = body[:, :, 0], body[:, :, 1], body[:, :, 2:]
    else:  # the paths, then root, leaf
        sibs, root, leaf = body[:, :, :n_sibs], body[:, :, n_sibs], body[:, :, n_sibs + 1]
    index = _gather(rows, _layout(shape).index_at, 8).reshape(n, ch, len(arities))
    sector_id = np.ascontiguousarray(rows[:, :8]).view("<u8").reshape(n)
    return _Sectors(sector_id, frs[:, 0], frs[:, -2], frs[:, -1], root, leaf, np.ascontiguousarray(sibs), index)


def _comm_r_ok(s: _Sectors) -> np.ndarray:
    """(n,) whether comm_r = Poseidon(comm_c, comm_r_last): all in one C call where it is built
    (a 2349-sector partition: ~0.05 s)."""
    n, num_aux = s.comm_r.shape[0], poseidon_num_aux(2)
    aux = np.empty((n, num_aux, FR_LIMBS), dtype=np.uint64)
    digest = poseidon_into(2, np.stack([s.comm_c, s.comm_r_last], axis=1), aux,
                           np.arange(n, dtype=np.int64) * num_aux * FR_LIMBS)
    return (digest == s.comm_r).all(axis=1)


def _check_sectors(proof: RegisteredPoStProof, s: _Sectors, challenges: list[list[int]]) -> None:
    """What the decoder cannot see (it checked every count, variant and index against the
    shape), for every entry at once: comm_r = Poseidon(comm_c, comm_r_last), each path's root
    is comm_r_last, and each path opens the leaf the randomness challenges. The first bad
    entry is named as an entry-by-entry check names it."""
    shape = proof.shape
    n = s.comm_r.shape[0]
    if proof.kind is PostKind.WINNING:
        expected = np.array([[c for slot in challenges for c in slot]], dtype=np.int64)
    else:
        expected = np.array(challenges[:n], dtype=np.int64)
    scale = np.cumprod([1, *shape.tree_arities[:-1]], dtype=np.int64)
    leaf_index = (s.index.astype(np.int64) * scale).sum(axis=-1)
    comm_ok = _comm_r_ok(s)
    root_bad = (s.root != s.comm_r_last[:, None]).any(axis=-1)
    path_bad = root_bad | (leaf_index != expected)
    bad = np.flatnonzero(~comm_ok | path_bad.any(axis=1))
    if not bad.size:
        return
    i = int(bad[0])
    path = _proof_path(i)
    if not comm_ok[i]:
        raise PostRequestError(f"vanilla_proofs[{i}].comm_r", f"is not Poseidon({path}.comm_c, {path}.comm_r_last): "
                                                              "one of the three is corrupt")
    j = int(np.argmax(path_bad[i]))
    mp = f"{path}.inclusion_proofs[{j}].{shape.variant}"
    if root_bad[i, j]:
        raise PostRequestError(f"{mp}.root", f"is not {path}.comm_r_last")
    raise PostRequestError(mp, f"path indices open leaf {leaf_index[i, j]}, the randomness and sector id "
                               f"{s.sector_id[i]} challenge leaf {expected[i, j]}")


def _slot_arrays(proof: RegisteredPoStProof, s: _Sectors) -> SlotArrays:
    """The circuit's slots: Window one a sector, the last repeated up to the partition's
    capacity (computed once, copied); Winning's one sector's 66 challenges, one a slot."""
    shape = proof.shape
    index = s.index.astype(np.uint8)
    if proof.kind is PostKind.WINNING:
        k = shape.sector_slots

        def rep(v: np.ndarray) -> np.ndarray:
            return np.repeat(v[:1], k, axis=0)

        return SlotArrays(rep(s.comm_r), rep(s.comm_c), rep(s.comm_r_last), s.leaf[0].reshape(k, 1, FR_LIMBS),
                          s.siblings[0].reshape(k, 1, -1, FR_LIMBS), index[0].reshape(k, 1, -1),
                          np.arange(k, dtype=np.int64))
    n = s.comm_r.shape[0]
    order = np.minimum(np.arange(shape.sector_slots, dtype=np.int64), n - 1)
    return SlotArrays(np.ascontiguousarray(s.comm_r), np.ascontiguousarray(s.comm_c), np.ascontiguousarray(s.comm_r_last),
                      np.ascontiguousarray(s.leaf), s.siblings, index, order)


@dataclass(frozen=True, eq=False)
class PostPartition:
    """One checked PoSt partition as limb arrays (picklable: what a synthesis worker receives,
    ~54 MB for a 32 GiB Window partition, nearly all siblings)."""

    proof: RegisteredPoStProof
    slots_values: SlotArrays
    #: (slots, challenges per slot) uint64: the leaves the verifier challenges in each slot
    challenges: np.ndarray

    @property
    def circuit_id(self) -> str:
        return post_circuit_id(self.proof.kind, self.proof.sector_size)

    @property
    def shape(self) -> PostShape:
        return self.proof.shape

    def origin(self, slot: int) -> tuple[int, int]:
        """(index of the vanilla proof, index of its first inclusion proof) ``slot`` came from."""
        if self.proof.kind is PostKind.WINNING:
            return 0, slot
        return int(self.slots_values.order[slot]), 0

    @cached_property
    def public_inputs(self) -> tuple[int, ...]:
        """Without ONE, in rust-fil-proofs' order: per slot comm_r then its leaf challenges."""
        v = self.slots_values
        out = np.empty((v.order.size, 1 + self.challenges.shape[1]), dtype=object)
        out[:, 0] = np.array(limbs_to_ints(v.comm_r), dtype=object)[v.order]
        out[:, 1:] = self.challenges.tolist()
        return tuple(out.reshape(-1).tolist())

    @cached_property
    def slots(self) -> tuple[SlotWitness, ...]:
        """The slots as Python ints (the reference synthesis); a row's slots share one object."""
        return tuple(self.slots_values.witnesses(self.shape))

    def _slot_field(self, slot: int, challenge: int) -> str:
        i, first = self.origin(slot)
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
        self._check_inputs(inputs, "synthesized public inputs differ from the verifier's")
        return r1cs, inputs, aux

    def assignment(self, *, into=None, pool: PostWitnessPool | None = None, timings: dict | None = None):
        """(inputs, aux) as (n, 4) uint64 canonical, ONE first, in the circuit's variable order,
        computed without synthesis (:mod:`cuzk_plugin.filecoin.post.witness_slots`; ``into`` and
        ``pool`` as there); vanilla proofs whose values violate the circuit raise
        :class:`PostWitnessError` naming the field."""
        try:
            inputs, aux = post_assignment(self.shape, self.slots_values, into=into, pool=pool, timings=timings)
        except PostWitnessMismatch as exc:
            i, _ = self.origin(exc.slot)
            field = f"vanilla_proofs[{i}].comm_r" if exc.challenge is None else self._slot_field(exc.slot, exc.challenge)
            raise PostWitnessError(f"{field}: violates constraint {exc.constraint} of the {self.circuit_id} circuit "
                                   f"({exc}); the vanilla proof is corrupted, nothing was proved") from None
        self._check_inputs(inputs, "the witness's public inputs differ from the verifier's")
        return inputs, aux

    def _check_inputs(self, inputs: np.ndarray, message: str) -> None:
        """The circuit's inputs (ONE first) must be the verifier's: each slot's comm_r and leaves."""
        v = self.slots_values
        want = np.zeros((v.order.size, 1 + self.challenges.shape[1], FR_LIMBS), dtype=np.uint64)
        want[:, 0] = v.comm_r[v.order]
        want[:, 1:, 0] = self.challenges
        if inputs.shape != (1 + want.size // FR_LIMBS, FR_LIMBS) or not (inputs[1:] == want.reshape(-1, FR_LIMBS)).all():
            raise PostWitnessError(message)

    def synthesize(self):
        """(SynthesizedPartition, public inputs without ONE), witness checked (the reference
        synthesis: every constraint built in Python)."""
        r1cs, inputs, aux = self.circuit()
        return synthesize_r1cs(r1cs, inputs, aux, check=False), list(self.public_inputs)


@dataclass(frozen=True, eq=False)
class PostJob:
    """One checked PoSt request: its fields and its one partition."""

    proof: RegisteredPoStProof
    randomness: bytes
    partition_index: int
    vanilla_proofs: tuple[bytes, ...]
    partition: PostPartition

    @property
    def circuit_id(self) -> str:
        return self.partition.circuit_id

    @property
    def shape(self) -> PostShape:
        return self.proof.shape

    @property
    def public_inputs(self) -> tuple[int, ...]:
        return self.partition.public_inputs

    @property
    def slots(self) -> tuple[SlotWitness, ...]:
        return self.partition.slots

    @cached_property
    def sectors(self) -> tuple[FallbackPoStSectorProof, ...]:
        """The entries as objects (what the arrays hold, for inspection)."""
        raws = list(self.vanilla_proofs)
        return decode_sector_proofs(raws, self.shape, [f"vanilla_proofs[{i}]" for i in range(len(raws))])

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
        raws = tuple(bytes(raw) for raw in vanilla_proofs)
        sectors = _decode(list(raws), shape)
        challenges = slot_challenges(proof, randomness, sectors.sector_id.tolist(), partition_index)
        _check_sectors(proof, sectors, challenges)
        partition = PostPartition(proof, _slot_arrays(proof, sectors), np.array(challenges, dtype=np.uint64))
        return cls(proof, bytes(randomness), partition_index, raws, partition)

    def circuit(self):
        """:meth:`PostPartition.circuit`."""
        return self.partition.circuit()

    def assignment(self, **kwargs):
        """:meth:`PostPartition.assignment`."""
        return self.partition.assignment(**kwargs)

    def synthesize(self):
        """:meth:`PostPartition.synthesize`."""
        return self.partition.synthesize()
