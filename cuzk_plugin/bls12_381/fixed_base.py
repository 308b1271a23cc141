"""Fixed-base scalar multiplication on the CPU: k * G for many k with one precomputed table
(key generation multiplies the generators by millions of scalars)."""

from __future__ import annotations

import logging
import time

import numpy as np

from cuzk_plugin.bls12_381.points import FLAG_INFINITY

log = logging.getLogger(__name__)

__all__ = ["FixedBaseTable"]


class FixedBaseTable:
    """k * G for many k with one precomputed table: T[w][d] = d * 2^(c w) * G, then
    k * G = sum_w T[w][digit_w(k)] (about 255/c additions instead of a scalar multiplication)."""

    def __init__(self, base, count: int):
        # Choose c minimising count * windows + windows * 2^c additions.
        self.c = min(range(2, 17), key=lambda c: (count + (1 << c)) * -(-255 // c))
        self.windows = -(-255 // self.c)
        self.identity = type(base).identity()
        self.table = []
        start = base
        for _ in range(self.windows):
            row = [self.identity, start]
            for _ in range((1 << self.c) - 2):
                row.append(row[-1] + start)
            self.table.append(row)
            start = row[-1] + start  # 2^c * start
        self.mask = (1 << self.c) - 1

    def mul(self, k: int):
        acc = self.identity
        w = 0
        while k:
            d = k & self.mask
            if d:
                acc = acc + self.table[w][d]
            k >>= self.c
            w += 1
        return acc

    def raw_vector(self, scalars, width: int, reorder_g2: bool = False, what: str = "") -> np.ndarray:
        """Uncompressed Filecoin bytes ``(n, width)`` of k_i * G for each scalar."""
        t0 = time.perf_counter()
        raw = b"".join(self.mul(int(k)).to_xy_bytes_be() for k in scalars)
        if what:
            log.info("setup: %s, %d points, %.2fs", what, len(scalars), time.perf_counter() - t0)
        arr = np.frombuffer(raw, dtype=np.uint8).reshape(-1, width).copy()
        arr[~arr.any(axis=1), 0] = FLAG_INFINITY  # arkworks writes the identity as zeros
        if reorder_g2:  # arkworks c0-first -> Filecoin c1-first
            arr = arr.reshape(-1, 4, 48)[:, [1, 0, 3, 2]].reshape(-1, width)
        return np.ascontiguousarray(arr)
