"""The values of a PoRep partition's assignment, computed part by part for all challenges at once.

Every challenge of a partition has the same layout (:mod:`.witness_layout`), so each part (a
label's 20 SHA-256 compressions, a Merkle level, a column hash) is evaluated for all its
instances with numpy. SHA-256 compressions run programs traced from the circuit's own gadget
(:mod:`cuzk_plugin.filecoin.witness.sha256`); Poseidon follows the gadget's schedule
(:mod:`cuzk_plugin.filecoin.witness.poseidon`); the small gadgets (bit decompositions, picks,
insertion, packing) are written here in the circuit's order. A partition's challenge work is
cut into :class:`Part` pieces that one process runs in turn (:mod:`.witness`) or forked workers
run at once (:mod:`.witness_pool`).

The circuit's only constraints a C1's values can violate, when every value is computed this
way, are the root equalities (comm_r = Poseidon(comm_c, comm_r_last), and each inclusion
path's computed root against comm_d / comm_c / comm_r_last): :func:`_finish` checks them and
raises :class:`WitnessMismatch` naming the challenge, the part of the circuit (the names of
``synthesize_partition``'s regions) and the first failing constraint's index.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import cast

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, ints_to_limbs
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.filecoin.params import BASE_DEGREE, EXP_DEGREE, PorepParams
from cuzk_plugin.filecoin.porep.circuit import TOTAL_PARENTS, PartitionWitness
from cuzk_plugin.filecoin.porep.witness_layout import PathLayout, PorepLayout, label_parents, label_signature, porep_layout
from cuzk_plugin.filecoin.witness.encoding import fr_bits_le, fr_limbs, pack_bits, reverse_bit_numbering
from cuzk_plugin.filecoin.witness.insertion import insert_2, insert_8
from cuzk_plugin.filecoin.witness.poseidon import poseidon_many
from cuzk_plugin.filecoin.witness.sha256 import node_hash_signature, sha256_many

__all__ = ["WitnessMismatch", "Part", "compute_part", "zeroed_aux"]

_FR_BITS = 255
_PACK_BITS = 254
_MASK254 = (1 << _PACK_BITS) - 1
_PARENTS = BASE_DEGREE + EXP_DEGREE


class WitnessMismatch(CircuitError):
    """The C1's values violate the circuit: ``constraint`` is the first failing constraint's
    index in the partition's R1CS, ``challenge`` its challenge (None: the partition header),
    ``region`` the part of the circuit (``synthesize_partition``'s region name)."""

    def __init__(self, partition: int | None, challenge: int | None, node: int | None, region: str,
                 constraint: int):
        where = "" if partition is None else f"partition {partition}: "
        what = region if challenge is None else f"challenge {challenge} (node {node}): {region}"
        super().__init__(f"{where}the witness violates constraint {constraint} ({what}); the C1 is "
                         f"corrupted or inconsistent")
        self.partition, self.challenge, self.node = partition, challenge, node
        self.region, self.constraint = region, constraint


# -- layout ---------------------------------------------------------------------------------


# -- values ---------------------------------------------------------------------------------


def _known(value: int | None, what: str) -> int:
    """A value the assignment needs; only a blank partition (shape, setup) leaves it None."""
    if value is None:
        raise ValueError(f"{what} has no value: a witness assignment needs a partition with values, not a blank one")
    return int(value)


def _obj(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [int(v) % R for v in values]
    return out


class _Aux:
    """Aux rows of the partition header (``header``, or None) and of a run of its challenges
    (``ch``: challenges x challenge_aux x 4), views into one (num_aux, 4) array."""

    def __init__(self, header: np.ndarray | None, ch: np.ndarray):
        self.header = header
        self.ch = ch

    @classmethod
    def of(cls, layout: PorepLayout, all_aux: np.ndarray, first: int = 0, count: int | None = None) -> _Aux:
        """Views of ``all_aux`` (num_aux, 4): the header and challenges [first, first + count)."""
        count = layout.params.challenges_per_partition - first if count is None else count
        start = layout.header_aux + first * layout.challenge_aux
        ch = all_aux[start:start + count * layout.challenge_aux].reshape(count, layout.challenge_aux, FR_LIMBS)
        return cls(all_aux[:layout.header_aux], ch)

    def bits(self, off: int, bits: np.ndarray) -> None:
        """bits (challenges, k) 0/1 at challenge offset ``off``."""
        self.ch[:, off:off + bits.shape[1], 0] = bits

    def fields(self, off: int, values: np.ndarray) -> None:
        """values (challenges, k) object ints at challenge offset ``off``."""
        self.ch[:, off:off + values.shape[1], :] = fr_limbs(values)


def zeroed_aux(layout: PorepLayout) -> np.ndarray:
    """The partition's (num_aux, 4) uint64 aux array, zero. empty + fill, not np.zeros:
    calloc's zero pages fault in 4 KiB at a time (32 GiB: 4.6 s of page faults against 0.5 s
    for the fill on huge pages)."""
    out = np.empty((layout.num_aux, FR_LIMBS), dtype=np.uint64)
    out.fill(0)
    return out


@dataclass
class _PathValues:
    """Per path instance (challenges x paths): its leaf, per level index and siblings."""

    indices: np.ndarray  # (levels, challenges, paths) int64
    siblings: list[np.ndarray]  # per level: (arity - 1, challenges, paths) object

    def select(self, paths: slice) -> _PathValues:
        return _PathValues(self.indices[:, :, paths], [s[:, :, paths] for s in self.siblings])


def _path_values(paths: list[list], levels: int) -> _PathValues:
    """``paths[c][p]``: the PathLevel list of path p of challenge c."""
    cpp, npaths = len(paths), len(paths[0])
    idx = np.zeros((levels, cpp, npaths), dtype=np.int64)
    sibs = []
    for lv in range(levels):
        arity = paths[0][0][lv].arity
        s = np.empty((arity - 1, cpp, npaths), dtype=object)
        for c in range(cpp):
            for p in range(npaths):
                level = paths[c][p][lv]
                if level.arity != arity or len(level.siblings) != arity - 1:
                    raise ValueError(f"challenge {c}, path {p}, level {lv}: arity {level.arity} with "
                                     f"{len(level.siblings)} siblings, the shape needs arity {arity}")
                idx[lv, c, p] = level.index
                s[:, c, p] = [int(v) % R for v in level.siblings]
        sibs.append(s)
    return _PathValues(idx, sibs)


def _poseidon_paths(aux: _Aux, layouts: list[PathLayout], leaves: np.ndarray, pv: _PathValues):
    """All Poseidon inclusion paths of the partition, level by level for every instance:
    ``leaves`` (challenges, paths) object. Returns (roots, packed index inputs)."""
    cpp, npaths = leaves.shape
    cur = leaves
    index_bits = []
    for lv in range(len(layouts[0].levels)):
        arity = layouts[0].levels[lv].arity
        nb = arity.bit_length() - 1
        bits = [(pv.indices[lv] >> i) & 1 for i in range(nb)]  # (cpp, npaths) each
        index_bits += bits
        sibs = pv.siblings[lv]
        if arity == 8:
            ins_aux, children = insert_8(cur, list(sibs), *bits)
        else:
            ins_aux, children = insert_2(cur, list(sibs), *bits)
        h_aux, digest = poseidon_many(np.stack([ch.reshape(-1) for ch in children]).astype(object))
        h_aux = h_aux.reshape(-1, cpp, npaths)
        for p, path in enumerate(layouts):
            level = path.levels[lv]
            aux.bits(level.bits, np.stack([b[:, p] for b in bits], axis=1))
            aux.fields(level.siblings, sibs[:, :, p].T)
            if arity == 8:
                aux.bits(level.insert, np.stack([ins_aux[0][:, p], ins_aux[1][:, p]], axis=1))
                aux.fields(level.insert + 2, np.stack([v[:, p] for v in ins_aux[2:]], axis=1))
            else:
                aux.fields(level.insert, np.stack([v[:, p] for v in ins_aux], axis=1))
            aux.fields(level.hash, h_aux[:, :, p].T)
        cur = digest.reshape(cpp, npaths)
    packed = np.zeros((cpp, npaths), dtype=object)
    for k, b in enumerate(index_bits):
        packed = packed + (b.astype(object) << k)
    return cur, packed


def _timed(timings: dict | None, name: str, fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    if timings is not None:
        timings[name] = time.perf_counter() - t
    return out


def _sha254_nodes(data_leaf: np.ndarray, index_bits: np.ndarray, siblings: np.ndarray) -> np.ndarray:
    """Every node of the comm_d paths, (levels + 1, k) object, by hashlib: SHA-256 of the two
    children's 32 little-endian bytes, read little-endian and cut to 254 bits (the circuit's
    node hash). Knowing every level's input up front lets the circuit's compressions run for
    all levels at once instead of one level after another (540 small hashes at 32 GiB)."""
    levels, k = index_bits.shape
    nodes = np.empty((levels + 1, k), dtype=object)
    nodes[0] = data_leaf
    for c in range(k):
        cur = int(data_leaf[c])
        for lv in range(levels):
            sib = int(siblings[lv, c])
            left, right = (sib, cur) if index_bits[lv, c] else (cur, sib)
            digest = hashlib.sha256(left.to_bytes(32, "little") + right.to_bytes(32, "little")).digest()
            cur = nodes[lv + 1, c] = int.from_bytes(digest, "little") & _MASK254
    return nodes


def _comm_d_paths(lay: PorepLayout, aux: _Aux, chs: list, data_leaf: np.ndarray):
    """The binary SHA-256 paths of the data leaves, all levels at once: (packed index inputs,
    roots). The circuit's compressions (traced programs) give the aux and the digests; the
    hashlib nodes only order the work, and a digest that differs from them is an internal error."""
    cpp = len(chs)
    levels = len(lay.comm_d.levels)
    d_paths = _path_values([[c.comm_d_path] for c in chs], levels)
    index_bits = (d_paths.indices[:, :, 0] & 1).astype(np.uint8)  # (levels, cpp)
    sibs = np.stack([s[0, :, 0] for s in d_paths.siblings])  # (levels, cpp) object
    nodes = _sha254_nodes(data_leaf, index_bits, sibs)
    right_first = index_bits.astype(bool)
    left = np.where(right_first, sibs, nodes[:-1])  # insert_2's outputs: the children in order
    right = np.where(right_first, nodes[:-1], sibs)
    left_bits, right_bits = fr_bits_le(left), fr_bits_le(right)  # (levels, cpp, 255)
    msg = np.concatenate([reverse_bit_numbering(left_bits), reverse_bit_numbering(right_bits)], axis=-1).reshape(levels * cpp, 512).T
    res = sha256_many([node_hash_signature()], np.zeros(levels * cpp, dtype=np.int64), msg)
    digests = pack_bits(reverse_bit_numbering(res.digest.T)[:, :_PACK_BITS]).reshape(levels, cpp)
    if not (digests == nodes[1:]).all():
        raise AssertionError("the traced SHA-256 compressions disagree with hashlib on a comm_d node")
    blocks = [bits.reshape(bits.shape[0], levels, cpp) for (_, _, bits), in res.blocks]
    for lv, level in enumerate(lay.comm_d.levels):
        aux.bits(level.bits, index_bits[lv][:, None])
        aux.fields(level.siblings, sibs[lv][:, None])
        aux.fields(level.insert, np.stack([left[lv], right[lv]], axis=1))
        for off, lb in zip(level.sha[0], (left_bits[lv], right_bits[lv]), strict=True):
            aux.bits(off, lb)
        for off, bits in zip(level.blocks, blocks, strict=True):
            aux.bits(off, bits[:, lv, :].T)
        aux.fields(level.pack, digests[lv][:, None])
    packed = sum((index_bits[lv].astype(object) << lv for lv in range(levels)), np.zeros(cpp, dtype=object))
    return packed, nodes[-1]


def _labels(lay: PorepLayout, aux: _Aux, rows: np.ndarray, rid_bits: np.ndarray, ch_bits: np.ndarray):
    """Every layer's label of every challenge at once (instances layer-major): (layers, cpp)."""
    cpp, _, layers = rows.shape
    row_bits = fr_bits_le(rows)  # (cpp, parents, layers, 255)
    for layer, lab in enumerate(lay.labels, start=1):
        for j, off in enumerate(lab.parent_bits):
            aux.bits(off, row_bits[:, j, layer - 1 if j < BASE_DEGREE else layer - 2])
    msg = np.zeros((512 + 256 * TOTAL_PARENTS, layers * cpp), dtype=np.uint64)
    rid_msg = reverse_bit_numbering(rid_bits)
    node_be = ch_bits[:, ::-1].T  # (64, cpp)
    for layer in range(1, layers + 1):
        cols = slice((layer - 1) * cpp, layer * cpp)
        msg[:256, cols] = rid_msg[:, None]
        msg[288:352, cols] = node_be
        for slot, j in enumerate(label_parents(layer)):
            src_layer = layer - 1 if j < BASE_DEGREE else layer - 2
            msg[512 + 256 * slot:512 + 256 * (slot + 1), cols] = reverse_bit_numbering(row_bits[:, j, src_layer]).T
    group = np.repeat(np.arange(layers), cpp)
    res = sha256_many([label_signature(layer) for layer in range(1, layers + 1)], group, msg)
    for k, block in enumerate(res.blocks):
        for _, block_cols, bits in block:
            for layer in np.unique(group[block_cols]):
                aux.bits(lay.labels[layer].blocks[k], bits[:, group[block_cols] == layer].T)
    label_vals = pack_bits(reverse_bit_numbering(res.digest.T)[:, :_PACK_BITS]).reshape(layers, cpp)
    for layer, lab in enumerate(lay.labels):
        aux.fields(lab.pack, label_vals[layer][:, None])
    return label_vals


@dataclass
class _Header:
    """The partition's public values and replica_id's bits (255,) uint8."""

    rid: int
    comm_d: int
    comm_r: int
    comm_r_last: int
    comm_c: int
    rid_bits: np.ndarray


def _header(w: PartitionWitness) -> _Header:
    rid, comm_d, comm_r, comm_r_last, comm_c = (
        _known(v, name) % R for v, name in ((w.replica_id, "replica_id"), (w.comm_d, "comm_d"), (w.comm_r, "comm_r"),
                                        (w.comm_r_last, "comm_r_last"), (w.comm_c, "comm_c")))
    return _Header(rid, comm_d, comm_r, comm_r_last, comm_c, fr_bits_le(_obj([rid]))[0])


def _write_header(lay: PorepLayout, hdr: np.ndarray, h: _Header) -> bool:
    """replica_id and its bits, comm_d, comm_r, comm_r_last, comm_c and comm_r's hash into the
    header rows; whether comm_r = Poseidon(comm_c, comm_r_last) holds."""
    hdr[0] = ints_to_limbs([h.rid])[0]
    hdr[1:1 + _FR_BITS, 0] = h.rid_bits
    hdr[256:260] = ints_to_limbs([h.comm_d, h.comm_r, h.comm_r_last, h.comm_c])
    p_aux, p_out = poseidon_many(_obj([h.comm_c, h.comm_r_last])[:, None])
    hdr[lay.comm_r_poseidon:lay.comm_r_poseidon + p_aux.shape[0]] = fr_limbs(p_aux[:, 0])
    return int(p_out[0]) == h.comm_r


@dataclass
class _Values:
    """The C1 values of a run of challenges (k of them): data leaves (k,) and parent rows
    (k, parents, layers) object ints, challenges (k,) uint64 and their bits (k, 64) uint8, the
    Poseidon paths (parents, then comm_r_last's and comm_c's)."""

    chs: list
    data_leaf: np.ndarray
    rows: np.ndarray
    challenge: np.ndarray
    ch_bits: np.ndarray
    pv: _PathValues


def _values(params: PorepParams, chs: list, first: int = 0) -> _Values:
    """``chs``: the partition's challenges ``first``, ``first + 1``, ... (for error messages)."""
    layers = params.layers
    rows = np.empty((len(chs), _PARENTS, layers), dtype=object)
    for c, ch in enumerate(chs):
        cols = list(ch.drg_parents) + list(ch.exp_parents)
        if len(cols) != _PARENTS:
            raise ValueError(f"challenge {first + c}: {len(cols)} parent columns, expected {_PARENTS}")
        for j, col in enumerate(cols):
            if len(col.rows) != layers:
                raise ValueError(f"a parent column has {len(col.rows)} rows, the sector has {layers} layers")
            # values by construction once the header has them (a blank partition has none at all)
            rows[c, j] = [int(v) % R for v in cast("list[int]", col.rows)]
    challenge = np.array([_known(ch.challenge, f"challenges[{first + c}].challenge") & ((1 << 64) - 1)
                          for c, ch in enumerate(chs)], dtype=np.uint64)
    ch_bits = ((challenge[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
    paths = [[c.drg_parents[j].path for j in range(BASE_DEGREE)] +
             [c.exp_parents[j].path for j in range(EXP_DEGREE)] + [c.comm_r_last_path, c.comm_c_path]
             for c in chs]
    pv = _path_values(paths, len(params.tree_arities))
    return _Values(chs, _obj([c.data_leaf for c in chs]), rows, challenge, ch_bits, pv)


def _comm_d_part(lay: PorepLayout, aux: _Aux, v: _Values) -> dict[str, np.ndarray]:
    """The data leaves and their comm_d paths: packed index inputs and roots, (k,) each."""
    aux.fields(lay.data_leaf, v.data_leaf[:, None])
    d_packed, d_roots = _comm_d_paths(lay, aux, v.chs, v.data_leaf)
    return {"d_packed": d_packed, "d_roots": d_roots}


def _parents_part(lay: PorepLayout, aux: _Aux, v: _Values, parents: slice) -> dict[str, np.ndarray]:
    """Parent columns ``parents``: their rows, column hashes and comm_c paths; roots and packed
    index inputs (k, len(parents))."""
    cpp, layers = v.rows.shape[0], lay.params.layers
    rows = v.rows[:, parents, :]
    npar = rows.shape[1]
    col_aux, col_hash = poseidon_many(rows.reshape(cpp * npar, layers).T)
    col_aux = col_aux.reshape(-1, cpp, npar)
    for j, off in enumerate(lay.columns[parents]):
        aux.fields(off, rows[:, j, :])
        aux.fields(off + layers, col_aux[:, :, j].T)
    roots, packed = _poseidon_paths(aux, lay.parent_paths[parents], col_hash.reshape(cpp, npar), v.pv.select(parents))
    return {"roots": roots, "packed": packed}


def _own_part(lay: PorepLayout, aux: _Aux, v: _Values, label_vals: np.ndarray) -> dict[str, np.ndarray]:
    """The encoded node and the challenged column (they need the labels (layers, k)) with
    their comm_r_last and comm_c paths: roots and packed index inputs (k, 2)."""
    encoded = (label_vals[-1] + v.data_leaf) % R
    aux.fields(lay.encoded, encoded[:, None])
    own_aux, own_hash = poseidon_many(label_vals)
    aux.fields(lay.own_column_hash, own_aux.T)
    roots, packed = _poseidon_paths(aux, [lay.comm_r_last, lay.comm_c], np.stack([encoded, own_hash], axis=1),
                                    v.pv.select(slice(_PARENTS, _PARENTS + 2)))
    return {"roots": roots, "packed": packed}


def _labels_part(lay: PorepLayout, aux: _Aux, v: _Values, h: _Header) -> np.ndarray:
    """The challenges' bits and every layer's label: (layers, k) object."""
    aux.bits(lay.challenge_bits, v.ch_bits)
    return _labels(lay, aux, v.rows, h.rid_bits, v.ch_bits)


@dataclass(frozen=True)
class Part:
    """One piece of a partition's challenge work, written by one worker: ``kind`` "comm_d"
    (data leaves and their SHA-256 paths), "labels" (challenge bits, labels, encoding, the
    challenged column and their paths) or "parents" (parent columns ``parents`` and their
    paths), for challenges [first, first + count)."""

    kind: str
    first: int
    count: int
    parents: tuple[int, int] = (0, _PARENTS)


def compute_part(params: PorepParams, all_aux: np.ndarray, header: _Header, chs: list,
                 part: Part) -> dict[str, np.ndarray]:
    """Write ``part`` into ``all_aux`` (num_aux, 4) (only its challenges' rows; ``chs`` are
    those challenges) and return its root and packed index values (see the ``*_part``
    functions)."""
    lay = porep_layout(params)
    if len(chs) != part.count:
        raise ValueError(f"{len(chs)} challenges for a part of {part.count}")
    aux = _Aux.of(lay, all_aux, part.first, part.count)
    v = _values(params, chs, part.first)
    if part.kind == "comm_d":
        return _comm_d_part(lay, aux, v)
    if part.kind == "parents":
        return _parents_part(lay, aux, v, slice(*part.parents))
    if part.kind == "labels":
        return _own_part(lay, aux, v, _labels_part(lay, aux, v, h=header))
    raise ValueError(f"unknown witness part {part.kind!r}")


@dataclass
class _Gathered:
    """Every challenge's roots and packed index inputs, filled part by part."""

    d_packed: np.ndarray  # (cpp,) object
    d_roots: np.ndarray
    packed: np.ndarray  # (cpp, parents + 2) object: parents, comm_r_last, comm_c
    roots: np.ndarray

    @classmethod
    def empty(cls, cpp: int) -> _Gathered:
        return cls(*(np.empty(shape, dtype=object) for shape in ((cpp,), (cpp,), (cpp, _PARENTS + 2),
                                                                  (cpp, _PARENTS + 2))))

    def add(self, part: Part, got: dict[str, np.ndarray]) -> None:
        rows = slice(part.first, part.first + part.count)
        if part.kind == "comm_d":
            self.d_packed[rows], self.d_roots[rows] = got["d_packed"], got["d_roots"]
            return
        cols = slice(*part.parents) if part.kind == "parents" else slice(_PARENTS, _PARENTS + 2)
        self.packed[rows, cols], self.roots[rows, cols] = got["packed"], got["roots"]


def _finish(lay: PorepLayout, w: PartitionWitness, h: _Header, header_ok: bool, got: _Gathered,
            partition: int | None, check: bool) -> np.ndarray:
    """The public inputs (num_inputs, 4); with ``check`` the first failing root equality raises."""
    chs = w.challenges
    cpp = len(chs)
    failures: list[tuple[int, int | None, str]] = []  # (constraint index, challenge or None, region)
    if not header_ok:
        failures.append((lay.header_constraints - 1, None, "comm_r = Poseidon(comm_c, comm_r_last)"))
    for bad in np.flatnonzero(got.d_roots != h.comm_d):
        failures.append((lay.comm_d.equal_constraint, int(bad), lay.comm_d.region))
    expected = [h.comm_c] * _PARENTS + [h.comm_r_last, h.comm_c]
    for p, (path, want) in enumerate(zip([*lay.parent_paths, lay.comm_r_last, lay.comm_c], expected, strict=True)):
        for bad in np.flatnonzero(got.roots[:, p] != want):
            failures.append((path.equal_constraint, int(bad), path.region))

    # public inputs: ONE, replica_id, comm_d, comm_r, then per challenge 18 packed indices
    inputs = [1, h.rid, h.comm_d, h.comm_r]
    packed = got.packed
    for c in range(cpp):
        challenge = _known(chs[c].challenge, f"challenges[{c}].challenge") & ((1 << 64) - 1)
        inputs += [got.d_packed[c], *packed[c, :_PARENTS], challenge, packed[c, _PARENTS], packed[c, _PARENTS + 1]]
    if check and failures:
        def absolute(f):
            cons, c, _ = f
            return cons if c is None else lay.header_constraints + c * lay.challenge_constraints + cons
        first = min(failures, key=absolute)
        _, bad_challenge, region = first
        raise WitnessMismatch(partition, bad_challenge, None if bad_challenge is None else chs[bad_challenge].challenge,
                              region, absolute(first))
    return ints_to_limbs(inputs)


def _check_shape(params: PorepParams, w: PartitionWitness) -> None:
    if len(w.challenges) != params.challenges_per_partition:
        raise ValueError(f"{len(w.challenges)} challenges, a partition of this sector size has "
                         f"{params.challenges_per_partition}")


