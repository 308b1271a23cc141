"""Registered PoSt proofs and the shape of their Fallback PoSt circuits.

Facts: /work/shared/specs/post-facts.md sections 1 (ids, API versions), 2 (shapes per sector
size) and 4 (the Winning circuit is set up as 66 sector slots of 1 challenge each).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cuzk_plugin.filecoin.params import PorepParams, porep_params
from cuzk_plugin.filecoin.proofs import SECTOR_SIZE_NAMES

__all__ = ["PostKind", "RegisteredPoStProof", "POST_PROOFS", "post_proof_by_number", "PostShape", "post_shape",
           "WINNING_CHALLENGES", "WINDOW_CHALLENGES", "WINDOW_SECTORS", "post_circuit_id", "SINGLE_PROOF_LEN"]

#: Challenges of a WinningPoSt (one sector); in the circuit 66 slots of one challenge each.
WINNING_CHALLENGES = 66
#: Challenges per sector of a WindowPoSt.
WINDOW_CHALLENGES = 10
#: Sectors per WindowPoSt partition by sector size (filecoin-proofs WINDOW_POST_SECTOR_COUNT).
WINDOW_SECTORS = {2 << 10: 2, 8 << 20: 2, 512 << 20: 2, 32 << 30: 2349, 64 << 30: 2300}
#: One Groth16 proof (SINGLE_PARTITION_PROOF_LEN).
SINGLE_PROOF_LEN = 192

_SIZES = list(SECTOR_SIZE_NAMES)
_SHORT = {2 << 10: "2k", 8 << 20: "8m", 512 << 20: "512m", 32 << 30: "32g", 64 << 30: "64g"}


class PostKind(enum.Enum):
    WINNING = "winning"
    WINDOW = "window"


@dataclass(frozen=True)
class RegisteredPoStProof:
    """One Go ``abi.RegisteredPoStProof`` number (what Curio puts in ``registered_proof``)."""

    number: int
    kind: PostKind
    sector_size: int
    api_version: str  #: "1.0.0" (ids 0-9) or "1.2.0" (ids 10-14, proofs-api's V1_2 Window)

    @property
    def go_name(self) -> str:
        """RegisteredPoStProof_<go_name> in go-state-types (ids 10-14 are V1_1 there, V1_2 in proofs-api)."""
        size = SECTOR_SIZE_NAMES[self.sector_size]
        if self.kind is PostKind.WINNING:
            return f"StackedDrgWinning{size}V1"
        return f"StackedDrgWindow{size}V1" + ("_1" if self.api_version == "1.2.0" else "")

    @property
    def shape(self) -> PostShape:
        return post_shape(self.kind, self.sector_size)


POST_PROOFS: tuple[RegisteredPoStProof, ...] = tuple(
    RegisteredPoStProof(first + k, kind, size, version)
    for first, kind, version in ((0, PostKind.WINNING, "1.0.0"), (5, PostKind.WINDOW, "1.0.0"),
                                 (10, PostKind.WINDOW, "1.2.0"))
    for k, size in enumerate(_SIZES)
)
_BY_NUMBER = {p.number: p for p in POST_PROOFS}


def post_proof_by_number(number: int) -> RegisteredPoStProof:
    try:
        return _BY_NUMBER[number]
    except KeyError:
        raise ValueError(f"unknown registered PoSt proof {number} (0-4 Winning, 5-14 Window)") from None


@dataclass(frozen=True)
class PostShape:
    """One Fallback PoSt circuit: ``sector_slots`` slots of ``challenges_per_slot`` inclusion
    proofs in tree_r_last, plus what the vanilla proofs look like (``vanilla_challenges`` per
    sector, at most ``vanilla_sectors`` sectors a request)."""

    kind: PostKind
    sector_size: int
    sector_slots: int
    challenges_per_slot: int
    vanilla_sectors: int
    vanilla_challenges: int

    @property
    def porep(self) -> PorepParams:
        return porep_params(self.sector_size)

    @property
    def tree_arities(self) -> list[int]:
        """tree_r_last path arities, leaf to root (8-0-0, 8-8-0 or 8-8-2)."""
        return self.porep.tree_arities

    @property
    def variant(self) -> str:
        """The MerkleProof variant of this size: Single, Sub or Top."""
        return self.porep.tree_variant

    @property
    def leaves(self) -> int:
        return self.sector_size // 32

    @property
    def num_public_inputs(self) -> int:
        """ONE, then per slot comm_r and one leaf index per challenge."""
        return 1 + self.sector_slots * (1 + self.challenges_per_slot)


def post_shape(kind: PostKind, sector_size: int) -> PostShape:
    if sector_size not in WINDOW_SECTORS:
        raise ValueError(f"unsupported sector size {sector_size}; known: {sorted(WINDOW_SECTORS)}")
    if kind is PostKind.WINNING:
        return PostShape(kind, sector_size, WINNING_CHALLENGES, 1, 1, WINNING_CHALLENGES)
    n = WINDOW_SECTORS[sector_size]
    return PostShape(kind, sector_size, n, WINDOW_CHALLENGES, n, WINDOW_CHALLENGES)


def post_circuit_id(kind: PostKind, sector_size: int) -> str:
    """The engine's circuit id: ``winning-2k`` ... ``wpost-64g`` (every API version of a kind
    and size shares one circuit and one parameter file, params-files-facts.md section 2)."""
    return f"{'winning' if kind is PostKind.WINNING else 'wpost'}-{_SHORT[sector_size]}"
