"""Decoders of what Curio sends for a PoSt: one bincode FallbackPoStSectorProof per entry of
``vanilla_proofs`` (layout in :mod:`cuzk_plugin.filecoin.post_vanilla`; post-facts.md
section 6, curio-adapter-facts.md section 5).

The bytes are hostile: every count is bounded by the bytes left before anything is allocated
(each element has a minimum encoded size) and, given the circuit's :class:`PostShape`, must be
exactly what that sector size has (1 sector proof, 10 or 66 inclusion proofs, the variant and
path levels of tree_r_last, arity - 1 siblings, an index below the arity); every 32-byte value
must be a canonical field element, and nothing may trail the structure. A refusal is a
:class:`PostDecodeError` naming the field
(``vanilla_proofs[1].vanilla_proof.sectors[0].inclusion_proofs[4].Sub.base_proof[2].hashes[6]``)
and the byte offset where it starts.
"""

from __future__ import annotations

from cuzk_plugin.adapters.curio.bincode import BincodeError, BincodeReader
from cuzk_plugin.filecoin.post_proofs import PostShape
from cuzk_plugin.filecoin.post_vanilla import (
    VARIANTS,
    FallbackPoStSectorProof,
    PathElement,
    PostMerkleProof,
    SectorProof,
)

__all__ = ["PostDecodeError", "decode_sector_proof"]

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
