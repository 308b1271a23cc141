/* Pippenger multi-scalar multiplication, sum_i k_i P_i, with signed c-bit windows.
 *
 * Scalars (canonical Fr, < 2^255) are cut into nw = floor(255 / c) + 1 windows; each window
 * value plus the carry from below becomes a digit d in [-(2^(c-1) - 1), 2^(c-1)] (a digit
 * above 2^(c-1) is replaced by d - 2^c and carries 1), so a window needs only B = 2^(c-1)
 * buckets, bucket j holding the points whose digit is +-(j + 1). Since c * nw >= 256 > 255,
 * the top window never carries out.
 *
 * Stages (one kernel each; the host chains them):
 *   msm_digits      scalar -> nw digits, and a histogram of bucket sizes (atomics);
 *   (scan.cl)       exclusive prefix sum of the histogram -> bucket offsets;
 *   msm_segment_counts, (scan.cl), msm_segments
 *                   every bucket split into segments of at most S entries (bounds a
 *                   work-item's work when scalars repeat, e.g. all-equal or Filecoin's 0/1
 *                   witnesses) and the segments' start offsets;
 *   msm_scatter     counting sort: (point index, sign) into its bucket's slice;
 *   msm_accumulate  one work-item per segment: mixed additions into an XYZZ partial sum;
 *   msm_reduce      one work-item per (window, group of m buckets): bucket sums from their
 *                   segments and sum_j (j + 1) B_j over the group by a running sum;
 *   msm_windows     one work-item per window: sum of its groups;
 *   msm_combine     one work-item: Horner over windows, sum_w 2^(c w) W_w, then affine and
 *                   canonical coordinates.
 * Nothing goes back to the host until the result: launch sizes use upper bounds and the
 * kernels read the true counts from device memory.
 */

#define SIGN_BIT 0x80000000U

inline uint scalar_window(__global const ulong *s, uint bit, uint c) {
    uint limb = bit >> 6, sh = bit & 63;
    ulong v = s[limb] >> sh;
    if (sh + c > 64 && limb + 1 < 4) v |= s[limb + 1] << (64 - sh);
    return (uint)(v & ((1UL << c) - 1UL));
}

__kernel void msm_digits(__global const ulong *scalars, const uint n, const uint c, const uint nw,
                         __global int *digits, __global uint *counts) {
    uint i = get_global_id(0);
    if (i >= n) return;
    __global const ulong *s = scalars + 4 * (ulong)i;
    const uint nbuckets = 1U << (c - 1);
    uint carry = 0;
    for (uint w = 0; w < nw; w++) {
        int d = (int)(scalar_window(s, w * c, c) + carry);
        carry = 0;
        if (d > (int)nbuckets) { d -= (int)(1U << c); carry = 1; }
        digits[(ulong)w * n + i] = d;
        if (d != 0) atomic_inc(&counts[w * nbuckets + (uint)abs(d) - 1]);
    }
}

/* cursors start at each bucket's offset in `sorted`; entries are point index | SIGN_BIT. */
__kernel void msm_scatter(__global const int *digits, const uint n, const uint nw, const uint nbuckets,
                          __global uint *cursors, __global uint *sorted) {
    ulong g = get_global_id(0);
    if (g >= (ulong)n * nw) return;
    int d = digits[g];
    if (d == 0) return;
    uint w = (uint)(g / n), i = (uint)(g % n);
    uint pos = atomic_inc(&cursors[w * nbuckets + (uint)abs(d) - 1]);
    sorted[pos] = i | (d < 0 ? SIGN_BIT : 0U);
}

/* segs[b] = ceil(counts[b] / seg_size) for the nbk buckets (segs[nbk] = 0 for the scan). */
__kernel void msm_segment_counts(__global const uint *counts, const uint nbk, const uint seg_size,
                                 __global uint *segs) {
    uint b = get_global_id(0);
    if (b > nbk) return;
    segs[b] = b < nbk ? (counts[b] + seg_size - 1) / seg_size : 0U;
}

