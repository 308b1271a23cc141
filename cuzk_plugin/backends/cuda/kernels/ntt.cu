// NTT over Fr with several stages per launch in shared memory.
//
// A launch covers g consecutive stages, i.e. index bits [low, low + g). Each block loads the
// 2^g elements that differ only in those bits (times 2^cols neighbouring columns so global
// loads come in runs of 2^cols consecutive 32-byte elements), runs its g stages in shared
// memory (two at a time as radix-4 steps, an odd last one as radix-2), and writes back.
// log N = 27 takes three launches instead of 27.
// Stage s (1..log N) works on blocks of 2^s with twiddle omega_{2^s}^j = omega_N^(j 2^(logN - s)).
#include "ntt.cuh"

namespace {

constexpr int kMaxGroupLog = 10;  // 2^10 elements x 32 B = 32 KB of shared memory a block

// Where a launch's block reads and writes: element e of the block (e < E = 2^(g + cols)) is
// global index (hi << top) | (e >> cols) << low | (lo_base + (e & col_mask)).
struct group_layout {
    int log_n, low, g, cols, top;
    uint32_t E, col_mask;
    uint64_t lo_base, hi;
    __device__ __forceinline__ group_layout(int log_n_, int low_, int g_, int cols_)
        : log_n(log_n_), low(low_), g(g_), cols(cols_), top(low_ + g_) {
        E = 1u << (g + cols);
        col_mask = (1u << cols) - 1;
        const uint32_t lo_blocks_log = low - cols;  // low index bits not covered by cols
        const uint64_t b = blockIdx.x;
        lo_base = (b & ((1ull << lo_blocks_log) - 1)) << cols;
        hi = b >> lo_blocks_log;
    }
    __device__ __forceinline__ uint64_t global_index(uint32_t e) const {
        return (hi << top) | ((uint64_t)(e >> cols) << low) | (lo_base + (e & col_mask));
    }
};

__device__ __forceinline__ void load_group(fr_t* sh, const fr_t* __restrict__ d, const group_layout& L) {
    for (uint32_t e = threadIdx.x; e < L.E; e += blockDim.x) sh[e] = d[L.global_index(e)];
    __syncthreads();
}

__device__ __forceinline__ void store_group(fr_t* __restrict__ d, const fr_t* sh, const group_layout& L) {
    for (uint32_t e = threadIdx.x; e < L.E; e += blockDim.x) d[L.global_index(e)] = sh[e];
}

// The radix-4 steps (local bits p and p + 1 at once; s = low + p + 1 is the stage of bit p)
// over the block's quads: four elements in registers, half the shared-memory round trips and
// barriers of radix-2. The quad t0 + k 2^p, k = 0..3, shares j = t0 mod 2^p: bit p's stage
// uses w_s^j for both of its pairs, bit p + 1's uses w_(s+1)^j for (0, 2) and
// w_(s+1)^(j + 2^p) for (1, 3). Returns the stages done (g rounded down to even).
template <bool DIT, class TW>
__device__ __forceinline__ int radix4_steps(fr_t* sh, const TW& tw, const group_layout& L) {
    int step = 0;
    for (; step + 1 < L.g; step += 2) {
        const int p = DIT ? step : L.g - 2 - step;
        const int s = L.low + p + 1;
        for (uint32_t u = threadIdx.x; u < (L.E >> 2); u += blockDim.x) {
            uint32_t lo_off = u & L.col_mask;
            uint32_t q = u >> L.cols;
            uint32_t t0 = ((q >> p) << (p + 2)) | (q & ((1u << p) - 1));
            uint64_t j = ((uint64_t)(t0 & ((1u << p) - 1)) << L.low) | (L.lo_base + lo_off);
            fr_t wa = tw[j << (L.log_n - s)];
            fr_t wb = tw[j << (L.log_n - s - 1)];
            fr_t wc = tw[(j + (1ull << (L.low + p))) << (L.log_n - s - 1)];
            uint32_t i0 = (t0 << L.cols) | lo_off, st = 1u << (p + L.cols);
            fr_t x0 = sh[i0], x1 = sh[i0 + st], x2 = sh[i0 + 2 * st], x3 = sh[i0 + 3 * st];
            if (DIT) {
                fr_t p1 = wa * x1, p3 = wa * x3;
                fr_t y0 = x0 + p1, y1 = x0 - p1, y2 = x2 + p3, y3 = x2 - p3;
                fr_t q2 = wb * y2, q3 = wc * y3;
                sh[i0] = y0 + q2, sh[i0 + 2 * st] = y0 - q2;
                sh[i0 + st] = y1 + q3, sh[i0 + 3 * st] = y1 - q3;
            } else {
                fr_t y0 = x0 + x2, y1 = x1 + x3, y2 = (x0 - x2) * wb, y3 = (x1 - x3) * wc;
                sh[i0] = y0 + y1, sh[i0 + st] = (y0 - y1) * wa;
                sh[i0 + 2 * st] = y2 + y3, sh[i0 + 3 * st] = (y2 - y3) * wa;
            }
        }
        __syncthreads();
    }
    return step;
}

// Butterfly u of the radix-2 stage on local bit p (global stage s): its two shared-memory
// slots and its twiddle.
template <class TW>
__device__ __forceinline__ void radix2_slots(const group_layout& L, const TW& tw, int p, int s, uint32_t u,
                                             uint32_t& i0, uint32_t& i1, fr_t& w) {
    uint32_t lo_off = u & L.col_mask;
    uint32_t q = u >> L.cols;
    uint32_t t0 = ((q >> p) << (p + 1)) | (q & ((1u << p) - 1));
    uint64_t j = ((uint64_t)(t0 & ((1u << p) - 1)) << L.low) | (L.lo_base + lo_off);
    w = tw[j << (L.log_n - s)];
    i0 = (t0 << L.cols) | lo_off;
    i1 = ((t0 + (1u << p)) << L.cols) | lo_off;
}

// Radix-2 stages from `step` to g. PAIRED: two butterflies a thread with their products
// interleaved (the odd last stage after radix-4 steps; a block has >= 4 elements); else one
// butterfly a thread (blocks of two elements).
template <bool DIT, bool PAIRED, class TW>
__device__ __forceinline__ void radix2_steps(fr_t* sh, const TW& tw, const group_layout& L, int step) {
    const uint32_t T = L.E >> 1;
    for (; step < L.g; step++) {
        const int p = DIT ? step : L.g - 1 - step;  // local bit of this stage
        const int s = L.low + p + 1;                 // global stage
        if constexpr (PAIRED) {
            for (uint32_t u = threadIdx.x; u < T; u += 2 * blockDim.x) {
                uint32_t a0, a1, b0, b1;
                fr_t wa, wb;
                radix2_slots(L, tw, p, s, u, a0, a1, wa);
                radix2_slots(L, tw, p, s, u + blockDim.x, b0, b1, wb);
                fr_t xa = sh[a0], ya = sh[a1], xb = sh[b0], yb = sh[b1];
                fr_t pa, pb;
                if (DIT) {
                    fr_t::mul_pair(pa, wa, ya, pb, wb, yb);
                    sh[a0] = xa + pa, sh[a1] = xa - pa;
                    sh[b0] = xb + pb, sh[b1] = xb - pb;
                } else {
                    fr_t::mul_pair(pa, xa - ya, wa, pb, xb - yb, wb);
                    sh[a0] = xa + ya, sh[a1] = pa;
                    sh[b0] = xb + yb, sh[b1] = pb;
                }
            }
        } else {
            for (uint32_t u = threadIdx.x; u < T; u += blockDim.x) {
                uint32_t i0, i1;
                fr_t w;
                radix2_slots(L, tw, p, s, u, i0, i1, w);
                fr_t x = sh[i0], y = sh[i1];
                if (DIT) {
                    fr_t wy = w * y;
                    sh[i0] = x + wy, sh[i1] = x - wy;
                } else {
                    sh[i0] = x + y, sh[i1] = (x - y) * w;
                }
            }
        }
        __syncthreads();
    }
}

// g consecutive stages (index bits [low, low + g)) of a 2^log_n transform, in shared memory:
// 2^(g + cols) elements a block, a quarter as many threads. Held to 64 registers so four
// 256-thread blocks fit an SM (bench/cuda-kernels-2026-12-02.md measures it against the
// unbounded radix-4 and against radix-2 kernels).
// The twiddles w^k (k < N/2) of a transform: one table of N/2 entries, or (a device short of
// memory) the product of two tables of about sqrt(N/2) entries each, w^k = hi[k >> lo_bits] *
// lo[k mod 2^lo_bits], at one more product a twiddle (0.5 MB at 2^27 instead of 2 GB a direction).
struct table_twiddles {
    const fr_t* __restrict__ tw;
    __device__ __forceinline__ fr_t operator[](uint64_t k) const { return tw[k]; }
};
struct split_twiddles {
    const fr_t* __restrict__ lo;
    const fr_t* __restrict__ hi;
    int lo_bits;
    __device__ __forceinline__ fr_t operator[](uint64_t k) const {
        return hi[k >> lo_bits] * lo[k & ((1ull << lo_bits) - 1)];
    }
};

template <bool DIT, class TW>
__global__ void __launch_bounds__(256, 4)
    ntt_group_kernel(fr_t* __restrict__ d, const TW tw, int log_n, int low, int g, int cols) {
    extern __shared__ fr_t sh[];
    const group_layout L(log_n, low, g, cols);
    load_group(sh, d, L);
    radix2_steps<DIT, true>(sh, tw, L, radix4_steps<DIT>(sh, tw, L));
    store_group(d, sh, L);
}

// The same for blocks of two elements (a 2-point transform), one butterfly a thread.
template <bool DIT, class TW>
__global__ void ntt_pair_kernel(fr_t* __restrict__ d, const TW tw, int log_n, int low, int g, int cols) {
    extern __shared__ fr_t sh[];
    const group_layout L(log_n, low, g, cols);
    load_group(sh, d, L);
    radix2_steps<DIT, false>(sh, tw, L, 0);
    store_group(d, sh, L);
}

// tw[e] = w^e for e < count: each thread makes 64 consecutive powers from one exponentiation.
__global__ void twiddle_kernel(fr_t* tw, size_t count, fr_t w) {
    size_t start = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 64;
    if (start >= count) return;
    uint32_t e[2] = {(uint32_t)start, (uint32_t)(start >> 32)};
    fr_t x = w.pow_words(e, 2);
    for (size_t i = start; i < count && i < start + 64; i++) {
        tw[i] = x;
        x = x * w;
    }
}

// table[i] = factor * base^i for i < count (small counts: one exponentiation a thread).
__global__ void power_table_kernel(fr_t* table, uint32_t count, fr_t base, fr_t factor) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) table[i] = factor * base.pow_words(&i, 1);
}

