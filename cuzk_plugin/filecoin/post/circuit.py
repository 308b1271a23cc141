"""The Fallback PoSt circuit of one partition, Window and Winning (storage-proofs-post
``fallback/circuit.rs``), laid out variable for variable as rust-fil-proofs lays it out
(/work/shared/specs/post-facts.md section 4):

for each sector slot, in order:
  1. comm_r_last, comm_c, comm_r allocated (private), in that order;
  2. comm_r inputized (one public input, one constraint);
  3. Poseidon arity 2 over (comm_c, comm_r_last), then comm_r * 1 = hash;
  4. per challenge: the leaf allocated, then its inclusion in tree_r_last with the root the
     comm_r_last variable of step 1 (PoRCircuit, private): per level the index bits then the
     siblings, insert, Poseidon of the arity; all index bits packed into one public input;
     computed root * 1 = comm_r_last.

Public inputs, after ONE: per slot comm_r, then each challenge's leaf index
(fallback/compound.rs generate_public_inputs). A partition with fewer sectors than slots
repeats its last sector (section 4, padding); a WinningPoSt is 66 slots of one challenge, every
slot the same sector (Winning reshaping).
"""

from __future__ import annotations

from dataclasses import dataclass

from cuzk_plugin.filecoin.gadgets.merkle import PathLevel, enforce_inclusion, poseidon_node_hash
from cuzk_plugin.filecoin.gadgets.num import alloc_num, equal, inputize
from cuzk_plugin.filecoin.gadgets.poseidon import poseidon_hash
from cuzk_plugin.filecoin.post.params import PostShape

__all__ = ["SlotWitness", "blank_slots", "synthesize_post", "post_public_inputs"]


@dataclass(frozen=True)
class SlotWitness:
    """One sector slot: its commitments and one (leaf, path) per challenge (None: blank)."""

    comm_r: int | None
    comm_c: int | None
    comm_r_last: int | None
    leaves: tuple[int | None, ...]
    paths: tuple[tuple[PathLevel, ...], ...]


def blank_slots(shape: PostShape) -> list[SlotWitness]:
    """Every slot of the circuit with the right shape and no values (setup, counting)."""
    path = tuple(PathLevel(a, (None,) * (a - 1), None) for a in shape.tree_arities)
    slot = SlotWitness(None, None, None, (None,) * shape.challenges_per_slot, (path,) * shape.challenges_per_slot)
    return [slot] * shape.sector_slots


def _check_shape(shape: PostShape, slots: list[SlotWitness]) -> None:
    if len(slots) != shape.sector_slots:
        raise ValueError(f"{len(slots)} sector slots, the circuit has {shape.sector_slots} (pad with the last sector)")
    arities = shape.tree_arities
    for s, slot in enumerate(slots):
        if len(slot.leaves) != shape.challenges_per_slot or len(slot.paths) != shape.challenges_per_slot:
            raise ValueError(f"slot {s}: {len(slot.leaves)} leaves / {len(slot.paths)} paths, "
                             f"the circuit has {shape.challenges_per_slot} challenges a slot")
        for c, path in enumerate(slot.paths):
            if [lv.arity for lv in path] != arities:
                raise ValueError(f"slot {s} challenge {c}: path arities {[lv.arity for lv in path]}, tree_r_last has {arities}")


def synthesize_post(cs, shape: PostShape, slots: list[SlotWitness], *, regions: list | None = None) -> None:
    """Synthesize one partition into ``cs`` (a ConstraintSystem or ShapeConstraintSystem).

    ``regions``, if given, receives (first constraint index, description) per part, so a
    violated constraint can be named."""
    _check_shape(shape, slots)
    for s, slot in enumerate(slots):
        if regions is not None:
            regions.append((cs.num_constraints, f"slot {s}: comm_r = Poseidon(comm_c, comm_r_last)"))
        comm_r_last = alloc_num(cs, slot.comm_r_last)
        comm_c = alloc_num(cs, slot.comm_c)
        comm_r = alloc_num(cs, slot.comm_r)
        inputize(cs, comm_r)
        equal(cs, comm_r, poseidon_hash(cs, [comm_c, comm_r_last]))
        for c, (leaf_value, path) in enumerate(zip(slot.leaves, slot.paths, strict=True)):
            if regions is not None:
                regions.append((cs.num_constraints, f"slot {s} challenge {c}: inclusion in tree_r_last"))
            leaf = alloc_num(cs, leaf_value)
            enforce_inclusion(cs, leaf, list(path), comm_r_last, poseidon_node_hash)


def post_public_inputs(comm_rs: list[int], challenges: list[list[int]]) -> list[int]:
    """The verifier's inputs without ONE: per slot comm_r then its leaf indices (as Fr)."""
    if len(comm_rs) != len(challenges):
        raise ValueError(f"{len(comm_rs)} comm_r values for {len(challenges)} slots")
    out: list[int] = []
    for comm_r, leaves in zip(comm_rs, challenges, strict=True):
        out.append(comm_r)
        out.extend(leaves)
    return out
