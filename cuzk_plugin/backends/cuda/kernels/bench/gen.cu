// Device-side generation of benchmark inputs (see gen.cuh).
#include <algorithm>
#include <vector>

#include "gen.cuh"

namespace {

__host__ __device__ inline uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

__device__ fr_t random_fr_below_2_254(uint64_t seed, uint64_t i) {
    fr_t k;
    uint64_t h = seed ^ (i * 0xd1b54a32d192ed03ull);
    for (int j = 0; j < 4; j++) {
        h = splitmix64(h);
        k.v[2 * j] = (uint32_t)h;
        k.v[2 * j + 1] = (uint32_t)(h >> 32);
    }
    k.v[7] &= 0x3fffffffu;  // < 2^254 < r
    return k;
}

__global__ void random_scalars_kernel(fr_t* out, size_t n, uint64_t seed, uint64_t bits_threshold) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint64_t u = splitmix64(seed * 31 + i);
    if (u < bits_threshold) {
        fr_t k = fr_t::zero();
        k.v[0] = (uint32_t)(u & 1);
        out[i] = k;
    } else {
        out[i] = random_fr_below_2_254(seed, i);
    }
}

__device__ __host__ inline void g1_generator_limbs(fq_t& x, fq_t& y) {
    const uint32_t gx[12] = {0xdb22c6bbu, 0xfb3af00au, 0xf97a1aefu, 0x6c55e83fu, 0x171bac58u, 0xa14e3a3fu,
                             0x9774b905u, 0xc3688c4fu, 0x4fa9ac0fu, 0x2695638cu, 0x3197d794u, 0x17f1d3a7u};
    const uint32_t gy[12] = {0x46c5e7e1u, 0x0caa2329u, 0xa2888ae4u, 0xd03cc744u, 0x2c04b3edu, 0x00db18cbu,
                             0xd5d00af6u, 0xfcf5e095u, 0x741d8ae4u, 0xa09e30edu, 0xe3aaa0f1u, 0x08b3f481u};
    for (int i = 0; i < 12; i++) {
        x.v[i] = gx[i];
        y.v[i] = gy[i];
    }
}

__device__ __host__ inline void g2_generator_limbs(fq2_t& x, fq2_t& y) {
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

template <class F>
__host__ __device__ affine_t<F> generator_mont();

template <>
__host__ __device__ affine_t<fq_t> generator_mont<fq_t>() {
    affine_t<fq_t> g;
    g1_generator_limbs(g.x, g.y);
    return {g.x.to_mont(), g.y.to_mont()};
}

template <>
__host__ __device__ affine_t<fq2_t> generator_mont<fq2_t>() {
    affine_t<fq2_t> g;
    g2_generator_limbs(g.x, g.y);
    return {g.x.to_mont(), g.y.to_mont()};
}

// k * G by double and add over the canonical bits of k.
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

// table[j] = k_j G (affine), k_j random (Montgomery copy in dlogs).
template <class F>
__global__ void table_kernel(affine_t<F>* table, fr_t* dlogs, uint32_t count, uint64_t seed) {
    uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= count) return;
    fr_t k = random_fr_below_2_254(seed, j);
    dlogs[j] = k.to_mont();
    table[j] = mul_generator<F>(k).to_affine();
}

// Thread t turns the XYZZ points point(i), i = t + k * nthreads (k < kPerThread), into affine
// points with one inversion: Montgomery's trick over ZZ * ZZZ (1/ZZ = ZZZ / (ZZ ZZZ),
// 1/ZZZ = ZZ / (ZZ ZZZ)). point(i) is evaluated again in the backward pass (cheaper than keeping
// 2 x 32 field elements live); identities stay (0, 0).
constexpr int kPerThread = 32;

