"""An EmptySectorUpdate (SnapDeals) partition's full assignment without linear combinations,
vectorized.

:func:`update_assignment` returns what synthesizing
:func:`cuzk_plugin.filecoin.snap.circuit.synthesize_update_partition` into a witness constraint
system returns (inputs with ONE first, aux), in the same variable order, computed part by part
for every instance at once: the apex tree level by level, then every challenge together (the
high bits and rho, both TreeR paths level by level, the apex-leaf selection, the TreeD path to
its apex leaf level by level). SHA-256 node hashes run the compression programs traced from
the circuit's gadget (:mod:`cuzk_plugin.filecoin.witness.sha256`), Poseidon follows the gadget's schedule
(:mod:`cuzk_plugin.filecoin.witness.poseidon`),
insertion and picks the gadget's order (:mod:`cuzk_plugin.filecoin.witness.insertion`). The header
(:func:`write_header`) gives the few values the challenges need; any run of challenges is then
computed on its own (:func:`write_challenges`), which :mod:`.witness_pool` spreads over processes.

Values are written in allocation order through a cursor (:class:`_Cursor`), which also counts
constraints: the arithmetic layout (:func:`update_layout`) fixes the array sizes and is checked
against the cursor at the end. With every value computed this way the only constraints a
PartitionProof can violate are the equalities (comm_r_old / comm_r_new = Poseidon(comm_c, root),
the apex root's path to comm_d_new, each challenge's TreeR old / new root and its TreeD path to
the selected apex leaf); they are checked and :class:`UpdateWitnessMismatch` names the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from multiprocessing.shared_memory import SharedMemory

import numpy as np

from cuzk_plugin.bls12_381.fields import FR_LIMBS, R, ints_to_limbs, limbs_to_objects
from cuzk_plugin.errors import CircuitError
from cuzk_plugin.filecoin.snap import vanilla
from cuzk_plugin.filecoin.snap.circuit import UpdateChallengeWitness, UpdatePartitionWitness
from cuzk_plugin.filecoin.snap.params import UpdateParams
from cuzk_plugin.filecoin.snap.vanilla import GEN_RANDOMNESS
from cuzk_plugin.filecoin.witness.encoding import fr_bits_le, fr_limbs, pack_bits, reverse_bit_numbering
from cuzk_plugin.filecoin.witness.forked import aux_in_block
from cuzk_plugin.filecoin.witness.insertion import insert_2, insert_8
from cuzk_plugin.filecoin.witness.poseidon import poseidon_many, poseidon_num_aux
from cuzk_plugin.filecoin.witness.poseidon_cpu import poseidon_into
from cuzk_plugin.filecoin.witness.sha256 import node_hash_signature, sha256_many, sha256_templates

__all__ = ["Failure", "UpdateHeader", "UpdateLayout", "UpdateWitnessMismatch", "challenge_rows", "first_mismatch",
           "header_values", "same_header", "update_assignment", "update_layout", "write_challenges", "write_header"]

_FR_BITS = 255
_PACK_BITS = 254
_TAG = GEN_RANDOMNESS.domain_tag
_INSERT = {2: 2, 8: 22}  # aux (= constraints) of insert_2 / insert_8
_N_HS = 6  # allowed h values, fixed in the circuit


class UpdateWitnessMismatch(CircuitError):
    """The PartitionProof's values violate constraint ``constraint`` (the first one), in
    ``region`` (challenge ``challenge``, None in the partition header)."""

    def __init__(self, partition: int | None, challenge: int | None, region: str, constraint: int):
        where = "" if partition is None else f"partition {partition}: "
        what = region if challenge is None else f"challenge {challenge}: {region}"
        super().__init__(f"{where}the witness violates constraint {constraint} ({what})")
        self.partition, self.challenge, self.region, self.constraint = partition, challenge, region, constraint


@dataclass(frozen=True)
class UpdateLayout:
    """Aux and constraint counts of one partition: a header, then ``challenges`` equal parts."""

    params: UpdateParams
    node_hash_aux: int  #: one SHA-256 node hash: both leaves' 255 bits, its compressions, the pack
    node_hash_constraints: int
    header_aux: int
    header_constraints: int
    challenge_aux: int
    challenge_constraints: int

    @property
    def num_aux(self) -> int:
        return self.header_aux + self.params.challenges * self.challenge_aux

    @property
    def aux_nbytes(self) -> int:
        """Bytes of the (num_aux, 4) uint64 aux array."""
        return self.num_aux * FR_LIMBS * 8

    @property
    def num_constraints(self) -> int:
        return self.header_constraints + self.params.challenges * self.challenge_constraints


@lru_cache(maxsize=16)
def update_layout(p: UpdateParams) -> UpdateLayout:
    """The counts of ``p``'s partition, in ``synthesize_update_partition``'s order."""
    tpls = sha256_templates(node_hash_signature())
    nh_aux = 2 * _FR_BITS + sum(t.program.num_aux for t in tpls) + 1
    nh_cons = 2 * (_FR_BITS + 1) + sum(t.program.num_constraints for t in tpls) + 1
    p2 = poseidon_num_aux(2)
    pbl, n_bits = p.partition_bit_len, p.partition_bit_len + _N_HS
    aux = 1 + n_bits + 1 + 3 + p2 + 3 + p.apex_leaves + pbl + 2 * p2
    cons = 1 + (n_bits + 1) + 1 + 3 + p2 + 2 * (p2 + 1)
    aux += (p.apex_leaves - 1) * nh_aux + pbl * (2 + nh_aux)
    cons += (p.apex_leaves - 1) * nh_cons + pbl * (2 + nh_cons) + 1
    aux += p.digests_per_partition * (1 + p2 + _FR_BITS)
    cons += p.digests_per_partition * (1 + p2 + _FR_BITS + 1)

    tree_r = sum(a - 1 for a in p.tree_r_arities), sum(_INSERT[a] + poseidon_num_aux(a) for a in p.tree_r_arities)
    c_aux = 2 * _N_HS + 1 + p2 + 4 + 2 * (tree_r[0] + tree_r[1]) + (p.apex_leaves - 1)
    c_cons = 2 * _N_HS + 1 + p2 + 2 + 2 * (tree_r[1] + 1) + (p.apex_leaves - 1)
    c_aux += p.apex_start * (1 + 2 + nh_aux)
    c_cons += p.apex_start * (2 + nh_cons) + 1
    return UpdateLayout(p, nh_aux, nh_cons, aux, cons, c_aux, c_cons)


class _Cursor:
    """Writes (instances, k) pieces into ``arr`` (instances, size, 4) in allocation order and
    counts the constraints enforced so far."""

    def __init__(self, arr: np.ndarray):
        self.arr = arr
        self.aux = 0
        self.cons = 0

    def fields(self, values: np.ndarray, cons: int = 0) -> None:
        """values (instances, k) object ints in [0, r)."""
        k = values.shape[1]
        self.arr[:, self.aux:self.aux + k] = fr_limbs(values)
        self.aux += k
        self.cons += cons

    def bits(self, bits: np.ndarray, cons: int = 0) -> None:
        """bits (instances, k) 0/1."""
        k = bits.shape[1]
        self.arr[:, self.aux:self.aux + k, 0] = bits
        self.aux += k
        self.cons += cons

    def block(self, block: np.ndarray, cons: int) -> None:
        """block (instances, k, 4) uint64 limbs."""
        k = block.shape[1]
        self.arr[:, self.aux:self.aux + k] = block
        self.aux += k
        self.cons += cons

    def enforce(self, n: int = 1) -> int:
        """n constraints without a variable (inputize, equal); the index of the last one."""
        self.cons += n
        return self.cons - 1


def _obj(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [int(v) % R for v in values]
    return out


def _col(values: np.ndarray) -> np.ndarray:
    """(n,) -> (n, 1)."""
    return values.reshape(-1, 1)


def _node_hashes(lay: UpdateLayout, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sha256_node_hash([left, right]) for n instances: (aux (n, node_hash_aux, 4) uint64, digest (n,) object)."""
    n = left.shape[0]
    block = np.zeros((n, lay.node_hash_aux, FR_LIMBS), dtype=np.uint64)
    bl, br = fr_bits_le(left), fr_bits_le(right)
    block[:, :_FR_BITS, 0] = bl
    block[:, _FR_BITS:2 * _FR_BITS, 0] = br
    msg = np.concatenate([reverse_bit_numbering(bl), reverse_bit_numbering(br)], axis=1).T.astype(np.uint64)
    res = sha256_many([node_hash_signature()], np.zeros(n, dtype=np.int64), msg)
    at = 2 * _FR_BITS
    for blk in res.blocks:
        (_, _, bits), = blk
        block[:, at:at + bits.shape[0], 0] = bits.T
        at += bits.shape[0]
    digest = pack_bits(reverse_bit_numbering(res.digest.T)[:, :_PACK_BITS])
    block[:, at] = fr_limbs(digest)
    return block, digest


