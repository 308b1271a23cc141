/* Short Weierstrass points (a = 0) over the bound field_t, in two forms:
 *   affine_t: (x, y); the identity is stored as (0, 0), which is on neither curve.
 *   xyzz_t:   extended Jacobian (X, Y, ZZ, ZZZ) with x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2;
 *             the identity has ZZ = 0.
 * Formulas are the "xyzz" ones of the Explicit-Formulas Database (madd-2008-s,
 * mdbl-2008-s-1, add-2008-s, dbl-2008-s-1; each Y3 = A B - C D with one reduction,
 * field_mul_sub), with the exceptional cases (identity operand, P + P, P + (-P)) handled
 * explicitly so buckets may hold repeated and opposite points. */

typedef struct { field_t x, y; } affine_t;
typedef struct { field_t x, y, zz, zzz; } xyzz_t;

inline xyzz_t xyzz_identity(void) {
    xyzz_t r;
    r.x = field_one(); r.y = field_one(); r.zz = field_zero(); r.zzz = field_zero();
    return r;
}

inline int xyzz_is_identity(xyzz_t p) { return field_is_zero(p.zz); }
inline int affine_is_identity(affine_t p) { return field_is_zero(p.x) & field_is_zero(p.y); }

inline xyzz_t xyzz_from_affine(affine_t p) {
    if (affine_is_identity(p)) return xyzz_identity();
    xyzz_t r;
    r.x = p.x; r.y = p.y; r.zz = field_one(); r.zzz = field_one();
    return r;
}

/* dbl-2008-s-1: U = 2Y, V = U^2, W = U V, S = X V, M = 3 X^2 (a = 0),
 * X3 = M^2 - 2S, Y3 = M (S - X3) - W Y, ZZ3 = V ZZ, ZZZ3 = W ZZZ. */
inline xyzz_t xyzz_dbl(xyzz_t p) {
    if (xyzz_is_identity(p)) return p;
    field_t u = field_dbl(p.y);
    field_t v = field_sqr(u);
    field_t w = field_mul(u, v);
    field_t s = field_mul(p.x, v);
    field_t x2 = field_sqr(p.x);
    field_t m = field_add(field_dbl(x2), x2);
    xyzz_t r;
    r.x = field_sub(field_sqr(m), field_dbl(s));
    r.y = field_mul_sub(m, field_sub(s, r.x), w, p.y);
    r.zz = field_mul(v, p.zz);
    r.zzz = field_mul(w, p.zzz);
    return r;
}

/* mdbl-2008-s-1: doubling of an affine point (ZZ = ZZZ = 1). */
inline xyzz_t xyzz_dbl_affine(affine_t q) {
    field_t u = field_dbl(q.y);
    field_t v = field_sqr(u);
    field_t w = field_mul(u, v);
    field_t s = field_mul(q.x, v);
    field_t x2 = field_sqr(q.x);
    field_t m = field_add(field_dbl(x2), x2);
    xyzz_t r;
    r.x = field_sub(field_sqr(m), field_dbl(s));
    r.y = field_mul_sub(m, field_sub(s, r.x), w, q.y);
    r.zz = v;
    r.zzz = w;
    return r;
}

/* madd-2008-s: p + q with q affine. U2 = x2 ZZ1, S2 = y2 ZZZ1, P = U2 - X1, R = S2 - Y1,
 * PP = P^2, PPP = P PP, Q = X1 PP, X3 = R^2 - PPP - 2Q, Y3 = R (Q - X3) - Y1 PPP,
 * ZZ3 = ZZ1 PP, ZZZ3 = ZZZ1 PPP. */
inline xyzz_t xyzz_add_affine(xyzz_t p, affine_t q) {
    if (affine_is_identity(q)) return p;
    if (xyzz_is_identity(p)) return xyzz_from_affine(q);
    field_t u2 = field_mul(q.x, p.zz);
    field_t s2 = field_mul(q.y, p.zzz);
    field_t pd = field_sub(u2, p.x);
    field_t rd = field_sub(s2, p.y);
    if (field_is_zero(pd)) {
        if (field_is_zero(rd)) return xyzz_dbl_affine(q); /* p == q */
        return xyzz_identity();                           /* p == -q */
    }
    field_t pp = field_sqr(pd);
    field_t ppp = field_mul(pd, pp);
    field_t qq = field_mul(p.x, pp);
    xyzz_t r;
    r.x = field_sub(field_sub(field_sqr(rd), ppp), field_dbl(qq));
    r.y = field_mul_sub(rd, field_sub(qq, r.x), p.y, ppp);
    r.zz = field_mul(p.zz, pp);
    r.zzz = field_mul(p.zzz, ppp);
    return r;
}

