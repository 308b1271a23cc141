"""SnapDeals (SNAP_DEALS_UPDATE) from Curio: the bincode PartitionProofs of ``vanilla_proofs``
decoded and checked (/work/shared/specs/snap-facts.md sections 5, 6 and 9;
curio-adapter-facts.md section 5).

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

import numpy as np

from cuzk_plugin.adapters.curio.bincode import BincodeError, BincodeReader
from cuzk_plugin.bls12_381.fields import R, less_than_modulus, limbs_to_ints
from cuzk_plugin.filecoin.snap.params import (
    UpdateParams,
)
from cuzk_plugin.filecoin.snap.vanilla import (
    ChallengeProof,
    PartitionProof,
)
from cuzk_plugin.filecoin.trees import MerklePath

__all__ = ["SnapDecodeError", "decode_partition_proof"]

_VARIANTS = ("Single", "Sub", "Top")


class SnapDecodeError(BincodeError):
    """A malformed PartitionProof; ``path`` names the field, ``offset`` its first byte."""


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
