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

/* Karatsuba: (a0 + a1 u)(b0 + b1 u) = (a0 b0 - a1 b1) + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) u. */
inline fq2_t fq2_mul(fq2_t a, fq2_t b) {
    fq_t v0 = fq_mul(a.c0, b.c0);
    fq_t v1 = fq_mul(a.c1, b.c1);
    fq_t s = fq_mul(fq_add(a.c0, a.c1), fq_add(b.c0, b.c1));
    fq2_t r;
    r.c0 = fq_sub(v0, v1);
    r.c1 = fq_sub(fq_sub(s, v0), v1);
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