__global__ void scale_kernel(fr_t* d, uint64_t n, int log_n, const fr_t* lo, const fr_t* hi, int lo_bits,
                             bool bitrev_exponent) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint64_t e = bitrev_exponent ? (log_n ? (__brevll(i) >> (64 - log_n)) : 0) : i;
    d[i] = d[i] * lo[e & ((1ull << lo_bits) - 1)] * hi[e >> lo_bits];
}

__global__ void bit_reverse_kernel(const fr_t* __restrict__ in, fr_t* __restrict__ out, uint64_t n, int log_n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[log_n ? (__brevll(i) >> (64 - log_n)) : 0] = in[i];
}

__global__ void to_mont_kernel(fr_t* d, uint64_t n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = d[i].to_mont();
}

__global__ void from_mont_kernel(fr_t* d, uint64_t n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = d[i].from_mont();
}

// a <- a b / Z on the coset (Z = g^N - 1 there), canonical values x in and out (Montgomery
// product M(x, y) = x y / R): M(M(a, b), z_inv R^2) = a b z_inv, z_inv_r2 = z_inv R^2 as a
// canonical value.
__global__ void coset_product_kernel(fr_t* a, const fr_t* b, uint64_t n, fr_t z_inv_r2) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = (a[i] * b[i]) * z_inv_r2;
}

