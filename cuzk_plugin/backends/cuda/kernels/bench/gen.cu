// Device-side generation of benchmark inputs (see gen.cuh); the generators and the batch
// inversion to affine are fixed_base.cuh's.
#include <algorithm>
#include <vector>

#include "gen.cuh"

namespace {

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

// table[j] = k_j G (affine), k_j random (Montgomery copy in dlogs).
template <class F>
__global__ void table_kernel(affine_t<F>* table, fr_t* dlogs, uint32_t count, uint64_t seed) {
    uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= count) return;
    fr_t k = random_fr_below_2_254(seed, j);
    dlogs[j] = k.to_mont();
    table[j] = mul_generator<F>(k).to_affine();
}

// Points X[hi] + Y[lo] (and their discrete logs), kBatchAffine a thread.
template <class F>
__global__ void combine_kernel(const affine_t<F>* X, const affine_t<F>* Y, const fr_t* xd, const fr_t* yd,
                               int lo_bits, size_t n, affine_t<F>* out, fr_t* dlog) {
    const uint64_t mask = (1ull << lo_bits) - 1;
    if (dlog) {
        size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, nthreads = (size_t)gridDim.x * blockDim.x;
        for (size_t i = t; i < n && i < t + kBatchAffine * nthreads; i += nthreads)
            dlog[i] = xd[i >> lo_bits] + yd[i & mask];
    }
    batch_to_affine<F>([&](size_t i) { return xyzz_t<F>::from_affine(X[i >> lo_bits]).add_affine(Y[i & mask]); },
                       n, out);
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
    size_t threads = (n + kBatchAffine - 1) / kBatchAffine;
    combine_kernel<F><<<blocks_for(threads, 64), 64, 0, stream>>>(X.get(), Y.get(), xd.get(), yd.get(), lo_bits, n,
                                                                   out, dlog);
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
template affine_t<fq_t> generator<fq_t>();
template affine_t<fq2_t> generator<fq2_t>();
template xyzz_t<fq_t> mul_generator_host<fq_t>(const fr_t&);
template xyzz_t<fq2_t> mul_generator_host<fq2_t>(const fr_t&);
