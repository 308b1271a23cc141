"""The stacked DRG graph: BucketGraph DRG parents and Feistel expander parents, computed as
rust-fil-proofs computes them (``storage-proofs-core/src/drgraph.rs``,
``storage-proofs-porep/src/stacked/vanilla/graph.rs``, ``storage-proofs-core/src/crypto``).
"""

from __future__ import annotations

import hashlib
import struct
from functools import lru_cache

from cuzk_plugin.filecoin.params import BASE_DEGREE, EXP_DEGREE

__all__ = ["StackedGraph", "chacha8_words", "derive_porep_domain_seed", "feistel_permute"]

DRSAMPLE_DST = b"Filecoin_DRSample"
FEISTEL_DST = b"Filecoin_Feistel"
FEISTEL_ROUNDS = 3

_MASK32 = 0xFFFFFFFF


def derive_porep_domain_seed(dst: bytes, porep_id: bytes) -> bytes:
    """SHA-256(dst || porep_id)."""
    return hashlib.sha256(dst + porep_id).digest()


def _rotl(x: int, n: int) -> int:
    return ((x << n) | (x >> (32 - n))) & _MASK32


def _chacha_block(key_words: list[int], counter: int, rounds: int = 8) -> list[int]:
    """One ChaCha block (rand_chacha layout: 64-bit block counter in words 12-13, stream 0)."""
    state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *key_words,
             counter & _MASK32, counter >> 32, 0, 0]
    x = list(state)

    def qr(a, b, c, d):
        x[a] = (x[a] + x[b]) & _MASK32; x[d] = _rotl(x[d] ^ x[a], 16)
        x[c] = (x[c] + x[d]) & _MASK32; x[b] = _rotl(x[b] ^ x[c], 12)
        x[a] = (x[a] + x[b]) & _MASK32; x[d] = _rotl(x[d] ^ x[a], 8)
        x[c] = (x[c] + x[d]) & _MASK32; x[b] = _rotl(x[b] ^ x[c], 7)

    for _ in range(rounds // 2):
        qr(0, 4, 8, 12); qr(1, 5, 9, 13); qr(2, 6, 10, 14); qr(3, 7, 11, 15)
        qr(0, 5, 10, 15); qr(1, 6, 11, 12); qr(2, 7, 8, 13); qr(3, 4, 9, 14)
    return [(a + b) & _MASK32 for a, b in zip(x, state, strict=True)]


def chacha8_words(seed: bytes, count: int) -> list[int]:
    """The first ``count`` u32 outputs of ChaCha8Rng::from_seed(seed)."""
    key = list(struct.unpack("<8I", seed))
    out: list[int] = []
    block = 0
    while len(out) < count:
        out.extend(_chacha_block(key, block))
        block += 1
    return out[:count]


def _feistel_precompute(n: int) -> tuple[int, int, int]:
    next_pow4, log4 = 4, 1
    while next_pow4 < n:
        next_pow4 *= 4
        log4 += 1
    right_mask = (1 << log4) - 1
    return right_mask << log4, right_mask, log4


def _feistel_round(right: int, key: int, right_mask: int) -> int:
    digest = hashlib.blake2b(struct.pack(">QQ", right, key)).digest()
    return struct.unpack(">Q", digest[:8])[0] & right_mask


def _feistel_encode(index: int, keys: list[int], pre: tuple[int, int, int]) -> int:
    left_mask, right_mask, half_bits = pre
    left, right = (index & left_mask) >> half_bits, index & right_mask
    for key in keys[:FEISTEL_ROUNDS]:
        left, right = right, left ^ _feistel_round(right, key, right_mask)
    return (left << half_bits) | right


def feistel_permute(n: int, index: int, keys: list[int]) -> int:
    """A permutation of 0..n-1 (cycle walking over the even-bit-width Feistel network)."""
    pre = _feistel_precompute(n)
    u = _feistel_encode(index, keys, pre)
    while u >= n:
        u = _feistel_encode(u, keys, pre)
    return u


class StackedGraph:
    """DRG (degree 6) plus expander (degree 8) parents of a sector's nodes, seeded by porep_id.

    ``legacy_predecessor`` selects the ApiVersion 1.0.0 layout (predecessor in the last DRG
    slot); 1.1.0 and later put it first.
    """

    def __init__(self, nodes: int, porep_id: bytes, *, legacy_predecessor: bool = False):
        if len(porep_id) != 32:
            raise ValueError("porep_id must be 32 bytes")
        self.nodes = nodes
        self.drg_seed = derive_porep_domain_seed(DRSAMPLE_DST, porep_id)[:28]
        raw = derive_porep_domain_seed(FEISTEL_DST, porep_id)
        self.feistel_keys = list(struct.unpack("<4Q", raw))
        self.legacy_predecessor = legacy_predecessor
        self.drg_parents = lru_cache(maxsize=1 << 16)(self._drg_parents)

    def _drg_parents(self, node: int) -> tuple[int, ...]:
        """BucketGraph::parents: 6 parents of ``node`` in its own layer."""
        m = BASE_DEGREE
        if node < 2:
            return (0,) * m
        m_prime = m - 1
        words = chacha8_words(self.drg_seed + struct.pack("<I", node), 4 * m_prime)
        rand = iter(words[2 * i] | (words[2 * i + 1] << 32) for i in range(2 * m_prime))
        meta = node * m_prime
        n_buckets = (meta - 1).bit_length()  # ceil(log2(meta))
        others = []
        for _ in range(m_prime):
            bucket = next(rand) % n_buckets + 1
            hi = min(meta, 1 << bucket)
            lo = max(2, hi >> 1)
            dist = lo + next(rand) % (hi - lo + 1)
            parent = (meta - dist) // m_prime
            others.append(node - 1 if parent == node else parent)
        if self.legacy_predecessor:
            return (*others, node - 1)
        return (node - 1, *others)

    def exp_parents(self, node: int) -> tuple[int, ...]:
        """The 8 expander parents of ``node`` in the previous layer."""
        n = self.nodes * EXP_DEGREE
        return tuple(
            feistel_permute(n, node * EXP_DEGREE + i, self.feistel_keys) // EXP_DEGREE for i in range(EXP_DEGREE)
        )

    def parents(self, node: int) -> tuple[int, ...]:
        """DRG then expander parents (14)."""
        return self.drg_parents(node) + self.exp_parents(node)
