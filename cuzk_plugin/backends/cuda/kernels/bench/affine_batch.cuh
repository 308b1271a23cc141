// Affine point additions in batches that share one field inversion (Montgomery's trick), the
// addition a batch-affine bucket loop would make (issue 27): 5M + 1S an addition plus 1/K of an
// inversion (~550 multiplications by Fermat), against 8M + 2S for the bucket loop's mixed XYZZ
// addition. Bench-only until cz_bench_point_adds shows it wins on the device.
//
// acc += p in affine coordinates (y^2 = x^3 + b, (0, 0) the identity):
//   lambda = (y_p - y_acc) / (x_p - x_acc), or 3 x^2 / (2 y) where p = acc (doubling);
//   x3 = lambda^2 - x_acc - x_p, y3 = lambda (x_acc - x3) - y_acc (the same for a doubling,
//   where x_p = x_acc). p = -acc gives the identity; y = 0 has no point of odd order.
#pragma once
#include "curve.cuh"

// What adding p to acc takes.
enum affine_step : uint8_t { kAffineKeep = 0, kAffineCopy = 1, kAffineAdd = 2, kAffineDouble = 3, kAffineZero = 4 };

template <class F>
CZ_HD affine_step affine_step_of(const affine_t<F>& acc, const affine_t<F>& p) {
    if (p.is_identity()) return kAffineKeep;
    if (acc.is_identity()) return kAffineCopy;
    if (!(acc.x == p.x)) return kAffineAdd;
    return acc.y == p.y ? kAffineDouble : kAffineZero;
}

// The slope's denominator: x_p - x_acc, or 2 y_acc for a doubling.
template <class F>
CZ_HD F affine_slope_denominator(affine_step step, const affine_t<F>& acc, const affine_t<F>& p) {
    return step == kAffineAdd ? p.x - acc.x : acc.y.dbl();
}

// acc[k] += point(k) for every k < K with one inversion: the denominators multiplied up
// (prefix[k]: the product of those before k), their product inverted, and each 1/d_k recovered
// on the way back (1/d_k = prefix[k] / (d_0 ... d_k)). point(k) is read twice (forward and
// backward) rather than kept: K points would not stay in registers. prefix: the caller's
// scratch (K field elements, local memory on the device).
template <class F, int K, class Point>
CZ_HD void affine_batch_add(affine_t<F> (&acc)[K], Point point, F (&prefix)[K]) {
    affine_step step[K];
    F run = F::one();
    bool any = false;
    for (int k = 0; k < K; k++) {
        const affine_t<F> p = point(k);
        step[k] = affine_step_of(acc[k], p);
        if (step[k] == kAffineAdd || step[k] == kAffineDouble) {
            prefix[k] = run;
            run = run * affine_slope_denominator(step[k], acc[k], p);
            any = true;
        } else if (step[k] == kAffineCopy) {
            acc[k] = p;
        } else if (step[k] == kAffineZero) {
            acc[k] = {F::zero(), F::zero()};
        }
    }
    if (!any) return;
    F inv = run.inverse();  // 1 / (d_0 ... d_last)
    for (int k = K - 1; k >= 0; k--) {
        if (step[k] != kAffineAdd && step[k] != kAffineDouble) continue;
        const affine_t<F> p = point(k);
        const F d = affine_slope_denominator(step[k], acc[k], p);
        const F d_inv = inv * prefix[k];
        inv = inv * d;
        F lambda;
        if (step[k] == kAffineAdd) {
            lambda = (p.y - acc[k].y) * d_inv;
        } else {
            const F xx = acc[k].x.sqr();
            lambda = (xx.dbl() + xx) * d_inv;
        }
        const F x3 = lambda.sqr() - acc[k].x - p.x;
        acc[k] = {x3, lambda * (acc[k].x - x3) - acc[k].y};
    }
}
