/* Fr, the BLS12-381 scalar field: 256 bits in FR_NLIMBS limbs, Montgomery form with R = 2^256.
 * Constants (FR_MODULUS, FR_MINV, FR_R2, FR_ONE) come from the generated header. */

#if NLIMBS != FR_NLIMBS
#error "fr.cl needs a program built for its field (NLIMBS = FR_NLIMBS)"
#endif

typedef struct { limb_t l[FR_NLIMBS]; } fr_t;

inline fr_t fr_from_constant(__constant const limb_t *c) {
    fr_t r;
    #pragma unroll
    for (int i = 0; i < FR_NLIMBS; i++) r.l[i] = c[i];
    return r;
}

inline fr_t fr_zero(void) {
    fr_t r;
    #pragma unroll
    for (int i = 0; i < FR_NLIMBS; i++) r.l[i] = 0;
    return r;
}

inline fr_t fr_one(void) { return fr_from_constant(FR_ONE); }

inline fr_t fr_add(fr_t a, fr_t b) { fr_t r; limbs_add_mod(r.l, a.l, b.l, FR_MODULUS); return r; }
inline fr_t fr_sub(fr_t a, fr_t b) { fr_t r; limbs_sub_mod(r.l, a.l, b.l, FR_MODULUS); return r; }
inline fr_t fr_mul(fr_t a, fr_t b) { fr_t r; limbs_mont_mul(r.l, a.l, b.l, FR_MODULUS, FR_MINV); return r; }

/* canonical -> Montgomery: a * R^2 * R^-1 = a R. */
inline fr_t fr_to_mont(fr_t a) { return fr_mul(a, fr_from_constant(FR_R2)); }

/* Montgomery -> canonical: aR * 1 * R^-1 = a. */
inline fr_t fr_from_mont(fr_t a) {
    fr_t one = fr_zero();
    one.l[0] = 1;
    return fr_mul(a, one);
}
