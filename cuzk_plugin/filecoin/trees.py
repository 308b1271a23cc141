"""Native Filecoin hashes and Merkle trees: SHA-256 with fr32 truncation for data trees,
Poseidon for replica and column trees (filecoin-hashers; storage-proofs-core ``merkle``).

Field elements travel as Python ints; their 32-byte form is little-endian (Fr's repr).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from cuzk_plugin.filecoin.poseidon import poseidon_hash

__all__ = ["trim_to_fr32", "sha256_fr", "fr_to_bytes", "bytes_to_fr", "node_hasher", "MerkleTree", "MerklePath"]


def fr_to_bytes(x: int) -> bytes:
    return int(x).to_bytes(32, "little")


def bytes_to_fr(b: bytes) -> int:
    return int.from_bytes(b, "little")


def trim_to_fr32(digest: bytes) -> bytes:
    """Clear the top two bits of byte 31 so the LE integer is below 2^254 < r."""
    return digest[:31] + bytes([digest[31] & 0x3F])


def sha256_fr(data: bytes) -> int:
    """SHA-256 of ``data`` as a field element (trim_to_fr32 of the digest, read LE)."""
    return bytes_to_fr(trim_to_fr32(hashlib.sha256(data).digest()))


def _sha256_node(children: list[int]) -> int:
    return sha256_fr(b"".join(fr_to_bytes(c) for c in children))


def node_hasher(hasher: str) -> Callable[[list[int]], int]:
    """The node hash of a tree kind: 'sha256' (data trees) or 'poseidon' (of the arity)."""
    if hasher == "sha256":
        return _sha256_node
    if hasher == "poseidon":
        return poseidon_hash
    raise ValueError(f"unknown tree hasher {hasher!r}")


@dataclass(frozen=True)
class MerklePath:
    """An inclusion path, leaf to root: per level (siblings in order, position among children)."""

    leaf: int
    root: int
    levels: list[tuple[list[int], int]]
    arities: list[int]


class MerkleTree:
    """A tree over field-element leaves with per-level arities (leaf level first), hashed with
    SHA-256 (``hasher='sha256'``, binary) or Poseidon of the level's arity."""

    def __init__(self, leaves: list[int], arities: list[int], hasher: str):
        h = node_hasher(hasher)
        size = 1
        for a in arities:
            size *= a
        if size != len(leaves):
            raise ValueError(f"{len(leaves)} leaves do not fit arities {arities}")
        self.arities = arities
        self.layers = [list(leaves)]
        for a in arities:
            prev = self.layers[-1]
            self.layers.append([h(prev[i:i + a]) for i in range(0, len(prev), a)])

    @property
    def root(self) -> int:
        return self.layers[-1][0]

    def path(self, index: int) -> MerklePath:
        levels = []
        i = index
        for a, layer in zip(self.arities, self.layers[:-1], strict=True):  # the root's layer has no path level
            group = i - i % a
            pos = i % a
            siblings = [layer[group + k] for k in range(a) if k != pos]
            levels.append((siblings, pos))
            i //= a
        return MerklePath(self.layers[0][index], self.root, levels, list(self.arities))

    @staticmethod
    def verify(path: MerklePath, hasher: str) -> bool:
        h = node_hasher(hasher)
        cur = path.leaf
        for siblings, pos in path.levels:
            cur = h([*siblings[:pos], cur, *siblings[pos:]])
        return cur == path.root