/* add-2008-s: U1 = X1 ZZ2, U2 = X2 ZZ1, S1 = Y1 ZZZ2, S2 = Y2 ZZZ1, P = U2 - U1,
 * R = S2 - S1, PP = P^2, PPP = P PP, Q = U1 PP, X3 = R^2 - PPP - 2Q,
 * Y3 = R (Q - X3) - S1 PPP, ZZ3 = ZZ1 ZZ2 PP, ZZZ3 = ZZZ1 ZZZ2 PPP. */
inline xyzz_t xyzz_add(xyzz_t p, xyzz_t q) {
    if (xyzz_is_identity(q)) return p;
    if (xyzz_is_identity(p)) return q;
    field_t u1 = field_mul(p.x, q.zz);
    field_t u2 = field_mul(q.x, p.zz);
    field_t s1 = field_mul(p.y, q.zzz);
    field_t s2 = field_mul(q.y, p.zzz);
    field_t pd = field_sub(u2, u1);
    field_t rd = field_sub(s2, s1);
    if (field_is_zero(pd)) {
        if (field_is_zero(rd)) return xyzz_dbl(p);
        return xyzz_identity();
    }
    field_t pp = field_sqr(pd);
    field_t ppp = field_mul(pd, pp);
    field_t qq = field_mul(u1, pp);
    xyzz_t r;
    r.x = field_sub(field_sub(field_sqr(rd), ppp), field_dbl(qq));
    r.y = field_mul_sub(rd, field_sub(qq, r.x), s1, ppp);
    r.zz = field_mul(field_mul(p.zz, q.zz), pp);
    r.zzz = field_mul(field_mul(p.zzz, q.zzz), ppp);
    return r;
}

/* k * p for a small non-negative k (double and add, most significant bit first). */
inline xyzz_t xyzz_mul_small(xyzz_t p, uint k) {
    xyzz_t r = xyzz_identity();
    for (int bit = 31; bit >= 0; bit--) {
        r = xyzz_dbl(r);
        if ((k >> bit) & 1U) r = xyzz_add(r, p);
    }
    return r;
}

/* x = X / ZZ, y = Y / ZZZ with one inversion: 1/ZZ = ZZ^2 (1/ZZZ)^2 since ZZ^3 = ZZZ^2. */
inline affine_t xyzz_to_affine(xyzz_t p) {
    affine_t r;
    if (xyzz_is_identity(p)) { r.x = field_zero(); r.y = field_zero(); return r; }
    field_t izzz = field_inv(p.zzz);
    field_t izz = field_mul(field_sqr(p.zz), field_sqr(izzz));
    r.x = field_mul(p.x, izz);
    r.y = field_mul(p.y, izzz);
    return r;
}

/* ---------------------------------------------------------------- point-array kernels */

/* Canonical affine coordinates -> Montgomery, in place (the identity stays all-zero). */
__kernel void points_to_mont(__global affine_t *pts, const uint n) {
    uint i = get_global_id(0);
    if (i >= n) return;
    affine_t p = pts[i];
    p.x = field_to_mont(p.x);
    p.y = field_to_mont(p.y);
    pts[i] = p;
}

/* bad[i] = 1 when point i is neither the identity nor on y^2 = x^3 + b (Montgomery input). */
__kernel void points_check_on_curve(__global const affine_t *pts, const uint n, __global uint *bad) {
    uint i = get_global_id(0);
    if (i >= n) return;
    affine_t p = pts[i];
    if (affine_is_identity(p)) { bad[i] = 0; return; }
    field_t rhs = field_add(field_mul(field_sqr(p.x), p.x), curve_b());
    bad[i] = !field_eq(field_sqr(p.y), rhs);
}