// h[bitrev(j)] = p[j] * lo * hi - c[j] * k for bit-reversed p and c: the last step of
// quotient_h_device, with the inverse coset transform's scaling (g^-e / N, e = bitrev(j), from
// the two power tables) and the bit reversal in the same pass.
__global__ void quotient_combine_kernel(const fr_t* __restrict__ p, const fr_t* __restrict__ c,
                                        fr_t* __restrict__ h, uint64_t n, int log_n, const fr_t* lo,
                                        const fr_t* hi, int lo_bits, fr_t k) {
    uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    uint64_t e = log_n ? (__brevll(j) >> (64 - log_n)) : 0;
    h[e] = p[j] * lo[e & ((1ull << lo_bits) - 1)] * hi[e >> lo_bits] - c[j] * k;
}

// The last step of quotient_h_lean: quotient_combine_kernel's values in place in c's slots,
// c[j] = h[bitrev(j)] (bit_reverse_in_place then puts them in natural order).
__global__ void quotient_combine_in_place_kernel(const fr_t* __restrict__ p, fr_t* __restrict__ c, uint64_t n,
                                                 int log_n, const fr_t* lo, const fr_t* hi, int lo_bits, fr_t k) {
    uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    uint64_t e = log_n ? (__brevll(j) >> (64 - log_n)) : 0;
    c[j] = p[j] * lo[e & ((1ull << lo_bits) - 1)] * hi[e >> lo_bits] - c[j] * k;
}

