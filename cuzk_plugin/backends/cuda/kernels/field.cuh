// Prime fields Fr (255-bit, 8 x 32-bit limbs) and Fq (381-bit, 12 x 32-bit limbs) in
// Montgomery form, usable on host and device. 32-bit limbs because NVIDIA GPUs multiply
// 32x32 -> 64 natively (IMAD.WIDE); 64-bit multiplies are emulated with several of those.
//
// Montgomery form of x is x * 2^(32N) mod p. Multiplication is CIOS (coarsely integrated
// operand scanning, Koc-Acar-Kaliski 1996): for each word b_i, t += a * b_i, then
// m = t_0 * (-p^-1 mod 2^32), t = (t + m p) / 2^32; a final conditional subtraction keeps
// the result in [0, p).
#pragma once
#include <cstdint>

#include "field_ptx.cuh"

#define CZ_HD __host__ __device__ __forceinline__
// Big curve formulas are called, not inlined: fully inlined G2 kernels take ptxas tens of
// minutes and spill anyway; a call costs little next to the ~10^4 instructions inside.
#define CZ_HD_CALL __host__ __device__ __noinline__

// BLS12-381 base field: p = 0x1a0111ea...ffffaaab (little-endian 32-bit limbs).
struct fq_config {
    static constexpr int N = 12;
    static constexpr uint32_t INV = 0xfffcfffdu;  // -p^-1 mod 2^32
    CZ_HD static constexpr uint32_t mod(int i) {
        constexpr uint32_t m[12] = {0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu,
                                    0xf6b0f624u, 0x6730d2a0u, 0xf38512bfu, 0x64774b84u,
                                    0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau};
        return m[i];
    }
    CZ_HD static constexpr uint32_t r2(int i) {  // 2^(2*384) mod p: to_mont multiplier
        constexpr uint32_t m[12] = {0x1c341746u, 0xf4df1f34u, 0x09d104f1u, 0x0a76e6a6u,
                                    0x4c95b6d5u, 0x8de5476cu, 0x939d83c0u, 0x67eb88a9u,
                                    0xb519952du, 0x9a793e85u, 0x92cae3aau, 0x11988fe5u};
        return m[i];
    }
    CZ_HD static constexpr uint32_t one(int i) {  // 2^384 mod p: Montgomery form of 1
        constexpr uint32_t m[12] = {0x0002fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu,
                                    0x53c758bau, 0x5f489857u, 0x70525745u, 0x77ce5853u,
                                    0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u};
        return m[i];
    }
};

// BLS12-381 scalar field: r = 0x73eda753...00000001.
struct fr_config {
    static constexpr int N = 8;
    static constexpr uint32_t INV = 0xffffffffu;
    CZ_HD static constexpr uint32_t mod(int i) {
        constexpr uint32_t m[8] = {0x00000001u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u,
                                   0x09a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u};
        return m[i];
    }
    CZ_HD static constexpr uint32_t r2(int i) {
        constexpr uint32_t m[8] = {0xf3f29c6du, 0xc999e990u, 0x87925c23u, 0x2b6cedcbu,
                                   0x7254398fu, 0x05d31496u, 0x9f59ff11u, 0x0748d9d9u};
        return m[i];
    }
    CZ_HD static constexpr uint32_t one(int i) {
        constexpr uint32_t m[8] = {0xfffffffeu, 0x00000001u, 0x00034802u, 0x5884b7fau,
                                   0xecbc4ff5u, 0x998c4fefu, 0xacc5056fu, 0x1824b159u};
        return m[i];
    }
};

// Device carry chains by limb count (field_ptx.cuh; p is an immediate in sub_modulus).
template <int N>
struct mad_chains;
#ifdef __CUDACC__
// Fr's -p^-1 mod 2^32 (= 2^32 - 1) for the even/odd product, from constant memory so ptxas
// cannot see it is -1: folded, its multiply-adds become longer negate-and-add sequences
// (tools/gen_field_ptx.py, INV_AS_OPERAND).
static __constant__ uint32_t cz_fr_inv = 0xffffffffu;
#endif

