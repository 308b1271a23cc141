/* Multi-precision arithmetic on little-endian 64-bit limbs, shared by Fr and Fq.
 *
 * Values live in private arrays of n limbs; every loop bound is a compile-time constant at
 * the call site (4 for Fr, 6 for Fq), so the compiler unrolls them and keeps limbs in
 * registers. Both moduli leave at least one spare top bit (r < 2^255, p < 2^381), which is
 * why a single conditional subtraction is enough after every operation below.
 */

#define MAX_LIMBS 6

/* lo of a + b*c + *carry; *carry <- hi. Cannot overflow 128 bits:
 * (2^64-1) + (2^64-1)^2 + (2^64-1) = 2^128 - 1. */
inline ulong mac64(ulong a, ulong b, ulong c, ulong *carry) {
    ulong lo = b * c;
    ulong hi = mul_hi(b, c);
    lo += a;
    hi += (lo < a);
    lo += *carry;
    hi += (lo < *carry);
    *carry = hi;
    return lo;
}

/* a + b + *carry with carry out (the two partial carries are never both 1). */
inline ulong adc64(ulong a, ulong b, ulong *carry) {
    ulong s = a + b;
    ulong c1 = s < a;
    ulong s2 = s + *carry;
    ulong c2 = s2 < s;
    *carry = c1 + c2;
    return s2;
}

/* a - b - *borrow with borrow out. */
inline ulong sbb64(ulong a, ulong b, ulong *borrow) {
    ulong d = a - b;
    ulong b1 = a < b;
    ulong d2 = d - *borrow;
    ulong b2 = d < *borrow;
    *borrow = b1 + b2;
    return d2;
}

inline int limbs_is_zero(const ulong *a, const int n) {
    ulong acc = 0;
    #pragma unroll
    for (int i = 0; i < n; i++) acc |= a[i];
    return acc == 0;
}

inline int limbs_eq(const ulong *a, const ulong *b, const int n) {
    ulong acc = 0;
    #pragma unroll
    for (int i = 0; i < n; i++) acc |= a[i] ^ b[i];
    return acc == 0;
}

/* out = a + b mod m, inputs < m. */
inline void limbs_add_mod(ulong *out, const ulong *a, const ulong *b, __constant const ulong *m, const int n) {
    ulong s[MAX_LIMBS], d[MAX_LIMBS];
    ulong carry = 0, borrow = 0;
    #pragma unroll
    for (int i = 0; i < n; i++) s[i] = adc64(a[i], b[i], &carry);
    #pragma unroll
    for (int i = 0; i < n; i++) d[i] = sbb64(s[i], m[i], &borrow);
    int use_d = carry | (borrow == 0);
    #pragma unroll
    for (int i = 0; i < n; i++) out[i] = use_d ? d[i] : s[i];
}

/* out = a - b mod m, inputs < m. */
inline void limbs_sub_mod(ulong *out, const ulong *a, const ulong *b, __constant const ulong *m, const int n) {
    ulong d[MAX_LIMBS];
    ulong borrow = 0, carry = 0;
    #pragma unroll
    for (int i = 0; i < n; i++) d[i] = sbb64(a[i], b[i], &borrow);
    ulong mask = 0UL - borrow; /* add m back only when a < b */
    #pragma unroll
    for (int i = 0; i < n; i++) out[i] = adc64(d[i], m[i] & mask, &carry);
}

/* Montgomery product out = a * b * 2^(-64n) mod m, CIOS (Koc, Acar, Kaliski 1996) in the
 * "no-carry" form: when the modulus's top limb is below 2^63 - 1 (p and r both are) the
 * running value fits n limbs with no extra carry word, so each round folds the
 * multiply-accumulate and the reduction into one pass over the limbs.
 * minv = -m^(-1) mod 2^64. Inputs < m; the result before the final conditional
 * subtraction is < 2m. out may alias a or b. */
inline void limbs_mont_mul(ulong *out, const ulong *a, const ulong *b, __constant const ulong *m,
                           const ulong minv, const int n) {
    ulong t[MAX_LIMBS];
    #pragma unroll
    for (int j = 0; j < n; j++) t[j] = 0;
    #pragma unroll
    for (int i = 0; i < n; i++) {
        ulong carry_ab = 0, carry_qm = 0;
        t[0] = mac64(t[0], a[0], b[i], &carry_ab);
        ulong q = t[0] * minv; /* makes t + q m divisible by 2^64 */
        (void)mac64(t[0], q, m[0], &carry_qm);
        #pragma unroll
        for (int j = 1; j < n; j++) {
            t[j] = mac64(t[j], a[j], b[i], &carry_ab);
            t[j - 1] = mac64(t[j], q, m[j], &carry_qm);
        }
        t[n - 1] = carry_qm + carry_ab;
    }
    ulong d[MAX_LIMBS];
    ulong borrow = 0;
    #pragma unroll
    for (int i = 0; i < n; i++) d[i] = sbb64(t[i], m[i], &borrow);
    #pragma unroll
    for (int i = 0; i < n; i++) out[i] = borrow ? t[i] : d[i];
}
