// Fixed-base multiplication of the generators (see fixed_base.cuh).
#include <algorithm>

#include "fixed_base.cuh"

namespace {

// Entry (w, d) of the comb's table; entries whose multiplier reaches 2^255 are never read
// (scalars are < r < 2^255) and stay the identity.
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

}  // namespace

template <class F>
fixed_base_table<F>::fixed_base_table(cudaStream_t stream) : table(kCombEntries, stream) {
    comb_table_kernel<F><<<blocks_for(kCombEntries, 64), 64, 0, stream>>>(table.get());
    CZ_CHECK_LAUNCH();
}

template <class F>
void fixed_base_mul(cudaStream_t stream, const fixed_base_table<F>& table, const fr_t* k_mont, size_t n,
                    affine_t<F>* out) {
    if (n == 0) return;
    const size_t chunk = std::min<size_t>(n, 1u << 22);
    dev_buf<xyzz_t<F>> tmp(chunk, stream);
    for (size_t off = 0; off < n; off += chunk) {
        size_t cnt = std::min(chunk, n - off);
        comb_kernel<F><<<blocks_for(cnt, 128), 128, 0, stream>>>(table.table.get(), k_mont + off, cnt, tmp.get());
        CZ_CHECK_LAUNCH();
        size_t threads = (cnt + kBatchAffine - 1) / kBatchAffine;
        to_affine_kernel<F><<<blocks_for(threads, 64), 64, 0, stream>>>(tmp.get(), cnt, out + off);
        CZ_CHECK_LAUNCH();
    }
}

template <class F>
void fixed_base_mul(cudaStream_t stream, const fr_t* k_mont, size_t n, affine_t<F>* out) {
    if (n == 0) return;
    fixed_base_table<F> table(stream);
    fixed_base_mul<F>(stream, table, k_mont, n, out);
}

template struct fixed_base_table<fq_t>;
template struct fixed_base_table<fq2_t>;
template void fixed_base_mul<fq_t>(cudaStream_t, const fixed_base_table<fq_t>&, const fr_t*, size_t, affine_t<fq_t>*);
template void fixed_base_mul<fq2_t>(cudaStream_t, const fixed_base_table<fq2_t>&, const fr_t*, size_t,
                                    affine_t<fq2_t>*);
template void fixed_base_mul<fq_t>(cudaStream_t, const fr_t*, size_t, affine_t<fq_t>*);
template void fixed_base_mul<fq2_t>(cudaStream_t, const fr_t*, size_t, affine_t<fq2_t>*);
