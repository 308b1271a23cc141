"""Device Pippenger MSM for G1 and G2, driving the kernels of ``msm.cl`` (see its header for
the algorithm) and ``scan.cl``. The host only chooses sizes and enqueues; nothing is read
back before the result, so the device never waits for the host mid-MSM."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cuzk_plugin.backends.opencl.device import import_pyopencl
from cuzk_plugin.backends.opencl.launch import WORK_GROUP, download, empty, launch, u32, upload
from cuzk_plugin.bls12_381.fields import FQ_LIMBS

XYZZ_COORDS = 4
#: Work-group size and elements per item of the scan kernels (a block is 4096 elements).
SCAN_GROUP = 256
SCAN_ITEMS = 16
#: Launches the bucket accumulation is cut into when the MSM is cancellable.
ACCUMULATE_SLICES = 8


def window_bits(n: int) -> int:
    """Window width c for n points: about log2(n) - 4, which balances the n * 255/c bucket
    additions against the 2 * 2^(c-1) * 255/c reduction additions. Measured on PoCL (loaded
    2-core VM): at 2^16, c = 11 and 12 are within noise of each other and c = 13, 14 are
    ~35% slower; at 2^12, c = 8..10 within noise. Not yet tuned on a GPU."""
    return int(min(20, max(2, round(np.log2(max(n, 1))) - 4)))


def segment_size(n: int, nbuckets: int) -> int:
    """Most entries one work-item accumulates: 4x a bucket's expected size, so random
    scalars give one segment a bucket while a crowded bucket (repeated scalars) is split."""
    return max(32, 4 * (-(-n // nbuckets)))


class MsmDriver:
    """MSMs in one group (G1 or G2) on one OpenCL queue (the caller serialises use)."""

    def __init__(self, context, queue, program, group: int):
        self.context, self.queue = context, queue
        self.group = group
        self.k = {k.function_name: k for k in program.all_kernels()}
        #: uint64 limbs per affine point: 2 coordinates of 1 (G1) or 2 (G2) Fq elements.
        self.affine_limbs = 2 * group * FQ_LIMBS
        self.xyzz_bytes = XYZZ_COORDS * group * FQ_LIMBS * 8

    def points_to_device(self, points: np.ndarray):
        """Canonical affine limbs ``(n, 2, 6)`` / ``(n, 2, 2, 6)`` -> Montgomery device buffer."""
        n = points.shape[0]
        buf = upload(self.context, self.queue, np.ascontiguousarray(points, dtype=np.uint64))
        launch(self.queue, self.k["points_to_mont"], n, buf, u32(n))
        return buf

    def points_to_device_chunked(self, n: int, chunk_of, chunk: int = 1 << 20):
        """Like points_to_device for n points produced ``chunk`` at a time by
        ``chunk_of(start, stop)``, so a large SRS vector never exists twice in host memory."""
        cl = import_pyopencl()
        point_bytes = 8 * self.affine_limbs
        buf = empty(self.context, n * point_bytes)
        for start in range(0, n, chunk):
            part = np.ascontiguousarray(chunk_of(start, min(n, start + chunk)), dtype=np.uint64)
            cl.enqueue_copy(self.queue, buf, part, dst_offset=start * point_bytes)  # blocking: part may go
        if n:
            launch(self.queue, self.k["points_to_mont"], n, buf, u32(n))
        return buf

    def points_off_curve(self, buf, n: int) -> np.ndarray:
        """Indices of the device points that are neither the identity nor on the curve."""
        bad = empty(self.context, 4 * n)
        launch(self.queue, self.k["points_check_on_curve"], n, buf, u32(n), bad)
        return np.flatnonzero(download(self.queue, bad, (n,), np.uint32))

    def identity(self) -> np.ndarray:
        shape = (2, FQ_LIMBS) if self.group == 1 else (2, 2, FQ_LIMBS)
        return np.zeros(shape, dtype=np.uint64)

    def exclusive_scan(self, d_in, d_out, n: int) -> None:
        """d_out[i] = sum of d_in[:i] for i < n, on the device (scan.cl), recursively over
        the per-block totals; nothing is read back."""
        per_block = SCAN_GROUP * SCAN_ITEMS
        blocks = -(-n // per_block)
        d_sums = empty(self.context, 4 * blocks)
        launch(self.queue, self.k["scan_blocks"], blocks * SCAN_GROUP, d_in, d_out, u32(n), d_sums,
               import_pyopencl().LocalMemory(4 * SCAN_GROUP), local=SCAN_GROUP)
        if blocks > 1:
            d_block_offsets = empty(self.context, 4 * blocks)
            self.exclusive_scan(d_sums, d_block_offsets, blocks)
            launch(self.queue, self.k["scan_add_blocks"], n, d_out, u32(n), u32(per_block), d_block_offsets)

    def msm(self, bases, scalars, n: int, between: Callable[[], None] | None = None) -> np.ndarray:
        """sum_i scalars[i] * bases[i] over device buffers (Montgomery affine bases, canonical
        Fr scalars); returns the affine result as canonical limbs (zeros = identity).
        Every stage runs on the device; only the result comes back. ``between`` runs after the
        sort and after the accumulation are enqueued (a cancellation check that waits for the
        queue: the host then waits mid-MSM, so the device idles there briefly)."""
        step = between or (lambda: None)
        if n == 0:
            return self.identity()
        c = window_bits(n)
        nw = 255 // c + 1
        nbuckets = 1 << (c - 1)
        nbk = nw * nbuckets
        seg = segment_size(n, nbuckets)
        # Bucket sizes, then offsets (nbk + 1 entries: the last is the entry total).
        digits = empty(self.context, 4 * nw * n)
        counts = upload(self.context, self.queue, np.zeros(nbk + 1, dtype=np.uint32))
        launch(self.queue, self.k["msm_digits"], n, scalars, u32(n), u32(c), u32(nw), digits, counts)
        offsets = empty(self.context, 4 * (nbk + 1))
        self.exclusive_scan(counts, offsets, nbk + 1)
        # Segments: at most `seg` entries each; seg_offsets[nbk] is their number.
        segs = empty(self.context, 4 * (nbk + 1))
        launch(self.queue, self.k["msm_segment_counts"], nbk + 1, counts, u32(nbk), u32(seg), segs)
        seg_offsets = empty(self.context, 4 * (nbk + 1))
        self.exclusive_scan(segs, seg_offsets, nbk + 1)
        max_segs = -(-(n * nw) // seg) + nbk  # sum of ceil(size / seg) <= entries / seg + buckets
        seg_bounds = empty(self.context, 4 * (max_segs + 1))
        launch(self.queue, self.k["msm_segments"], nbk, offsets, seg_offsets, u32(nbk), u32(seg), seg_bounds)
        # Counting sort into bucket order; `cursors` starts as a copy of the offsets.
        cursors = empty(self.context, 4 * (nbk + 1))
        import_pyopencl().enqueue_copy(self.queue, cursors, offsets, byte_count=4 * (nbk + 1))
        sorted_entries = empty(self.context, 4 * n * nw)
        launch(self.queue, self.k["msm_scatter"], nw * n, digits, u32(n), u32(nw), u32(nbuckets), cursors,
               sorted_entries)
        step()
        # Bucket accumulation, reduction, combination.
        partials = empty(self.context, self.xyzz_bytes * max_segs)
        # With a cancellation check, in ACCUMULATE_SLICES launches (the longest kernel: seconds
        # for a G2 MSM on a CPU device); slices are whole work-groups, so none overlaps the next.
        pieces = ACCUMULATE_SLICES if between is not None else 1
        width = -(-max_segs // (pieces * WORK_GROUP)) * WORK_GROUP
        for start in range(0, max_segs, width):
            launch(self.queue, self.k["msm_accumulate"], min(width, max_segs - start), bases, sorted_entries,
                   seg_bounds, seg_offsets, u32(nbk), partials, offset=start)
            step()
        group_size = 1 << ((c - 1) // 2)
        ngroups = nbuckets // group_size
        group_sums = empty(self.context, self.xyzz_bytes * nw * ngroups)
        launch(self.queue, self.k["msm_reduce"], nw * ngroups, partials, seg_offsets, u32(nbuckets),
               u32(group_size), u32(ngroups), u32(nw), group_sums)
        window_sums = empty(self.context, self.xyzz_bytes * nw)
        launch(self.queue, self.k["msm_windows"], nw, group_sums, u32(ngroups), u32(nw), window_sums)
        out = empty(self.context, 8 * self.affine_limbs)
        launch(self.queue, self.k["msm_combine"], 1, window_sums, u32(nw), u32(c), out, local=1)
        return download(self.queue, out, self.identity().shape)

