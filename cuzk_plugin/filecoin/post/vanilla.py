"""PoSt vanilla proofs (FallbackPoStSectorProof) and their bincode encoding.

Types: filecoin-proofs ``types/mod.rs``, storage-proofs-post ``fallback/vanilla.rs``,
storage-proofs-core ``merkle/proof.rs``. Byte layout (bincode 1.x defaults, everything
little-endian; /work/shared/specs/post-facts.md section 6):

    FallbackPoStSectorProof: sector_id u64 | comm_r [32] | sectors: u64 count, SectorProof...
    SectorProof:   inclusion_proofs: u64 count, MerkleProof... | comm_c [32] | comm_r_last [32]
    MerkleProof:   u32 variant, then 0 Single {root, leaf, path}
                                     1 Sub {base_proof, sub_proof, root, leaf}
                                     2 Top {base_proof, sub_proof, top_proof, root, leaf}
    InclusionPath: u64 count of PathElements (leaf to root)
    PathElement:   u64 count of sibling hashes, the hashes [32] each, index u64

Decoding (hostile bytes) lives in :mod:`cuzk_plugin.adapters.curio.post.vanilla`; this module writes
the bytes (the test sealer) and says what a proof means.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from cuzk_plugin.filecoin.gadgets.merkle import PathLevel

__all__ = ["PathElement", "PostMerkleProof", "SectorProof", "FallbackPoStSectorProof", "VARIANTS", "encode_sector_proof"]

#: MerkleProof variant tags, in the enum's declaration order.
VARIANTS = ("Single", "Sub", "Top")


@dataclass(frozen=True)
class PathElement:
    """One level: the arity - 1 sibling hashes and the current node's position among the children."""

    hashes: tuple[int, ...]
    index: int


@dataclass(frozen=True)
class PostMerkleProof:
    """A tree_r_last inclusion proof; ``sub``/``top`` are empty unless the variant has them."""

    variant: str
    root: int
    leaf: int
    base: tuple[PathElement, ...]
    sub: tuple[PathElement, ...] = ()
    top: tuple[PathElement, ...] = ()

    @property
    def levels(self) -> tuple[PathElement, ...]:
        """Every level, leaf to root."""
        return self.base + self.sub + self.top

    @property
    def leaf_index(self) -> int:
        """The challenged leaf the path indices address (InclusionPath's index fields)."""
        index, scale = 0, 1
        for el in self.levels:
            index += el.index * scale
            scale *= len(el.hashes) + 1
        return index

    def path_levels(self) -> list[PathLevel]:
        return [PathLevel(len(el.hashes) + 1, el.hashes, el.index) for el in self.levels]


@dataclass(frozen=True)
class SectorProof:
    inclusion_proofs: tuple[PostMerkleProof, ...]
    comm_c: int
    comm_r_last: int


@dataclass(frozen=True)
class FallbackPoStSectorProof:
    """What proofs-api's generate_single_vanilla_proof returns for one sector."""

    sector_id: int
    comm_r: int
    sectors: tuple[SectorProof, ...]


def _fr(x: int) -> bytes:
    return int(x).to_bytes(32, "little")


def _path(elements: tuple[PathElement, ...]) -> bytes:
    out = [struct.pack("<Q", len(elements))]
    for el in elements:
        out.append(struct.pack("<Q", len(el.hashes)))
        out.extend(_fr(h) for h in el.hashes)
        out.append(struct.pack("<Q", el.index))
    return b"".join(out)


def _merkle(p: PostMerkleProof) -> bytes:
    tag = struct.pack("<I", VARIANTS.index(p.variant))
    ends = _fr(p.root) + _fr(p.leaf)
    if p.variant == "Single":
        return tag + ends + _path(p.base)
    if p.variant == "Sub":
        return tag + _path(p.base) + _path(p.sub) + ends
    return tag + _path(p.base) + _path(p.sub) + _path(p.top) + ends


def encode_sector_proof(p: FallbackPoStSectorProof) -> bytes:
    """bincode of a FallbackPoStSectorProof, as proofs-api writes it and Curio forwards it."""
    out = [struct.pack("<Q", p.sector_id), _fr(p.comm_r), struct.pack("<Q", len(p.sectors))]
    for s in p.sectors:
        out.append(struct.pack("<Q", len(s.inclusion_proofs)))
        out.extend(_merkle(m) for m in s.inclusion_proofs)
        out.append(_fr(s.comm_c) + _fr(s.comm_r_last))
    return b"".join(out)
