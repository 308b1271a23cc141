/* a = A z, b = B z, c = C z for a pre-compiled circuit: one work-item per row.
 *
 * Matrices are CSR (row_ptr u64, cols u32, coeff_idx u32 into a coefficient table); z is
 * canonical. A term whose value is 0 adds nothing, a value of 1 adds the coefficient itself
 * (coeffs_plain, canonical), any other value the Montgomery product of the coefficient in
 * Montgomery form (coeffs_mont = c R) with z: c R * z * R^-1 = c z, canonical. Filecoin's
 * witnesses are mostly bits, so most terms are one modular addition. Sums are modular additions
 * of canonical values; the row is written canonical or, with to_mont, in Montgomery form (what
 * the NTT kernels take), into out[row0 + row].
 *
 * A launch covers rows row0 .. row0 + rows of the circuit: resident, row0 = 0 and base = 0
 * over the whole matrix; streamed, one chunk of rows whose row pointers (rows + 1 of them) and
 * terms were copied to the start of their buffers, so base (the chunk's first term) is
 * subtracted from each row pointer.
 */

inline int fr_is_zero(const fr_t v) {
    limb_t x = 0;
    #pragma unroll
    for (int i = 0; i < FR_NLIMBS; i++) x |= v.l[i];
    return x == 0;
}

inline int fr_is_one(const fr_t v) {
    limb_t x = v.l[0] ^ 1;
    #pragma unroll
    for (int i = 1; i < FR_NLIMBS; i++) x |= v.l[i];
    return x == 0;
}

__kernel void r1cs_spmv(__global const ulong *row_ptr, __global const uint *cols, __global const uint *coeff_idx,
                        __global const fr_t *coeffs_plain, __global const fr_t *coeffs_mont,
                        __global const fr_t *z, __global fr_t *out, const uint rows, const uint to_mont,
                        const uint row0, const ulong base) {
    uint row = get_global_id(0);
    if (row >= rows) return;
    ulong lo = row_ptr[row] - base, hi = row_ptr[row + 1] - base;
    fr_t acc = fr_zero();
    for (ulong t = lo; t < hi; t++) {
        fr_t v = z[cols[t]];
        if (fr_is_zero(v)) continue;
        uint k = coeff_idx[t];
        acc = fr_add(acc, fr_is_one(v) ? coeffs_plain[k] : fr_mul(coeffs_mont[k], v));
    }
    out[row0 + row] = to_mont ? fr_to_mont(acc) : acc;
}
