/* Binds the generic curve code (curve_xyzz.cl, msm.cl) to G1: y^2 = x^3 + 4 over Fq. */

typedef fq_t field_t;
#define field_zero fq_zero
#define field_one fq_one
#define field_is_zero fq_is_zero
#define field_eq fq_eq
#define field_add fq_add
#define field_sub fq_sub
#define field_dbl fq_dbl
#define field_neg fq_neg
#define field_mul fq_mul
#define field_mul_sub fq_mul_sub
#define field_sqr fq_sqr
#define field_inv fq_inv
#define field_to_mont fq_to_mont
#define field_from_mont fq_from_mont

/* b = 4, in Montgomery form. */
inline field_t curve_b(void) { return fq_from_constant(G1_B_MONT); }