// d[i] <-> d[bitrev(i)]: each pair swapped once, by the thread of its smaller index.
__global__ void bit_reverse_in_place_kernel(fr_t* d, uint64_t n, int log_n) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint64_t r = log_n ? (__brevll(i) >> (64 - log_n)) : 0;
    if (i < r) {
        const fr_t x = d[i];
        d[i] = d[r];
        d[r] = x;
    }
}

const fr_t* twiddles(cz_context& ctx, int log_n, bool inverse) {
    auto key = std::make_pair(log_n, inverse);
    auto it = ctx.twiddles.find(key);
    if (it != ctx.twiddles.end()) return it->second;
    size_t count = log_n ? (1ull << (log_n - 1)) : 1;
    fr_t* tw = nullptr;
    CZ_POOL_ALLOC(&tw, count * sizeof(fr_t), ctx.stream);
    fr_t w = fr_root_of_unity(log_n);
    if (inverse) w = w.inverse();
    size_t threads = (count + 63) / 64;
    twiddle_kernel<<<blocks_for(threads, 256), 256, 0, ctx.stream>>>(tw, count, w);
    CZ_CHECK_LAUNCH();
    ctx.twiddles[key] = tw;
    return tw;
}

// One launch of g stages; blocks of 2^(g + cols) elements.
template <bool DIT, class TW>
void launch_group(cudaStream_t stream, fr_t* d, const TW& tw, int log_n, int low, int g, int cols) {
    const uint32_t elems = 1u << (g + cols);
    const unsigned blocks = (unsigned)(1ull << (log_n - g - cols));
    const size_t smem = elems * sizeof(fr_t);
    if (elems >= 4)  // four elements a thread (radix-4, or paired radix-2)
        ntt_group_kernel<DIT, TW><<<blocks, elems / 4, smem, stream>>>(d, tw, log_n, low, g, cols);
    else
        ntt_pair_kernel<DIT, TW><<<blocks, elems / 2, smem, stream>>>(d, tw, log_n, low, g, cols);
    CZ_CHECK_LAUNCH();
}

