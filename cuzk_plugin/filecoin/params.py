"""Per-sector-size parameters of the stacked DRG PoRep (filecoin-proofs ``constants.rs``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PorepParams", "porep_params", "SECTOR_SIZES", "parse_sector_size",
           "BASE_DEGREE", "EXP_DEGREE", "NODE_SIZE"]

NODE_SIZE = 32
BASE_DEGREE = 6
EXP_DEGREE = 8

#: sector size in bytes -> (layers, minimum challenges, partitions, (base, sub, top) arities)
_TABLE = {
    2 << 10: (2, 2, 1, (8, 0, 0)),
    8 << 20: (2, 2, 1, (8, 0, 0)),
    512 << 20: (2, 2, 1, (8, 0, 0)),
    32 << 30: (11, 176, 10, (8, 8, 0)),
    64 << 30: (11, 176, 10, (8, 8, 2)),
}
SECTOR_SIZES = sorted(_TABLE)
#: NI-PoRep: sector size -> (minimum challenges, partitions); 18 (2 for test sizes) per
#: partition as for the interactive circuit, so its parameter files apply
#: (porep-variants-facts.md section 2; filecoin-proofs constants.rs).
_NI_TABLE = {
    2 << 10: (26, 13),
    8 << 20: (26, 13),
    512 << 20: (26, 13),
    32 << 30: (2253, 126),
    64 << 30: (2253, 126),
}

_UNITS = {"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30}


def parse_sector_size(text: str | int) -> int:
    """'2KiB', '32GiB', or a byte count."""
    if isinstance(text, int):
        return text
    t = text.strip().upper()
    for unit, mult in _UNITS.items():
        if t.endswith(unit):
            return int(t[: -len(unit)]) * mult
    return int(t)


@dataclass(frozen=True)
class PorepParams:
    """Shape of one sector's PoRep circuit."""

    sector_size: int
    layers: int
    challenges_per_partition: int  #: ceil(minimum challenges / partitions)
    partitions: int
    base_arity: int
    sub_arity: int  #: 0 when the replica/column trees have no sub-tree level
    top_arity: int  #: 0 when they have no top-tree level

    @property
    def nodes(self) -> int:
        return self.sector_size // NODE_SIZE

    @property
    def base_levels(self) -> int:
        """Levels of arity ``base_arity`` below the sub/top levels."""
        leaves = self.nodes // max(self.sub_arity, 1) // max(self.top_arity, 1)
        levels, n = 0, 1
        while n < leaves:
            n *= self.base_arity
            levels += 1
        if n != leaves:
            raise ValueError(f"{leaves} leaves are not a power of {self.base_arity}")
        return levels

    @property
    def upper_levels(self) -> int:
        """Sub and top levels of a replica/column tree: 0, 1 or 2, which is also the tag of its
        MerkleProof variant (Single, Sub, Top)."""
        return (1 if self.sub_arity else 0) + (1 if self.top_arity else 0)

    @property
    def tree_variant(self) -> str:
        """The MerkleProof variant of a replica/column tree path: Single, Sub or Top."""
        return ("Single", "Sub", "Top")[self.upper_levels]

    @property
    def tree_arities(self) -> list[int]:
        """The arity of each level of a replica/column tree path, leaf to root."""
        return [self.base_arity] * self.base_levels + [a for a in (self.sub_arity, self.top_arity) if a]

    @property
    def data_levels(self) -> int:
        return self.nodes.bit_length() - 1

    @property
    def num_public_inputs(self) -> int:
        """ONE, replica_id, comm_d, comm_r, then 18 per challenge."""
        return 4 + 18 * self.challenges_per_partition


def porep_params(sector_size: int | str, *, non_interactive: bool = False) -> PorepParams:
    """Interactive and synthetic PoRep share one table; NI-PoRep proves more partitions of the
    same circuit (``non_interactive``)."""
    size = parse_sector_size(sector_size)
    if size not in _TABLE:
        raise ValueError(f"unsupported sector size {size}; known: {SECTOR_SIZES}")
    layers, challenges, partitions, (u, v, w) = _TABLE[size]
    if non_interactive:
        challenges, partitions = _NI_TABLE[size]
    return PorepParams(size, layers, -(-challenges // partitions), partitions, u, v, w)
