"""Decoders of what Curio sends for a PoSt: one bincode FallbackPoStSectorProof per entry of
``vanilla_proofs`` (layout in :mod:`cuzk_plugin.filecoin.post.vanilla`; post-facts.md
section 6, curio-adapter-facts.md section 5).

The bytes are hostile: every count is bounded by the bytes left before anything is allocated
(each element has a minimum encoded size) and, given the circuit's :class:`PostShape`, must be
exactly what that sector size has (1 sector proof, 10 or 66 inclusion proofs, the variant and
path levels of tree_r_last, arity - 1 siblings, an index below the arity); every 32-byte value
must be a canonical field element, and nothing may trail the structure. A refusal is a
:class:`PostDecodeError` naming the field
(``vanilla_proofs[1].vanilla_proof.sectors[0].inclusion_proofs[4].Sub.base_proof[2].hashes[6]``)
and the byte offset where it starts.

:func:`decode_sector_proofs` decodes a whole partition's entries at once: given the shape,
every entry has one byte layout, so the counts, variants, indices and canonical field elements
of all entries are checked with a few numpy gathers; an entry any check refuses (or of another
length) goes through :func:`decode_sector_proof`, which names the first bad field as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from cuzk_plugin.adapters.curio.bincode import BincodeError, BincodeReader
from cuzk_plugin.bls12_381.fields import R, less_than_modulus
from cuzk_plugin.filecoin.post.params import PostShape
from cuzk_plugin.filecoin.post.vanilla import (
    VARIANTS,
    FallbackPoStSectorProof,
    PathElement,
    PostMerkleProof,
    SectorProof,
)

__all__ = ["PostDecodeError", "decode_sector_proof", "decode_sector_proofs"]

# Smallest encodings, to bound counts before allocating: a PathElement with no hashes is two
# u64; an InclusionPath one u64; a Single MerkleProof tag + root + leaf + an empty path; a
# SectorProof an empty inclusion list and two commitments.
_MIN_ELEMENT = 16
_MIN_MERKLE = 4 + 64 + 8
_MIN_SECTOR = 8 + 64


class PostDecodeError(BincodeError):
    """A malformed vanilla proof; ``path`` names the field, ``offset`` its first byte."""


def _reader(raw: bytes) -> BincodeReader:
    return BincodeReader(raw, PostDecodeError)


def _path(r: BincodeReader, path: str, arities: list[int] | None) -> tuple[PathElement, ...]:
    out = []
    for i in range(r.count(path, _MIN_ELEMENT, None if arities is None else len(arities))):
        el = f"{path}[{i}]"
        arity = None if arities is None else arities[i]
        n = r.count(f"{el}.hashes", 32, None if arity is None else arity - 1)
        hashes = r.frs(n, f"{el}.hashes")
        at = r.pos
        index = r.u64(f"{el}.index")
        if arity is not None and index >= arity:
            raise PostDecodeError(f"{el}.index", at, f"{index} is not below the arity {arity}")
        out.append(PathElement(hashes, index))
    return tuple(out)


def _merkle(r: BincodeReader, path: str, shape: PostShape | None) -> PostMerkleProof:
    at = r.pos
    tag = r.u32(f"{path}.variant")
    if tag >= len(VARIANTS):
        raise PostDecodeError(f"{path}.variant", at, f"{tag} is not a MerkleProof variant (0 Single, 1 Sub, 2 Top)")
    variant = VARIANTS[tag]
    arities = None
    if shape is not None:
        if variant != shape.variant:
            raise PostDecodeError(f"{path}.variant", at, f"{variant}, a {shape.sector_size}-byte sector's tree_r_last "
                                                         f"proofs are {shape.variant}")
        arities = shape.tree_arities
    p = f"{path}.{variant}"
    if variant == "Single":
        root, leaf = r.fr(f"{p}.root"), r.fr(f"{p}.leaf")
        return PostMerkleProof(variant, root, leaf, _path(r, f"{p}.path", arities))
    base_arities: list[int] | None = None
    sub_arities: list[int] | None = None
    top_arities: list[int] | None = None
    if arities is not None:  # the base levels, then one sub level, then (Top) one top level
        n_base = len(arities) - (1 if variant == "Sub" else 2)
        base_arities, sub_arities, top_arities = arities[:n_base], arities[n_base:n_base + 1], arities[n_base + 1:]
    base = _path(r, f"{p}.base_proof", base_arities)
    sub = _path(r, f"{p}.sub_proof", sub_arities)
    top = _path(r, f"{p}.top_proof", top_arities) if variant == "Top" else ()
    root, leaf = r.fr(f"{p}.root"), r.fr(f"{p}.leaf")
    return PostMerkleProof(variant, root, leaf, base, sub, top)


def decode_sector_proof(raw: bytes, path: str = "vanilla_proof", shape: PostShape | None = None) -> FallbackPoStSectorProof:
    """One bincode FallbackPoStSectorProof; :class:`PostDecodeError` names any bad field. With
    ``shape``, every count, variant and index must also be the one of that circuit."""
    r = _reader(raw)
    sector_id = r.u64(f"{path}.sector_id")
    comm_r = r.fr(f"{path}.comm_r")
    sectors = []
    for i in range(r.count(f"{path}.vanilla_proof.sectors", _MIN_SECTOR, None if shape is None else 1)):
        sp = f"{path}.vanilla_proof.sectors[{i}]"
        n = r.count(f"{sp}.inclusion_proofs", _MIN_MERKLE, None if shape is None else shape.vanilla_challenges)
        inclusions = tuple(_merkle(r, f"{sp}.inclusion_proofs[{j}]", shape) for j in range(n))
        comm_c = r.fr(f"{sp}.comm_c")
        comm_r_last = r.fr(f"{sp}.comm_r_last")
        sectors.append(SectorProof(inclusions, comm_c, comm_r_last))
    if r.left:
        raise PostDecodeError(path, r.pos, f"{r.left} bytes after the end of the proof")
    return FallbackPoStSectorProof(sector_id, comm_r, tuple(sectors))


@dataclass(frozen=True)
class _Layout:
    """Byte offsets of one shape's FallbackPoStSectorProof (every count as the shape has it)."""

    length: int
    u64_at: np.ndarray  #: counts, with their values in u64_want
    u64_want: np.ndarray
    tag_at: np.ndarray  #: MerkleProof variant tags (u32), all tag_want
    tag_want: int
    index_at: np.ndarray  #: path indices (u64), each below index_below
    index_below: np.ndarray
    fr_at: np.ndarray  #: every field element, in the order of the encoding
    levels: tuple[tuple[int, ...], ...]  #: per inclusion path part (base, sub, top): arities


