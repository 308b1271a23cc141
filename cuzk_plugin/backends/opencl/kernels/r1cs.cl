/* a = A z, b = B z, c = C z for a pre-compiled circuit: one work-item per row.
 *
 * Matrices are CSR: per row a pair of row pointers bounding its terms, each term a column
 * (u32) of z and an index into a coefficient table; z is canonical. A term whose value is 0
 * adds nothing, a value of 1 adds the coefficient itself (coeffs_plain, canonical), any other
 * value the Montgomery product of the coefficient in Montgomery form (coeffs_mont = c R) with z:
 * c R * z * R^-1 = c z, canonical. Filecoin's witnesses are mostly bits, so most terms are one
 * modular addition. Sums are modular additions of canonical values; the row is written
 * canonical or, with to_mont, in Montgomery form (what the NTT kernels take), into
 * out[row0 + row]. A launch covers rows row0 .. row0 + rows of the circuit.
 *
 * Two forms of the matrices, one body (R1CS_ROWS_KERNEL) stamped for each:
 *  - resident (r1cs_spmv): the whole matrix on the device, row_ptr u64 absolute (m + 1 of
 *    them), coeff_idx u32; row0 = 0, rows = m.
 *  - streamed, compact (r1cs_spmv_chunk_u16 / r1cs_spmv_chunk_u32): one chunk of rows copied to
 *    the start of its buffers, its rows + 1 row pointers u32 offsets from the chunk's first
 *    term (so they index the chunk's terms directly), coeff_idx u16 where the coefficient table
 *    has at most 2^16 entries, else u32.
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

/* A row kernel NAME whose row pointers are PTR_T and coefficient indices IDX_T. */
#define R1CS_ROWS_KERNEL(NAME, PTR_T, IDX_T)                                                              \
__kernel void NAME(__global const PTR_T *row_ptr, __global const uint *cols, __global const IDX_T *coeff_idx, \
                   __global const fr_t *coeffs_plain, __global const fr_t *coeffs_mont,                    \
                   __global const fr_t *z, __global fr_t *out, const uint rows, const uint to_mont,        \
                   const uint row0) {                                                                      \
    uint row = get_global_id(0);                                                                           \
    if (row >= rows) return;                                                                               \
    fr_t acc = fr_zero();                                                                                  \
    for (PTR_T t = row_ptr[row], hi = row_ptr[row + 1]; t < hi; t++) {                                     \
        fr_t v = z[cols[t]];                                                                               \
        if (fr_is_zero(v)) continue;                                                                       \
        uint k = coeff_idx[t];                                                                             \
        acc = fr_add(acc, fr_is_one(v) ? coeffs_plain[k] : fr_mul(coeffs_mont[k], v));                     \
    }                                                                                                      \
    out[row0 + row] = to_mont ? fr_to_mont(acc) : acc;                                                     \
}

R1CS_ROWS_KERNEL(r1cs_spmv, ulong, uint)
R1CS_ROWS_KERNEL(r1cs_spmv_chunk_u16, uint, ushort)
R1CS_ROWS_KERNEL(r1cs_spmv_chunk_u32, uint, uint)