template <class F, class Point>
__device__ __forceinline__ void batch_to_affine(Point point, size_t n, affine_t<F>* out) {
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t nthreads = (size_t)gridDim.x * blockDim.x;
    F prefix[kPerThread];
    F acc = F::one();
    int cnt = 0;
    for (int k = 0; k < kPerThread; k++) {
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

// Points X[hi] + Y[lo] (and their discrete logs), kPerThread a thread.
template <class F>
__global__ void combine_kernel(const affine_t<F>* X, const affine_t<F>* Y, const fr_t* xd, const fr_t* yd,
                               int lo_bits, size_t n, affine_t<F>* out, fr_t* dlog) {
    const uint64_t mask = (1ull << lo_bits) - 1;
    if (dlog) {
        size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, nthreads = (size_t)gridDim.x * blockDim.x;
        for (size_t i = t; i < n && i < t + kPerThread * nthreads; i += nthreads)
            dlog[i] = xd[i >> lo_bits] + yd[i & mask];
    }
    batch_to_affine<F>([&](size_t i) { return xyzz_t<F>::from_affine(X[i >> lo_bits]).add_affine(Y[i & mask]); },
                       n, out);
}

// The comb's table: entry (w, d) = d 2^(c w) G, c = kCombBits. Entries whose multiplier
// reaches 2^255 are never read (scalars are < r < 2^255) and stay the identity.
constexpr int kCombBits = 12;
constexpr int kCombWindows = (255 + kCombBits - 1) / kCombBits;  // 22
constexpr uint32_t kCombEntries = (uint32_t)kCombWindows << kCombBits;

template <class F>
__global__ void comb_table_kernel(affine_t<F>* table) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= kCombEntries) return;
    uint32_t w = t >> kCombBits, d = t & ((1u << kCombBits) - 1);
    int bit = kCombBits * w;
    if (d == 0 || bit + (32 - __clz(d)) > 255) {
        table[t] = {F::zero(), F::zero()};
        return;
    }
    fr_t k = fr_t::zero();  // d 2^bit as a plain 256-bit integer
    uint64_t v = (uint64_t)d << (bit & 31);
    k.v[bit >> 5] = (uint32_t)v;
    if ((bit >> 5) + 1 < 8) k.v[(bit >> 5) + 1] = (uint32_t)(v >> 32);
    table[t] = mul_generator<F>(k).to_affine();
}

// out[i] = k_i G in XYZZ: one table entry a window.
template <class F>
__global__ void comb_kernel(const affine_t<F>* __restrict__ table, const fr_t* __restrict__ k_mont, size_t n,
                            xyzz_t<F>* out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr_t k = k_mont[i].from_mont();
    xyzz_t<F> acc = xyzz_t<F>::identity();
    for (int w = 0; w < kCombWindows; w++) {
        int bit = kCombBits * w, word = bit >> 5, sh = bit & 31;
        uint64_t two = (uint64_t)k.v[word] | ((uint64_t)(word + 1 < 8 ? k.v[word + 1] : 0) << 32);
        uint32_t d = (uint32_t)(two >> sh) & ((1u << kCombBits) - 1);
        if (d) acc = acc.add_affine(table[((uint32_t)w << kCombBits) | d]);
    }
    out[i] = acc;
}

template <class F>
__global__ void to_affine_kernel(const xyzz_t<F>* in, size_t n, affine_t<F>* out) {
    batch_to_affine<F>([&](size_t i) { return in[i]; }, n, out);
}

__global__ void fill_kernel(fr_t* out, size_t n, fr_t value) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}

__global__ void dot_kernel(const fr_t* s, const fr_t* k, size_t n, fr_t* partials) {
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t nthreads = (size_t)gridDim.x * blockDim.x;
    fr_t acc = fr_t::zero();
    for (size_t i = t; i < n; i += nthreads) acc = acc + s[i].to_mont() * k[i];
    partials[t] = acc;
}

}  // namespace

void random_scalars(cudaStream_t stream, fr_t* out, size_t n, uint64_t seed, double frac_bits) {
    if (n == 0) return;
    uint64_t threshold = frac_bits <= 0 ? 0 : frac_bits >= 1 ? ~0ull : (uint64_t)(frac_bits * 18446744073709551615.0);
    random_scalars_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(out, n, seed, threshold);
    CZ_CHECK_LAUNCH();
}

