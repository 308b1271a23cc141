// Probe (not part of the library): the 14 x 28-bit column-wise Montgomery product of
// bench/probes/field28.cuh (in the library as a bucket-loop mode until run 11 measured it 1.9x
// slower than the even/odd 32-bit product), for its SASS instruction count, and a host run
// checked with Python integers.
//
//   nvcc -std=c++17 -O3 --expt-relaxed-constexpr -arch=sm_90 -I cuzk_plugin/backends/cuda/kernels \
//        -I bench/probes bench/probes/fq_mul28.cu -o /tmp/fq28
//   /tmp/fq28 | python3 bench/probes/check_fq_mul28.py      # r 2^392 == a b (mod p), r < 2p
//   nvcc ... -cubin -o /tmp/fq28.cubin && cuobjdump -sass /tmp/fq28.cubin   # instruction counts
#include <cstdio>
#include <random>

#include "field28.cuh"

__global__ void k_mul28(fq28_t* x, int n) {
    fq28_t a = x[threadIdx.x], b = x[threadIdx.x + 32];
    x[threadIdx.x] = a * b;
}

// Dependent products in a loop, for a per-product count inside a loop body.
__global__ void k_mul28_loop(fq28_t* x, int n) {
    fq28_t a = x[threadIdx.x], b = x[threadIdx.x + 32];
#pragma unroll 1
    for (int i = 0; i < n; i++) a = a * b;
    x[threadIdx.x] = a;
}

int main() {
    std::mt19937_64 rng(7);
    for (int t = 0; t < 200; t++) {
        fq28_t a, b;
        for (int i = 0; i < fq28_t::L; i++) a.v[i] = (uint32_t)rng() & fq28_t::MASK, b.v[i] = (uint32_t)rng() & fq28_t::MASK;
        a.v[fq28_t::L - 1] &= 0xffff, b.v[fq28_t::L - 1] &= 0xffff;  // below 2^380 < p
        fq28_t r = a * b;
        for (int i = 0; i < fq28_t::L; i++) std::printf("%07x%s", a.v[i], i + 1 < fq28_t::L ? "," : " ");
        for (int i = 0; i < fq28_t::L; i++) std::printf("%07x%s", b.v[i], i + 1 < fq28_t::L ? "," : " ");
        for (int i = 0; i < fq28_t::L; i++) std::printf("%x%s", r.v[i], i + 1 < fq28_t::L ? "," : "\n");
    }
    return 0;
}
