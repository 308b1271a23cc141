"""PoRep challenge derivation for the three challenge kinds (storage-proofs-porep
``stacked/vanilla/challenges.rs``; /work/shared/specs/porep-variants-facts.md section 3).

Every kind maps 32 bytes to a node with (LE integer mod (nodes - 1)) + 1: node 0 is never
challenged. Partition k's challenge i has global index j = challenges_per_partition * k + i.

- interactive: SHA-256(replica_id || seed || j as u32 LE);
- non-interactive: SHA-256("filecoin.io|PoRep|1|NonInteractive|1" || replica_id || comm_r || j);
- synthetic: min(nodes, 2^18) synthetic challenges drawn from a ChaCha20 keystream keyed by
  BLAKE2b(replica_id || comm_r); the PoRep challenges select among them by u32 LE indices from
  a second keystream keyed by BLAKE2b(replica_id || seed).
"""

from __future__ import annotations

import hashlib
import struct

__all__ = [
    "NI_TAG",
    "SYNTH_CHALLENGE_COUNT",
    "chacha20_keystream",
    "interactive_challenges",
    "ni_challenges",
    "porep_challenges",
    "synthetic_challenges",
    "synthetic_indexes",
]

NI_TAG = b"filecoin.io|PoRep|1|NonInteractive|1"
_SYNTH_GEN_KEY = b"filecoin.io|PoRep|1|Synthetic|1|Generation"
_SYNTH_SELECT_KEY = b"filecoin.io|PoRep|1|Synthetic|1|Selection"
_SYNTH_NONCE = b"synth-porep\x00"
#: Synthetic challenges of a production sector (fewer for a sector with fewer nodes).
SYNTH_CHALLENGE_COUNT = 1 << 18


def _to_node(digest: bytes, nodes: int) -> int:
    return int.from_bytes(digest, "little") % (nodes - 1) + 1


def interactive_challenges(replica_id: bytes, seed: bytes, nodes: int, challenges_per_partition: int,
                           partition: int) -> list[int]:
    """InteractiveChallenges::derive for partition k: challenge i is
    SHA-256(replica_id || seed || j as u32 LE) read LE, mod (nodes - 1), plus 1, with
    j = challenges_per_partition * k + i. Node 0 is never challenged."""
    out = []
    for i in range(challenges_per_partition):
        j = challenges_per_partition * partition + i
        h = hashlib.sha256(replica_id + seed + j.to_bytes(4, "little")).digest()
        out.append(_to_node(h, nodes))
    return out


def ni_challenges(replica_id: bytes, comm_r: bytes, nodes: int, challenges_per_partition: int,
                  partition: int) -> list[int]:
    """NiChallenges::derive: the interactive rule with the NI tag and comm_r in place of the seed."""
    out = []
    for i in range(challenges_per_partition):
        j = challenges_per_partition * partition + i
        h = hashlib.sha256(NI_TAG + replica_id + comm_r + j.to_bytes(4, "little")).digest()
        out.append(_to_node(h, nodes))
    return out


# -- ChaCha20 (RFC 8439: 256-bit key, 96-bit nonce, 32-bit block counter) --------------------

_MASK = 0xFFFFFFFF


def _quarter(s: list[int], a: int, b: int, c: int, d: int) -> None:
    s[a] = (s[a] + s[b]) & _MASK
    s[d] ^= s[a]
    s[d] = ((s[d] << 16) | (s[d] >> 16)) & _MASK
    s[c] = (s[c] + s[d]) & _MASK
    s[b] ^= s[c]
    s[b] = ((s[b] << 12) | (s[b] >> 20)) & _MASK
    s[a] = (s[a] + s[b]) & _MASK
    s[d] ^= s[a]
    s[d] = ((s[d] << 8) | (s[d] >> 24)) & _MASK
    s[c] = (s[c] + s[d]) & _MASK
    s[b] ^= s[c]
    s[b] = ((s[b] << 7) | (s[b] >> 25)) & _MASK


def _chacha20_block(key: bytes, counter: int, nonce: bytes) -> bytes:
    init = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *struct.unpack("<8I", key), counter & _MASK,
            *struct.unpack("<3I", nonce)]
    s = list(init)
    for _ in range(10):
        _quarter(s, 0, 4, 8, 12)
        _quarter(s, 1, 5, 9, 13)
        _quarter(s, 2, 6, 10, 14)
        _quarter(s, 3, 7, 11, 15)
        _quarter(s, 0, 5, 10, 15)
        _quarter(s, 1, 6, 11, 12)
        _quarter(s, 2, 7, 8, 13)
        _quarter(s, 3, 4, 9, 14)
    return struct.pack("<16I", *((x + y) & _MASK for x, y in zip(s, init, strict=False)))


def chacha20_keystream(key: bytes, nonce: bytes, offset: int, length: int) -> bytes:
    """``length`` keystream bytes from byte ``offset`` (the chacha20 crate's seek, then apply)."""
    if len(key) != 32 or len(nonce) != 12:
        raise ValueError("ChaCha20 takes a 32-byte key and a 12-byte nonce")
    first, last = offset // 64, (offset + length + 63) // 64
    if last > 1 << 32:
        raise ValueError("past the end of the ChaCha20 keystream")
    stream = b"".join(_chacha20_block(key, block, nonce) for block in range(first, last))
    start = offset - first * 64
    return stream[start:start + length]


def _synth_key(tag: bytes, replica_id: bytes, other: bytes) -> bytes:
    return hashlib.blake2b(replica_id + other, digest_size=32, key=tag).digest()


def synthetic_indexes(replica_id: bytes, seed: bytes, nodes: int, challenges_per_partition: int,
                      partition: int) -> list[int]:
    """gen_partition_synth_indexes: the synthetic challenges partition k proves, u32 LE at
    selection-keystream offset 4 * (k * cpp + t), mod the synthetic count (may repeat)."""
    count = min(nodes, SYNTH_CHALLENGE_COUNT)
    key = _synth_key(_SYNTH_SELECT_KEY, replica_id, seed)
    raw = chacha20_keystream(key, _SYNTH_NONCE, 4 * partition * challenges_per_partition, 4 * challenges_per_partition)
    return [x % count for x in struct.unpack(f"<{challenges_per_partition}I", raw)]


def synthetic_challenges(replica_id: bytes, comm_r: bytes, seed: bytes, nodes: int, challenges_per_partition: int,
                         partition: int) -> list[int]:
    """gen_porep_partition_challenges: synthetic challenge s is the node of the 32 bytes at
    generation-keystream offset 32 * s, for each selected index s."""
    key = _synth_key(_SYNTH_GEN_KEY, replica_id, comm_r)
    return [_to_node(chacha20_keystream(key, _SYNTH_NONCE, 32 * s, 32), nodes)
            for s in synthetic_indexes(replica_id, seed, nodes, challenges_per_partition, partition)]


def porep_challenges(kind: str, *, replica_id: bytes, comm_r: bytes, seed: bytes, nodes: int,
                     challenges_per_partition: int, partition: int) -> list[int]:
    """Partition k's challenges for ``kind`` 'interactive', 'synthetic' or 'non-interactive'."""
    if kind == "interactive":
        return interactive_challenges(replica_id, seed, nodes, challenges_per_partition, partition)
    if kind == "synthetic":
        return synthetic_challenges(replica_id, comm_r, seed, nodes, challenges_per_partition, partition)
    if kind == "non-interactive":
        return ni_challenges(replica_id, comm_r, nodes, challenges_per_partition, partition)
    raise ValueError(f"unknown PoRep challenge kind {kind!r}")
