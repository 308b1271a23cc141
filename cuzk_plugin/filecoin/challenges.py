"""PoRep challenge derivation (storage-proofs-porep ``stacked/vanilla/challenges.rs``)."""

from __future__ import annotations

import hashlib

__all__ = ["interactive_challenges"]


def interactive_challenges(replica_id: bytes, seed: bytes, nodes: int, challenges_per_partition: int,
                           partition: int) -> list[int]:
    """InteractiveChallenges::derive for partition k: challenge i is
    SHA-256(replica_id || seed || j as u32 LE) read LE, mod (nodes - 1), plus 1, with
    j = challenges_per_partition * k + i. Node 0 is never challenged."""
    out = []
    for i in range(challenges_per_partition):
        j = challenges_per_partition * partition + i
        h = hashlib.sha256(replica_id + seed + j.to_bytes(4, "little")).digest()
        out.append(int.from_bytes(h, "little") % (nodes - 1) + 1)
    return out
