/* One-limb primitives for 64-bit limbs (the default on CPUs through PoCL).
 *
 * Where the compiler offers 128-bit integers (clang targeting x86-64 does, and PoCL is
 * clang), products and carries come straight from them: one mulx-style multiply instead of
 * OpenCL's mul_hi, which PoCL lowers to a slower library sequence (measured 2.1x the
 * multiply throughput, ~1.5x the whole MSM, on the CI CPU). Elsewhere mul_hi and unsigned
 * compares give the same results. */

typedef ulong limb_t;
#define LIMB_BITS 64

#ifdef __SIZEOF_INT128__

/* low limb of t + a*b + *carry; *carry <- high limb. Cannot overflow 128 bits:
 * (2^64-1) + (2^64-1)^2 + (2^64-1) = 2^128 - 1. */
inline limb_t limb_mac(limb_t t, limb_t a, limb_t b, limb_t *carry) {
    unsigned __int128 r = (unsigned __int128)a * b + t + *carry;
    *carry = (ulong)(r >> 64);
    return (ulong)r;
}

inline limb_t limb_adc(limb_t a, limb_t b, limb_t *carry) {
    unsigned __int128 s = (unsigned __int128)a + b + *carry;
    *carry = (ulong)(s >> 64);
    return (ulong)s;
}

/* a - b - *borrow; a negative result wraps the 128-bit difference, setting its top bit. */
inline limb_t limb_sbb(limb_t a, limb_t b, limb_t *borrow) {
    unsigned __int128 d = (unsigned __int128)a - b - *borrow;
    *borrow = (ulong)(d >> 127);
    return (ulong)d;
}

#else

inline limb_t limb_mac(limb_t t, limb_t a, limb_t b, limb_t *carry) {
    ulong lo = a * b;
    ulong hi = mul_hi(a, b);
    lo += t;
    hi += (lo < t);
    lo += *carry;
    hi += (lo < *carry);
    *carry = hi;
    return lo;
}

/* a + b + *carry with carry out (the two partial carries are never both 1). */
inline limb_t limb_adc(limb_t a, limb_t b, limb_t *carry) {
    ulong s = a + b;
    ulong c1 = s < a;
    ulong s2 = s + *carry;
    ulong c2 = s2 < s;
    *carry = c1 + c2;
    return s2;
}

/* a - b - *borrow with borrow out (likewise never both). */
inline limb_t limb_sbb(limb_t a, limb_t b, limb_t *borrow) {
    ulong d = a - b;
    ulong b1 = a < b;
    ulong d2 = d - *borrow;
    ulong b2 = d < *borrow;
    *borrow = b1 + b2;
    return d2;
}

#endif
