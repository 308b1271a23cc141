// Fq in 14 limbs of 28 bits, Montgomery radix 2^392: a probe (bench/probes/fq_mul28.cu). It was a
// G1 bucket-loop mode until run 11 (bench/cuda-kernels-2026-12-02.md) measured it 1.9x slower
// than the even/odd 32-bit product of field.cuh; kept for the record, not built into the library.
//
// Why: the 32-bit CIOS product (field.cuh) is a serial carry chain, an IMAD plus an IADD3.X a
// limb product (1280 SASS instructions for Fq), and the bucket loop waits on that chain
// (bench/cuda-kernels-2026-12-02.md, runs 9-10). With 28-bit limbs every limb product is one
// 32x32 -> 64 multiply-add into a 64-bit column sum that cannot overflow (at most 28 products
// below 2^56 plus a carry below 2^37), so the column needs no carry chain: ~690 instructions
// (bench/probes/fq_mul28.cu). Column-wise Montgomery reduction (product scanning): for column
// k, m_k = col_k (-p^-1) mod 2^28 makes the column's low 28 bits zero (Koc-Acar-Kaliski 1996,
// "FIPS" variant).
//
// Invariants: every limb below 2^28, every value in [0, 2p) (2p < 2^383 fits 14 limbs).
// The product's output is below 2p for inputs below 2p: a b / R + p < 4 p^2 / 2^392 + p.
#pragma once
#include "field.cuh"

struct alignas(16) fq28_t {
    static constexpr int L = 14;
    static constexpr uint32_t MASK = (1u << 28) - 1;
    static constexpr uint32_t PINV = 0xffcfffdu;  // -p^-1 mod 2^28
    uint32_t v[L];

    CZ_HD static constexpr uint32_t p(int i) {
        constexpr uint32_t m[L] = {0xfffaaabu, 0xfefffffu, 0x3ffffb9u, 0xfffeb15u, 0x6241eabu, 0xa0f6b0fu, 0xf6730d2u,
                                   0xf38512bu, 0x4774b84u, 0x4bacd76u, 0xba7b643u, 0xe69a4b1u, 0x1ea397fu, 0x001a011u};
        return m[i];
    }
    CZ_HD static constexpr uint32_t p2(int i) {  // 2p
        constexpr uint32_t m[L] = {0xfff5556u, 0xfdfffffu, 0x7ffff73u, 0xfffd62au, 0xc483d57u, 0x41ed61eu, 0xece61a5u,
                                   0xe70a257u, 0x8ee9709u, 0x9759aecu, 0x74f6c86u, 0xcd34963u, 0x3d472ffu, 0x0034022u};
        return m[i];
    }
    CZ_HD static constexpr uint32_t one_limb(int i) {  // 2^392 mod p: Montgomery form of 1
        constexpr uint32_t m[L] = {0x347fcb8u, 0xd800000u, 0x002b119u, 0x0cde6d2u, 0xc7212e0u, 0x83a2090u, 0x037669fu,
                                   0xda0f73eu, 0x9b09b42u, 0x1297bb0u, 0x515d98fu, 0x012ca7cu, 0x659fcfau, 0x000577au};
        return m[i];
    }
    CZ_HD static constexpr uint32_t from32_limb(int i) {  // 2^400 mod p: x 2^384 -> x 2^392
        constexpr uint32_t m[L] = {0x80e6299u, 0x3500034u, 0xeb12856u, 0xdeb2699u, 0xc988670u, 0x4ef6697u, 0x70983e8u,
                                   0xa4e6fe9u, 0x3e8a053u, 0xecf271eu, 0xc20d323u, 0x6eb6385u, 0x47f1286u, 0x00156dau};
        return m[i];
    }
    CZ_HD static constexpr uint32_t to32_limb(int i) {  // 2^384 mod p: x 2^392 -> x 2^384
        constexpr uint32_t m[L] = {0x002fffdu, 0x0900000u, 0xc000276u, 0x000bc40u, 0x8baebf4u, 0x5753c75u, 0x55f4898u,
                                   0x7052574u, 0x7ce5853u, 0x56ec6d7u, 0x71a97a2u, 0xe4935c0u, 0xec3fa80u, 0x0015f65u};
        return m[i];
    }

    CZ_HD static fq28_t zero() {
        fq28_t r;
#pragma unroll
        for (int i = 0; i < L; i++) r.v[i] = 0;
        return r;
    }
    CZ_HD static fq28_t one() {
        fq28_t r;
#pragma unroll
        for (int i = 0; i < L; i++) r.v[i] = one_limb(i);
        return r;
    }

    // Zero is 0 or p in [0, 2p).
    CZ_HD bool is_zero() const {
        uint32_t z = 0, e = 0;
#pragma unroll
        for (int i = 0; i < L; i++) z |= v[i], e |= v[i] ^ p(i);
        return z == 0 || e == 0;
    }
    CZ_HD bool operator==(const fq28_t& o) const { return (*this - o).is_zero(); }
    CZ_HD bool operator!=(const fq28_t& o) const { return !(*this == o); }

    // s (limbs < 2^28, value < 4p) -> s or s - 2p, whichever lies in [0, 2p).
    CZ_HD static fq28_t reduce_2p(const uint32_t* s) {
        fq28_t d;
        int32_t borrow = 0;
#pragma unroll
        for (int i = 0; i < L; i++) {
            int32_t t = (int32_t)s[i] - (int32_t)p2(i) + borrow;
            d.v[i] = (uint32_t)t & MASK;
            borrow = t >> 28;  // -1 or 0
        }
        uint32_t keep = borrow ? 0xffffffffu : 0;  // s < 2p
#pragma unroll
        for (int i = 0; i < L; i++) d.v[i] = (s[i] & keep) | (d.v[i] & ~keep);
        return d;
    }