template <class F>
void random_bases(cudaStream_t stream, affine_t<F>* out, size_t n, uint64_t seed, fr_t* dlog) {
    if (n == 0) return;
    int log_n = log2_ceil(n);
    int lo_bits = (log_n + 1) / 2, hi_bits = log_n - lo_bits;
    uint32_t nx = 1u << hi_bits, ny = 1u << lo_bits;
    dev_buf<affine_t<F>> X(nx, stream), Y(ny, stream);
    dev_buf<fr_t> xd(nx, stream), yd(ny, stream);
    table_kernel<F><<<blocks_for(nx, 64), 64, 0, stream>>>(X.get(), xd.get(), nx, seed * 2 + 1);
    CZ_CHECK_LAUNCH();
    table_kernel<F><<<blocks_for(ny, 64), 64, 0, stream>>>(Y.get(), yd.get(), ny, seed * 2 + 2);
    CZ_CHECK_LAUNCH();
    size_t threads = (n + kPerThread - 1) / kPerThread;
    combine_kernel<F><<<blocks_for(threads, 64), 64, 0, stream>>>(X.get(), Y.get(), xd.get(), yd.get(), lo_bits, n,
                                                                   out, dlog);
    CZ_CHECK_LAUNCH();
}

template <class F>
void fixed_base_mul(cudaStream_t stream, const fr_t* k_mont, size_t n, affine_t<F>* out) {
    if (n == 0) return;
    dev_buf<affine_t<F>> table(kCombEntries, stream);
    comb_table_kernel<F><<<blocks_for(kCombEntries, 64), 64, 0, stream>>>(table.get());
    CZ_CHECK_LAUNCH();
    const size_t chunk = std::min<size_t>(n, 1u << 22);
    dev_buf<xyzz_t<F>> tmp(chunk, stream);
    for (size_t off = 0; off < n; off += chunk) {
        size_t cnt = std::min(chunk, n - off);
        comb_kernel<F><<<blocks_for(cnt, 128), 128, 0, stream>>>(table.get(), k_mont + off, cnt, tmp.get());
        CZ_CHECK_LAUNCH();
        size_t threads = (cnt + kPerThread - 1) / kPerThread;
        to_affine_kernel<F><<<blocks_for(threads, 64), 64, 0, stream>>>(tmp.get(), cnt, out + off);
        CZ_CHECK_LAUNCH();
    }
}

void fill(cudaStream_t stream, fr_t* out, size_t n, const fr_t& value) {
    if (n == 0) return;
    fill_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(out, n, value);
    CZ_CHECK_LAUNCH();
}

fr_t dot_mod_r(cudaStream_t stream, const fr_t* s, const fr_t* k, size_t n) {
    const unsigned blocks = 1024, threads = 128;
    dev_buf<fr_t> partials(blocks * threads, stream);
    dot_kernel<<<blocks, threads, 0, stream>>>(s, k, n, partials.get());
    CZ_CHECK_LAUNCH();
    std::vector<fr_t> host(blocks * threads);
    CZ_CHECK(cudaMemcpyAsync(host.data(), partials.get(), partials.bytes(), cudaMemcpyDeviceToHost, stream));
    CZ_CHECK(cudaStreamSynchronize(stream));
    fr_t acc = fr_t::zero();
    for (auto& x : host) acc = acc + x;
    return acc;
}

template <class F>
affine_t<F> generator() {
    return generator_mont<F>();
}

template <class F>
xyzz_t<F> mul_generator_host(const fr_t& k_mont) {
    return mul_generator<F>(k_mont.from_mont());
}

template void random_bases<fq_t>(cudaStream_t, affine_t<fq_t>*, size_t, uint64_t, fr_t*);
template void random_bases<fq2_t>(cudaStream_t, affine_t<fq2_t>*, size_t, uint64_t, fr_t*);
template void fixed_base_mul<fq_t>(cudaStream_t, const fr_t*, size_t, affine_t<fq_t>*);
template void fixed_base_mul<fq2_t>(cudaStream_t, const fr_t*, size_t, affine_t<fq2_t>*);
template affine_t<fq_t> generator<fq_t>();
template affine_t<fq2_t> generator<fq2_t>();
template xyzz_t<fq_t> mul_generator_host<fq_t>(const fr_t&);
template xyzz_t<fq2_t> mul_generator_host<fq2_t>(const fr_t&);
