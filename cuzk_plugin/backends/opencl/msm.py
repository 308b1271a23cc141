"""Device Pippenger MSM for G1 and G2, driving the kernels of ``msm.cl`` (see its header for
the algorithm). The host only turns the bucket-size histogram into offsets and segments:
a few numpy operations over nw * 2^(c-1) counters, never over the points."""

from __future__ import annotations

import numpy as np

from cuzk_plugin.backends.opencl.launch import download, empty, launch, u32, upload
from cuzk_plugin.bls12_381.fields import FQ_LIMBS

XYZZ_COORDS = 4


def window_bits(n: int) -> int:
    """Window width c for n points: about log2(n) - 4, which balances the n * 255/c bucket
    additions against the 2 * 2^(c-1) * 255/c reduction additions (measured on PoCL: c = 12
    is the optimum at n = 2^16, within 5% of c = 11 and 13)."""
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

    def points_off_curve(self, buf, n: int) -> np.ndarray:
        """Indices of the device points that are neither the identity nor on the curve."""
        bad = empty(self.context, 4 * n)
        launch(self.queue, self.k["points_check_on_curve"], n, buf, u32(n), bad)
        return np.flatnonzero(download(self.queue, bad, (n,), np.uint32))

    def identity(self) -> np.ndarray:
        shape = (2, FQ_LIMBS) if self.group == 1 else (2, 2, FQ_LIMBS)
        return np.zeros(shape, dtype=np.uint64)

    def msm(self, bases, scalars, n: int) -> np.ndarray:
        """sum_i scalars[i] * bases[i] over device buffers (Montgomery affine bases, canonical
        Fr scalars); returns the affine result as canonical limbs (zeros = identity)."""
        if n == 0:
            return self.identity()
        c = window_bits(n)
        nw = 255 // c + 1
        nbuckets = 1 << (c - 1)
        digits = empty(self.context, 4 * nw * n)
        counts = upload(self.context, self.queue, np.zeros(nw * nbuckets, dtype=np.uint32))
        launch(self.queue, self.k["msm_digits"], n, scalars, u32(n), u32(c), u32(nw), digits, counts)
        sizes = download(self.queue, counts, (nw * nbuckets,), np.uint32).astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        total = int(offsets[-1])
        if total == 0:
            return self.identity()
        cursors = upload(self.context, self.queue, offsets[:-1].astype(np.uint32))
        sorted_entries = empty(self.context, 4 * total)
        launch(self.queue, self.k["msm_scatter"], nw * n, digits, u32(n), u32(nw), u32(nbuckets), cursors,
               sorted_entries)

        seg = segment_size(n, nbuckets)
        segs_per_bucket = -(-sizes // seg)
        bucket_segs = np.concatenate([[0], np.cumsum(segs_per_bucket)])
        nseg = int(bucket_segs[-1])
        seg_bucket = np.repeat(np.arange(sizes.size), segs_per_bucket)
        seg_start = offsets[seg_bucket] + seg * (np.arange(nseg) - bucket_segs[seg_bucket])
        seg_bounds = np.concatenate([seg_start, [total]]).astype(np.uint32)
        d_bounds = upload(self.context, self.queue, seg_bounds)
        d_bucket_segs = upload(self.context, self.queue, bucket_segs.astype(np.uint32))
        partials = empty(self.context, self.xyzz_bytes * nseg)
        launch(self.queue, self.k["msm_accumulate"], nseg, bases, sorted_entries, d_bounds, u32(nseg), partials)

        group_size = 1 << ((c - 1) // 2)
        ngroups = nbuckets // group_size
        group_sums = empty(self.context, self.xyzz_bytes * nw * ngroups)
        launch(self.queue, self.k["msm_reduce"], nw * ngroups, partials, d_bucket_segs, u32(nbuckets),
               u32(group_size), u32(ngroups), u32(nw), group_sums)
        window_sums = empty(self.context, self.xyzz_bytes * nw)
        launch(self.queue, self.k["msm_windows"], nw, group_sums, u32(ngroups), u32(nw), window_sums)
        out = empty(self.context, 8 * self.affine_limbs)
        launch(self.queue, self.k["msm_combine"], 1, window_sums, u32(nw), u32(c), out, local=1)
        return download(self.queue, out, self.identity().shape)
