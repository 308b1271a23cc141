"""Fallback PoSt challenges: which sector a WinningPoSt proves and which leaves every PoSt opens.

Facts: /work/shared/specs/post-facts.md section 3 (storage-proofs-post ``fallback/vanilla.rs``
generate_sector_challenge, generate_leaf_challenge; ``fallback/utils.rs`` get_challenge_index).
Randomness and prover id are 32 bytes each; the sector id and indices are u64 little-endian.
"""

from __future__ import annotations

import hashlib

from cuzk_plugin.bls12_381.fields import R
from cuzk_plugin.filecoin.post.params import PostKind, RegisteredPoStProof

__all__ = ["check_randomness", "winning_sector_index", "challenge_index", "leaf_challenge", "sector_challenges",
           "slot_challenges"]

_U64 = 1 << 64


def check_randomness(randomness: bytes) -> int:
    """The randomness as Fr; ValueError unless 32 bytes of a canonical (little-endian, < r)
    element, as as_safe_commitment demands (Curio clears the top two bits: byte 31 & 0x3f)."""
    if len(randomness) != 32:
        raise ValueError(f"expected 32 bytes, got {len(randomness)}")
    value = int.from_bytes(randomness, "little")
    if value >= R:
        raise ValueError("not a canonical field element (>= r; Curio masks byte 31 with 0x3f)")
    return value


def winning_sector_index(prover_id: bytes, randomness: bytes, sector_set_len: int) -> int:
    """generate_sector_challenge with n = 0: SHA-256(prover_id || randomness || 0 as u64 LE),
    first 8 bytes as LE u64, mod the number of active sectors. An index into the miner's set of
    active sectors (lotus takes the n-th set bit), not a sector number."""
    if sector_set_len <= 0:
        raise ValueError("a WinningPoSt needs at least one active sector")
    if len(prover_id) != 32 or len(randomness) != 32:
        raise ValueError("prover_id and randomness are 32 bytes each")
    h = hashlib.sha256(prover_id + randomness + (0).to_bytes(8, "little")).digest()
    return int.from_bytes(h[:8], "little") % sector_set_len


def challenge_index(proof: RegisteredPoStProof, sector_index: int, n: int) -> int:
    """get_challenge_index: ``sector_index * challenge_count + n`` before API 1.2.0, ``n`` from it
    (WindowPoSt ids 10-14). ``sector_index`` counts from the first sector of partition 0."""
    if proof.api_version == "1.2.0":
        return n
    return sector_index * proof.shape.vanilla_challenges + n


def leaf_challenge(randomness: bytes, sector_id: int, index: int, leaves: int) -> int:
    """generate_leaf_challenge: SHA-256(randomness || sector_id u64 LE || index u64 LE), first 8
    bytes as LE u64, mod the number of leaves. No domain tag, no prover id."""
    if not 0 <= sector_id < _U64 or not 0 <= index < _U64:
        raise ValueError("sector id and challenge index are u64")
    h = hashlib.sha256(randomness + sector_id.to_bytes(8, "little") + index.to_bytes(8, "little")).digest()
    return int.from_bytes(h[:8], "little") % leaves


def sector_challenges(proof: RegisteredPoStProof, randomness: bytes, sector_id: int, sector_index: int) -> list[int]:
    """The leaves a vanilla proof of ``sector_id`` opens (10 for Window, 66 for Winning), the
    sector sitting at ``sector_index`` (partition_index * sectors per partition + position)."""
    shape = proof.shape
    return [leaf_challenge(randomness, sector_id, challenge_index(proof, sector_index, n), shape.leaves)
            for n in range(shape.vanilla_challenges)]


def slot_challenges(proof: RegisteredPoStProof, randomness: bytes, sector_ids: list[int],
                    partition_index: int = 0) -> list[list[int]]:
    """Per circuit slot, its leaf challenges, padded as Filecoin pads a partition: Window
    repeats the last sector's block up to the partition's capacity; Winning's single sector's
    66 challenges become 66 slots of one challenge."""
    shape = proof.shape
    if proof.kind is PostKind.WINNING:
        if len(sector_ids) != 1:
            raise ValueError(f"a WinningPoSt proves 1 sector, got {len(sector_ids)}")
        return [[c] for c in sector_challenges(proof, randomness, sector_ids[0], 0)]
    if not 1 <= len(sector_ids) <= shape.sector_slots:
        raise ValueError(f"a WindowPoSt partition holds 1 to {shape.sector_slots} sectors, got {len(sector_ids)}")
    base = partition_index * shape.sector_slots
    out = [sector_challenges(proof, randomness, sid, base + i) for i, sid in enumerate(sector_ids)]
    return out + [out[-1]] * (shape.sector_slots - len(out))