template <>
struct mad_chains<8> {
    __device__ __forceinline__ static void add(uint32_t* s, const uint32_t* a, const uint32_t* b) { add_chain8(s, a, b); }
    __device__ __forceinline__ static uint32_t sub(uint32_t* d, const uint32_t* a, const uint32_t* b) {
        return sub_chain8(d, a, b);
    }
    __device__ __forceinline__ static uint32_t sub_modulus(uint32_t* d, const uint32_t* x) { return fr_sub_modulus(d, x); }
    __device__ __forceinline__ static void mont_row0(uint32_t* ev, uint32_t* od, const uint32_t* a, uint32_t b) {
        fr_mont_row0(ev, od, a, b, cz_fr_inv);
    }
    __device__ __forceinline__ static void mont_row(uint32_t* ev, uint32_t* od, const uint32_t* a, uint32_t b) {
        fr_mont_row(ev, od, a, b, cz_fr_inv);
    }
    __device__ __forceinline__ static void mont_merge(uint32_t* r, const uint32_t* ev, const uint32_t* od) {
        fr_mont_merge(r, ev, od);
    }
};
template <>
struct mad_chains<12> {
    __device__ __forceinline__ static void add(uint32_t* s, const uint32_t* a, const uint32_t* b) { add_chain12(s, a, b); }
    __device__ __forceinline__ static uint32_t sub(uint32_t* d, const uint32_t* a, const uint32_t* b) {
        return sub_chain12(d, a, b);
    }
    __device__ __forceinline__ static uint32_t sub_modulus(uint32_t* d, const uint32_t* x) { return fq_sub_modulus(d, x); }
    __device__ __forceinline__ static void mont_row0(uint32_t* ev, uint32_t* od, const uint32_t* a, uint32_t b) {
        fq_mont_row0(ev, od, a, b);
    }
    __device__ __forceinline__ static void mont_row(uint32_t* ev, uint32_t* od, const uint32_t* a, uint32_t b) {
        fq_mont_row(ev, od, a, b);
    }
    __device__ __forceinline__ static void mont_merge(uint32_t* r, const uint32_t* ev, const uint32_t* od) {
        fq_mont_merge(r, ev, od);
    }
    // The lazy reduction's blocks (Fq2 products, fp2.cuh).
    __device__ __forceinline__ static void wide_row(uint32_t* A, uint32_t* B, const uint32_t* a, uint32_t b) {
        fq_wide_row(A, B, a, b);
    }
    __device__ __forceinline__ static void wide_merge_lo(uint32_t* t, uint32_t* c, const uint32_t* e, const uint32_t* o) {
        fq_wide_merge_lo(t, c, e, o);
    }
    __device__ __forceinline__ static void wide_merge_hi(uint32_t* t, const uint32_t* c, const uint32_t* e,
                                                         const uint32_t* o) {
        fq_wide_merge_hi(t, c, e, o);
    }
    __device__ __forceinline__ static void redc_row0(uint32_t* ev, uint32_t* od) { fq_redc_row0(ev, od); }
    __device__ __forceinline__ static void redc_row(uint32_t* ev, uint32_t* od) { fq_redc_row(ev, od); }
    __device__ __forceinline__ static uint32_t sub_borrow_in(uint32_t* d, const uint32_t* a, const uint32_t* b,
                                                             uint32_t borrow_in) {
        return sub_chain12_borrow_in(d, a, b, borrow_in);
    }
    // (a b + c d) with one reduction a row (the curve formulas' Y3, mont_t::mul_sub).
    __device__ __forceinline__ static void modulus_minus(uint32_t* d, const uint32_t* x) { fq_modulus_minus(d, x); }
    __device__ __forceinline__ static void mont2_row0(uint32_t* ev, uint32_t* od, const uint32_t* a, uint32_t b,
                                                      const uint32_t* c, uint32_t d) {
        fq_mont2_row0(ev, od, a, b, c, d);
    }
    __device__ __forceinline__ static void mont2_row(uint32_t* ev, uint32_t* od, const uint32_t* a, uint32_t b,
                                                     const uint32_t* c, uint32_t d) {
        fq_mont2_row(ev, od, a, b, c, d);
    }
    // The squaring's rows (mont_t::sqr): row i takes w's words i..N-1 (a block each row, as
    // each row leaves out a different number of words; i is a constant once the rows unroll).
    __device__ __forceinline__ static void sqr_row0(uint32_t* ev, uint32_t* od, const uint32_t* w, uint32_t b) {
        fq_sqr_row0(ev, od, w, b);
    }
    __device__ __forceinline__ static void sqr_row(int i, uint32_t* ev, uint32_t* od, const uint32_t* w, uint32_t b) {
        switch (i) {
            case 1: fq_sqr_row1(ev, od, w + 1, b); break;
            case 2: fq_sqr_row2(ev, od, w + 2, b); break;
            case 3: fq_sqr_row3(ev, od, w + 3, b); break;
            case 4: fq_sqr_row4(ev, od, w + 4, b); break;
            case 5: fq_sqr_row5(ev, od, w + 5, b); break;
            case 6: fq_sqr_row6(ev, od, w + 6, b); break;
            case 7: fq_sqr_row7(ev, od, w + 7, b); break;
            case 8: fq_sqr_row8(ev, od, w + 8, b); break;
            case 9: fq_sqr_row9(ev, od, w + 9, b); break;
            case 10: fq_sqr_row10(ev, od, w + 10, b); break;
            default: fq_sqr_row11(ev, od, w + 11, b); break;
        }
    }
};

