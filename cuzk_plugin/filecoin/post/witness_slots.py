"""The slots of a Fallback PoSt partition's assignment, computed for every slot and challenge at
once (the entry, :func:`~cuzk_plugin.filecoin.post.witness.post_assignment`, is :mod:`.witness`),
in :func:`cuzk_plugin.filecoin.post.circuit.synthesize_post`'s variable order: each slot is comm_r_last, comm_c, comm_r, the Poseidon-2 of comm_r, then
per challenge its leaf and per tree_r_last level the index bits, siblings, insertion and
Poseidon hash (post-facts.md section 4). Poseidon follows the gadget's schedule
(:mod:`cuzk_plugin.filecoin.witness.poseidon`), insertion the gadget's pick order (:mod:`cuzk_plugin.filecoin.witness.insertion`).

The slots' values come as :class:`SlotArrays` ((..., 4) uint64 limb arrays, decoded once
from the vanilla proofs' bytes): each tree level's hashes of every slot and challenge are one
call of the C Poseidon (:mod:`cuzk_plugin.filecoin.witness.poseidon_cpu`, ~20x the Python-int schedule; that schedule
where no C compiler is found), which writes its aux straight into the assignment at each
instance's offset. The aux may lie in a shared-memory block the caller gives (``into``: the
engine exports it in place) and may be split by runs of slots over forked processes
(:mod:`.witness_pool`, through :mod:`.witness`); both run :func:`write_run`, so the result is the same bit for bit.

With every value computed this way, the only constraints vanilla proofs can violate are
comm_r = Poseidon(comm_c, comm_r_last) and each path's computed root = comm_r_last; both are
checked, and :class:`PostWitnessMismatch` names the slot, challenge and constraint index.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, ints_to_limbs, limbs_to_ints
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.filecoin.gadgets.merkle import PathLevel
from cuzk_plugin.filecoin.post.circuit import SlotWitness
from cuzk_plugin.filecoin.post.params import PostShape
from cuzk_plugin.filecoin.witness.insertion import insert_2, insert_8
from cuzk_plugin.filecoin.witness.poseidon import poseidon_num_aux
from cuzk_plugin.filecoin.witness.poseidon_cpu import poseidon_into

__all__ = ["SlotArrays", "PostLayout", "post_layout", "PostWitnessMismatch", "RunFailures", "write_run", "raise_first",
           "zeroed_slots"]

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

    @property
    def aux_nbytes(self) -> int:
        """Bytes of the partition's (num_aux, 4) uint64 aux array (4.06 GB for a 32 GiB Window)."""
        return self.shape.sector_slots * self.slot_aux * FR_LIMBS * 8

    def comm_r_constraint(self, slot: int) -> int:
        """The constraint comm_r = Poseidon(comm_c, comm_r_last) of ``slot``."""
        return slot * self.slot_constraints + self.header_constraints - 1

    def root_constraint(self, slot: int, challenge: int) -> int:
        """The constraint computed root = comm_r_last of ``slot``'s ``challenge``."""
        return slot * self.slot_constraints + self.header_constraints + (challenge + 1) * self.challenge_constraints - 1


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


