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
 * One form of the matrices, compact and cut into chunks of rows, for both placements: per
 * chunk its rows + 1 row offsets (u32) from the chunk's first term, then per term a column (u32)
 * and a coefficient index, u16 where the coefficient table has at most 2^16 entries
 * (r1cs_spmv_chunk_u16), else u32 (r1cs_spmv_chunk_u32); one body (R1CS_ROWS_KERNEL) stamped
 * for each. A launch evaluates one chunk: its offsets start at row_off[row_base], its terms at
 * term_base, so row `row` of the chunk holds the terms
 * [term_base + row_off[row_base + row], term_base + row_off[row_base + row + 1]).
 *  - resident: every chunk's arrays on the device at once, each matrix's chunks one after
 *    another (chunk i, rows r0 .. r1, at row_base = r0 + i, term_base = its first term); offsets
 *    into the arrays, not sub-buffers, which OpenCL requires aligned.
 *  - streamed: one chunk copied to the start of its buffers; row_base = 0, term_base = 0.
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

/* A row kernel NAME whose coefficient indices are IDX_T. */
#define R1CS_ROWS_KERNEL(NAME, IDX_T)                                                                     \
__kernel void NAME(__global const uint *row_off, __global const uint *cols, __global const IDX_T *coeff_idx, \
                   __global const fr_t *coeffs_plain, __global const fr_t *coeffs_mont,                    \
                   __global const fr_t *z, __global fr_t *out, const uint rows, const uint to_mont,        \
                   const uint row0, const ulong row_base, const ulong term_base) {                         \
    uint row = get_global_id(0);                                                                           \
    if (row >= rows) return;                                                                               \
    __global const uint *off = row_off + row_base + row;                                                   \
    fr_t acc = fr_zero();                                                                                  \
    for (ulong t = term_base + off[0], hi = term_base + off[1]; t < hi; t++) {                             \
        fr_t v = z[cols[t]];                                                                               \
        if (fr_is_zero(v)) continue;                                                                       \
        uint k = coeff_idx[t];                                                                             \
        acc = fr_add(acc, fr_is_one(v) ? coeffs_plain[k] : fr_mul(coeffs_mont[k], v));                     \
    }                                                                                                      \
    out[row0 + row] = to_mont ? fr_to_mont(acc) : acc;                                                     \
}

R1CS_ROWS_KERNEL(r1cs_spmv_chunk_u16, ushort)
R1CS_ROWS_KERNEL(r1cs_spmv_chunk_u32, uint)
