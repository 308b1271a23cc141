// Inputs made on the device for benchmarks and self-checks, so that 2^27 bases never have to
// cross PCIe or be computed on the CPU: pseudo-random scalars, and bases with known discrete
// logarithms (fixed-base multiplication of the generator), which make every MSM checkable:
// sum_i s_i (k_i G) = (sum_i s_i k_i) G.
#pragma once
#include "context.cuh"
#include "curve.cuh"

// Canonical Fr scalars below 2^254 (< r). A fraction `frac_bits` of them are 0 or 1 (half
// each), like Filecoin witnesses; the rest uniform.
void random_scalars(cudaStream_t stream, fr_t* out, size_t n, uint64_t seed, double frac_bits);

// n affine bases P_i = k_i G (Montgomery) with k_i = x[i >> lo_bits] + y[i & mask]: two small
// tables of random multiples of G, one addition a point, batch inversion to affine.
// dlog (Montgomery Fr, n entries) receives k_i when not null.
template <class F>
void random_bases(cudaStream_t stream, affine_t<F>* out, size_t n, uint64_t seed, fr_t* dlog);

// out[i] = k_i G (affine, Montgomery; the identity (0, 0) for k_i = 0) for Montgomery scalars
// k_i: a comb over a table of d 2^(12 w) G in L2, ~21 mixed additions a point, batch
// inversion to affine. Makes a 2^27-point key vector in seconds (benchmark keys).
template <class F>
void fixed_base_mul(cudaStream_t stream, const fr_t* k_mont, size_t n, affine_t<F>* out);

// out[i] = value for i < n.
void fill(cudaStream_t stream, fr_t* out, size_t n, const fr_t& value);

// sum_i s_i k_i mod r (s canonical, k Montgomery); result in Montgomery form.
fr_t dot_mod_r(cudaStream_t stream, const fr_t* s, const fr_t* k, size_t n);

// The generator of G1 / G2 (Montgomery affine) and k * G on the host.
template <class F>
affine_t<F> generator();
template <class F>
xyzz_t<F> mul_generator_host(const fr_t& k_mont);