// factor * base^e for e < 2^log_n as the product of two small tables: lo[e mod 2^lo_bits] and
// hi[e >> lo_bits] (hi carries the factor); lo_bits at most 12 unless given.
struct power_tables {
    int lo_bits;
    dev_buf<fr_t> lo, hi;
    power_tables(cz_context& ctx, int log_n, fr_t base, fr_t factor, int lo_bits_ = -1)
        : lo_bits(lo_bits_ >= 0 ? lo_bits_ : std::min(log_n, 12)), lo(size_t(1) << lo_bits, ctx.stream),
          hi(size_t(1) << (log_n - lo_bits), ctx.stream) {
        const uint32_t lo_count = (uint32_t)lo.count, hi_count = (uint32_t)hi.count;
        fr_t base_hi = base;
        for (int i = 0; i < lo_bits; i++) base_hi = base_hi.sqr();  // base^(2^lo_bits)
        power_table_kernel<<<blocks_for(lo_count, 256), 256, 0, ctx.stream>>>(lo.get(), lo_count, base, fr_t::one());
        CZ_CHECK_LAUNCH();
        power_table_kernel<<<blocks_for(hi_count, 256), 256, 0, ctx.stream>>>(hi.get(), hi_count, base_hi, factor);
        CZ_CHECK_LAUNCH();
    }
};

template <class TW>
void run_stages_with(cz_context& ctx, fr_t* d, const TW& tw, int log_n, bool dit) {
    int ngroups = (log_n + kMaxGroupLog - 1) / kMaxGroupLog;
    // Split log_n bits into ngroups groups as evenly as possible.
    int sizes[8];
    for (int i = 0; i < ngroups; i++) sizes[i] = log_n / ngroups + (i < log_n % ngroups ? 1 : 0);
    // DIT walks bit groups from low to high, DIF from high to low.
    int low_of[8];
    int acc = 0;
    for (int i = 0; i < ngroups; i++) {
        low_of[i] = acc;
        acc += sizes[i];
    }
    for (int k = 0; k < ngroups; k++) {
        int i = dit ? k : ngroups - 1 - k;
        int g = sizes[i], low = low_of[i];
        int cols = low < kMaxGroupLog - g ? low : kMaxGroupLog - g;
        if (dit)
            launch_group<true>(ctx.stream, d, tw, log_n, low, g, cols);
        else
            launch_group<false>(ctx.stream, d, tw, log_n, low, g, cols);
    }
}

void run_stages(cz_context& ctx, fr_t* d, int log_n, bool inverse, bool dit) {
    if (log_n == 0) return;
    run_stages_with(ctx, d, table_twiddles{twiddles(ctx, log_n, inverse)}, log_n, dit);
}

// The twiddles w^k, k < N/2, from two tables of about sqrt(N/2) entries each (power_tables,
// made per use: a few thousand exponentiations).
void run_stages_split(cz_context& ctx, fr_t* d, int log_n, bool inverse, bool dit) {
    if (log_n == 0) return;
    fr_t w = fr_root_of_unity(log_n);
    if (inverse) w = w.inverse();
    const power_tables t(ctx, log_n - 1, w, fr_t::one(), log_n / 2);
    run_stages_with(ctx, d, split_twiddles{t.lo.get(), t.hi.get(), t.lo_bits}, log_n, dit);
}

}  // namespace

fr_t fr_from_u64(uint64_t x) {
    fr_t r = fr_t::zero();
    r.v[0] = (uint32_t)x;
    r.v[1] = (uint32_t)(x >> 32);
    return r.to_mont();
}

