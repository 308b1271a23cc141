/* Binds the generic curve code (curve_xyzz.cl, msm.cl) to G2: y^2 = x^3 + 4(1 + u) over Fq2. */

typedef fq2_t field_t;
#define field_zero fq2_zero
#define field_one fq2_one
#define field_is_zero fq2_is_zero
#define field_eq fq2_eq
#define field_add fq2_add
#define field_sub fq2_sub
#define field_dbl fq2_dbl
#define field_neg fq2_neg
#define field_mul fq2_mul
#define field_mul_sub fq2_mul_sub
#define field_sqr fq2_sqr
#define field_inv fq2_inv
#define field_to_mont fq2_to_mont
#define field_from_mont fq2_from_mont

/* b = 4 + 4u, in Montgomery form. */
inline field_t curve_b(void) {
    fq2_t b;
    b.c0 = fq_from_constant(G1_B_MONT);
    b.c1 = fq_from_constant(G1_B_MONT);
    return b;
}