def _poseidon(cur: _Cursor, preimage: list[np.ndarray], tag: int | None = None) -> np.ndarray:
    """A Poseidon hash per instance, written at the cursor; its digests (n,) object. The tree
    hashes (MerkleTree tag) go to :func:`poseidon_into` (the C Poseidon where it builds: their
    ~1.4 s of numpy over Python ints was a third of a 32 GiB partition's witness)."""
    if tag is not None or not cur.arr.flags.c_contiguous:
        aux, digest = poseidon_many(np.stack(preimage).astype(object), tag)
        cur.fields(aux.T, aux.shape[0])
        return digest
    n, num_aux = len(preimage[0]), poseidon_num_aux(len(preimage))
    pre = np.stack([fr_limbs(np.asarray(p, dtype=object)) for p in preimage], axis=1)
    # instance k's aux from cursor row (k, cur.aux) on, as flat uint64 indices of cur.arr
    offsets = (np.arange(n, dtype=np.int64) * cur.arr.shape[1] + cur.aux) * FR_LIMBS
    out = poseidon_into(len(preimage), pre, cur.arr, offsets)
    cur.aux += num_aux
    cur.cons += num_aux
    return limbs_to_objects(out)


def _pick(cur: _Cursor, cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    v = np.where(cond.astype(bool), a, b)
    cur.fields(_col(v), 1)
    return v


def _poseidon_path(cur: _Cursor, p: UpdateParams, c_bits: np.ndarray, leaf: np.ndarray,
                   siblings: list[np.ndarray]) -> np.ndarray:
    """A TreeR inclusion (its siblings allocated first, then per level insert and hash), up to the
    computed root (n,); ``siblings[level]`` (arity - 1, n) object."""
    for s in siblings:
        cur.fields(s.T)
    node, used = leaf, 0
    for a, sibs in zip(p.tree_r_arities, siblings, strict=True):
        nb = a.bit_length() - 1
        bits = [c_bits[:, used + i] for i in range(nb)]
        used += nb
        if a == 8:
            ins, children = insert_8(node, list(sibs), *bits)
            cur.bits(np.stack(ins[:2], axis=1), 2)
            cur.fields(np.stack(ins[2:], axis=1), 20)
        elif a == 2:
            ins, children = insert_2(node, list(sibs), *bits)
            cur.fields(np.stack(ins, axis=1), 2)
        else:
            raise ValueError(f"no insertion gadget for arity {a}")
        node = _poseidon(cur, children)
    return node


def _sha_path(cur: _Cursor, lay: UpdateLayout, bits: np.ndarray, leaf: np.ndarray, siblings: np.ndarray) -> np.ndarray:
    """A binary SHA-256 path (siblings already allocated): per level insert_2 and the node hash.
    ``bits`` (n, levels), ``siblings`` (levels, n) object; the computed root (n,)."""
    node = leaf
    for lv in range(siblings.shape[0]):
        ins, children = insert_2(node, [siblings[lv]], bits[:, lv])
        cur.fields(np.stack(ins, axis=1), 2)
        block, node = _node_hashes(lay, children[0], children[1])
        cur.block(block, lay.node_hash_constraints)
    return node


def _known(value: int | None, what: str) -> int:
    if value is None:
        raise ValueError(f"{what} has no value: a witness assignment needs a partition with values, not a blank one")
    return int(value) % R


@dataclass(frozen=True)
class UpdateHeader:
    """What the challenges take from the partition header: a few values, small enough to send
    a run's worker."""

    inputs: np.ndarray  #: (5, 4) uint64: ONE, k_and_h_select, comm_r_old, comm_d_new, comm_r_new
    phi: int
    root_r_old: int
    root_r_new: int
    h_select: np.ndarray  #: (len(hs),) uint8
    apex_leafs: np.ndarray  #: (apex_leaves,) object
    challenge_bits: np.ndarray  #: (challenges, challenge_bit_len) uint8, little-endian


#: (absolute constraint, challenge or None in the header, region) of a violated equality
Failure = tuple[int, int | None, str]


def first_mismatch(partition: int | None, failures: list[Failure]) -> UpdateWitnessMismatch:
    """The error naming the first violated constraint of ``failures`` (not empty)."""
    cons, challenge, region = min(failures, key=lambda f: f[0])
    return UpdateWitnessMismatch(partition, challenge, region, cons)


def _header_scalars(p: UpdateParams, w: UpdatePartitionWitness) -> tuple[int, np.ndarray, int, int, int]:
    """(k_and_h_select, its bits little-endian (uint8), comm_r_old, comm_d_new, comm_r_new) of a
    partition with values; a k_and_h_select wider than its bits is refused."""
    bits = p.partition_bit_len + _N_HS
    khs = _known(w.k_and_h_select, "k_and_h_select")
    comm_r_old, comm_d_new, comm_r_new = (_known(v, n) for v, n in ((w.comm_r_old, "comm_r_old"),
                                                                   (w.comm_d_new, "comm_d_new"),
                                                                   (w.comm_r_new, "comm_r_new")))
    if khs >> bits:
        raise ValueError(f"k_and_h_select {khs} does not fit its {bits} bits")
    kh_bits = np.array([(khs >> i) & 1 for i in range(bits)], dtype=np.uint8)
    return khs, kh_bits, comm_r_old, comm_d_new, comm_r_new


def write_header(p: UpdateParams, w: UpdatePartitionWitness, aux: np.ndarray) -> tuple[UpdateHeader, list[Failure]]:
    """The partition header into ``aux`` (header_aux, 4): k_and_h_select, phi, the apex tree
    and its path to comm_d_new, the digests that derive the challenges. (what the challenges
    need, the header's failures)."""
    if len(w.challenges) != p.challenges:
        raise ValueError(f"{len(w.challenges)} challenges, a partition of this sector size has {p.challenges}")
    if len(w.apex_leafs) != p.apex_leaves:
        raise ValueError(f"{len(w.apex_leafs)} apex leaves, this sector size has {p.apex_leaves}")
    lay = update_layout(p)
    failures: list[Failure] = []
    pbl, cbl = p.partition_bit_len, p.challenge_bit_len
    h = _Cursor(aux.reshape(1, lay.header_aux, FR_LIMBS))
    khs, kh_bits, comm_r_old, comm_d_new, comm_r_new = _header_scalars(p, w)
    h.fields(_col(_obj([khs])))
    h.enforce()
    h.bits(kh_bits[None, :], pbl + _N_HS + 1)
    k = khs & ((1 << pbl) - 1)
    h.fields(_col(_obj([k])), 1)
    for v in (comm_r_old, comm_d_new, comm_r_new):
        h.fields(_col(_obj([v])))
        h.enforce()
    phi = _poseidon(h, [_obj([comm_d_new]), _obj([comm_r_old])], _TAG)[0]
    comm_c, root_r_old, root_r_new = (_known(v, n) for v, n in ((w.comm_c, "comm_c"), (w.root_r_old, "root_r_old"),
                                                               (w.root_r_new, "root_r_new")))
    apex = _obj([_known(v, f"apex_leafs[{i}]") for i, v in enumerate(w.apex_leafs)])
    first_d = w.challenges[0].path_d_new
    part_sibs = _obj([_known(v, f"challenges[0].path_d_new[{cbl - pbl + i}]") for i, v in enumerate(first_d[cbl - pbl:])])
    h.fields(_obj([comm_c, root_r_old, root_r_new])[None, :])
    h.fields(apex[None, :])
    h.fields(part_sibs[None, :])
    for root, comm, name in ((root_r_old, comm_r_old, "comm_r_old"), (root_r_new, comm_r_new, "comm_r_new")):
        got = _poseidon(h, [_obj([comm_c]), _obj([root])])[0]
        at = h.enforce()
        if got != comm:
            failures.append((at, None, f"{name} = Poseidon(comm_c, root_r)"))

    row = apex
    for _ in range(p.apex_leaf_bit_len):
        block, row = _node_hashes(lay, row[0::2], row[1::2])
        h.block(block.reshape(1, -1, FR_LIMBS), block.shape[0] * lay.node_hash_constraints)
    k_bits = kh_bits[None, :pbl]
    apex_root = _sha_path(h, lay, k_bits, row, part_sibs[:, None])[0]
    at = h.enforce()
    if apex_root != comm_d_new:
        failures.append((at, None, "apex tree of the apex leaves and its path to comm_d_new"))

    dpp, rb = p.digests_per_partition, p.random_bits
    digest_bits = np.empty((dpp, _FR_BITS), dtype=np.uint8)
    for j in range(dpp):  # a few per partition: one numpy pass each
        index = (k * dpp + j) % R
        h.fields(_col(_obj([index])), 1)
        digest = _poseidon(h, [_obj([comm_r_new]), _obj([index])], _TAG)
        digest_bits[j] = fr_bits_le(digest)[0]
        h.bits(digest_bits[j][None, :], _FR_BITS + 1)
    if (h.aux, h.cons) != (lay.header_aux, lay.header_constraints):
        raise AssertionError(f"header layout: wrote {h.aux} aux / {h.cons} constraints, "
                             f"expected {lay.header_aux} / {lay.header_constraints}")

    cpd = p.challenges_per_digest
    c_bits = np.zeros((p.challenges, cbl), dtype=np.uint8)
    for i in range(p.challenges):
        j, chunk = divmod(i, cpd)
        c_bits[i, :rb] = digest_bits[j, chunk * rb:(chunk + 1) * rb]
    c_bits[:, rb:] = kh_bits[:pbl]
    inputs = ints_to_limbs([1, khs, comm_r_old, comm_d_new, comm_r_new])
    return UpdateHeader(inputs, phi, root_r_old, root_r_new, kh_bits[pbl:], apex, c_bits), failures


def header_values(p: UpdateParams, w: UpdatePartitionWitness) -> UpdateHeader:
    """What :func:`write_header` returns, computed on integers without the header's aux (phi and
    the challenges as the vanilla prover derives them): a pool's runs start on these while the
    header is written, and the two are compared after (:func:`same_header`)."""
    pbl, cbl = p.partition_bit_len, p.challenge_bit_len
    khs, kh_bits, comm_r_old, comm_d_new, comm_r_new = _header_scalars(p, w)
    nodes = np.array(vanilla.partition_challenges(p, comm_r_new, khs & ((1 << pbl) - 1)), dtype=np.int64)
    c_bits = ((nodes[:, None] >> np.arange(cbl, dtype=np.int64)) & 1).astype(np.uint8)
    apex = _obj([_known(v, f"apex_leafs[{i}]") for i, v in enumerate(w.apex_leafs)])
    return UpdateHeader(ints_to_limbs([1, khs, comm_r_old, comm_d_new, comm_r_new]),
                        vanilla.phi(comm_d_new, comm_r_old),
                        _known(w.root_r_old, "root_r_old"), _known(w.root_r_new, "root_r_new"), kh_bits[pbl:], apex,
                        c_bits)


def same_header(a: UpdateHeader, b: UpdateHeader) -> bool:
    """Every value of two headers equal (their arrays element by element)."""
    return (a.phi, a.root_r_old, a.root_r_new) == (b.phi, b.root_r_old, b.root_r_new) and all(
        np.array_equal(x, y) for x, y in ((a.inputs, b.inputs), (a.h_select, b.h_select),
                                          (a.apex_leafs, b.apex_leafs), (a.challenge_bits, b.challenge_bits)))


def write_challenges(p: UpdateParams, header: UpdateHeader, challenges: Sequence[UpdateChallengeWitness],
                     first: int, aux: np.ndarray) -> list[Failure]:
    """Challenges ``first`` on (``challenges``, a run of the partition's) into ``aux``
    (len(challenges), challenge_aux, 4), every one at once; the violated equalities, numbered
    as in the whole partition. A run depends only on the header and its own challenges, so
    runs may be computed apart (:mod:`.witness_pool`)."""
    lay = update_layout(p)
    n_ch, cbl = len(challenges), p.challenge_bit_len
    c_bits = header.challenge_bits[first:first + n_ch]
    node = (c_bits.astype(np.int64) << np.arange(cbl, dtype=np.int64)).sum(axis=1)
    c = _Cursor(aux)
    failures: list[Failure] = []

    def fail(at: int, bad: np.ndarray, region: str) -> None:
        for i in np.flatnonzero(bad):
            failures.append((lay.header_constraints + (first + int(i)) * lay.challenge_constraints + at,
                             first + int(i), region))

    selected = np.zeros(n_ch, dtype=object)
    for hv, sel in zip(p.hs, header.h_select, strict=True):
        c_high = _obj((node >> (cbl - hv)).tolist())
        c.fields(_col(c_high), 1)
        out = c_high * int(sel)
        c.fields(_col(out), 1)
        selected = selected + out
    selected = selected % R
    c.fields(_col(selected), 1)
    rho = _poseidon(c, [np.full(n_ch, header.phi, dtype=object), selected], _TAG)
    chs = list(enumerate(challenges, first))
    leaf_r_old = _obj([_known(ch.leaf_r_old, f"challenges[{i}].leaf_r_old") for i, ch in chs])
    leaf_d_new = _obj([_known(ch.leaf_d_new, f"challenges[{i}].leaf_d_new") for i, ch in chs])
    product = leaf_d_new * rho % R
    leaf_r_new = (leaf_r_old + product) % R
    c.fields(np.stack([leaf_r_old, leaf_d_new], axis=1))
    c.fields(_col(product), 1)
    c.fields(_col(leaf_r_new), 1)

    for name, leaf, root, field in (("TreeR old inclusion", leaf_r_old, header.root_r_old, "path_r_old"),
                                    ("TreeR new inclusion", leaf_r_new, header.root_r_new, "path_r_new")):
        sibs = []
        for lv, a in enumerate(p.tree_r_arities):
            s = np.empty((a - 1, n_ch), dtype=object)
            for j, (i, ch) in enumerate(chs):
                path = getattr(ch, field)
                if len(path) != len(p.tree_r_arities) or len(path[lv]) != a - 1:
                    raise ValueError(f"challenges[{i}]: a TreeR path not of the shape {p.tree_r_arities}")
                s[:, j] = [_known(v, f"challenges[{i}] {name} level {lv}") for v in path[lv]]
            sibs.append(s)
        got = _poseidon_path(c, p, c_bits, leaf, sibs)
        fail(c.enforce(), got != root, name)

    start, abl = p.apex_start, p.apex_leaf_bit_len
    state = [np.full(n_ch, v, dtype=object) for v in header.apex_leafs]
    for b in range(abl - 1, -1, -1):
        half = len(state) // 2
        state = [_pick(c, c_bits[:, start + b], state[half + j], state[j]) for j in range(half)]
    apex_leaf = state[0]
    d_sibs = np.empty((start, n_ch), dtype=object)
    for j, (i, ch) in enumerate(chs):
        if len(ch.path_d_new) != cbl:
            raise ValueError(f"challenges[{i}].path_d_new: {len(ch.path_d_new)} levels, TreeD has {cbl}")
        d_sibs[:, j] = [_known(v, f"challenges[{i}].path_d_new[{lv}]") for lv, v in enumerate(ch.path_d_new[:start])]
    c.fields(d_sibs.T)
    got = _sha_path(c, lay, c_bits[:, :start], leaf_d_new, d_sibs)
    fail(c.enforce(), got != apex_leaf, "TreeD inclusion up to its apex leaf")
    if (c.aux, c.cons) != (lay.challenge_aux, lay.challenge_constraints):
        raise AssertionError(f"challenge layout: wrote {c.aux} aux / {c.cons} constraints, "
                             f"expected {lay.challenge_aux} / {lay.challenge_constraints}")
    return failures


def challenge_rows(lay: UpdateLayout, aux: np.ndarray) -> np.ndarray:
    """The challenges' part of a partition's aux (num_aux, 4) as (challenges, challenge_aux, 4)."""
    return aux[lay.header_aux:].reshape(lay.params.challenges, lay.challenge_aux, FR_LIMBS)


def update_assignment(p: UpdateParams, w: UpdatePartitionWitness, *, partition: int | None = None,
                      check: bool = True, into: SharedMemory | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(inputs (5, 4) uint64 with ONE first, aux (num_aux, 4) uint64), canonical Fr limbs, equal
    to the reference synthesis of ``w``. With ``check`` a witness that violates an equality
    raises :class:`UpdateWitnessMismatch` (``partition`` only names it). The aux lies at the
    start of ``into`` (a zero block: the engine's, so the 2.6 GB of a 32 GiB partition are
    never copied) where given."""
    lay = update_layout(p)
    aux = aux_in_block(into, (lay.num_aux, FR_LIMBS)) if into is not None else np.zeros((lay.num_aux, FR_LIMBS), dtype=np.uint64)
    header, failures = write_header(p, w, aux[:lay.header_aux])
    failures += write_challenges(p, header, w.challenges, 0, challenge_rows(lay, aux))
    if check and failures:
        raise first_mismatch(partition, failures)
    return header.inputs, aux
