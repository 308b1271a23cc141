"""Per-sector-size parameters of the EmptySectorUpdate proof and the registered update proofs
(storage-proofs-update ``constants.rs``, ``vanilla.rs`` PublicParams; proofs-api
RegisteredUpdateProof; /work/shared/specs/snap-facts.md sections 1-2)."""

from __future__ import annotations

from dataclasses import dataclass

from cuzk_plugin.filecoin.params import NODE_SIZE, PorepParams, porep_params
from cuzk_plugin.filecoin.proofs import SECTOR_SIZE_NAMES

__all__ = ["FR_CAPACITY", "UPDATE_PROOF_SIZES", "UpdateParams", "update_params", "update_proof_size"]

FR_CAPACITY = 254
#: RegisteredUpdateProof id -> sector size (StackedDrg{2KiB..64GiB}V1, API 1.1.0)
UPDATE_PROOF_SIZES = {i: size for i, size in enumerate(SECTOR_SIZE_NAMES)}


def update_proof_size(registered_proof: int) -> int:
    """The sector size of a RegisteredUpdateProof number (0-4)."""
    try:
        return UPDATE_PROOF_SIZES[registered_proof]
    except KeyError:
        raise ValueError(f"{registered_proof} is not a registered update proof (0-4)") from None


@dataclass(frozen=True)
class UpdateParams:
    """Shape of one sector size's update circuit; every partition has the same shape."""

    sector_size: int
    partitions: int  #: partition_count(sector_nodes): 16 above 2^19 nodes (not the PoRep count)
    challenges: int  #: challenges per partition
    apex_leaves: int
    hs: tuple[int, ...]  #: the six allowed h values, fixed in the circuit
    porep: PorepParams  #: for the TreeR shape

    @property
    def nodes(self) -> int:
        return self.sector_size // NODE_SIZE

    @property
    def challenge_bit_len(self) -> int:
        return self.nodes.bit_length() - 1

    @property
    def partition_bit_len(self) -> int:
        return self.partitions.bit_length() - 1

    @property
    def apex_leaf_bit_len(self) -> int:
        return self.apex_leaves.bit_length() - 1

    @property
    def random_bits(self) -> int:
        """Random bits per challenge: the challenge bits less the partition index's."""
        return self.challenge_bit_len - self.partition_bit_len

    @property
    def challenges_per_digest(self) -> int:
        return FR_CAPACITY // self.random_bits

    @property
    def digests_per_partition(self) -> int:
        return -(-self.challenges // self.challenges_per_digest)

    @property
    def apex_start(self) -> int:
        """TreeD levels from a leaf to its apex leaf (= the apex leaves' height)."""
        return self.challenge_bit_len - self.partition_bit_len - self.apex_leaf_bit_len

    @property
    def tree_r_arities(self) -> list[int]:
        return self.porep.tree_arities

    @property
    def h_default(self) -> int:
        """constants.rs h_default: hs[3]."""
        return self.hs[3]

    def h_select(self, h: int) -> int:
        """1 << (first index of h in hs)."""
        if h not in self.hs:
            raise ValueError(f"h = {h} is not one of this sector size's allowed values {self.hs}")
        return 1 << self.hs.index(h)

    def k_and_h_select(self, k: int, h: int | None = None) -> int:
        """Public input 1: k OR (h_select << partition_bit_len)."""
        if not 0 <= k < self.partitions:
            raise ValueError(f"partition {k} out of range: this sector size has {self.partitions}")
        return k | (self.h_select(self.h_default if h is None else h) << self.partition_bit_len)

    @property
    def num_public_inputs(self) -> int:
        """ONE, k_and_h_select, comm_r_old, comm_d_new, comm_r_new."""
        return 5


def update_params(sector_size: int | str) -> UpdateParams:
    porep = porep_params(sector_size)
    nodes = porep.nodes
    partitions = 1 if nodes <= 1 << 8 else 2 if nodes <= 1 << 10 else 4 if nodes <= 1 << 19 else 16
    challenges = 10 if nodes <= 1 << 19 else 86
    apex = 8 if nodes <= 1 << 8 else 128
    hs = (1,) * 6 if nodes <= 1 << 10 else (7, 8, 9, 10, 11, 12)
    return UpdateParams(porep.sector_size, partitions, challenges, apex, hs, porep)