@dataclass(frozen=True, eq=False)
class SlotArrays:
    """A partition's distinct sector slots as canonical Fr limbs (uint64), and which of them
    each circuit slot is: all the witness needs, without Python ints (a 32 GiB Window
    partition: ~54 MB, nearly all siblings). Row u's first slot comes before row u + 1's."""

    comm_r: np.ndarray  #: (rows, 4)
    comm_c: np.ndarray  #: (rows, 4)
    comm_r_last: np.ndarray  #: (rows, 4): tree_r_last's root
    leaves: np.ndarray  #: (rows, challenges, 4): each challenged leaf
    siblings: np.ndarray  #: (rows, challenges, sum of arity - 1, 4): leaf level first
    index: np.ndarray  #: (rows, challenges, levels) uint8: the node's position among its level's children
    order: np.ndarray  #: (slots,) int64: the row each circuit slot is

    @property
    def rows(self) -> int:
        return self.comm_r.shape[0]

    def check(self, shape: PostShape) -> None:
        """ValueError naming the first array (or slot) that does not fit ``shape``'s circuit."""
        ch, ar = shape.challenges_per_slot, shape.tree_arities
        u = self.rows
        want = {"comm_r": (u, FR_LIMBS), "comm_c": (u, FR_LIMBS), "comm_r_last": (u, FR_LIMBS),
                "leaves": (u, ch, FR_LIMBS), "siblings": (u, ch, sum(a - 1 for a in ar), FR_LIMBS),
                "index": (u, ch, len(ar)), "order": (shape.sector_slots,)}
        for name, dims in want.items():
            arr = getattr(self, name)
            dtype = {"index": np.uint8, "order": np.int64}.get(name, np.uint64)
            if arr.shape != dims or arr.dtype != dtype:
                raise ValueError(f"{name}: {arr.dtype}{list(arr.shape)}, the circuit's slots need {np.dtype(dtype)}{list(dims)}")
        if self.order.size and (self.order.min() < 0 or self.order.max() >= u):
            raise ValueError(f"order: a slot names a row outside 0..{u - 1}")
        for lv, a in enumerate(ar):
            if (self.index[:, :, lv] >= a).any():
                raise ValueError(f"level {lv}: a path index is not below the arity {a}")

    def select(self, rows: np.ndarray, order: np.ndarray) -> SlotArrays:
        """These ``rows`` (sorted), for slots ``order`` (numbered among them): views where the
        rows are one run, else copies."""
        pick: slice | np.ndarray = rows
        if rows.size and rows[-1] - rows[0] + 1 == rows.size:
            pick = slice(int(rows[0]), int(rows[-1]) + 1)
        return SlotArrays(self.comm_r[pick], self.comm_c[pick], self.comm_r_last[pick], self.leaves[pick],
                          self.siblings[pick], self.index[pick], order)

    @classmethod
    def from_witnesses(cls, shape: PostShape, slots: list[SlotWitness]) -> SlotArrays:
        """The arrays of ``slots`` (one row per distinct object: a padded partition's slots
        given as the same object are computed once); ValueError names a slot that does not fit."""
        n_slots, n_ch, arities = shape.sector_slots, shape.challenges_per_slot, shape.tree_arities
        if len(slots) != n_slots:
            raise ValueError(f"{len(slots)} sector slots, the circuit has {n_slots}")
        first: dict[int, int] = {}  # id of a distinct slot -> its row
        order = np.array([first.setdefault(id(slot), len(first)) for slot in slots], dtype=np.int64)
        distinct = list({id(slot): slot for slot in slots}.values())
        where = np.unique(order, return_index=True)[1]  # the first slot of each row
        for u, slot in enumerate(distinct):
            if len(slot.paths) != n_ch or len(slot.leaves) != n_ch or any([lv.arity for lv in path] != arities
                                                                         for path in slot.paths):
                raise ValueError(f"slot {where[u]}: paths do not have the circuit's shape ({n_ch} paths of arities {arities})")
            if slot.comm_r is None or slot.comm_c is None or slot.comm_r_last is None:
                raise ValueError(f"slot {where[u]} has no values: a witness assignment needs slots with values, not blank ones")
        u = len(distinct)
        index = np.array([[[lv.index for lv in path] for path in s.paths] for s in distinct], dtype=np.int64)
        index = index.reshape(u, n_ch, len(arities))
        for lv, a in enumerate(arities):
            if ((index[:, :, lv] < 0) | (index[:, :, lv] >= a)).any():
                raise ValueError(f"level {lv}: a path index is not below the arity {a}")
        return cls(_fr([s.comm_r for s in distinct], (u,)), _fr([s.comm_c for s in distinct], (u,)),
                   _fr([s.comm_r_last for s in distinct], (u,)), _fr([v for s in distinct for v in s.leaves], (u, n_ch)),
                   _fr([v for s in distinct for path in s.paths for lv in path for v in lv.siblings],
                       (u, n_ch, sum(a - 1 for a in arities))), index.astype(np.uint8), order)

    def witnesses(self, shape: PostShape) -> list[SlotWitness]:
        """The slots as :class:`SlotWitness` (Python ints; slots of one row share one object),
        for the reference synthesis."""
        u, n_ch = self.rows, shape.challenges_per_slot
        comm_r, comm_c, crl = (limbs_to_ints(a) for a in (self.comm_r, self.comm_c, self.comm_r_last))
        leaves = np.array(limbs_to_ints(self.leaves), dtype=object).reshape(u, n_ch)
        sibs = np.array(limbs_to_ints(self.siblings), dtype=object).reshape(u, n_ch, -1)
        rows = []
        for k in range(u):
            paths = []
            for c in range(n_ch):
                levels, s0 = [], 0
                for lv, a in enumerate(shape.tree_arities):
                    levels.append(PathLevel(a, tuple(sibs[k, c, s0:s0 + a - 1]), int(self.index[k, c, lv])))
                    s0 += a - 1
                paths.append(tuple(levels))
            rows.append(SlotWitness(comm_r[k], comm_c[k], crl[k], tuple(leaves[k]), tuple(paths)))
        return [rows[u] for u in self.order.tolist()]

    def packed_indices(self, shape: PostShape) -> np.ndarray:
        """(rows, challenges) int64: each path's index bits packed leaf level first, the public
        input the circuit makes of them (the challenged leaf's number)."""
        bits = [a.bit_length() - 1 for a in shape.tree_arities]
        if sum(bits) >= 63:
            raise ValueError("the index bits of a path do not fit the packed challenge word")
        shifts = np.cumsum([0, *bits[:-1]], dtype=np.int64)
        return (self.index.astype(np.int64) << shifts).sum(axis=-1)

    def first_slots(self) -> np.ndarray:
        """(rows,) the first circuit slot of each row."""
        first = np.full(self.rows, -1, dtype=np.int64)
        rows, at = np.unique(self.order, return_index=True)
        first[rows] = at
        return first