template <class C>
struct alignas(16) mont_t {
    static constexpr int N = C::N;
    uint32_t v[N];

    CZ_HD static constexpr uint32_t mod_word(int i) { return C::mod(i); }
    CZ_HD static mont_t zero() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }
    CZ_HD static mont_t one() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = C::one(i);
        return r;
    }
    CZ_HD static mont_t r2() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = C::r2(i);
        return r;
    }
    // Plain (non-Montgomery) small integer; multiply by r2() to enter Montgomery form.
    CZ_HD static mont_t raw_u32(uint32_t x) {
        mont_t r = zero();
        r.v[0] = x;
        return r;
    }
    CZ_HD bool is_zero() const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }
    CZ_HD bool operator==(const mont_t& o) const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i] ^ o.v[i];
        return acc == 0;
    }
    CZ_HD bool operator!=(const mont_t& o) const { return !(*this == o); }

    // r = x - p if x >= p (x < 2p; 'hi' is a carry word above the N limbs).
    CZ_HD static mont_t reduce_once(const uint32_t* x, uint32_t hi) {
        mont_t d;
#ifdef __CUDA_ARCH__
        // One subtraction chain and a select a word (the C form below costs ~3x the ALU work).
        uint32_t borrow = mad_chains<N>::sub_modulus(d.v, x);
        bool keep = hi == 0 && borrow;
#pragma unroll
        for (int i = 0; i < N; i++) d.v[i] = keep ? x[i] : d.v[i];
#else
        uint32_t borrow = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            uint64_t t = (uint64_t)x[i] - C::mod(i) - borrow;
            d.v[i] = (uint32_t)t;
            borrow = (uint32_t)(t >> 63);
        }
        if (hi == 0 && borrow) {  // x < p: keep x
#pragma unroll
            for (int i = 0; i < N; i++) d.v[i] = x[i];
        }
#endif
        return d;
    }

    // a + b < 2p < 2^(32N) for both fields (p < 2^(32N - 1)), so no carry word is needed.
    CZ_HD friend mont_t operator+(const mont_t& a, const mont_t& b) {
        uint32_t s[N];
#ifdef __CUDA_ARCH__
        mad_chains<N>::add(s, a.v, b.v);
        return reduce_once(s, 0);
#else
        uint64_t c = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            c += (uint64_t)a.v[i] + b.v[i];
            s[i] = (uint32_t)c;
            c >>= 32;
        }
        return reduce_once(s, (uint32_t)c);
#endif
    }

    CZ_HD friend mont_t operator-(const mont_t& a, const mont_t& b) {
        mont_t d;
#ifdef __CUDA_ARCH__
        // a - b, then + (p AND the borrow mask): no branch.
        uint32_t mask = mad_chains<N>::sub(d.v, a.v, b.v), pm[N];
#pragma unroll
        for (int i = 0; i < N; i++) pm[i] = C::mod(i) & mask;
        mad_chains<N>::add(d.v, d.v, pm);
        return d;
#else
        uint32_t borrow = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            uint64_t t = (uint64_t)a.v[i] - b.v[i] - borrow;
            d.v[i] = (uint32_t)t;
            borrow = (uint32_t)(t >> 63);
        }
        if (borrow) {  // went below zero: add p back
            uint64_t c = 0;
#pragma unroll
            for (int i = 0; i < N; i++) {
                c += (uint64_t)d.v[i] + C::mod(i);
                d.v[i] = (uint32_t)c;
                c >>= 32;
            }
        }
        return d;
#endif
    }

    CZ_HD mont_t neg() const { return is_zero() ? *this : zero() - *this; }
    CZ_HD mont_t dbl() const { return *this + *this; }

