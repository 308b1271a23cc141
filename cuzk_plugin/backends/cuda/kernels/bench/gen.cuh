// Inputs made on the device for benchmarks and self-checks, so that 2^27 bases never have to
// cross PCIe or be computed on the CPU: pseudo-random scalars, and bases with known discrete
// logarithms (fixed-base multiplication of the generator), which make every MSM checkable:
// sum_i s_i (k_i G) = (sum_i s_i k_i) G. fixed_base_mul and fill, which the benchmark keys use
// too, are production code (keygen.cuh, fixed_base.cuh).
#pragma once
#include "keygen.cuh"

// splitmix64: the benchmarks' pseudo-random stream, the same on the host and the device.
__host__ __device__ inline uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Canonical Fr scalars below 2^254 (< r). A fraction `frac_bits` of them are 0 or 1 (half
// each), like Filecoin witnesses; the rest uniform.
void random_scalars(cudaStream_t stream, fr_t* out, size_t n, uint64_t seed, double frac_bits);

// n affine bases P_i = k_i G (Montgomery) with k_i = x[i >> lo_bits] + y[i & mask]: two small
// tables of random multiples of G, one addition a point, batch inversion to affine.
// dlog (Montgomery Fr, n entries) receives k_i when not null.
template <class F>
void random_bases(cudaStream_t stream, affine_t<F>* out, size_t n, uint64_t seed, fr_t* dlog);

// sum_i s_i k_i mod r (s canonical, k Montgomery); result in Montgomery form.
fr_t dot_mod_r(cudaStream_t stream, const fr_t* s, const fr_t* k, size_t n);

// The generator of G1 / G2 (Montgomery affine) and k * G on the host.
template <class F>
affine_t<F> generator();
template <class F>
xyzz_t<F> mul_generator_host(const fr_t& k_mont);
