// Fixed-base scalar multiplication of the generators of G1 and G2 on the device: k_i G for
// millions of k_i (test keys, kernels/keygen.cuh; benchmark keys, bench/), and the generator
// helpers the benchmark inputs share.
#pragma once
#include <type_traits>

#include "context.cuh"
#include "curve.cuh"

// The generators of G1 and G2 (affine, canonical limbs).
CZ_HD void g1_generator_limbs(fq_t& x, fq_t& y) {
    const uint32_t gx[12] = {0xdb22c6bbu, 0xfb3af00au, 0xf97a1aefu, 0x6c55e83fu, 0x171bac58u, 0xa14e3a3fu,
                             0x9774b905u, 0xc3688c4fu, 0x4fa9ac0fu, 0x2695638cu, 0x3197d794u, 0x17f1d3a7u};
    const uint32_t gy[12] = {0x46c5e7e1u, 0x0caa2329u, 0xa2888ae4u, 0xd03cc744u, 0x2c04b3edu, 0x00db18cbu,
                             0xd5d00af6u, 0xfcf5e095u, 0x741d8ae4u, 0xa09e30edu, 0xe3aaa0f1u, 0x08b3f481u};
    for (int i = 0; i < 12; i++) {
        x.v[i] = gx[i];
        y.v[i] = gy[i];
    }
}

CZ_HD void g2_generator_limbs(fq2_t& x, fq2_t& y) {
    const uint32_t x0[12] = {0xc121bdb8u, 0xd48056c8u, 0xa805bbefu, 0x0bac0326u, 0x7ae3d177u, 0xb4510b64u,
                             0xfa403b02u, 0xc6e47ad4u, 0x2dc51051u, 0x26080527u, 0xf08f0a91u, 0x024aa2b2u};
    const uint32_t x1[12] = {0x5d042b7eu, 0xe5ac7d05u, 0x13945d57u, 0x334cf112u, 0xdc7f5049u, 0xb5da61bbu,
                             0x9920b61au, 0x596bd0d0u, 0x88274f65u, 0x7dacd3a0u, 0x52719f60u, 0x13e02b60u};
    const uint32_t y0[12] = {0x08b82801u, 0xe1935486u, 0x3baca289u, 0x923ac9ccu, 0x5160d12cu, 0x6d429a69u,
                             0x8cbdd3a7u, 0xadfd9baau, 0xda2e351au, 0x8cc9cdc6u, 0x727d6e11u, 0x0ce5d527u};
    const uint32_t y1[12] = {0xf05f79beu, 0xaaa9075fu, 0x5cec1da1u, 0x3f370d27u, 0x572e99abu, 0x267492abu,
                             0x85a763afu, 0xcb3e287eu, 0x2bc28b99u, 0x32acd2b0u, 0x2ea734ccu, 0x0606c4a0u};
    for (int i = 0; i < 12; i++) {
        x.c0.v[i] = x0[i];
        x.c1.v[i] = x1[i];
        y.c0.v[i] = y0[i];
        y.c1.v[i] = y1[i];
    }
}

// The generator of G1 (F = fq_t) or G2 (fq2_t), affine, Montgomery form.
template <class F>
CZ_HD affine_t<F> generator_mont() {
    affine_t<F> g;
    if constexpr (std::is_same_v<F, fq2_t>)
        g2_generator_limbs(g.x, g.y);
    else
        g1_generator_limbs(g.x, g.y);
    return {g.x.to_mont(), g.y.to_mont()};
}

// k * G by double and add over the canonical bits of k (tables and host checks, not bulk work).
template <class F>
__host__ __device__ xyzz_t<F> mul_generator(const fr_t& k_canonical) {
    affine_t<F> g = generator_mont<F>();
    xyzz_t<F> acc = xyzz_t<F>::identity();
#pragma unroll 1
    for (int b = 254; b >= 0; b--) {
        acc = acc.dbl();
        if ((k_canonical.v[b >> 5] >> (b & 31)) & 1) acc = acc.add_affine(g);
    }
    return acc;
}

// Thread t turns the XYZZ points point(i), i = t + k * nthreads (k < kBatchAffine), into affine
// points with one inversion: Montgomery's trick over ZZ * ZZZ (1/ZZ = ZZZ / (ZZ ZZZ),
// 1/ZZZ = ZZ / (ZZ ZZZ)). point(i) is evaluated again in the backward pass (cheaper than keeping
// 2 x 32 field elements live); identities become (0, 0). Launch ceil(n / kBatchAffine) threads.
constexpr int kBatchAffine = 32;

template <class F, class Point>
__device__ __forceinline__ void batch_to_affine(Point point, size_t n, affine_t<F>* out) {
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t nthreads = (size_t)gridDim.x * blockDim.x;
    F prefix[kBatchAffine];
    F acc = F::one();
    int cnt = 0;
    for (int k = 0; k < kBatchAffine; k++) {
        size_t i = t + k * nthreads;
        if (i >= n) break;
        xyzz_t<F> p = point(i);
        prefix[k] = acc;  // product of the earlier points' ZZ * ZZZ
        if (!p.is_identity()) acc = acc * (p.ZZ * p.ZZZ);
        cnt = k + 1;
    }
    if (cnt == 0) return;
    F inv = acc.inverse();
    for (int k = cnt - 1; k >= 0; k--) {
        size_t i = t + k * nthreads;
        xyzz_t<F> p = point(i);
        if (p.is_identity()) {
            out[i] = {F::zero(), F::zero()};
            continue;
        }
        F z_inv = inv * prefix[k];  // 1 / (ZZ ZZZ)
        inv = inv * (p.ZZ * p.ZZZ);
        out[i] = {p.X * (z_inv * p.ZZZ), p.Y * (z_inv * p.ZZ)};
    }
}

// The comb's table of one group in device memory: entry (w, d) = d 2^(c w) G for c =
// kCombBits, 22 windows of 4096 entries (8.6 MB in G1, 17 MB in G2; L2-resident in use).
// Built once and used for every vector of a key.
constexpr int kCombBits = 12;
constexpr int kCombWindows = (255 + kCombBits - 1) / kCombBits;  // 22
constexpr uint32_t kCombEntries = (uint32_t)kCombWindows << kCombBits;

template <class F>
struct fixed_base_table {
    dev_buf<affine_t<F>> table;
    explicit fixed_base_table(cudaStream_t stream);
};

// out[i] = k_i G (affine, Montgomery; the identity (0, 0) for k_i = 0) for Montgomery scalars
// k_i < r: one table entry a window (~21 mixed additions a point), batch inversion to affine,
// 2^22 points at a time (their XYZZ form is the only transient: 0.8 GB in G1, 1.6 GB in G2).
template <class F>
void fixed_base_mul(cudaStream_t stream, const fixed_base_table<F>& table, const fr_t* k_mont, size_t n,
                    affine_t<F>* out);

// The same with a table built for this call.
template <class F>
void fixed_base_mul(cudaStream_t stream, const fr_t* k_mont, size_t n, affine_t<F>* out);
