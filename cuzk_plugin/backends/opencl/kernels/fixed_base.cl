/* Fixed-base multiples k * G of one point G for many 256-bit k (test-key generation).
 *
 * With a table T[w 2^c + d] = d 2^(c w) G (affine, Montgomery; d = 0 is the identity) for the
 * ceil(256 / c) windows w, k G = sum_w T[w, digit_w(k)]: one mixed addition a non-zero digit
 * instead of a scalar multiplication. The sums stay in xyzz form; fixed_base_affine then turns
 * a slice of them into affine coordinates with one inversion for the slice (Montgomery's
 * batch inversion), because an inversion costs ~570 multiplications and an addition ~10. */

/* Bits [c w, c w + c) of the 256-bit scalar k (little-endian 64-bit limbs), c <= 32. */
inline uint fixed_base_digit(__global const ulong *k, uint c, uint w) {
    uint bit = c * w, limb = bit >> 6, shift = bit & 63;
    ulong d = k[limb] >> shift;
    if (shift + c > 64 && limb < 3) d |= k[limb + 1] << (64 - shift);
    return (uint)(d & ((1UL << c) - 1));
}

/* out[i] = k_i G (xyzz) for the n scalars (n, 4) uint64 of this launch. */
__kernel void fixed_base_mul(__global const affine_t *table, const uint c, const uint windows,
                             __global const ulong *scalars, const uint n, __global xyzz_t *out) {
    uint i = get_global_id(0);
    if (i >= n) return;
    __global const ulong *k = scalars + 4 * (ulong)i;
    xyzz_t acc = xyzz_identity();
    for (uint w = 0; w < windows; w++) {
        uint d = fixed_base_digit(k, c, w);
        if (d) acc = xyzz_add_affine(acc, table[((ulong)w << c) + d]);
    }
    out[i] = acc;
}

/* The n points of `in` as affine coordinates (Montgomery form, or canonical when
 * `canonical`; the identity as zeros), each work item taking `per` consecutive points.
 * For P = (X, Y, ZZ, ZZZ): with t = 1 / (ZZ ZZZ), 1/ZZ = t ZZZ and 1/ZZZ = t ZZ. The products
 * d_j = ZZ_j ZZZ_j of the slice are inverted together: with prefix products q_j = d_0..d_{j-1}
 * (kept in `prefix`) and s = 1 / q_per, walking back 1/d_j = s q_j, then s <- s d_j. */
__kernel void fixed_base_affine(__global const xyzz_t *in, const uint n, const uint per,
                                const uint canonical, __global field_t *prefix,
                                __global affine_t *out) {
    ulong start = (ulong)get_global_id(0) * per;
    if (start >= n) return;
    ulong end = min(start + per, (ulong)n);
    field_t q = field_one();
    for (ulong j = start; j < end; j++) {
        xyzz_t p = in[j];
        prefix[j] = q;
        if (!xyzz_is_identity(p)) q = field_mul(q, field_mul(p.zz, p.zzz));
    }
    field_t s = field_inv(q);
    for (ulong j = end; j-- > start;) {
        xyzz_t p = in[j];
        affine_t r;
        if (xyzz_is_identity(p)) {
            r.x = field_zero(); r.y = field_zero();
        } else {
            field_t t = field_mul(s, prefix[j]);
            s = field_mul(s, field_mul(p.zz, p.zzz));
            r.x = field_mul(p.x, field_mul(t, p.zzz));
            r.y = field_mul(p.y, field_mul(t, p.zz));
            if (canonical) { r.x = field_from_mont(r.x); r.y = field_from_mont(r.y); }
        }
        out[j] = r;
    }
}
