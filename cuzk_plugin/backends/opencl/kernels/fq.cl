/* Fq, the BLS12-381 base field: 384 bits in FQ_NLIMBS limbs, Montgomery form with R = 2^384.
 * Constants (FQ_MODULUS, FQ_MINV, FQ_R2, FQ_ONE, FQ_MODULUS_MINUS_2) come from the
 * generated header. */

#if NLIMBS != FQ_NLIMBS
#error "fq.cl needs a program built for its field (NLIMBS = FQ_NLIMBS)"
#endif

typedef struct { limb_t l[FQ_NLIMBS]; } fq_t;

inline fq_t fq_from_constant(__constant const limb_t *c) {
    fq_t r;
    #pragma unroll
    for (int i = 0; i < FQ_NLIMBS; i++) r.l[i] = c[i];
    return r;
}

inline fq_t fq_zero(void) {
    fq_t r;
    #pragma unroll
    for (int i = 0; i < FQ_NLIMBS; i++) r.l[i] = 0;
    return r;
}

inline fq_t fq_one(void) { return fq_from_constant(FQ_ONE); }
inline int fq_is_zero(fq_t a) { return limbs_is_zero(a.l); }
inline int fq_eq(fq_t a, fq_t b) { return limbs_eq(a.l, b.l); }

inline fq_t fq_add(fq_t a, fq_t b) { fq_t r; limbs_add_mod(r.l, a.l, b.l, FQ_MODULUS); return r; }
inline fq_t fq_sub(fq_t a, fq_t b) { fq_t r; limbs_sub_mod(r.l, a.l, b.l, FQ_MODULUS); return r; }
inline fq_t fq_dbl(fq_t a) { return fq_add(a, a); }
inline fq_t fq_neg(fq_t a) { return fq_sub(fq_zero(), a); }
inline fq_t fq_mul(fq_t a, fq_t b) { fq_t r; limbs_mont_mul(r.l, a.l, b.l, FQ_MODULUS, FQ_MINV); return r; }
/* A separate squaring (cross products once, then one reduction) measured slower than the
 * interleaved product on PoCL: the interleaved one serves both. */
inline fq_t fq_sqr(fq_t a) { return fq_mul(a, a); }

/* a b - c d with one reduction: a b + (p^2 - c d) lies in [0, 2 p^2), below p 2^384 (p < 2^381),
 * as the reduction needs. Inputs < p. */
inline fq_t fq_mul_sub(fq_t a, fq_t b, fq_t c, fq_t d) {
    limb_t ab[2 * FQ_NLIMBS], t[2 * FQ_NLIMBS], cd[2 * FQ_NLIMBS];
    limbs_mul_wide(ab, a.l, b.l);
    limbs_mul_wide(cd, c.l, d.l);
    #pragma unroll
    for (int i = 0; i < 2 * FQ_NLIMBS; i++) t[i] = FQ_MODULUS_SQ[i];
    limbs_sub_wide(t, cd);
    limbs_add_wide(t, ab);
    fq_t r;
    limbs_redc(r.l, t, FQ_MODULUS, FQ_MINV);
    return r;
}

inline fq_t fq_to_mont(fq_t a) { return fq_mul(a, fq_from_constant(FQ_R2)); }

inline fq_t fq_from_mont(fq_t a) {
    fq_t one = fq_zero();
    one.l[0] = 1;
    return fq_mul(a, one);
}

/* a^(p-2) = a^(-1) by Fermat's little theorem (0 maps to 0). Left-to-right square and
 * multiply over the exponent's bits: ~380 squarings, used once per MSM result. */
inline fq_t fq_inv(fq_t a) {
    fq_t r = fq_one();
    for (int limb = FQ_NLIMBS - 1; limb >= 0; limb--) {
        limb_t e = FQ_MODULUS_MINUS_2[limb];
        for (int bit = LIMB_BITS - 1; bit >= 0; bit--) {
            r = fq_sqr(r);
            if ((e >> bit) & 1) r = fq_mul(r, a);
        }
    }
    return r;
}