def _fr(values, shape: tuple[int, ...]) -> np.ndarray:
    """Python ints -> ``shape + (4,)`` uint64 limbs of each value mod r."""
    return ints_to_limbs(int(v) % R for v in values).reshape(*shape, FR_LIMBS)


def zeroed_slots(shape: tuple[int, ...]) -> np.ndarray:
    """A zeroed uint64 array on its own anonymous mapping, so in 4 KiB pages: numpy asks the
    kernel for 2 MiB pages for large arrays, and on the CPU VM of bench/post their zeroing and
    compaction cost 4.7-6.6 s of the 4 GB a 32 GiB Window assignment fills, 4 KiB pages 2.9 s."""
    count = int(np.prod(shape))
    return np.frombuffer(mmap.mmap(-1, max(8 * count, 1)), dtype=np.uint64, count=count).reshape(shape)


@dataclass(frozen=True)
class RunFailures:
    """What one run of slots found wrong (small: it comes back through a pipe), in circuit slot
    numbers (the first slot of the run where the failing row is computed)."""

    comm_r: np.ndarray  #: (k,) slots whose comm_r is not Poseidon(comm_c, comm_r_last)
    roots: np.ndarray  #: (k, 2) per failing slot, (slot, its first challenge whose root is wrong)


def write_run(lay: PostLayout, arrays: SlotArrays, aux3: np.ndarray, first: int) -> RunFailures:
    """Write circuit slots ``first`` .. ``first + len(arrays.order) - 1`` into ``aux3`` (the
    partition's (slots, slot_aux, 4) aux, zero where this run writes): each row of ``arrays``
    the run's slots name is computed once, at its first slot in the run, and copied to the
    others. One process runs all slots as one run; a pool one run a process."""
    order = arrays.order
    rows, pos = np.unique(order, return_index=True)  # pos: each row's first slot in the run
    by_pos = np.argsort(pos)
    rows, pos = rows[by_pos], pos[by_pos]
    sub = arrays.select(rows, np.arange(rows.size, dtype=np.int64))
    contiguous = bool(rows.size) and pos[-1] - pos[0] + 1 == rows.size
    out = aux3[first + pos[0]:first + pos[0] + rows.size] if contiguous else zeroed_slots((rows.size, lay.slot_aux, FR_LIMBS))
    comm_ok, root_bad = _compute_rows(lay, sub, out)
    src = np.empty(arrays.rows, dtype=np.int64)
    src[rows] = first + pos
    if not contiguous:
        for k, p in enumerate(pos.tolist()):
            aux3[first + p] = out[k]
    repeat = np.ones(order.size, dtype=bool)
    repeat[pos] = False
    for s in np.flatnonzero(repeat).tolist():  # one slot's aux at a time: 1.7 MB at 32 GiB
        aux3[first + s] = aux3[src[order[s]]]
    bad = np.flatnonzero(root_bad.any(axis=1))
    roots = np.stack([first + pos[bad], root_bad[bad].argmax(axis=1)], axis=1) if bad.size else np.zeros((0, 2), np.int64)
    return RunFailures(first + pos[~comm_ok], roots.astype(np.int64))