fr_t fr_root_of_unity(int log_n) {
    CZ_REQUIRE(log_n >= 0 && log_n <= 32, "NTT size exceeds Fr's 2-adicity (2^32)");
    // 7^((r - 1) / 2^32), canonical limbs (fields.py FR_ROOT_OF_UNITY).
    const uint32_t root32[8] = {0x439f0d2bu, 0x3829971fu, 0x8c2280b9u, 0xb6368350u,
                                0x22c813b4u, 0xd09b6819u, 0xdfe81f20u, 0x16a2a19eu};
    fr_t w;
    for (int i = 0; i < 8; i++) w.v[i] = root32[i];
    w = w.to_mont();
    for (int i = log_n; i < 32; i++) w = w.sqr();
    return w;
}

fr_t fr_coset_shift() { return fr_from_u64(7); }

bool twiddles_cached(const cz_context& ctx, int log_n) {
    return log_n == 0 || (ctx.twiddles.count({log_n, false}) && ctx.twiddles.count({log_n, true}));
}

void twiddles_release(cz_context& ctx) {
    for (auto& kv : ctx.twiddles) CZ_CHECK(cudaFreeAsync(kv.second, ctx.stream));
    ctx.twiddles.clear();
}

void ntt_dif(cz_context& ctx, fr_t* d, int log_n, bool inverse) { run_stages(ctx, d, log_n, inverse, false); }
void ntt_dit(cz_context& ctx, fr_t* d, int log_n, bool inverse) { run_stages(ctx, d, log_n, inverse, true); }

void bit_reverse(cz_context& ctx, const fr_t* in, fr_t* out, int log_n) {
    uint64_t n = 1ull << log_n;
    bit_reverse_kernel<<<blocks_for(n, 256), 256, 0, ctx.stream>>>(in, out, n, log_n);
    CZ_CHECK_LAUNCH();
}

void scale_by_powers(cz_context& ctx, fr_t* d, int log_n, fr_t base, fr_t factor, bool bitrev_exponent) {
    power_tables t(ctx, log_n, base, factor);
    uint64_t n = 1ull << log_n;
    scale_kernel<<<blocks_for(n, 256), 256, 0, ctx.stream>>>(d, n, log_n, t.lo.get(), t.hi.get(), t.lo_bits,
                                                              bitrev_exponent);
    CZ_CHECK_LAUNCH();
}

void to_montgomery(cz_context& ctx, fr_t* d, size_t n) {
    to_mont_kernel<<<blocks_for(n, 256), 256, 0, ctx.stream>>>(d, n);
    CZ_CHECK_LAUNCH();
}

void from_montgomery(cz_context& ctx, fr_t* d, size_t n) {
    from_mont_kernel<<<blocks_for(n, 256), 256, 0, ctx.stream>>>(d, n);
    CZ_CHECK_LAUNCH();
}

void ntt_natural(cz_context& ctx, fr_t* d, int log_n, bool inverse, bool coset) {
    uint64_t n = 1ull << log_n;
    dev_buf<fr_t> tmp(n, ctx.stream);
    to_montgomery(ctx, d, n);
    if (coset && !inverse) scale_by_powers(ctx, d, log_n, fr_coset_shift(), fr_t::one(), false);
    ntt_dif(ctx, d, log_n, inverse);
    bit_reverse(ctx, d, tmp.get(), log_n);
    if (inverse) {
        fr_t n_inv = fr_from_u64(n).inverse();
        fr_t base = coset ? fr_coset_shift().inverse() : fr_t::one();
        scale_by_powers(ctx, tmp.get(), log_n, base, n_inv, false);
    }
    from_montgomery(ctx, tmp.get(), n);
    CZ_CHECK(cudaMemcpyAsync(d, tmp.get(), n * sizeof(fr_t), cudaMemcpyDeviceToDevice, ctx.stream));
}

