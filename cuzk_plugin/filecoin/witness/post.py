"""A Fallback PoSt partition's full assignment without linear combinations, vectorized.

:func:`post_assignment` returns what synthesizing
:func:`cuzk_plugin.filecoin.post_circuit.synthesize_post` into a witness constraint system
returns (inputs with ONE first, aux), in the same variable order, computed for every slot and
challenge at once: each slot is comm_r_last, comm_c, comm_r, the Poseidon-2 of comm_r, then
per challenge its leaf and per tree_r_last level the index bits, siblings, insertion and
Poseidon hash (post-facts.md section 4). Poseidon follows the gadget's schedule
(:mod:`.poseidon`), insertion the gadget's pick order (:mod:`.porep`'s insert_8 / insert_2).

With every value computed this way, the only constraints vanilla proofs can violate are
comm_r = Poseidon(comm_c, comm_r_last) and each path's computed root = comm_r_last; both are
checked, and :class:`PostWitnessMismatch` names the slot, challenge and constraint index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS, R
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.filecoin.post_circuit import SlotWitness
from cuzk_plugin.filecoin.post_proofs import PostShape
from cuzk_plugin.filecoin.witness.porep import _insert_2, _insert_8, _limbs
from cuzk_plugin.filecoin.witness.poseidon import poseidon_many, poseidon_num_aux

__all__ = ["post_assignment", "PostLayout", "post_layout", "PostWitnessMismatch"]

_INSERT = {2: 2, 8: 22}  # aux (= constraints) of insert_2 / insert_8


class PostWitnessMismatch(CircuitError):
    """The witness violates constraint ``constraint``: slot ``slot``'s comm_r (``challenge``
    None) or its challenge ``challenge``'s inclusion path."""

    constraint: int  #: always known here

    def __init__(self, slot: int, challenge: int | None, constraint: int):
        what = "comm_r = Poseidon(comm_c, comm_r_last)" if challenge is None else \
            f"challenge {challenge}: inclusion in tree_r_last"
        super().__init__(f"slot {slot} {what}")
        self.slot, self.challenge, self.constraint = slot, challenge, constraint


@dataclass(frozen=True)
class PostLayout:
    """Aux offsets and constraint counts of one slot (every slot has the same layout)."""

    shape: PostShape
    header_aux: int  #: comm_r_last, comm_c, comm_r, Poseidon-2
    challenge_aux: int
    #: per level: (arity, offset of its index bits within a challenge, siblings, insert, hash)
    levels: tuple[tuple[int, int, int, int, int], ...]
    header_constraints: int  #: inputize, Poseidon-2, equal
    challenge_constraints: int

    @property
    def slot_aux(self) -> int:
        return self.header_aux + self.shape.challenges_per_slot * self.challenge_aux

    @property
    def slot_constraints(self) -> int:
        return self.header_constraints + self.shape.challenges_per_slot * self.challenge_constraints


def post_layout(shape: PostShape) -> PostLayout:
    p2 = poseidon_num_aux(2)
    off, cons, levels = 1, 0, []  # the leaf first
    for a in shape.tree_arities:
        nb = a.bit_length() - 1
        bits, sibs = off, off + nb
        ins = sibs + a - 1
        h = ins + _INSERT[a]
        levels.append((a, bits, sibs, ins, h))
        off = h + poseidon_num_aux(a)
        cons += nb + _INSERT[a] + poseidon_num_aux(a)
    return PostLayout(shape, 3 + p2, off, tuple(levels), 1 + p2 + 1, cons + 2)


def _obj(rows) -> np.ndarray:
    out = np.empty(len(rows), dtype=object)
    out[:] = [int(v) % R for v in rows]
    return out


def post_assignment(shape: PostShape, slots: list[SlotWitness]) -> tuple[np.ndarray, np.ndarray]:
    """(inputs, aux) as (n, 4) uint64 canonical limbs, ONE first, in synthesize_post's order.

    Slots given as the same :class:`SlotWitness` object (a partition padded with its last
    sector, Winning's 66 slots of one sector) are computed once and copied."""
    lay = post_layout(shape)
    n_slots, n_ch = shape.sector_slots, shape.challenges_per_slot
    if len(slots) != n_slots:
        raise ValueError(f"{len(slots)} sector slots, the circuit has {n_slots}")
    arities = shape.tree_arities
    first: dict[int, int] = {}  # id of a distinct slot -> its index among the distinct ones
    order = np.array([first.setdefault(id(slot), len(first)) for slot in slots], dtype=np.int64)
    distinct = list({id(slot): slot for slot in slots}.values())
    where = [int(np.flatnonzero(order == u)[0]) for u in range(len(distinct))]  # first slot of each
    for u, slot in enumerate(distinct):
        if len(slot.paths) != n_ch or len(slot.leaves) != n_ch or any([lv.arity for lv in path] != arities
                                                                     for path in slot.paths):
            raise ValueError(f"slot {where[u]}: paths do not have the circuit's shape ({n_ch} paths of arities {arities})")
        if slot.comm_r is None or slot.comm_c is None or slot.comm_r_last is None:
            raise ValueError(f"slot {where[u]} has no values: a witness assignment needs slots with values, not blank ones")
    try:
        aux_u, inputs_u = _distinct_assignment(lay, distinct)
    except PostWitnessMismatch as exc:
        s = where[exc.slot]
        shift = (s - exc.slot) * lay.slot_constraints
        raise PostWitnessMismatch(s, exc.challenge, exc.constraint + shift) from None
    aux = aux_u[order] if len(distinct) < n_slots else aux_u
    inputs = np.concatenate([np.array([1], dtype=object), inputs_u[order].reshape(-1)])
    return _limbs(inputs), aux.reshape(-1, FR_LIMBS)


