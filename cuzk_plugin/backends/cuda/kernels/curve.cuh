// Short Weierstrass curves y^2 = x^3 + b (a = 0) over F = Fq (G1) or Fq2 (G2).
//
// Affine points as stored in memory: (x, y) in Montgomery form; (0, 0) is the identity
// (it is on neither curve since b != 0). Accumulators are XYZZ coordinates
// (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2), which make adding an affine point cost 8M + 2S with no
// inversion; ZZ = 0 is the identity. Formulas: Explicit-Formulas Database,
// "g1p/short-w/xyzz": madd-2008-s, add-2008-s, dbl-2008-s-1, mdbl-2008-s-1.
#pragma once
#include <type_traits>

#include "fp2.cuh"

// b of y^2 = x^3 + b: 4 over Fq (G1), 4 (1 + u) over Fq2 (G2).
template <class F>
CZ_HD F curve_b() {
    fq_t one = fq_t::one(), four = (one + one).dbl();
    if constexpr (std::is_same_v<F, fq2_t>)
        return {four, four};
    else
        return four;
}

// a b - c d: Fq's lazy form (one reduction for both products, mont_t::mul_sub) on G1; G2's
// Fq2 products stay as they are.
template <class F>
CZ_HD F mul_sub(const F& a, const F& b, const F& c, const F& d) {
    if constexpr (std::is_same_v<F, fq_t>)
        return fq_t::mul_sub(a, b, c, d);
    else
        return a * b - c * d;
}

template <class F>
struct alignas(16) affine_t {
    F x, y;
    CZ_HD bool is_identity() const { return x.is_zero() && y.is_zero(); }
    // On the curve, or the identity (0, 0), which the curve equation itself rejects.
    CZ_HD bool is_on_curve() const { return is_identity() || y.sqr() == x.sqr() * x + curve_b<F>(); }
    CZ_HD affine_t neg() const { return {x, y.neg()}; }
};

template <class F>
struct alignas(16) xyzz_t {
    F X, Y, ZZ, ZZZ;

    CZ_HD static xyzz_t identity() { return {F::zero(), F::zero(), F::zero(), F::zero()}; }
    CZ_HD bool is_identity() const { return ZZ.is_zero(); }
    CZ_HD static xyzz_t from_affine(const affine_t<F>& p) {
        if (p.is_identity()) return identity();
        return {p.x, p.y, F::one(), F::one()};
    }
    CZ_HD xyzz_t neg() const { return {X, Y.neg(), ZZ, ZZZ}; }

    // mdbl-2008-s-1: 2 * (x, y) for an affine point.
    CZ_HD_CALL static xyzz_t dbl_affine(const affine_t<F>& p) {
        F U = p.y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = p.x * V;
        F xx = p.x.sqr();
        F M = xx.dbl() + xx;  // 3 x^2 (a = 0)
        F X3 = M.sqr() - S.dbl();
        F Y3 = mul_sub(M, S - X3, W, p.y);
        return {X3, Y3, V, W};
    }

    // dbl-2008-s-1.
    CZ_HD_CALL xyzz_t dbl() const {
        if (is_identity()) return *this;
        F U = Y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = X * V;
        F xx = X.sqr();
        F M = xx.dbl() + xx;
        F X3 = M.sqr() - S.dbl();
        F Y3 = mul_sub(M, S - X3, W, Y);
        return {X3, Y3, V * ZZ, W * ZZZ};
    }

    // madd-2008-s: this + q for an affine q, with the identity and doubling cases. Inlined
    // form for the hot G1 bucket loop (a call passes both points through local memory).
    CZ_HD xyzz_t add_affine_inline(const affine_t<F>& q) const {
        if (q.is_identity()) return *this;
        if (is_identity()) return from_affine(q);
        F U2 = q.x * ZZ;
        F S2 = q.y * ZZZ;
        F P = U2 - X;
        F R = S2 - Y;
        if (P.is_zero()) {
            if (R.is_zero()) return dbl_affine(q);  // same point
            return identity();                      // q = -this
        }
        F PP = P.sqr();
        F PPP = P * PP;
        F Q = X * PP;
        F X3 = R.sqr() - PPP - Q.dbl();
        F Y3 = mul_sub(R, Q - X3, Y, PPP);
        return {X3, Y3, ZZ * PP, ZZZ * PPP};
    }

    CZ_HD_CALL xyzz_t add_affine(const affine_t<F>& q) const { return add_affine_inline(q); }

    // add-2008-s: this + q, both XYZZ.
    CZ_HD_CALL xyzz_t add(const xyzz_t& q) const {
        if (q.is_identity()) return *this;
        if (is_identity()) return q;
        F U1 = X * q.ZZ;
        F U2 = q.X * ZZ;
        F S1 = Y * q.ZZZ;
        F S2 = q.Y * ZZZ;
        F P = U2 - U1;
        F R = S2 - S1;
        if (P.is_zero()) {
            if (R.is_zero()) return dbl();
            return identity();
        }
        F PP = P.sqr();
        F PPP = P * PP;
        F Q = U1 * PP;
        F X3 = R.sqr() - PPP - Q.dbl();
        F Y3 = mul_sub(R, Q - X3, S1, PPP);
        return {X3, Y3, ZZ * q.ZZ * PP, ZZZ * q.ZZZ * PPP};
    }

    // k * this for a small non-negative k (double and add, most significant bit first).
    CZ_HD xyzz_t mul_small(uint32_t k) const {
        xyzz_t acc = identity();
#pragma unroll 1
        for (int b = 31; b >= 0; b--) {
            acc = acc.dbl();
            if ((k >> b) & 1) acc = acc.add(*this);
        }
        return acc;
    }

    // x = X / ZZ, y = Y / ZZZ (one inversion each; host side and rare device use).
    CZ_HD affine_t<F> to_affine() const {
        if (is_identity()) return {F::zero(), F::zero()};
        return {X * ZZ.inverse(), Y * ZZZ.inverse()};
    }
};

using g1_affine_t = affine_t<fq_t>;
using g2_affine_t = affine_t<fq2_t>;
using g1_xyzz_t = xyzz_t<fq_t>;
using g2_xyzz_t = xyzz_t<fq2_t>;