// Six transforms instead of the textbook seven: C is interpolated but never evaluated on the
// coset. H = coset_interp((A B - C) / Z) and coset interpolation is linear, so
// H = coset_interp(A B / Z) - C / Z, where coset_interp(C) = C needs no transform at all
// (C's coefficients are already those of a polynomial of degree < N).
namespace {
// 1 / Z on the coset: Z(g w^k) = g^N - 1 for every k (Montgomery form: z_inv R).
fr_t coset_z_inverse(int log_n) {
    fr_t g_n = fr_coset_shift();
    for (int i = 0; i < log_n; i++) g_n = g_n.sqr();
    return (g_n - fr_t::one()).inverse();
}

// A and B from evaluations to evaluations on the coset g<w> (natural order in and out), a
// <- a b / Z there: the first half of H, the same in both of its forms. `stages` runs the
// transforms (run_stages or run_stages_split).
template <class Stages>
void coset_product(cz_context& ctx, fr_t* a, fr_t* b, int log_n, fr_t z_inv, Stages stages) {
    const uint64_t n = 1ull << log_n;
    const fr_t n_inv = fr_from_u64(n).inverse(), g = fr_coset_shift();
    for (fr_t* v : {a, b}) {
        stages(ctx, v, log_n, true, false);              // -> N * coefficients, bit-reversed
        scale_by_powers(ctx, v, log_n, g, n_inv, true);  // coefficient i times g^i / N
        stages(ctx, v, log_n, false, true);              // -> evaluations on g<w>, natural
    }
    coset_product_kernel<<<blocks_for(n, 256), 256, 0, ctx.stream>>>(a, b, n, z_inv.to_mont());
    CZ_CHECK_LAUNCH();
}
}  // namespace

void quotient_h_device(cz_context& ctx, fr_t* a, fr_t* b, fr_t* c, fr_t* h, int log_n) {
    uint64_t n = 1ull << log_n;
    fr_t n_inv = fr_from_u64(n).inverse();
    fr_t g = fr_coset_shift();
    fr_t z_inv = coset_z_inverse(log_n);
    coset_product(ctx, a, b, log_n, z_inv, run_stages);
    ntt_dif(ctx, c, log_n, true);  // -> N * C's coefficients, bit-reversed
    ntt_dif(ctx, a, log_n, true);  // -> N * coefficients of (A B / Z)(gX), bit-reversed
    power_tables t(ctx, log_n, g.inverse(), n_inv);  // coefficient i of q(gX) times g^-i / N
    quotient_combine_kernel<<<blocks_for(n, 256), 256, 0, ctx.stream>>>(a, c, h, n, log_n, t.lo.get(), t.hi.get(),
                                                                        t.lo_bits, n_inv * z_inv);
    CZ_CHECK_LAUNCH();
}

// The same transforms and formulas as quotient_h_device, in another order: C is made only
// once B's room is free, the combination writes over C (bit-reversed h) and one in-place
// permutation puts h in natural order; the twiddles come from two small tables.
void quotient_h_lean(cz_context& ctx, fr_t* a, fr_t* b, const std::function<void(fr_t*)>& fill_c, int log_n) {
    uint64_t n = 1ull << log_n;
    fr_t n_inv = fr_from_u64(n).inverse();
    fr_t g = fr_coset_shift();
    fr_t z_inv = coset_z_inverse(log_n);
    coset_product(ctx, a, b, log_n, z_inv, run_stages_split);
    fill_c(b);                                 // C's evaluations, in ctx.stream's order
    run_stages_split(ctx, b, log_n, true, false);  // -> N * C's coefficients, bit-reversed
    run_stages_split(ctx, a, log_n, true, false);  // -> N * coefficients of (A B / Z)(gX), bit-reversed
    power_tables t(ctx, log_n, g.inverse(), n_inv);
    quotient_combine_in_place_kernel<<<blocks_for(n, 256), 256, 0, ctx.stream>>>(a, b, n, log_n, t.lo.get(),
                                                                                 t.hi.get(), t.lo_bits, n_inv * z_inv);
    CZ_CHECK_LAUNCH();
    bit_reverse_in_place_kernel<<<blocks_for(n, 256), 256, 0, ctx.stream>>>(b, n, log_n);
    CZ_CHECK_LAUNCH();
}