def _distinct_assignment(lay: PostLayout, slots: list[SlotWitness]) -> tuple[np.ndarray, np.ndarray]:
    """(aux (slots, slot_aux, 4) uint64, inputs (slots, 1 + challenges) object) of these slots,
    numbered as if they were the partition's first slots (constraint indices likewise)."""
    n_slots, n_ch = len(slots), lay.shape.challenges_per_slot
    crl = _obj([s.comm_r_last for s in slots])
    cc = _obj([s.comm_c for s in slots])
    cr = _obj([s.comm_r for s in slots])
    h_aux, digest = poseidon_many(np.stack([cc, crl]))
    bad = np.flatnonzero(digest != cr)
    if bad.size:
        s = int(bad[0])
        raise PostWitnessMismatch(s, None, s * lay.slot_constraints + lay.header_constraints - 1)

    aux = np.empty((n_slots, lay.slot_aux, FR_LIMBS), dtype=np.uint64)
    aux.fill(0)
    aux[:, 0:3] = _limbs(np.stack([crl, cc, cr], axis=1))
    aux[:, 3:lay.header_aux] = _limbs(h_aux.T)
    ch = aux[:, lay.header_aux:].reshape(n_slots, n_ch, lay.challenge_aux, FR_LIMBS)

    # every (slot, challenge) path at once: values (n_slots, n_ch)
    leaves = np.empty((n_slots, n_ch), dtype=object)
    # leaves and siblings have values by construction once the commitments have (a blank slot has none)
    leaves[:] = [[int(v) % R for v in cast("tuple[int, ...]", slot.leaves)] for slot in slots]
    ch[:, :, 0] = _limbs(leaves)
    cur = leaves
    packed = np.zeros((n_slots, n_ch), dtype=object)
    shift = 0
    for lv, (a, o_bits, o_sibs, o_ins, o_hash) in enumerate(lay.levels):
        nb = a.bit_length() - 1
        index = np.array([[path[lv].index for path in slot.paths] for slot in slots], dtype=np.int64)
        if ((index < 0) | (index >= a)).any():
            raise ValueError(f"level {lv}: a path index is not below the arity {a}")
        bits = [(index >> i) & 1 for i in range(nb)]
        sibs = np.empty((a - 1, n_slots, n_ch), dtype=object)
        sibs[:] = np.array([[[int(v) % R for v in cast("tuple[int, ...]", path[lv].siblings)] for path in slot.paths]
                            for slot in slots],
                           dtype=object).transpose(2, 0, 1)
        for i, b in enumerate(bits):
            ch[:, :, o_bits + i, 0] = b
            packed = packed + (b.astype(object) << (shift + i))
        shift += nb
        ch[:, :, o_sibs:o_sibs + a - 1] = _limbs(sibs.transpose(1, 2, 0))
        if a == 8:
            ins_aux, children = _insert_8(cur, list(sibs), *bits)
            ch[:, :, o_ins, 0] = ins_aux[0]
            ch[:, :, o_ins + 1, 0] = ins_aux[1]
            ch[:, :, o_ins + 2:o_ins + 22] = _limbs(np.stack(ins_aux[2:], axis=-1))
        else:
            ins_aux, children = _insert_2(cur, list(sibs), *bits)
            ch[:, :, o_ins:o_ins + 2] = _limbs(np.stack(ins_aux, axis=-1))
        p_aux, dig = poseidon_many(np.stack([c.reshape(-1) for c in children]).astype(object))
        ch[:, :, o_hash:o_hash + poseidon_num_aux(a)] = _limbs(p_aux.T.reshape(n_slots, n_ch, -1))
        cur = dig.reshape(n_slots, n_ch)

    wrong = np.argwhere(cur != crl[:, None])
    if wrong.size:
        s, c = (int(x) for x in wrong[0])
        raise PostWitnessMismatch(s, c, s * lay.slot_constraints + lay.header_constraints
                                  + (c + 1) * lay.challenge_constraints - 1)

    inputs = np.empty((n_slots, 1 + n_ch), dtype=object)
    inputs[:, 0] = cr
    inputs[:, 1:] = packed
    return aux, inputs
