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

/* Karatsuba with one reduction a coordinate: with the 768-bit products v0 = a0 b0,
 * v1 = a1 b1, s = (a0 + a1)(b0 + b1) (sums unreduced, < 2p),
 *   c0 = v0 - v1 + p^2 in [0, 2 p^2),   c1 = s - v0 - v1 = a0 b1 + a1 b0 in [0, 2 p^2),
 * both below p 2^384 as the reduction needs; two reductions instead of three. */
inline fq2_t fq2_mul(fq2_t a, fq2_t b) {
    limb_t v0[2 * FQ_NLIMBS], v1[2 * FQ_NLIMBS], s[2 * FQ_NLIMBS], t[2 * FQ_NLIMBS];
    limb_t sa[FQ_NLIMBS], sb[FQ_NLIMBS];
    limbs_mul_wide(v0, a.c0.l, b.c0.l);
    limbs_mul_wide(v1, a.c1.l, b.c1.l);
    limbs_add_raw(sa, a.c0.l, a.c1.l);
    limbs_add_raw(sb, b.c0.l, b.c1.l);
    limbs_mul_wide(s, sa, sb);
    limbs_sub_wide(s, v0);
    limbs_sub_wide(s, v1);
    #pragma unroll
    for (int i = 0; i < 2 * FQ_NLIMBS; i++) t[i] = FQ_MODULUS_SQ[i];
    limbs_sub_wide(t, v1);
    limbs_add_wide(t, v0);
    fq2_t r;
    limbs_redc(r.c0.l, t, FQ_MODULUS, FQ_MINV);
    limbs_redc(r.c1.l, s, FQ_MODULUS, FQ_MINV);
    return r;
}

/* a b - c d with two reductions (four for two products): with the Karatsuba products of
 * both (v0, v1, s of a b; w0, w1, u of c d; s' = s - v0 - v1, u' = u - w0 - w1 exact),
 *   c0 = 2 p^2 - v1 - w0 + v0 + w1,   c1 = 2 p^2 - u' + s',
 * each in [0, 4 p^2), below p 2^384 (p < 2^382) as the reduction needs; the subtractions come
 * first from 2 p^2, so no step goes negative. */
inline fq2_t fq2_mul_sub(fq2_t a, fq2_t b, fq2_t c, fq2_t d) {
    limb_t v0[2 * FQ_NLIMBS], v1[2 * FQ_NLIMBS], s[2 * FQ_NLIMBS];
    limb_t w0[2 * FQ_NLIMBS], w1[2 * FQ_NLIMBS], u[2 * FQ_NLIMBS], t[2 * FQ_NLIMBS];
    limb_t x[FQ_NLIMBS], y[FQ_NLIMBS];
    limbs_mul_wide(v0, a.c0.l, b.c0.l);
    limbs_mul_wide(v1, a.c1.l, b.c1.l);
    limbs_add_raw(x, a.c0.l, a.c1.l);
    limbs_add_raw(y, b.c0.l, b.c1.l);
    limbs_mul_wide(s, x, y);
    limbs_mul_wide(w0, c.c0.l, d.c0.l);
    limbs_mul_wide(w1, c.c1.l, d.c1.l);
    limbs_add_raw(x, c.c0.l, c.c1.l);
    limbs_add_raw(y, d.c0.l, d.c1.l);
    limbs_mul_wide(u, x, y);
    #pragma unroll
    for (int i = 0; i < 2 * FQ_NLIMBS; i++) t[i] = FQ_MODULUS_SQ_2[i];
    limbs_sub_wide(t, v1);
    limbs_sub_wide(t, w0);
    limbs_add_wide(t, v0);
    limbs_add_wide(t, w1);
    fq2_t r;
    limbs_redc(r.c0.l, t, FQ_MODULUS, FQ_MINV);
    limbs_sub_wide(s, v0);
    limbs_sub_wide(s, v1);
    limbs_sub_wide(u, w0);
    limbs_sub_wide(u, w1);
    #pragma unroll
    for (int i = 0; i < 2 * FQ_NLIMBS; i++) t[i] = FQ_MODULUS_SQ_2[i];
    limbs_sub_wide(t, u);
    limbs_add_wide(t, s);
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
