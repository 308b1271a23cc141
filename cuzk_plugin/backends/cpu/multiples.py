"""Fixed-base multiples k * G of the G1 and G2 generators for millions of k (key generation),
on every core.

A table T[w][d] = d * 2^(c w) * G turns k * G into the sum over the windows w of
T[w][digit_w(k)]: about 255 / c additions instead of a scalar multiplication. The digits are
cut from the scalars' limbs by numpy; the additions and the affine encoding are arkworks calls,
one point at a time (~25 us a G1 point, ~65 us a G2 point on one core), so a key of millions of
points is split into pieces that worker processes compute, each with its own table. The
processes are spawned (the caller may be a threaded server); a daemonic process (which may not
have children), a small key or a one-core machine computes in-process. The bytes are the same
either way: k * G has one encoding.
"""

from __future__ import annotations

import logging
import multiprocessing
import operator
import os
import time
from concurrent.futures import ProcessPoolExecutor
from functools import cache, reduce
from typing import Any

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from cuzk_plugin.bls12_381.fields import FR_LIMBS
from cuzk_plugin.bls12_381.points import FLAG_INFINITY

__all__ = ["PIECE", "POOL_MIN_POINTS", "raw_multiples", "window_bits", "window_digits"]

log = logging.getLogger(__name__)

#: group name -> (arkworks point class, uncompressed Filecoin bytes per point)
GROUPS: dict[str, tuple[Any, int]] = {"g1": (G1Point, 96), "g2": (G2Point, 192)}
#: Points per task handed to a worker (~1 s of G1 work).
PIECE = 1 << 15
#: Below this many points a key is made in-process: spawning workers (~1 s) would cost more.
POOL_MIN_POINTS = 1 << 16
SCALAR_BITS = 255  # every canonical Fr element is below 2^255


def window_bits(count: int) -> int:
    """The window c minimising table size plus additions, (count + 2^c) * ceil(255 / c)."""
    return min(range(2, 19), key=lambda c: (count + (1 << c)) * -(-SCALAR_BITS // c))


def window_digits(scalars: np.ndarray, c: int) -> np.ndarray:
    """``(n, 4)`` uint64 canonical scalars -> ``(n, ceil(255 / c))`` int64 digits, least
    significant window first: digit w is bits [c w, c w + c) of the scalar."""
    limbs = np.ascontiguousarray(scalars, dtype=np.uint64)
    if limbs.ndim != 2 or limbs.shape[1] != FR_LIMBS:
        raise ValueError(f"scalars: expected (n, {FR_LIMBS}) uint64 limbs, got {limbs.shape}")
    windows = -(-SCALAR_BITS // c)
    mask = np.uint64((1 << c) - 1)
    out = np.empty((limbs.shape[0], windows), dtype=np.int64)
    for w in range(windows):
        limb, shift = divmod(c * w, 64)
        digit = limbs[:, limb] >> np.uint64(shift)
        if shift + c > 64 and limb + 1 < FR_LIMBS:  # the window straddles two limbs
            digit |= limbs[:, limb + 1] << np.uint64(64 - shift)
        out[:, w] = (digit & mask).astype(np.int64)
    return out


@cache
def _table(group: str, c: int) -> list[list]:
    """T[w][d] = d * 2^(c w) * G for every window w of a 255-bit scalar (one per process)."""
    point = GROUPS[group][0]
    rows = []
    base = point()
    for _ in range(-(-SCALAR_BITS // c)):
        row = [point.identity(), base]
        for _ in range((1 << c) - 2):
            row.append(row[-1] + base)
        rows.append(row)
        base = row[-1] + base  # 2^c * base
    return rows


def _piece(group: str, c: int, scalars: np.ndarray) -> np.ndarray:
    """Uncompressed Filecoin bytes ``(n, width)`` of k * G for ``(n, 4)`` uint64 scalars."""
    table = _table(group, c)
    pick = list.__getitem__
    raw = b"".join(reduce(operator.add, map(pick, table, row)).to_xy_bytes_be()
                   for row in window_digits(scalars, c).tolist())
    width = GROUPS[group][1]
    arr = np.frombuffer(raw, dtype=np.uint8).reshape(-1, width)
    if group == "g2":  # arkworks c0-first -> Filecoin c1-first
        arr = arr.reshape(-1, 4, 48)[:, [1, 0, 3, 2]].reshape(-1, width)
    arr = np.array(arr)
    arr[~arr.any(axis=1), 0] = FLAG_INFINITY  # arkworks writes the identity as zeros; the flag is byte 0
    return arr


def pool_size(points: int) -> int:
    """Worker processes for ``points`` points: 0 (in-process) for a small key, on one core, or
    in a daemonic process."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if points < POOL_MIN_POINTS or cores < 2 or multiprocessing.current_process().daemon:
        return 0
    return min(cores, -(-points // PIECE))


def raw_multiples(vectors: list[tuple[str, np.ndarray]], workers: int | None = None) -> list[np.ndarray]:
    """Filecoin's uncompressed bytes of k * G for every scalar of each ``(group, scalars)``
    (group ``"g1"`` or ``"g2"``, scalars ``(n, 4)`` uint64 canonical): ``(n, 96)`` or
    ``(n, 192)`` uint8 arrays in order. ``workers``: processes (0: in-process; default:
    :func:`pool_size`)."""
    for group, scalars in vectors:
        if group not in GROUPS:
            raise ValueError(f"group: expected one of {sorted(GROUPS)}, got {group!r}")
        if scalars.ndim != 2 or scalars.shape[1] != FR_LIMBS:
            raise ValueError(f"{group} scalars: expected (n, {FR_LIMBS}) uint64 limbs, got {scalars.shape}")
    t0 = time.perf_counter()
    points = sum(int(s.shape[0]) for _, s in vectors)
    workers = pool_size(points) if workers is None else workers
    per_worker = {g: sum(int(s.shape[0]) for gg, s in vectors if gg == g) // max(workers, 1) for g in GROUPS}
    bits = {g: window_bits(max(n, 1)) for g, n in per_worker.items()}
    tasks = [(i, group, scalars[start:start + PIECE]) for i, (group, scalars) in enumerate(vectors)
             for start in range(0, scalars.shape[0], PIECE)]
    tasks.sort(key=lambda t: t[1] != "g2")  # G2 pieces (the slowest) first: the workers finish together
    if workers == 0:
        done = [_piece(group, bits[group], chunk) for _, group, chunk in tasks]
    else:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(_piece, group, bits[group], chunk) for _, group, chunk in tasks]
            done = [f.result() for f in futures]
    parts: list[list[np.ndarray]] = [[] for _ in vectors]
    for (i, _, _), raw in zip(tasks, done, strict=True):
        parts[i].append(raw)
    out = [np.concatenate(p) if p else np.empty((0, GROUPS[g][1]), dtype=np.uint8)
           for p, (g, _) in zip(parts, vectors, strict=True)]
    log.info("setup: %d points, %d worker processes, %.2fs", points, workers, time.perf_counter() - t0)
    return out
