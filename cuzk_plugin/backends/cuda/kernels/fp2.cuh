// Fq2 = Fq[u] / (u^2 + 1), the field of G2's coordinates: c0 + c1 u.
#pragma once
#include "field.cuh"

// Fq2 products and squares are called (CZ_HD_CALL), not inlined: inlined, the G2 bucket loop
// needs 255 registers and spills, and runs much slower (bench/cuda-kernels-2026-12-02.md).

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
    CZ_HD_CALL friend fp2_t operator*(const fp2_t& a, const fp2_t& b) {
#ifdef __CUDA_ARCH__
        if constexpr (F::N == 12) return mul_lazy(a, b);
#endif
        F t0 = a.c0 * b.c0, t1 = a.c1 * b.c1;
        F t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
        return {t0 - t1, t2 - t0 - t1};
    }

#ifdef __CUDA_ARCH__
    // The same Karatsuba with lazy reduction (tools/gen_field_ptx.py): t0, t1, t2 as 768-bit
    // integers (a0 + a1 and b0 + b1 unreduced, < 2p), then c0 = REDC(t0 - t1) and
    // c1 = REDC(t2 - t0 - t1) with REDC(T) = T_hi + redc(T_lo): two reductions instead of
    // three. Bounds: t0_hi, t1_hi < p / 8, so T_hi of c0 lies in (-p, p) (p is added when
    // negative); c1's T = a0 b1 + a1 b0 < 2p^2, so its T_hi < p. Each sum T_hi + redc < 2p.
    __device__ __forceinline__ static fp2_t mul_lazy(const fp2_t& a, const fp2_t& b) {
        constexpr int N = F::N;
        uint32_t sa[N], sb[N], t0[2 * N], t1[2 * N], t2[2 * N], lo[N];
        F hi;
        mad_chains<N>::add(sa, a.c0.v, a.c1.v);
        mad_chains<N>::add(sb, b.c0.v, b.c1.v);
        F::mul_wide(t0, a.c0.v, b.c0.v);
        F::mul_wide(t1, a.c1.v, b.c1.v);
        F::mul_wide(t2, sa, sb);
        uint32_t borrow = mad_chains<N>::sub(lo, t0, t1);
        uint32_t negative = mad_chains<N>::sub_borrow_in(hi.v, t0 + N, t1 + N, borrow), pm[N];
#pragma unroll
        for (int i = 0; i < N; i++) pm[i] = F::mod_word(i) & negative;
        mad_chains<N>::add(hi.v, hi.v, pm);
        fp2_t r;
        r.c0 = hi + F::redc(lo);
        uint32_t b1 = mad_chains<N>::sub(lo, t2, t0);
        uint32_t b2 = mad_chains<N>::sub(lo, lo, t1);
        mad_chains<N>::sub_borrow_in(hi.v, t2 + N, t0 + N, b1);
        mad_chains<N>::sub_borrow_in(hi.v, hi.v, t1 + N, b2);
        r.c1 = hi + F::redc(lo);
        return r;
    }
#endif
    // (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u
    CZ_HD_CALL fp2_t sqr() const {
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