@cache
def _layout(shape: PostShape) -> _Layout:
    variant, arities = shape.variant, shape.tree_arities
    n_base = len(arities) - {"Single": 0, "Sub": 1, "Top": 2}[variant]
    parts = [tuple(arities[:n_base])]
    if variant != "Single":
        parts += [tuple(arities[n_base:n_base + 1])]
    if variant == "Top":
        parts += [tuple(arities[n_base + 1:])]
    pos = 0
    u64s: list[tuple[int, int]] = []  # (offset, expected count)
    idx: list[tuple[int, int]] = []  # (offset, arity)
    tags: list[int] = []
    frs: list[int] = []

    def take(n: int) -> int:
        nonlocal pos
        pos += n
        return pos - n

    def path(ars: tuple[int, ...]) -> None:
        u64s.append((take(8), len(ars)))
        for a in ars:
            u64s.append((take(8), a - 1))
            frs.extend(take(32) for _ in range(a - 1))
            idx.append((take(8), a))

    take(8)  # sector_id: any u64
    frs.append(take(32))
    u64s.append((take(8), 1))
    u64s.append((take(8), shape.vanilla_challenges))
    for _ in range(shape.vanilla_challenges):
        tags.append(take(4))
        if variant == "Single":
            frs.extend((take(32), take(32)))
        for ars in parts:
            path(ars)
        if variant != "Single":
            frs.extend((take(32), take(32)))
    frs.extend((take(32), take(32)))
    return _Layout(pos, np.array([o for o, _ in u64s]), np.array([w for _, w in u64s], dtype=np.uint64),
                   np.array(tags), VARIANTS.index(variant), np.array([o for o, _ in idx]),
                   np.array([a for _, a in idx], dtype=np.uint64), np.array(frs), tuple(parts))


def _gather(rows: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """(n, len(at)) little-endian unsigned ints of ``width`` bytes at ``at`` of each row."""
    raw = np.ascontiguousarray(rows[:, at[:, None] + np.arange(width)])
    return raw.view(f"<u{width}").reshape(rows.shape[0], at.shape[0])


def decode_sector_proofs(raws: list[bytes], shape: PostShape, paths: list[str]) -> tuple[FallbackPoStSectorProof, ...]:
    """:func:`decode_sector_proof` of each entry (``paths`` name them), all checked at once."""
    lay = _layout(shape)
    n = len(raws)
    same = [len(raw) == lay.length for raw in raws]
    ok = np.zeros(n, dtype=bool)
    sel = np.flatnonzero(same)
    if sel.size:
        rows = np.frombuffer(b"".join(raws[i] for i in sel), dtype=np.uint8).reshape(sel.size, lay.length)
        good = (_gather(rows, lay.u64_at, 8) == lay.u64_want).all(axis=1)
        good &= (_gather(rows, lay.tag_at, 4) == lay.tag_want).all(axis=1)
        good &= (_gather(rows, lay.index_at, 8) < lay.index_below).all(axis=1)
        frs = np.ascontiguousarray(rows[:, lay.fr_at[:, None] + np.arange(32)]).view("<u8")
        good &= less_than_modulus(frs.reshape(sel.size, lay.fr_at.shape[0], 4), R).all(axis=1)
        ok[sel] = good
    out = []
    for i, raw in enumerate(raws):
        out.append(_from_layout(lay, raw, shape) if ok[i] else decode_sector_proof(raw, paths[i], shape))
    return tuple(out)


def _from_layout(lay: _Layout, raw: bytes, shape: PostShape) -> FallbackPoStSectorProof:
    """The proof of an entry every check of :func:`decode_sector_proofs` accepted."""
    frs = [int.from_bytes(raw[o:o + 32], "little") for o in lay.fr_at.tolist()]
    index = np.frombuffer(raw, dtype=np.uint8)[lay.index_at[:, None] + np.arange(8)].copy().view("<u8").reshape(-1).tolist()
    single = shape.variant == "Single"
    f, k = 1, 0  # next field element, next index
    inclusions = []
    for _ in range(shape.vanilla_challenges):
        if single:
            root, leaf = frs[f], frs[f + 1]
            f += 2
        parts = []
        for ars in lay.levels:
            part = []
            for a in ars:
                part.append(PathElement(tuple(frs[f:f + a - 1]), index[k]))
                f, k = f + a - 1, k + 1
            parts.append(tuple(part))
        if not single:
            root, leaf = frs[f], frs[f + 1]
            f += 2
        inclusions.append(PostMerkleProof(shape.variant, root, leaf, *parts))
    sector_id = int.from_bytes(raw[:8], "little")
    return FallbackPoStSectorProof(sector_id, frs[0], (SectorProof(tuple(inclusions), frs[f], frs[f + 1]),))