def raise_first(lay: PostLayout, arrays: SlotArrays, failures: list[RunFailures]) -> None:
    """Raise :class:`PostWitnessMismatch` for the first failure of the runs, named as the
    one-run computation names it: comm_r before the paths; the row's first slot, then the
    challenge, lowest first."""
    first = arrays.first_slots()

    def of_row(slot: np.ndarray) -> np.ndarray:
        return first[arrays.order[slot]]

    comm = np.concatenate([f.comm_r for f in failures])
    if comm.size:
        s = int(of_row(comm).min())
        raise PostWitnessMismatch(s, None, lay.comm_r_constraint(s))
    roots = np.concatenate([f.roots for f in failures])
    if roots.size:
        slots = of_row(roots[:, 0])
        k = int(np.lexsort((roots[:, 1], slots))[0])
        s, c = int(slots[k]), int(roots[k, 1])
        raise PostWitnessMismatch(s, c, lay.root_constraint(s, c))


def _compute_rows(lay: PostLayout, arrays: SlotArrays, out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Write each row of ``arrays`` into ``out`` ((rows, slot_aux, 4), C-contiguous, zero);
    (comm_r right (rows,), root wrong (rows, challenges)) bool."""
    n_rows, n_ch = arrays.rows, lay.shape.challenges_per_slot
    crl, cc, cr = arrays.comm_r_last, arrays.comm_c, arrays.comm_r
    starts = np.arange(n_rows, dtype=np.int64) * lay.slot_aux * FR_LIMBS
    out[:, 0], out[:, 1], out[:, 2] = crl, cc, cr
    digest = poseidon_into(2, np.stack([cc, crl], axis=1), out, starts + 3 * FR_LIMBS)
    comm_ok = (digest == cr).all(axis=-1)

    # every (row, challenge) path at once: values (rows, n_ch, 4), bits (rows, n_ch, 1)
    ch = out[:, lay.header_aux:].reshape(n_rows, n_ch, lay.challenge_aux, FR_LIMBS)
    ch_starts = (starts[:, None] + FR_LIMBS * (lay.header_aux + lay.challenge_aux * np.arange(n_ch))).reshape(-1)
    cur = arrays.leaves
    ch[:, :, 0] = cur
    s0 = 0
    for lv, (a, o_bits, o_sibs, o_ins, o_hash) in enumerate(lay.levels):
        index = arrays.index[:, :, lv].astype(np.int64)
        bits = [(index >> i) & 1 for i in range(a.bit_length() - 1)]
        sibs = arrays.siblings[:, :, s0:s0 + a - 1]
        s0 += a - 1
        for i, b in enumerate(bits):
            ch[:, :, o_bits + i, 0] = b
        ch[:, :, o_sibs:o_sibs + a - 1] = sibs
        cols = [b[:, :, None] for b in bits]  # broadcast over the limbs
        els = [sibs[:, :, k] for k in range(a - 1)]
        if a == 8:
            ins_aux, children = insert_8(cur, els, *cols)
            ch[:, :, o_ins, 0] = ins_aux[0][:, :, 0]
            ch[:, :, o_ins + 1, 0] = ins_aux[1][:, :, 0]
            ch[:, :, o_ins + 2:o_ins + 22] = np.stack(ins_aux[2:], axis=2)
        else:
            ins_aux, children = insert_2(cur, els, *cols)
            ch[:, :, o_ins:o_ins + 2] = np.stack(ins_aux, axis=2)
        preimage = np.stack(children, axis=2).reshape(n_rows * n_ch, a, FR_LIMBS)
        cur = poseidon_into(a, preimage, out, ch_starts + FR_LIMBS * o_hash).reshape(n_rows, n_ch, FR_LIMBS)
    return comm_ok, (cur != crl[:, None]).any(axis=-1)