#ifdef __CUDA_ARCH__
    // CIOS with PTX carry chains: per word b_i, t += a b_i, m = t_0 (-p^-1), t += m p, shift
    // one word: 2 N^2 word products. Even/odd accumulators (tools/gen_field_ptx.py explains the
    // layout): each a_k b_i is one 64-bit multiply-add (IMAD.WIDE) in SASS, where a chain of
    // low halves and then one of high halves takes about three times the instructions; the
    // two arrays swap roles every row.
    __device__ __forceinline__ static mont_t mul_even_odd(const mont_t& a, const mont_t& b) {
        uint32_t x[N], y[N];
        mad_chains<N>::mont_row0(x, y, a.v, b.v[0]);
        mont_t r = rows_and_merge(x, y, [&](uint32_t* ev, uint32_t* od, int i) {
            mad_chains<N>::mont_row(ev, od, a.v, b.v[i]);
        });
        return reduce_once(r.v, 0);
    }
    // Rows 1..N-1 after row 0 (x even, y odd), the two arrays swapping roles every row, then
    // the merge; row(ev, od, i) runs row i. N is even: the last row's even array is y.
    template <class Row>
    __device__ __forceinline__ static mont_t rows_and_merge(uint32_t* x, uint32_t* y, Row row) {
#pragma unroll
        for (int i = 1; i < N; i += 2) {
            row(y, x, i);
            if (i + 1 < N) row(x, y, i + 1);
        }
        mont_t r;
        mad_chains<N>::mont_merge(r.v, y, x);
        return r;
    }
#endif

#ifdef __CUDA_ARCH__
    // t = a b as 2N words, for any a, b < 2^(32N) (Fq only: the lazy Fq2 product). Row i adds
    // a b_i with the even/odd split of tools/gen_field_ptx.py; E and O start at zero.
    __device__ __forceinline__ static void mul_wide(uint32_t* t, const uint32_t* a, const uint32_t* b) {
        uint32_t e[2 * N], o[2 * N - 1];
#pragma unroll
        for (int i = 0; i < 2 * N; i++) e[i] = 0;
#pragma unroll
        for (int i = 0; i < 2 * N - 1; i++) o[i] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            if (i % 2 == 0)
                mad_chains<N>::wide_row(e + i, o + i, a, b[i]);
            else
                mad_chains<N>::wide_row(o + i - 1, e + i + 1, a, b[i]);
        }
        uint32_t c;
        mad_chains<N>::wide_merge_lo(t, &c, e, o);
        mad_chains<N>::wide_merge_hi(t + N, &c, e + N, o + N - 1);
    }
    // x 2^(-32N) mod p for any x < 2^(32N), at most p (not reduced): the product's reduction
    // rows without the products.
    __device__ __forceinline__ static mont_t redc(const uint32_t* x) {
        uint32_t ev[N], od[N];
#pragma unroll
        for (int i = 0; i < N; i++) ev[i] = x[i], od[i] = 0;
        mad_chains<N>::redc_row0(ev, od);
        return rows_and_merge(ev, od, [](uint32_t* e, uint32_t* o, int) { mad_chains<N>::redc_row(e, o); });
    }
#endif

    // Montgomery product a * b / 2^(32N) mod p, CIOS.
    CZ_HD friend mont_t operator*(const mont_t& a, const mont_t& b) {
#ifdef __CUDA_ARCH__
        return mul_even_odd(a, b);
#else
        uint32_t t[N + 2];
#pragma unroll
        for (int i = 0; i < N + 2; i++) t[i] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            uint64_t carry = 0;
#pragma unroll
            for (int j = 0; j < N; j++) {
                uint64_t x = (uint64_t)a.v[j] * b.v[i] + t[j] + carry;
                t[j] = (uint32_t)x;
                carry = x >> 32;
            }
            uint64_t x = (uint64_t)t[N] + carry;
            t[N] = (uint32_t)x;
            t[N + 1] = (uint32_t)(x >> 32);
            uint32_t m = t[0] * C::INV;
            x = (uint64_t)m * C::mod(0) + t[0];
            carry = x >> 32;
#pragma unroll
            for (int j = 1; j < N; j++) {
                x = (uint64_t)m * C::mod(j) + t[j] + carry;
                t[j - 1] = (uint32_t)x;
                carry = x >> 32;
            }
            x = (uint64_t)t[N] + carry;
            t[N - 1] = (uint32_t)x;
            t[N] = t[N + 1] + (uint32_t)(x >> 32);
        }
        return reduce_once(t, t[N]);
