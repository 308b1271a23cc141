/* Number-theoretic transforms over Fr, natural order in and out, data in Montgomery form.
 *
 * A transform of size N = 2^log_n is: ntt_bitrev_scale (bit-reversal permutation with an
 * optional pointwise factor fused in, e.g. the coset powers g^i), then ceil(log_n / K)
 * ntt_dit_pass launches that each run K radix-2 decimation-in-time stages in local memory,
 * then an optional pointwise scaling (fr_mul_pointwise / fr_mul_scalar: 1/N, g^-i).
 * Twiddles omega^i, i < N/2, are a precomputed table (fr_powers).
 */

inline uint bit_reverse(uint i, uint log_n) {
    i = ((i >> 1) & 0x55555555U) | ((i & 0x55555555U) << 1);
    i = ((i >> 2) & 0x33333333U) | ((i & 0x33333333U) << 2);
    i = ((i >> 4) & 0x0F0F0F0FU) | ((i & 0x0F0F0F0FU) << 4);
    i = ((i >> 8) & 0x00FF00FFU) | ((i & 0x00FF00FFU) << 8);
    i = (i >> 16) | (i << 16);
    return log_n == 0 ? 0U : i >> (32 - log_n);
}

__kernel void fr_to_mont_array(__global fr_t *data, const uint n) {
    uint i = get_global_id(0);
    if (i < n) data[i] = fr_to_mont(data[i]);
}

__kernel void fr_from_mont_array(__global fr_t *data, const uint n) {
    uint i = get_global_id(0);
    if (i < n) data[i] = fr_from_mont(data[i]);
}

/* out[i] = base^i from base_pow2[b] = base^(2^b): the product over the set bits of i. */
__kernel void fr_powers(__global fr_t *out, __global const fr_t *base_pow2, const uint n) {
    uint i = get_global_id(0);
    if (i >= n) return;
    fr_t acc = fr_one();
    for (uint b = 0; (i >> b) != 0; b++)
        if ((i >> b) & 1U) acc = fr_mul(acc, base_pow2[b]);
    out[i] = acc;
}

/* out[bitrev(i)] = in[i] * (use_factors ? factors[i] : 1). */
__kernel void ntt_bitrev_scale(__global const fr_t *in, __global fr_t *out, const uint log_n,
                               __global const fr_t *factors, const uint use_factors) {
    uint i = get_global_id(0);
    if (i >= (1U << log_n)) return;
    fr_t v = in[i];
    if (use_factors) v = fr_mul(v, factors[i]);
    out[bit_reverse(i, log_n)] = v;
}

/* DIT stages s .. s+k-1 (butterfly half-widths 2^s .. 2^(s+k-1)) on bit-reversed input.
 * Those stages only mix indices that differ in bits s .. s+k-1, so one work-group of 2^(k-1)
 * items gathers the 2^k such elements (index = high * 2^(s+k) + t * 2^s + low) into local
 * memory and runs all k stages there. For the stage of half-width h = 2^(s+q) the element
 * at offset j within its 2h block takes twiddle omega_N^(j N / 2h). */
__kernel void ntt_dit_pass(__global fr_t *data, __global const fr_t *twiddles, const uint log_n,
                           const uint s, const uint k, __local fr_t *block) {
    uint lid = get_local_id(0);
    uint grp = get_group_id(0);
    uint low = grp & ((1U << s) - 1U);
    uint high = grp >> s;
    uint base = (high << (s + k)) + low;
    uint half_items = 1U << (k - 1);
    block[lid] = data[base + (lid << s)];
    block[lid + half_items] = data[base + ((lid + half_items) << s)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint q = 0; q < k; q++) {
        uint jj = lid & ((1U << q) - 1U);
        uint i0 = ((lid >> q) << (q + 1)) + jj;
        uint i1 = i0 + (1U << q);
        uint j = (jj << s) + low;
        fr_t w = twiddles[j << (log_n - 1 - s - q)];
        fr_t u = block[i0];
        fr_t v = fr_mul(block[i1], w);
        block[i0] = fr_add(u, v);
        block[i1] = fr_sub(u, v);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    data[base + (lid << s)] = block[lid];
    data[base + ((lid + half_items) << s)] = block[lid + half_items];
}

__kernel void fr_mul_pointwise(__global fr_t *data, __global const fr_t *factors, const uint n) {
    uint i = get_global_id(0);
    if (i < n) data[i] = fr_mul(data[i], factors[i]);
}

__kernel void fr_mul_scalar(__global fr_t *data, __global const fr_t *factor, const uint n) {
    uint i = get_global_id(0);
    if (i < n) data[i] = fr_mul(data[i], factor[0]);
}

/* The quotient's pointwise step on the coset: a <- a b / Z, Z = g^N - 1 constant there. */
__kernel void coset_product(__global fr_t *a, __global const fr_t *b, __global const fr_t *z_inv, const uint n) {
    uint i = get_global_id(0);
    if (i < n) a[i] = fr_mul(fr_mul(a[i], b[i]), z_inv[0]);
}

/* h <- h - c k: H = coset_interp(A B / Z) - C / Z (ntt.py, quotient_h). */
__kernel void fr_sub_scaled(__global fr_t *h, __global const fr_t *c, __global const fr_t *k, const uint n) {
    uint i = get_global_id(0);
    if (i < n) h[i] = fr_sub(h[i], fr_mul(c[i], k[0]));
}
