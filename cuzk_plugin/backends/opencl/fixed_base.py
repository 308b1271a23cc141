"""Fixed-base multiples k * G of the G1 or G2 generator for millions of k on the device (test
keys), driving ``fixed_base.cl``: the points a key needs, at native speed where the host's
arkworks path (backends/cpu/multiples.py) makes one Python call a point.

The table T[w][d] = d * 2^(c w) * G is itself a set of fixed-base multiples: a 4-bit table
(1 KiB-sized, made on the host with arkworks) makes the c-bit one on the device, which then
makes the key's points. Scalars go through in chunks, so device memory holds the table, one
chunk's sums and its affine points.
"""

from __future__ import annotations

import logging
import time
from functools import cache
from typing import Any

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from cuzk_plugin.backends.opencl.device import import_pyopencl
from cuzk_plugin.backends.opencl.launch import download, empty, launch, u32, upload
from cuzk_plugin.bls12_381.fields import FQ_LIMBS, FR_LIMBS
from cuzk_plugin.bls12_381.points import g1_to_limbs, g2_to_limbs

log = logging.getLogger(__name__)

SCALAR_BITS = 256  # the kernel takes any 256-bit scalar (canonical Fr ones are < 2^255)
#: Width of the host-made table that bootstraps the device's.
BOOT_BITS = 4
#: Points a launch (device buffers: ~100 MB of G2 sums at this size).
CHUNK = 1 << 18
#: Points a work item of fixed_base_affine shares one inversion among (~570 multiplications
#: against ~10 a point; bench/opencl/README.md has the measured slices).
AFFINE_SLICE = 128
XYZZ_COORDS = 4


def windows(c: int) -> int:
    return -(-SCALAR_BITS // c)


def table_bits(count: int) -> int:
    """The window c for ``count`` multiples: table entries plus additions, (count + 2^c)
    * ceil(256 / c), least; at most 16 (a 2^16 G2 table is 200 MB)."""
    return min(range(BOOT_BITS, 17), key=lambda c: (count + (1 << c)) * windows(c))


def table_scalars(c: int) -> np.ndarray:
    """``(windows(c) * 2^c, 4)`` uint64: the scalar d * 2^(c w) of entry w * 2^c + d."""
    w, d = np.divmod(np.arange(windows(c) << c, dtype=np.uint64), np.uint64(1 << c))
    bit = w * np.uint64(c)
    limb, shift = (bit >> np.uint64(6)).astype(np.int64), bit & np.uint64(63)
    out = np.zeros((d.size, FR_LIMBS), dtype=np.uint64)
    rows = np.arange(d.size)
    out[rows, limb] = d << shift
    # the part of d above the limb's top bit (d < 2^16, so never past the next limb)
    spill = (shift > 0) & (limb + 1 < FR_LIMBS)
    out[rows[spill], limb[spill] + 1] = d[spill] >> (np.uint64(64) - shift[spill])
    return out


@cache
def boot_table(group: int) -> np.ndarray:
    """The BOOT_BITS table of the generator as canonical affine limbs (identity = zeros)."""
    point: Any = G1Point if group == 1 else G2Point
    rows: list[Any] = []
    base = point()
    for _ in range(windows(BOOT_BITS)):
        row = [point.identity(), base]
        for _ in range((1 << BOOT_BITS) - 2):
            row.append(row[-1] + base)
        rows += row
        base = row[-1] + base  # 2^BOOT_BITS * base
    return g1_to_limbs(rows) if group == 1 else g2_to_limbs(rows)


class FixedBaseDriver:
    """k * G for the generator G of one group on one OpenCL queue (the caller serialises use).
    ``kernels``: the group's program's kernels (fixed_base.cl and curve_xyzz.cl in it)."""

    def __init__(self, context, queue, kernels: dict, group: int):
        self.context, self.queue, self.k, self.group = context, queue, kernels, group
        self.affine_limbs = 2 * group * FQ_LIMBS
        self._tables: dict[int, object] = {}

    def _table(self, c: int):
        """The c-bit table on the device, Montgomery affine (made once per width)."""
        if c not in self._tables:
            boot = upload(self.context, self.queue, boot_table(self.group))
            launch(self.queue, self.k["points_to_mont"], windows(BOOT_BITS) << BOOT_BITS, boot,
                   u32(windows(BOOT_BITS) << BOOT_BITS))
            self._tables[c] = boot if c == BOOT_BITS else self._run(boot, BOOT_BITS, table_scalars(c), canonical=False)
        return self._tables[c]

    def _run(self, table, c: int, scalars: np.ndarray, *, canonical: bool):
        """Device buffer of the affine k * G for every row of ``scalars`` (one launch pair a
        chunk; the previous chunk's buffers are freed as the next is made)."""
        n = scalars.shape[0]
        point_bytes = 8 * self.affine_limbs
        out = empty(self.context, n * point_bytes)
        for start in range(0, n, CHUNK):
            m = min(CHUNK, n - start)
            d_scalars = upload(self.context, self.queue, np.ascontiguousarray(scalars[start:start + m]))
            sums = empty(self.context, m * XYZZ_COORDS * self.group * FQ_LIMBS * 8)
            prefix = empty(self.context, m * self.group * FQ_LIMBS * 8)
            part = empty(self.context, m * point_bytes)
            launch(self.queue, self.k["fixed_base_mul"], m, table, u32(c), u32(windows(c)), d_scalars, u32(m), sums)
            launch(self.queue, self.k["fixed_base_affine"], -(-m // AFFINE_SLICE), sums, u32(m), u32(AFFINE_SLICE),
                   u32(int(canonical)), prefix, part)
            import_pyopencl().enqueue_copy(self.queue, out, part, byte_count=m * point_bytes,
                                           dst_offset=start * point_bytes)
            self.queue.finish()
            for buf in (d_scalars, sums, prefix, part):
                buf.release()
        return out

    def release(self) -> None:
        """Free the tables (a 16-bit one is 100-200 MB of device memory)."""
        for buf in self._tables.values():
            buf.release()  # type: ignore[attr-defined]
        self._tables.clear()

    def multiples(self, scalars: np.ndarray, c: int | None = None) -> np.ndarray:
        """k * G for ``(n, 4)`` uint64 scalars (< 2^256): canonical affine limbs, G1
        ``(n, 2, 6)``, G2 ``(n, 2, 2, 6)``, the identity as zeros. ``c``: the table's window
        (default :func:`table_bits` of n; a caller with several vectors passes one for all)."""
        scalars = np.ascontiguousarray(scalars, dtype=np.uint64)
        if scalars.ndim != 2 or scalars.shape[1] != FR_LIMBS:
            raise ValueError(f"scalars: expected (n, {FR_LIMBS}) uint64 limbs, got {scalars.shape}")
        n = scalars.shape[0]
        shape = (n, 2, FQ_LIMBS) if self.group == 1 else (n, 2, 2, FQ_LIMBS)
        if n == 0:
            return np.zeros(shape, dtype=np.uint64)
        t0 = time.perf_counter()
        c = table_bits(n) if c is None else c
        buf = self._run(self._table(c), c, scalars, canonical=True)
        out = download(self.queue, buf, shape)
        buf.release()
        log.info("setup: %d G%d multiples on the device (window %d), %.2fs", n, self.group, c, time.perf_counter() - t0)
        return out
