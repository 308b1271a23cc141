/* One-limb primitives for 32-bit limbs (the default on GPUs): every partial product
 * a*b + t + carry fits one 64-bit integer ((2^32-1)^2 + 2(2^32-1) = 2^64 - 1), so carries
 * are plain shifts, and GPUs do a 32x32->64 multiply-add in one instruction (NVIDIA
 * emulates 64-bit mul_hi with several). */

typedef uint limb_t;
#define LIMB_BITS 32

/* low limb of t + a*b + *carry; *carry <- high limb. */
inline limb_t limb_mac(limb_t t, limb_t a, limb_t b, limb_t *carry) {
    ulong r = (ulong)a * b + t + *carry;
    *carry = (uint)(r >> 32);
    return (uint)r;
}

inline limb_t limb_adc(limb_t a, limb_t b, limb_t *carry) {
    ulong s = (ulong)a + b + *carry;
    *carry = (uint)(s >> 32);
    return (uint)s;
}

/* a - b - *borrow; a negative result wraps the 64-bit difference, setting its top bit. */
inline limb_t limb_sbb(limb_t a, limb_t b, limb_t *borrow) {
    ulong d = (ulong)a - b - *borrow;
    *borrow = (uint)(d >> 63);
    return (uint)d;
}