    CZ_HD friend fq28_t operator+(const fq28_t& a, const fq28_t& b) {
        uint32_t s[L], c = 0;
#pragma unroll
        for (int i = 0; i < L; i++) {
            uint32_t t = a.v[i] + b.v[i] + c;
            s[i] = t & MASK;
            c = t >> 28;
        }
        return reduce_2p(s);  // a + b < 4p < 2^384: no carry out of the top limb
    }

    CZ_HD friend fq28_t operator-(const fq28_t& a, const fq28_t& b) {
        fq28_t d;
        int32_t borrow = 0;
#pragma unroll
        for (int i = 0; i < L; i++) {
            int32_t t = (int32_t)a.v[i] - (int32_t)b.v[i] + borrow;
            d.v[i] = (uint32_t)t & MASK;
            borrow = t >> 28;
        }
        uint32_t add = borrow ? 0xffffffffu : 0;  // a < b: add 2p back
        uint32_t c = 0;
#pragma unroll
        for (int i = 0; i < L; i++) {
            uint32_t t = d.v[i] + (p2(i) & add) + c;
            d.v[i] = t & MASK;
            c = t >> 28;
        }
        return d;
    }

    CZ_HD fq28_t neg() const { return zero() - *this; }
    CZ_HD fq28_t dbl() const { return *this + *this; }

    // Montgomery product a b / 2^392, column by column (see the header comment).
    CZ_HD static fq28_t mul_by(const fq28_t& a, const fq28_t& b) {
        uint32_t m[L];
        fq28_t r;
        uint64_t col = 0;
#pragma unroll
        for (int k = 0; k < 2 * L - 1; k++) {
#pragma unroll
            for (int i = 0; i < L; i++) {
                const int j = k - i;
                if (j >= 0 && j < L) col += (uint64_t)a.v[i] * b.v[j];
            }
#pragma unroll
            for (int i = 0; i < L; i++) {  // m_i p_j for the m_i already chosen (i < k)
                const int j = k - i;
                if (i < k && j >= 0 && j < L) col += (uint64_t)m[i] * p(j);
            }
            if (k < L) {
                m[k] = ((uint32_t)col * PINV) & MASK;
                col += (uint64_t)m[k] * p(0);  // the column's low 28 bits become zero
            } else {
                r.v[k - L] = (uint32_t)col & MASK;
            }
            col >>= 28;
        }
        r.v[L - 1] = (uint32_t)col;
        return r;
    }
    CZ_HD friend fq28_t operator*(const fq28_t& a, const fq28_t& b) { return mul_by(a, b); }
    CZ_HD fq28_t sqr() const { return mul_by(*this, *this); }

    // Conversions from / to the 32-bit Montgomery form (x 2^384 mod p, fq_t): repack the bits,
    // then one product by 2^400 (or 2^384) mod p moves the Montgomery factor.
    CZ_HD static fq28_t from_fq(const fq_t& x) {
        fq28_t r, c;
#pragma unroll
        for (int i = 0; i < L; i++) {
            const int bit = 28 * i, w = bit >> 5, sh = bit & 31;
            uint64_t two = (uint64_t)x.v[w] | ((uint64_t)(w + 1 < 12 ? x.v[w + 1] : 0) << 32);
            r.v[i] = (uint32_t)(two >> sh) & MASK;
            c.v[i] = from32_limb(i);
        }
        return r * c;
    }
    // The same conversion without a product, for bases read inside the bucket loop: shift the
    // bits up by 8 (x 2^384 -> x 2^392, below 2^389), then subtract q p with q estimated from the
    // top limbs, q = floor(t13 / (p13 + 1)): never above floor(t / p) and at most one below it
    // (t13 < 2^25, p13 > 2^16), so the rest lies in [0, 2p).
    CZ_HD static fq28_t from_fq_shift(const fq_t& x) {
        uint32_t t[L];
        t[0] = (x.v[0] << 8) & MASK;
#pragma unroll
        for (int i = 1; i < L; i++) {
            const int bit = 28 * i - 8, w = bit >> 5, sh = bit & 31;
            uint64_t two = (uint64_t)x.v[w] | ((uint64_t)(w + 1 < 12 ? x.v[w + 1] : 0) << 32);
            t[i] = (uint32_t)(two >> sh) & MASK;
        }
        const uint32_t q = t[L - 1] / (p(L - 1) + 1);
        fq28_t r;
        int64_t borrow = 0;
#pragma unroll
        for (int i = 0; i < L; i++) {
            int64_t acc = (int64_t)t[i] - (int64_t)q * p(i) + borrow;
            r.v[i] = (uint32_t)acc & MASK;
            borrow = acc >> 28;
        }
        return r;
    }

    CZ_HD fq_t to_fq() const {
        fq28_t c;
#pragma unroll
        for (int i = 0; i < L; i++) c.v[i] = to32_limb(i);
        fq28_t z = *this * c;  // x 2^384 mod p, in [0, 2p)
        uint32_t w[12];
#pragma unroll
        for (int j = 0; j < 12; j++) {
            const int bit = 32 * j, l = bit / 28, sh = bit % 28;
            uint64_t acc = z.v[l] >> sh;
            if (l + 1 < L) acc |= (uint64_t)z.v[l + 1] << (28 - sh);
            if (l + 2 < L) acc |= (uint64_t)z.v[l + 2] << (56 - sh);
            w[j] = (uint32_t)acc;
        }
        return fq_t::reduce_once(w, 0);
    }
};
