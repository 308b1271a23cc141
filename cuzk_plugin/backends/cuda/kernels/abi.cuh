// Results as the C ABI returns them: affine canonical limbs (the package's boundary layout,
// byte-identical to our 32-bit limb structs), the identity as all zeros.
#pragma once
#include <cstring>

#include "prove.cuh"

template <class F>
void write_affine(const xyzz_t<F>& p, uint64_t* out) {
    affine_t<F> a = p.to_affine();
    affine_t<F> canon = {a.x.from_mont(), a.y.from_mont()};
    if (p.is_identity()) canon = {F::zero(), F::zero()};
    std::memcpy(out, &canon, sizeof canon);
}

// h, l, a, b_g1 as (2, 6) uint64 each, then b_g2 as (2, 2, 6): 72 in all.
inline void write_sums(const proof_sums& sums, uint64_t* out) {
    write_affine<fq_t>(sums.h, out);
    write_affine<fq_t>(sums.l, out + 12);
    write_affine<fq_t>(sums.a, out + 24);
    write_affine<fq_t>(sums.b_g1, out + 36);
    write_affine<fq2_t>(sums.b_g2, out + 48);
}
