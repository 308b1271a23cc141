/* Multi-precision arithmetic modulo m on NLIMBS little-endian limbs, written over limb_t
 * (limb32.cl or limb64.cl, chosen per device; the byte layout is the host's little-endian
 * 64-bit limbs either way).
 *
 * Each program computes in one field, and NLIMBS (defined before this file: FR_NLIMBS or
 * FQ_NLIMBS) is a literal, so every loop below unrolls and limbs stay in registers. (With
 * the count as a function argument PoCL left the loops rolled: ~30% slower multiplies.)
 * Both moduli leave spare top bits (r < 2^255, p < 2^381), so one conditional subtraction
 * ends every operation.
 */

inline int limbs_is_zero(const limb_t *a) {
    limb_t acc = 0;
    #pragma unroll
    for (int i = 0; i < NLIMBS; i++) acc |= a[i];
    return acc == 0;
}

inline int limbs_eq(const limb_t *a, const limb_t *b) {
    limb_t acc = 0;
    #pragma unroll
    for (int i = 0; i < NLIMBS; i++) acc |= a[i] ^ b[i];
    return acc == 0;
}

/* out = a + b mod m, inputs < m (< 2^(LIMB_BITS NLIMBS - 1): the sum fits). */
inline void limbs_add_mod(limb_t *out, const limb_t *a, const limb_t *b, __constant const limb_t *m) {
    limb_t s[NLIMBS], d[NLIMBS];
    limb_t carry = 0, borrow = 0;
    #pragma unroll
    for (int i = 0; i < NLIMBS; i++) s[i] = limb_adc(a[i], b[i], &carry);
    #pragma unroll
    for (int i = 0; i < NLIMBS; i++) d[i] = limb_sbb(s[i], m[i], &borrow);
    #pragma unroll
    for (int i = 0; i < NLIMBS; i++) out[i] = borrow ? s[i] : d[i];
}

/* out = a - b mod m, inputs < m. */
inline void limbs_sub_mod(limb_t *out, const limb_t *a, const limb_t *b, __constant const limb_t *m) {
    limb_t d[NLIMBS];
    limb_t borrow = 0, carry = 0;
    #pragma unroll
    for (int i = 0; i < NLIMBS; i++) d[i] = limb_sbb(a[i], b[i], &borrow);
    limb_t mask = (limb_t)0 - borrow; /* add m back only when a < b */
    #pragma unroll
    for (int i = 0; i < NLIMBS; i++) out[i] = limb_adc(d[i], m[i] & mask, &carry);
}

/* Montgomery product out = a * b * 2^(-LIMB_BITS NLIMBS) mod m, CIOS (Koc, Acar, Kaliski 1996)
 * in the "no-carry" form: when the modulus's top limb is below 2^(LIMB_BITS-1) - 1 (p and r
 * both are, for 32- and 64-bit limbs) the running value fits NLIMBS limbs with no extra carry
 * word, so each round folds the multiply-accumulate and the reduction into one pass.
 * minv = -m^(-1) mod 2^LIMB_BITS. Inputs < m; before the final conditional subtraction
 * the result is < 2m. out may alias a or b. */
inline void limbs_mont_mul(limb_t *out, const limb_t *a, const limb_t *b, __constant const limb_t *m,
                           const limb_t minv) {
    limb_t t[NLIMBS];
    #pragma unroll
    for (int j = 0; j < NLIMBS; j++) t[j] = 0;
    #pragma unroll
    for (int i = 0; i < NLIMBS; i++) {
        limb_t carry_ab = 0, carry_qm = 0;
        t[0] = limb_mac(t[0], a[0], b[i], &carry_ab);
        limb_t q = t[0] * minv; /* makes t + q m divisible by 2^LIMB_BITS */
        (void)limb_mac(t[0], q, m[0], &carry_qm);
        #pragma unroll
        for (int j = 1; j < NLIMBS; j++) {
            t[j] = limb_mac(t[j], a[j], b[i], &carry_ab);
            t[j - 1] = limb_mac(t[j], q, m[j], &carry_qm);
        }
        t[NLIMBS - 1] = carry_qm + carry_ab;
    }
    limb_t d[NLIMBS];
    limb_t borrow = 0;
    #pragma unroll
    for (int i = 0; i < NLIMBS; i++) d[i] = limb_sbb(t[i], m[i], &borrow);
    #pragma unroll
    for (int i = 0; i < NLIMBS; i++) out[i] = borrow ? t[i] : d[i];
}

