"""A Fallback PoSt partition's full assignment without linear combinations, vectorized.

:func:`post_assignment` returns what synthesizing
:func:`cuzk_plugin.filecoin.post_circuit.synthesize_post` into a witness constraint system
returns (inputs with ONE first, aux), in the same variable order, computed for every slot and
challenge at once: each slot is comm_r_last, comm_c, comm_r, the Poseidon-2 of comm_r, then
per challenge its leaf and per tree_r_last level the index bits, siblings, insertion and
Poseidon hash (post-facts.md section 4). Poseidon follows the gadget's schedule
(:mod:`.poseidon`), insertion the gadget's pick order (:mod:`.porep`'s insert_8 / insert_2).

Values live in (..., 4) uint64 limb arrays throughout: each tree level's hashes of every slot
and challenge are one call of the C Poseidon (:mod:`.poseidon_cpu`, ~20x the Python-int
schedule; that schedule where no C compiler is found), which writes its aux straight into the
assignment at each instance's offset.

With every value computed this way, the only constraints vanilla proofs can violate are
comm_r = Poseidon(comm_c, comm_r_last) and each path's computed root = comm_r_last; both are
checked, and :class:`PostWitnessMismatch` names the slot, challenge and constraint index.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, ints_to_limbs
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.filecoin.post_circuit import SlotWitness
from cuzk_plugin.filecoin.post_proofs import PostShape
from cuzk_plugin.filecoin.witness.porep import _insert_2, _insert_8
from cuzk_plugin.filecoin.witness.poseidon import poseidon_num_aux
from cuzk_plugin.filecoin.witness.poseidon_cpu import poseidon_into

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


def _fr(values, shape: tuple[int, ...]) -> np.ndarray:
    """Python ints -> ``shape + (4,)`` uint64 limbs of each value mod r."""
    return ints_to_limbs(int(v) % R for v in values).reshape(*shape, FR_LIMBS)


def _zeros(shape: tuple[int, ...]) -> np.ndarray:
    """A zeroed uint64 array on its own anonymous mapping, so in 4 KiB pages: numpy asks the
    kernel for 2 MiB pages for large arrays, and on the CPU VM of bench/post their zeroing and
    compaction cost 4.7-6.6 s of the 4 GB a 32 GiB Window assignment fills, 4 KiB pages 2.9 s."""
    count = int(np.prod(shape))
    return np.frombuffer(mmap.mmap(-1, max(8 * count, 1)), dtype=np.uint64, count=count).reshape(shape)


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
    aux = aux_u
    if len(distinct) < n_slots:
        aux = _zeros((n_slots, *aux_u.shape[1:]))
        for s, u in enumerate(order):  # a slot's aux at a time: one 1.7 MB copy each at 32 GiB
            aux[s] = aux_u[u]
    one = np.array([[1, 0, 0, 0]], dtype=np.uint64)
    inputs = np.concatenate([one, inputs_u[order].reshape(-1, FR_LIMBS)])
    return inputs, aux.reshape(-1, FR_LIMBS)


def _distinct_assignment(lay: PostLayout, slots: list[SlotWitness]) -> tuple[np.ndarray, np.ndarray]:
    """(aux (slots, slot_aux, 4), inputs (slots, 1 + challenges, 4)) uint64 limbs of these
    slots, numbered as if they were the partition's first slots (constraint indices likewise)."""
    n_slots, n_ch = len(slots), lay.shape.challenges_per_slot
    crl = _fr([s.comm_r_last for s in slots], (n_slots,))
    cc = _fr([s.comm_c for s in slots], (n_slots,))
    cr = _fr([s.comm_r for s in slots], (n_slots,))
    slot_words = lay.slot_aux * FR_LIMBS  # uint64 words from one slot's aux to the next
    aux = _zeros((n_slots, lay.slot_aux, FR_LIMBS))
    aux[:, 0], aux[:, 1], aux[:, 2] = crl, cc, cr
    starts = np.arange(n_slots, dtype=np.int64) * slot_words
    digest = poseidon_into(2, np.stack([cc, crl], axis=1), aux, starts + 3 * FR_LIMBS)
    bad = np.flatnonzero((digest != cr).any(axis=-1))
    if bad.size:
        s = int(bad[0])
        raise PostWitnessMismatch(s, None, s * lay.slot_constraints + lay.header_constraints - 1)

    # every (slot, challenge) path at once: values (n_slots, n_ch, 4), bits (n_slots, n_ch, 1)
    ch = aux[:, lay.header_aux:].reshape(n_slots, n_ch, lay.challenge_aux, FR_LIMBS)
    ch_starts = (starts[:, None] + FR_LIMBS * (lay.header_aux + lay.challenge_aux * np.arange(n_ch))).reshape(-1)
    paths = [path for slot in slots for path in slot.paths]
    cur = _fr([v for slot in slots for v in slot.leaves], (n_slots, n_ch))
    ch[:, :, 0] = cur
    n_sibs = sum(a - 1 for a in lay.shape.tree_arities)
    sibs_all = _fr([v for path in paths for level in path for v in level.siblings], (n_slots, n_ch, n_sibs))
    index_all = np.array([[level.index for level in path] for path in paths], dtype=np.int64).reshape(n_slots, n_ch, -1)
    if sum(a.bit_length() - 1 for a in lay.shape.tree_arities) >= 63:
        raise ValueError("the index bits of a path do not fit the packed challenge word")
    packed = np.zeros((n_slots, n_ch), dtype=np.int64)
    shift, s0 = 0, 0
    for lv, (a, o_bits, o_sibs, o_ins, o_hash) in enumerate(lay.levels):
        nb = a.bit_length() - 1
        index = index_all[:, :, lv]
        if ((index < 0) | (index >= a)).any():
            raise ValueError(f"level {lv}: a path index is not below the arity {a}")
        bits = [(index >> i) & 1 for i in range(nb)]
        sibs = sibs_all[:, :, s0:s0 + a - 1]
        s0 += a - 1
        for i, b in enumerate(bits):
            ch[:, :, o_bits + i, 0] = b
            packed |= b << (shift + i)
        shift += nb
        ch[:, :, o_sibs:o_sibs + a - 1] = sibs
        cols = [b[:, :, None] for b in bits]  # broadcast over the limbs
        els = [sibs[:, :, k] for k in range(a - 1)]
        if a == 8:
            ins_aux, children = _insert_8(cur, els, *cols)
            ch[:, :, o_ins, 0] = ins_aux[0][:, :, 0]
            ch[:, :, o_ins + 1, 0] = ins_aux[1][:, :, 0]
            ch[:, :, o_ins + 2:o_ins + 22] = np.stack(ins_aux[2:], axis=2)
        else:
            ins_aux, children = _insert_2(cur, els, *cols)
            ch[:, :, o_ins:o_ins + 2] = np.stack(ins_aux, axis=2)
        preimage = np.stack(children, axis=2).reshape(n_slots * n_ch, a, FR_LIMBS)
        cur = poseidon_into(a, preimage, aux, ch_starts + FR_LIMBS * o_hash).reshape(n_slots, n_ch, FR_LIMBS)

    wrong = np.argwhere((cur != crl[:, None]).any(axis=-1))
    if wrong.size:
        s, c = (int(x) for x in wrong[0])
        raise PostWitnessMismatch(s, c, s * lay.slot_constraints + lay.header_constraints
                                  + (c + 1) * lay.challenge_constraints - 1)

    inputs = np.zeros((n_slots, 1 + n_ch, FR_LIMBS), dtype=np.uint64)
    inputs[:, 0] = cr
    inputs[:, 1:, 0] = packed
    return aux, inputs