#endif
    }

    // a b - c d. On the device for Fq with lazy reduction: (a b + c' d) 2^(-384), c' = p - c in
    // (0, p], as one Montgomery product of two operand pairs, each row (ev, od) += a b_i + c' d_i
    // and then one reduction: 3 N^2 word products instead of 4 N^2, in the registers of one
    // product plus c' (the difference of two 768-bit products would hold two 24-word values).
    // Bound (tools/gen_field_ptx.py, mont2_row): a, b, d < p, c' <= p gives a result below
    // 2 p^2 / 2^384 + p < 1.3p, so one conditional subtraction leaves it canonical, as
    // operator* does (the curve formulas compare coordinates with is_zero).
    CZ_HD static mont_t mul_sub(const mont_t& a, const mont_t& b, const mont_t& c, const mont_t& d) {
#ifdef __CUDA_ARCH__
        if constexpr (N == 12) {
            uint32_t nc[N], x[N], y[N];
            mad_chains<N>::modulus_minus(nc, c.v);
            mad_chains<N>::mont2_row0(x, y, a.v, b.v[0], nc, d.v[0]);
            mont_t r = rows_and_merge(x, y, [&](uint32_t* ev, uint32_t* od, int i) {
                mad_chains<N>::mont2_row(ev, od, a.v, b.v[i], nc, d.v[i]);
            });
            return reduce_once(r.v, 0);
        }
#endif
        return a * b - c * d;
    }

    // r1 = a1 b1, r2 = a2 b2 (on the device with the two carry chains interleaved).
    CZ_HD static void mul_pair(mont_t& r1, const mont_t& a1, const mont_t& b1, mont_t& r2, const mont_t& a2,
                               const mont_t& b2) {
        r1 = a1 * b1;  // even/odd products are short enough that ptxas interleaves two itself
        r2 = a2 * b2;
    }

#ifdef __CUDA_ARCH__
    // Row i's operand words for the squaring (tools/gen_field_ptx.py, sqr_row): w_i = a_i and,
    // above, the words of 2 (a with words <= i cleared). Plain shifts, outside the asm blocks,
    // so ptxas may recompute them rather than hold a doubled copy of a.
    __device__ __forceinline__ static void sqr_operand(uint32_t* w, const uint32_t* a, int i) {
#pragma unroll
        for (int k = 0; k < N; k++)
            if (k == i)
                w[k] = a[k];
            else if (k == i + 1)
                w[k] = a[k] << 1;
            else if (k > i + 1)
                w[k] = (a[k] << 1) | (a[k - 1] >> 31);
    }
#endif
    // Fq on the device: each cross product a_i a_j once (N (N + 1) / 2 word products and the
    // reduction's N^2, against 2 N^2); the result is below a^2 / 2^384 + p < 1.2p before the
    // conditional subtraction, so canonical like operator*'s.
    CZ_HD mont_t sqr() const {
#ifdef __CUDA_ARCH__
        if constexpr (N == 12) {
            uint32_t x[N], y[N], w[N];
            sqr_operand(w, v, 0);
            mad_chains<N>::sqr_row0(x, y, w, v[0]);
            mont_t r = rows_and_merge(x, y, [&](uint32_t* ev, uint32_t* od, int i) {
                uint32_t wi[N];
                sqr_operand(wi, v, i);
                mad_chains<N>::sqr_row(i, ev, od, wi, v[i]);
            });
            return reduce_once(r.v, 0);
        }
#endif
        return *this * *this;
    }
    CZ_HD mont_t to_mont() const { return *this * r2(); }
    CZ_HD mont_t from_mont() const { return *this * raw_u32(1); }

    // x^e for an exponent given as little-endian 32-bit words (square and multiply).
    CZ_HD mont_t pow_words(const uint32_t* e, int nwords) const {
        mont_t acc = one();
        // Rolled loops: unrolling 32 x (square + multiply) per inversion only bloats the code.
#pragma unroll 1
        for (int w = nwords - 1; w >= 0; w--)
#pragma unroll 1
            for (int b = 31; b >= 0; b--) {
                acc = acc.sqr();
                if ((e[w] >> b) & 1) acc = acc * *this;
            }
        return acc;
    }
    // Fermat: x^(p-2) = x^-1 (0 maps to 0).
    CZ_HD mont_t inverse() const {
        uint32_t e[N];
        uint32_t borrow = 2;
        for (int i = 0; i < N; i++) {
            uint64_t t = (uint64_t)C::mod(i) - borrow;
            e[i] = (uint32_t)t;
            borrow = (uint32_t)(t >> 63);
        }
        return pow_words(e, N);
    }
};

using fq_t = mont_t<fq_config>;
using fr_t = mont_t<fr_config>;