/* ---- products in two steps: the 2 NLIMBS-limb product, then one Montgomery reduction ----
 * (lazy reduction: a field op that combines products, such as a b - c d or an Fq2 product,
 * adds and subtracts the wide products and reduces once, instead of once a product). */

/* t = a * b (2 NLIMBS limbs), schoolbook. */
inline void limbs_mul_wide(limb_t *t, const limb_t *a, const limb_t *b) {
    #pragma unroll
    for (int i = 0; i < 2 * NLIMBS; i++) t[i] = 0;
    #pragma unroll
    for (int i = 0; i < NLIMBS; i++) {
        limb_t carry = 0;
        #pragma unroll
        for (int j = 0; j < NLIMBS; j++) t[i + j] = limb_mac(t[i + j], a[j], b[i], &carry);
        t[i + NLIMBS] = carry;
    }
}

/* out = t 2^(-LIMB_BITS NLIMBS) mod m for a 2 NLIMBS-limb t < m 2^(LIMB_BITS NLIMBS), then
 * one conditional subtraction (before it the value is < 2m, so it fits NLIMBS limbs: both
 * moduli leave spare top bits). t is overwritten. Each round adds q m 2^(LIMB_BITS i), which
 * zeroes limb i; the carry out of limb i + NLIMBS waits one round in `pending` and enters the
 * next round's limb i + NLIMBS + 1 with that round's carry. */
inline void limbs_redc(limb_t *out, limb_t *t, __constant const limb_t *m, const limb_t minv) {
    limb_t pending = 0;
    #pragma unroll
    for (int i = 0; i < NLIMBS; i++) {
        limb_t q = t[i] * minv;
        limb_t carry = 0;
        #pragma unroll
        for (int j = 0; j < NLIMBS; j++) t[i + j] = limb_mac(t[i + j], q, m[j], &carry);
        limb_t c = pending;
        t[i + NLIMBS] = limb_adc(t[i + NLIMBS], carry, &c);
        pending = c;
    }
    limb_t d[NLIMBS];
    limb_t borrow = 0;
    #pragma unroll
    for (int i = 0; i < NLIMBS; i++) d[i] = limb_sbb(t[NLIMBS + i], m[i], &borrow);
    #pragma unroll
    for (int i = 0; i < NLIMBS; i++) out[i] = borrow ? t[NLIMBS + i] : d[i];
}

/* t += u over 2 NLIMBS limbs (callers keep the sum below 2^(2 LIMB_BITS NLIMBS)). */
inline void limbs_add_wide(limb_t *t, const limb_t *u) {
    limb_t carry = 0;
    #pragma unroll
    for (int i = 0; i < 2 * NLIMBS; i++) t[i] = limb_adc(t[i], u[i], &carry);
}

/* t -= u over 2 NLIMBS limbs (callers keep t >= u). */
inline void limbs_sub_wide(limb_t *t, const limb_t *u) {
    limb_t borrow = 0;
    #pragma unroll
    for (int i = 0; i < 2 * NLIMBS; i++) t[i] = limb_sbb(t[i], u[i], &borrow);
}

/* out = a + b without reduction (callers keep a + b below 2^(LIMB_BITS NLIMBS)). */
inline void limbs_add_raw(limb_t *out, const limb_t *a, const limb_t *b) {
    limb_t carry = 0;
    #pragma unroll
    for (int i = 0; i < NLIMBS; i++) out[i] = limb_adc(a[i], b[i], &carry);
}
