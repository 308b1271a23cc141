/* Fq2 = Fq[u] / (u^2 + 1), the coordinate field of G2. Elements c0 + c1*u, both in
 * Montgomery form. */

typedef struct { fq_t c0, c1; } fq2_t;

inline fq2_t fq2_zero(void) { fq2_t r; r.c0 = fq_zero(); r.c1 = fq_zero(); return r; }
inline fq2_t fq2_one(void) { fq2_t r; r.c0 = fq_one(); r.c1 = fq_zero(); return r; }
inline int fq2_is_zero(fq2_t a) { return fq_is_zero(a.c0) & fq_is_zero(a.c1); }
inline int fq2_eq(fq2_t a, fq2_t b) { return fq_eq(a.c0, b.c0) & fq_eq(a.c1, b.c1); }

inline fq2_t fq2_add(fq2_t a, fq2_t b) { fq2_t r; r.c0 = fq_add(a.c0, b.c0); r.c1 = fq_add(a.c1, b.c1); return r; }
inline fq2_t fq2_sub(fq2_t a, fq2_t b) { fq2_t r; r.c0 = fq_sub(a.c0, b.c0); r.c1 = fq_sub(a.c1, b.c1); return r; }
inline fq2_t fq2_dbl(fq2_t a) { return fq2_add(a, a); }
inline fq2_t fq2_neg(fq2_t a) { fq2_t r; r.c0 = fq_neg(a.c0); r.c1 = fq_neg(a.c1); return r; }

/* The 768-bit products of a b, unreduced (Karatsuba): v0 = a0 b0, v1 = a1 b1, and
 * cross = a0 b1 + a1 b0 = (a0 + a1)(b0 + b1) - v0 - v1 (the sums unreduced, < 2p), each < 2 p^2. */
inline void fq2_products(limb_t *v0, limb_t *v1, limb_t *cross, fq2_t a, fq2_t b) {
    limb_t sa[FQ_NLIMBS], sb[FQ_NLIMBS];
    limbs_mul_wide(v0, a.c0.l, b.c0.l);
    limbs_mul_wide(v1, a.c1.l, b.c1.l);
    limbs_add_raw(sa, a.c0.l, a.c1.l);
    limbs_add_raw(sb, b.c0.l, b.c1.l);
    limbs_mul_wide(cross, sa, sb);
    limbs_sub_wide(cross, v0);
    limbs_sub_wide(cross, v1);
}

/* a b with one reduction a coordinate (two instead of three): c0 = v0 - v1 + p^2 and c1 = cross
 * both lie in [0, 2 p^2), below p 2^384 as the reduction needs. */
inline fq2_t fq2_mul(fq2_t a, fq2_t b) {
    limb_t v0[2 * FQ_NLIMBS], v1[2 * FQ_NLIMBS], cross[2 * FQ_NLIMBS], t[2 * FQ_NLIMBS];
    fq2_products(v0, v1, cross, a, b);
    #pragma unroll
    for (int i = 0; i < 2 * FQ_NLIMBS; i++) t[i] = FQ_MODULUS_SQ[i];
    limbs_sub_wide(t, v1);
    limbs_add_wide(t, v0);
    fq2_t r;
    limbs_redc(r.c0.l, t, FQ_MODULUS, FQ_MINV);
    limbs_redc(r.c1.l, cross, FQ_MODULUS, FQ_MINV);
    return r;
}

/* a b - c d with two reductions (four for two products): with a b's products v0, v1, x and
 * c d's w0, w1, y,   c0 = 2 p^2 - v1 - w0 + v0 + w1,   c1 = 2 p^2 - y + x,
 * each in [0, 4 p^2), below p 2^384 (p < 2^382) as the reduction needs; the subtractions come
 * first from 2 p^2, so no step goes negative. */
inline fq2_t fq2_mul_sub(fq2_t a, fq2_t b, fq2_t c, fq2_t d) {
    limb_t v0[2 * FQ_NLIMBS], v1[2 * FQ_NLIMBS], x[2 * FQ_NLIMBS];
    limb_t w0[2 * FQ_NLIMBS], w1[2 * FQ_NLIMBS], y[2 * FQ_NLIMBS], t[2 * FQ_NLIMBS];
    fq2_products(v0, v1, x, a, b);
    fq2_products(w0, w1, y, c, d);
    #pragma unroll
    for (int i = 0; i < 2 * FQ_NLIMBS; i++) t[i] = FQ_MODULUS_SQ_2[i];
    limbs_sub_wide(t, v1);
    limbs_sub_wide(t, w0);
    limbs_add_wide(t, v0);
    limbs_add_wide(t, w1);
    fq2_t r;
    limbs_redc(r.c0.l, t, FQ_MODULUS, FQ_MINV);
    #pragma unroll
    for (int i = 0; i < 2 * FQ_NLIMBS; i++) t[i] = FQ_MODULUS_SQ_2[i];
    limbs_sub_wide(t, y);
    limbs_add_wide(t, x);
    limbs_redc(r.c1.l, t, FQ_MODULUS, FQ_MINV);
    return r;
}

/* Complex squaring: (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u. */
inline fq2_t fq2_sqr(fq2_t a) {
    fq2_t r;
    r.c0 = fq_mul(fq_add(a.c0, a.c1), fq_sub(a.c0, a.c1));
    r.c1 = fq_dbl(fq_mul(a.c0, a.c1));
    return r;
}

/* 1 / (a0 + a1 u) = (a0 - a1 u) / (a0^2 + a1^2). */
inline fq2_t fq2_inv(fq2_t a) {
    fq_t t = fq_inv(fq_add(fq_sqr(a.c0), fq_sqr(a.c1)));
    fq2_t r;
    r.c0 = fq_mul(a.c0, t);
    r.c1 = fq_neg(fq_mul(a.c1, t));
    return r;
}

inline fq2_t fq2_to_mont(fq2_t a) { fq2_t r; r.c0 = fq_to_mont(a.c0); r.c1 = fq_to_mont(a.c1); return r; }
inline fq2_t fq2_from_mont(fq2_t a) { fq2_t r; r.c0 = fq_from_mont(a.c0); r.c1 = fq_from_mont(a.c1); return r; }
