// Fq2 = Fq[u] / (u^2 + 1), the field of G2's coordinates: c0 + c1 u.
#pragma once
#include "field.cuh"

// Fq2 products are called (CZ_HD_CALL), not inlined: inlined, the G2 bucket loop needs 255
// registers and spills, and the G2 MSM at 2^27 went from 2.29 to 3.77 s on the H200
// (bench/cuda-kernels-2026-12-02.md, run 16). -DCZ_FP2_INLINE builds that variant.
#ifdef CZ_FP2_INLINE
#define CZ_FP2_MUL CZ_HD
#else
#define CZ_FP2_MUL CZ_HD_CALL
#endif

template <class F>
struct alignas(16) fp2_t {
    F c0, c1;

    CZ_HD static fp2_t zero() { return {F::zero(), F::zero()}; }
    CZ_HD static fp2_t one() { return {F::one(), F::zero()}; }
    CZ_HD bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    CZ_HD bool operator==(const fp2_t& o) const { return c0 == o.c0 && c1 == o.c1; }
    CZ_HD bool operator!=(const fp2_t& o) const { return !(*this == o); }
    CZ_HD friend fp2_t operator+(const fp2_t& a, const fp2_t& b) { return {a.c0 + b.c0, a.c1 + b.c1}; }
    CZ_HD friend fp2_t operator-(const fp2_t& a, const fp2_t& b) { return {a.c0 - b.c0, a.c1 - b.c1}; }
    CZ_HD fp2_t neg() const { return {c0.neg(), c1.neg()}; }
    CZ_HD fp2_t dbl() const { return {c0.dbl(), c1.dbl()}; }

    // Karatsuba: (a0 + a1 u)(b0 + b1 u) = (a0 b0 - a1 b1) + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) u
    CZ_FP2_MUL friend fp2_t operator*(const fp2_t& a, const fp2_t& b) {
        F t0 = a.c0 * b.c0, t1 = a.c1 * b.c1;
        F t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
        return {t0 - t1, t2 - t0 - t1};
    }
    // (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u
    CZ_FP2_MUL fp2_t sqr() const {
        F t = c0 * c1;
        return {(c0 + c1) * (c0 - c1), t.dbl()};
    }
    // 1 / (a0 + a1 u) = (a0 - a1 u) / (a0^2 + a1^2)
    CZ_HD fp2_t inverse() const {
        F norm_inv = (c0.sqr() + c1.sqr()).inverse();
        return {c0 * norm_inv, (c1 * norm_inv).neg()};
    }
    CZ_HD fp2_t to_mont() const { return {c0.to_mont(), c1.to_mont()}; }
    CZ_HD fp2_t from_mont() const { return {c0.from_mont(), c1.from_mont()}; }
};

using fq2_t = fp2_t<fq_t>;