/* seg_bounds[seg_offsets[b] + j] = offsets[b] + j * seg_size: segment starts in `sorted`.
 * Buckets are contiguous and in order, so segment k ends where k + 1 starts; the last
 * bucket's item also writes the end of everything, offsets[nbk]. */
__kernel void msm_segments(__global const uint *offsets, __global const uint *seg_offsets,
                           const uint nbk, const uint seg_size, __global uint *seg_bounds) {
    uint b = get_global_id(0);
    if (b >= nbk) return;
    uint first = seg_offsets[b], count = seg_offsets[b + 1] - first;
    for (uint j = 0; j < count; j++) seg_bounds[first + j] = offsets[b] + j * seg_size;
    if (b == nbk - 1) seg_bounds[seg_offsets[nbk]] = offsets[nbk];
}

/* Launched over an upper bound of the segment count; seg_offsets[nbk] is the true one. */
__kernel void msm_accumulate(__global const affine_t *bases, __global const uint *sorted,
                             __global const uint *seg_bounds, __global const uint *seg_offsets,
                             const uint nbk, __global xyzz_t *partials) {
    uint k = get_global_id(0);
    if (k >= seg_offsets[nbk]) return;
    xyzz_t acc = xyzz_identity();
    for (uint e = seg_bounds[k]; e < seg_bounds[k + 1]; e++) {
        uint entry = sorted[e];
        affine_t p = bases[entry & ~SIGN_BIT];
        if (entry & SIGN_BIT) p.y = field_neg(p.y);
        acc = xyzz_add_affine(acc, p);
    }
    partials[k] = acc;
}

/* Group g of window w covers buckets b0 .. b0 + m - 1 (b0 = g m). With the running sum
 * T_j = sum_{i >= j} B_i taken from the top, sum_j (j - b0 + 1) B_j = sum_j T_j; adding
 * b0 * T_b0 gives the group's share of the window sum sum_j (j + 1) B_j.
 * bucket_segs[w * nbuckets + j] .. bucket_segs[w * nbuckets + j + 1] are bucket j's segments. */
__kernel void msm_reduce(__global const xyzz_t *partials, __global const uint *bucket_segs,
                         const uint nbuckets, const uint m, const uint ngroups, const uint nw,
                         __global xyzz_t *group_sums) {
    uint g = get_global_id(0);
    if (g >= ngroups * nw) return;
    uint w = g / ngroups, b0 = (g % ngroups) * m;
    xyzz_t running = xyzz_identity(), acc = xyzz_identity();
    for (int j = (int)(b0 + m) - 1; j >= (int)b0; j--) {
        uint bucket = w * nbuckets + (uint)j;
        for (uint k = bucket_segs[bucket]; k < bucket_segs[bucket + 1]; k++)
            running = xyzz_add(running, partials[k]);
        acc = xyzz_add(acc, running);
    }
    group_sums[g] = xyzz_add(acc, xyzz_mul_small(running, b0));
}

__kernel void msm_windows(__global const xyzz_t *group_sums, const uint ngroups, const uint nw,
                          __global xyzz_t *window_sums) {
    uint w = get_global_id(0);
    if (w >= nw) return;
    xyzz_t acc = xyzz_identity();
    for (uint g = 0; g < ngroups; g++) acc = xyzz_add(acc, group_sums[w * ngroups + g]);
    window_sums[w] = acc;
}

/* out: one canonical affine point (all zero for the identity). */
__kernel void msm_combine(__global const xyzz_t *window_sums, const uint nw, const uint c,
                          __global affine_t *out) {
    if (get_global_id(0) != 0) return;
    xyzz_t acc = window_sums[nw - 1];
    for (int w = (int)nw - 2; w >= 0; w--) {
        for (uint b = 0; b < c; b++) acc = xyzz_dbl(acc);
        acc = xyzz_add(acc, window_sums[w]);
    }
    affine_t r = xyzz_to_affine(acc);
    if (!xyzz_is_identity(acc)) {
        r.x = field_from_mont(r.x);
        r.y = field_from_mont(r.y);
    }
    out[0] = r;
}
