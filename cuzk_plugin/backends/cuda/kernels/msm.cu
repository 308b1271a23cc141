// Pippenger's bucket method with signed windows (see msm.cuh for the contract).
//
// Signed digits without a carry pass: with M = sum_w 2^(c w + c - 1), the base-2^c digits u_w
// of K = k + M give k = sum_w (u_w - 2^(c-1)) 2^(c w), digits in [-2^(c-1), 2^(c-1)). Valid
// while K < 2^(c W), which holds for k < r and c W >= 256 because r < 0.91 * 2^255.
// A digit d goes to bucket |d| of its window, with the base negated when d < 0, so a window
// has 2^(c-1) buckets instead of 2^c.
//
// Per window: (1) digits -> (bucket, index|sign) pairs, (2) radix sort by bucket (CUB),
// (3) bucket ranges, (4) ranges cut into items of at most L points (so one huge bucket does
// not serialise the launch), (5) one thread an item sums its points with mixed XYZZ
// additions, (6) one thread a bucket adds its items. (1)-(4) of window w + 1 run on a stream
// of their own beside (5)-(6) of window w, so the memory-bound sorts overlap the
// compute-bound bucket loop. Then all windows at once:
// sum_b b * S_b per window with running sums over segments of buckets, a tree over the
// segments, and Horner over the windows on the host (a few hundred doublings: faster on the
// CPU than on one GPU thread).
//
// A streamed MSM (points in host memory, copied in chunks) is one Pippenger over all its
// chunks: (1)-(5) run a chunk at a time, (6) adds the chunk's items into the buckets the
// earlier chunks filled (the sum is linear in the points), and the window sums and Horner run
// once at the end (pippenger_sum).
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "msm.cuh"

namespace {

constexpr uint32_t kSignBit = 0x80000000u;
// msm_streamed_scratch_bytes' room for CUB's histograms and tile states and the pool's
// rounding of the streamed MSM's ~45 allocations.
constexpr size_t kStreamedMargin = size_t(128) << 20;

struct digit_offset {  // M = sum_w 2^(c w + c - 1), 9 words (c W <= 288)
    uint32_t w[9];
};

// A scalar's kind: 0, 1, or 2 for any other value (the only ones Pippenger sorts into buckets).
__device__ __forceinline__ uint32_t scalar_kind(const fr_t& k) {
    uint32_t high = 0;
#pragma unroll
    for (int j = 1; j < 8; j++) high |= k.v[j];
    return high == 0 && k.v[0] <= 1 ? k.v[0] : 2;
}

__global__ void classify_kernel(const fr_t* __restrict__ s, size_t n, uint8_t* is_one, uint8_t* is_big) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t kind = scalar_kind(s[i]);
    is_one[i] = kind == 1;
    is_big[i] = kind == 2;
}

__global__ void digits_kernel(const fr_t* __restrict__ s, const uint32_t* __restrict__ idx, size_t n, int window,
                              int c, digit_offset m, uint32_t* keys, uint32_t* vals) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t id = idx[i];
    fr_t k = s[id];
    uint32_t K[9];
    uint64_t carry = 0;
#pragma unroll
    for (int j = 0; j < 9; j++) {
        carry += (uint64_t)(j < 8 ? k.v[j] : 0) + m.w[j];
        K[j] = (uint32_t)carry;
        carry >>= 32;
    }
    int bit = window * c;
    int word = bit >> 5, sh = bit & 31;
    uint64_t two = (uint64_t)K[word] | ((uint64_t)(word + 1 < 9 ? K[word + 1] : 0) << 32);
    int32_t d = (int32_t)((two >> sh) & ((1u << c) - 1)) - (1 << (c - 1));
    keys[i] = d < 0 ? (uint32_t)(-d) : (uint32_t)d;
    vals[i] = id | (d < 0 ? kSignBit : 0);
}

// start[k] / end[k]: the range of sorted entries with key k.
__global__ void bucket_ranges_kernel(const uint32_t* keys, size_t n, uint32_t* start, uint32_t* end) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t k = keys[i];
    if (i == 0 || keys[i - 1] != k) start[k] = (uint32_t)i;
    if (i == n - 1 || keys[i + 1] != k) end[k] = (uint32_t)(i + 1);
}

__global__ void iota_kernel(uint32_t* out, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (uint32_t)i;
}

__global__ void item_counts_kernel(const uint32_t* start, const uint32_t* end, uint32_t nb, uint32_t L,
                                   uint32_t* nitems) {
    uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b > nb) return;  // nitems has nb + 2 entries; the last stays 0 so the scan yields the total
    uint32_t cnt = end[b] - start[b];
    nitems[b] = b == 0 ? 0 : (cnt + L - 1) / L;
}

__global__ void expand_items_kernel(const uint32_t* start, const uint32_t* end, const uint32_t* nitems,
                                    const uint32_t* offs, uint32_t nb, uint32_t L, uint32_t* item_start,
                                    uint32_t* item_len) {
    uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b == 0 || b > nb) return;
    uint32_t o = offs[b], st = start[b], e = end[b];
    for (uint32_t k = 0; k < nitems[b]; k++) {
        uint32_t s0 = st + k * L;
        item_start[o + k] = s0;
        item_len[o + k] = min(L, e - s0);
    }
}

// Sums each item's points into one XYZZ partial (mixed additions). G1 inlines the addition
// formulas, no call overhead in the hottest loop of the prover: 168 registers (sm_90), 3 blocks
// of 128 threads an SM, which holds up to 170 (a launch bound to keep it there would change the
// G2 instantiation's code too). G2 calls them (and its Fq2 products): inlined, the G2 loop
// needs 255 registers and spills.
// bench/cuda-kernels-2026-12-02.md has the measurements behind both choices.
// Thread t takes item order[t], the items sorted longest first, so the 32 threads of a warp
// have about the same number of additions (unsorted, a warp waits for its longest item).
template <class F>
__global__ void accumulate_kernel(const affine_t<F>* __restrict__ bases, const uint32_t* __restrict__ vals,
                                  const uint32_t* item_start, const uint32_t* item_len, const uint32_t* order,
                                  const uint32_t* total, xyzz_t<F>* partials) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= *total) return;
    uint32_t i = order[t];
    uint32_t st = item_start[i], len = item_len[i];
    xyzz_t<F> acc = xyzz_t<F>::identity();
    for (uint32_t k = 0; k < len; k++) {
        uint32_t v = vals[st + k];
        affine_t<F> p = bases[v & ~kSignBit];
        if (v & kSignBit) p = p.neg();
        if constexpr (sizeof(F) == sizeof(fq_t))
            acc = acc.add_affine_inline(p);
        else
            acc = acc.add_affine(p);
    }
    partials[i] = acc;
}

constexpr int kAccumulateThreads = 128;

// Bucket b = the sum of its items (every bucket 0..nb written), or with kAdd, bucket b += that
// sum (a streamed MSM's later chunks; an empty bucket keeps its value, bucket 0 is never read).
template <class F, bool kAdd>
__global__ void merge_items_kernel(const xyzz_t<F>* partials, const uint32_t* nitems, const uint32_t* offs,
                                   uint32_t nb, xyzz_t<F>* buckets) {
    uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b > nb) return;
    if constexpr (kAdd) {
        if (b == 0 || nitems[b] == 0) return;
        xyzz_t<F> acc = buckets[b];
        for (uint32_t k = 0; k < nitems[b]; k++) acc = acc.add(partials[offs[b] + k]);
        buckets[b] = acc;
    } else {
        xyzz_t<F> acc = xyzz_t<F>::identity();
        if (b != 0)
            for (uint32_t k = 0; k < nitems[b]; k++) acc = acc.add(partials[offs[b] + k]);
        buckets[b] = acc;
    }
}

// Segment j of window w: sum_{b in [lo, hi)} b * S_b by running sums, buckets 1..nb.
template <class F>
__global__ void segment_kernel(const xyzz_t<F>* buckets, uint32_t nb, uint32_t nwin, uint32_t nseg, uint32_t seg_len,
                               xyzz_t<F>* out) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nwin * nseg) return;
    uint32_t w = t / nseg, j = t % nseg;
    const xyzz_t<F>* B = buckets + (size_t)w * (nb + 1);
    uint32_t lo = 1 + j * seg_len, hi = min(lo + seg_len, nb + 1);
    xyzz_t<F> run = xyzz_t<F>::identity(), acc = xyzz_t<F>::identity();
    for (uint32_t b = hi; b-- > lo;) {
        run = run.add(B[b]);
        acc = acc.add(run);  // acc = sum (b - lo + 1) S_b
    }
    out[t] = lo > hi ? xyzz_t<F>::identity() : acc.add(run.mul_small(lo - 1));
}

// In each window's row of `width` entries, entry i += entry i + half.
template <class F>
__global__ void fold_kernel(xyzz_t<F>* rows, uint32_t nwin, uint32_t width, uint32_t half) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nwin * half) return;
    uint32_t w = t / half, i = t % half;
    xyzz_t<F>* row = rows + (size_t)w * width;
    row[i] = row[i].add(row[i + half]);
}

// Sum of bases[idx[i]] for i < *count: each of the launch's threads sums a strided share into
// partials[t] (kAdd: adds it to partials[t], a streamed MSM's running sum over its chunks).
template <class F, bool kAdd>
__global__ void sum_selected_kernel(const affine_t<F>* __restrict__ bases, const uint32_t* __restrict__ idx,
                                    const uint32_t* count, xyzz_t<F>* partials, uint32_t nthreads) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nthreads) return;
    uint32_t n = *count;
    xyzz_t<F> acc = xyzz_t<F>::identity();
    for (uint32_t i = t; i < n; i += nthreads) {
        if constexpr (sizeof(F) == sizeof(fq_t))
            acc = acc.add_affine_inline(bases[idx[i]]);
        else
            acc = acc.add_affine(bases[idx[i]]);
    }
    if constexpr (kAdd)
        partials[t] = partials[t].add(acc);
    else
        partials[t] = acc;
}

template <class F>
__global__ void to_mont_affine_kernel(affine_t<F>* p, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = {p[i].x.to_mont(), p[i].y.to_mont()};
}

// Tree-sums `rows` rows of `width` (a power of two) entries each, in place, into entry 0.
template <class F>
void fold_rows(cudaStream_t stream, xyzz_t<F>* rows, uint32_t nwin, uint32_t width) {
    for (uint32_t half = width / 2; half >= 1; half /= 2) {
        uint32_t threads = nwin * half;
        fold_kernel<F><<<blocks_for(threads, 128), 128, 0, stream>>>(rows, nwin, width, half);
        CZ_CHECK_LAUNCH();
    }
}

// Phase timing of one MSM (msm_options::profile, for benchmarks): CUDA events between the
// phases of each window, summed and printed to stderr. The phases then run in turn on one
// stream so that their times mean something.
struct phase_profile {
    static constexpr int kPhases = 4;  // digits + sort, bucket ranges + items, accumulate, merge
    bool on = false;
    cudaStream_t stream = nullptr;
    std::vector<cudaEvent_t> events;
    phase_profile(cudaStream_t s, bool enabled) : on(enabled), stream(s) {}
    void mark() {
        if (!on) return;
        cudaEvent_t e;
        CZ_CHECK(cudaEventCreate(&e));
        CZ_CHECK(cudaEventRecord(e, stream));
        events.push_back(e);
    }
    // Events are [start, then kPhases a window..., reduction end]; nwin: the windows run (a
    // streamed MSM's chunks each run every window).
    void report(size_t n, int c, int nwin, double host_ms) {
        if (!on) return;
        CZ_CHECK(cudaEventSynchronize(events.back()));
        double phase[kPhases] = {0, 0, 0, 0};
        float ms = 0;
        for (int w = 0; w < nwin; w++)
            for (int k = 0; k < kPhases; k++) {
                CZ_CHECK(cudaEventElapsedTime(&ms, events[w * kPhases + k], events[w * kPhases + k + 1]));
                phase[k] += ms;
            }
        CZ_CHECK(cudaEventElapsedTime(&ms, events[nwin * kPhases], events.back()));
        std::fprintf(stderr,
                     "msm profile: n=%zu c=%d windows=%d | digits+sort %.2f ms | bucket ranges %.2f ms | "
                     "accumulate %.2f ms | merge %.2f ms | reduction %.2f ms | host horner %.3f ms\n",
                     n, c, nwin, phase[0], phase[1], phase[2], phase[3], ms, host_ms);
    }
    ~phase_profile() {
        for (auto e : events) cudaEventDestroy(e);
    }
};

uint32_t next_pow2(uint64_t x) {
    uint32_t p = 1;
    while (p < x) p <<= 1;
    return p;
}

// Threads that sum up to `count` bases whose scalar is 1 (their partial sums: one each): ~2^18
// fill an H200 (132 SMs) several times over; small counts use ~16 points a thread.
uint32_t ones_threads(size_t count) { return next_pow2(count < (1u << 22) ? (count + 15) / 16 : (1u << 18)); }

// Segments of buckets a window's sum is cut into (reduce_windows): ~2^16 threads over all the
// windows, at most one a bucket.
uint32_t reduction_segments(int nwin, uint32_t nb) {
    return std::min(next_pow2(std::max<uint32_t>(1, (1u << 16) / nwin)), nb);
}

// Sum of the bases whose scalar is 1.
template <class F>
xyzz_t<F> sum_ones(cudaStream_t stream, const affine_t<F>* bases, const uint32_t* idx, const uint32_t* d_count,
                   uint32_t count) {
    if (count == 0) return xyzz_t<F>::identity();
    uint32_t nthreads = ones_threads(count);
    dev_buf<xyzz_t<F>> partials(nthreads, stream);
    sum_selected_kernel<F, false><<<blocks_for(nthreads, 128), 128, 0, stream>>>(bases, idx, d_count, partials.get(),
                                                                                nthreads);
    CZ_CHECK_LAUNCH();
    fold_rows<F>(stream, partials.get(), 1, nthreads);
    xyzz_t<F> out;
    CZ_CHECK(cudaMemcpyAsync(&out, partials.get(), sizeof out, cudaMemcpyDeviceToHost, stream));
    CZ_CHECK(cudaStreamSynchronize(stream));
    return out;
}

// The CUB scratch classify_scalars needs for up to n scalars.
size_t select_scratch_bytes(size_t n, cudaStream_t stream) {
    thrust::counting_iterator<uint32_t> iota(0);
    uint8_t* flags = nullptr;  // the size query reads no data
    uint32_t* out = nullptr;
    size_t bytes = 0;
    CZ_CHECK(cub::DeviceSelect::Flagged(nullptr, bytes, iota, flags, out, out, n, stream));
    return bytes;
}

// Scalars by kind (scalar_kind), on the device: the indices of those equal to 1 and of those
// other than 0 and 1 (Pippenger's), in order, and how many of each (counts[0], counts[1]).
struct scalar_classes {
    dev_buf<uint32_t> one_idx, big_idx, counts;
    scalar_classes(size_t n, cudaStream_t s) : one_idx(n, s), big_idx(n, s), counts(2, s) {}
};

// The flags and CUB scratch of classify_scalars over up to n scalars (one call at a time).
struct classify_scratch {
    size_t temp_bytes;
    dev_buf<uint8_t> is_one, is_big, temp;
    classify_scratch(size_t n, cudaStream_t s)
        : temp_bytes(select_scratch_bytes(n, s)), is_one(n, s), is_big(n, s), temp(temp_bytes, s) {}
};

// scalars[0..n) into `out` (n <= the size of both), on `stream`.
void classify_scalars(cudaStream_t stream, const fr_t* scalars, size_t n, classify_scratch& scratch,
                      scalar_classes& out) {
    classify_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(scalars, n, scratch.is_one.get(), scratch.is_big.get());
    CZ_CHECK_LAUNCH();
    thrust::counting_iterator<uint32_t> iota(0);
    size_t bytes = scratch.temp_bytes;
    CZ_CHECK(cub::DeviceSelect::Flagged(scratch.temp.get(), bytes, iota, scratch.is_one.get(), out.one_idx.get(),
                                        out.counts.get(), n, stream));
    bytes = scratch.temp_bytes;
    CZ_CHECK(cub::DeviceSelect::Flagged(scratch.temp.get(), bytes, iota, scratch.is_big.get(), out.big_idx.get(),
                                        out.counts.get() + 1, n, stream));
}

// The sizes of one Pippenger run over at most n points at a time with c-bit windows.
struct pippenger_plan {
    uint32_t n = 0;
    int c = 0;
    int nwin = 0;         // windows: ceil(256 / c)
    uint32_t nb = 0;      // buckets 1..nb a window (signed digits: 2^(c-1))
    uint32_t L = 0;       // the most points one bucket-loop item takes
    size_t item_cap = 0;  // items a window at most
    digit_offset m{};     // M of the signed-digit recoding (top of this file)
    size_t temp_bytes = 0;  // CUB scratch for the largest of the window's sorts and scans

    static constexpr int kLenBits = 11;  // item lengths are at most L <= 1024

    static uint32_t item_len(size_t n) { return (uint32_t)std::min<size_t>(1024, std::max<size_t>(8, n >> 17)); }
    // Items of up to n points in nb buckets: sum_b ceil(n_b / L) <= n / L + (buckets in use).
    static size_t items_most(size_t n, uint32_t nb) { return n / item_len(n) + nb + 2; }

    pippenger_plan(uint32_t count, int window_bits, cudaStream_t stream) : n(count), c(window_bits) {
        nwin = (256 + c - 1) / c;
        nb = 1u << (c - 1);
        L = item_len(n);
        item_cap = items_most(n, nb);
        for (int w = 0; w < nwin; w++) {
            int bit = w * c + c - 1;
            m.w[bit >> 5] |= 1u << (bit & 31);
        }
        size_t sort_bytes = 0, scan_bytes = 0, order_bytes = 0;
        uint32_t* none = nullptr;  // the size queries read no data
        CZ_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, none, none, none, none, n, 0, c, stream));
        CZ_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, none, none, nb + 2, stream));
        CZ_CHECK(cub::DeviceRadixSort::SortPairsDescending(nullptr, order_bytes, none, none, none, none, item_cap, 0,
                                                           kLenBits, stream));
        temp_bytes = std::max({sort_bytes, scan_bytes, order_bytes});
    }
};

// One window's sorted digits and items. The pipelined loop keeps two: the sort of window
// w + 1 (memory-bound) runs beside the accumulation of window w (compute-bound).
template <class F>
struct window_state {
    dev_buf<uint32_t> keys_in, keys_out, vals_in, vals_out;
    dev_buf<uint32_t> start, end, nitems, offs;
    dev_buf<uint32_t> item_start, item_len, item_order, len_sorted;
    dev_buf<xyzz_t<F>> partials;
    dev_buf<uint8_t> temp;
    cuda_event prepared;  // on the sort stream: this window's items are ready
    cuda_event consumed;  // on the MSM stream: its accumulation and merge are done
    window_state(const pippenger_plan& p, cudaStream_t s)
        : keys_in(p.n, s), keys_out(p.n, s), vals_in(p.n, s), vals_out(p.n, s), start(p.nb + 1, s),
          end(p.nb + 1, s), nitems(p.nb + 2, s), offs(p.nb + 2, s), item_start(p.item_cap, s),
          item_len(p.item_cap, s), item_order(p.item_cap, s), len_sorted(p.item_cap, s), partials(p.item_cap, s),
          temp(p.temp_bytes, s) {}
};

// On scope exit `into` waits for everything queued on `from`, so buffers freed in `into`'s
// order are not freed under `from`'s work (also when an error cut the loop short).
struct stream_join {
    cudaStream_t into, from;
    ~stream_join() {
        if (into == from) return;
        cudaEvent_t e;
        if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) return;
        if (cudaEventRecord(e, from) == cudaSuccess) cudaStreamWaitEvent(into, e, 0);
        cudaEventDestroy(e);
    }
};

// Steps (1)-(4) of window w over n <= p.n points on stream ss: signed digits, sorted by bucket,
// bucket ranges cut into items, items sorted longest first; records ws.prepared.
template <class F>
void prepare_window(const pippenger_plan& p, window_state<F>& ws, const fr_t* scalars, const uint32_t* idx,
                    uint32_t n, int w, const uint32_t* item_ids, cudaStream_t ss, phase_profile& prof) {
    digits_kernel<<<blocks_for(n, 256), 256, 0, ss>>>(scalars, idx, n, w, p.c, p.m, ws.keys_in.get(),
                                                      ws.vals_in.get());
    CZ_CHECK_LAUNCH();
    size_t bytes = p.temp_bytes;  // enough for n <= p.n (CUB's scratch grows with the count)
    CZ_CHECK(cub::DeviceRadixSort::SortPairs(ws.temp.get(), bytes, ws.keys_in.get(), ws.keys_out.get(),
                                             ws.vals_in.get(), ws.vals_out.get(), n, 0, p.c, ss));
    prof.mark();
    CZ_CHECK(cudaMemsetAsync(ws.start.get(), 0, ws.start.bytes(), ss));
    CZ_CHECK(cudaMemsetAsync(ws.end.get(), 0, ws.end.bytes(), ss));
    CZ_CHECK(cudaMemsetAsync(ws.nitems.get(), 0, ws.nitems.bytes(), ss));
    bucket_ranges_kernel<<<blocks_for(n, 256), 256, 0, ss>>>(ws.keys_out.get(), n, ws.start.get(), ws.end.get());
    CZ_CHECK_LAUNCH();
    item_counts_kernel<<<blocks_for(p.nb + 1, 256), 256, 0, ss>>>(ws.start.get(), ws.end.get(), p.nb, p.L,
                                                                   ws.nitems.get());
    CZ_CHECK_LAUNCH();
    bytes = p.temp_bytes;
    CZ_CHECK(cub::DeviceScan::ExclusiveSum(ws.temp.get(), bytes, ws.nitems.get(), ws.offs.get(), p.nb + 2, ss));
    CZ_CHECK(cudaMemsetAsync(ws.item_len.get(), 0, ws.item_len.bytes(), ss));  // unused slots sort last
    expand_items_kernel<<<blocks_for(p.nb + 1, 256), 256, 0, ss>>>(ws.start.get(), ws.end.get(), ws.nitems.get(),
                                                                    ws.offs.get(), p.nb, p.L, ws.item_start.get(),
                                                                    ws.item_len.get());
    CZ_CHECK_LAUNCH();
    bytes = p.temp_bytes;
    CZ_CHECK(cub::DeviceRadixSort::SortPairsDescending(ws.temp.get(), bytes, ws.item_len.get(), ws.len_sorted.get(),
                                                       item_ids, ws.item_order.get(), p.item_cap, 0,
                                                       pippenger_plan::kLenBits, ss));
    CZ_CHECK(cudaEventRecord(ws.prepared.e, ss));
    prof.mark();
}

// Steps (5)-(6) of window w on `stream`, once its items are ready: the bucket loop, then one
// thread a bucket sums its items into row w of `buckets` (`add_to_buckets`: adds them to the
// row's sums); records ws.consumed.
template <class F>
void accumulate_window(const pippenger_plan& p, window_state<F>& ws, const affine_t<F>* bases, int w,
                       xyzz_t<F>* buckets, bool add_to_buckets, cudaStream_t stream, phase_profile& prof) {
    CZ_CHECK(cudaStreamWaitEvent(stream, ws.prepared.e, 0));
    accumulate_kernel<F><<<blocks_for(p.item_cap, kAccumulateThreads), kAccumulateThreads, 0, stream>>>(
        bases, ws.vals_out.get(), ws.item_start.get(), ws.item_len.get(), ws.item_order.get(),
        ws.offs.get() + p.nb + 1, ws.partials.get());
    CZ_CHECK_LAUNCH();
    prof.mark();
    xyzz_t<F>* row = buckets + (size_t)w * (p.nb + 1);
    if (add_to_buckets)
        merge_items_kernel<F, true><<<blocks_for(p.nb + 1, 128), 128, 0, stream>>>(ws.partials.get(),
                                                                                  ws.nitems.get(), ws.offs.get(),
                                                                                  p.nb, row);
    else
        merge_items_kernel<F, false><<<blocks_for(p.nb + 1, 128), 128, 0, stream>>>(ws.partials.get(),
                                                                                   ws.nitems.get(), ws.offs.get(),
                                                                                   p.nb, row);
    CZ_CHECK_LAUNCH();
    CZ_CHECK(cudaEventRecord(ws.consumed.e, stream));
    prof.mark();
}

// sum_b b * S_b for every window at once (~2^16 threads in all): running sums over segments of
// buckets, then a tree over the segments; the window sums, copied to the host.
template <class F>
std::vector<xyzz_t<F>> reduce_windows(const pippenger_plan& p, const xyzz_t<F>* buckets, cudaStream_t stream) {
    uint32_t nseg = reduction_segments(p.nwin, p.nb);
    uint32_t seg_len = (p.nb + nseg - 1) / nseg;
    dev_buf<xyzz_t<F>> segs((size_t)p.nwin * nseg, stream);
    segment_kernel<F><<<blocks_for(p.nwin * nseg, 64), 64, 0, stream>>>(buckets, p.nb, p.nwin, nseg, seg_len,
                                                                        segs.get());
    CZ_CHECK_LAUNCH();
    fold_rows<F>(stream, segs.get(), p.nwin, nseg);
    std::vector<xyzz_t<F>> wins(p.nwin);
    CZ_CHECK(cudaMemcpy2DAsync(wins.data(), sizeof(xyzz_t<F>), segs.get(), nseg * sizeof(xyzz_t<F>),
                               sizeof(xyzz_t<F>), p.nwin, cudaMemcpyDeviceToHost, stream));
    return wins;
}

// sum_w 2^(c w) wins[w] by Horner's rule, on the host: a few hundred doublings are faster on
// the CPU than on one GPU thread.
template <class F>
xyzz_t<F> horner(const std::vector<xyzz_t<F>>& wins, int c) {
    xyzz_t<F> acc = xyzz_t<F>::identity();
    for (int w = (int)wins.size() - 1; w >= 0; w--) {
        for (int i = 0; i < c; i++) acc = acc.dbl();
        acc = acc.add(wins[w]);
    }
    return acc;
}

// sum_i k_idx[i] P_idx[i] over the points of one or more add() calls, with c-bit signed
// windows (steps at the top of this file): one bucket array for all windows, which the first
// add() writes and later ones add into, and the window sums and Horner once, in finish(). A
// resident MSM makes one add(), a streamed one an add() a chunk. Unless profiling, window
// w + 1 is prepared on a sort stream of its own (two window states, which go round across
// add() calls) while window w accumulates.
template <class F>
class pippenger_sum {
  public:
    // For add() calls of at most max_count points each.
    pippenger_sum(cudaStream_t stream, uint32_t max_count, int c, bool profile, const cz_cancel_flag* cancel)
        : stream_(stream), cancel_(cancel), plan_(max_count, c, stream), prof_(stream, profile),
          item_ids_(plan_.item_cap, stream), buckets_((size_t)plan_.nwin * (plan_.nb + 1), stream),
          states_(make_states(plan_, stream, profile ? 1 : 2)), sorter_(make_sorter(stream, !profile)),
          ss_(sorter_ ? sorter_->s : stream), join_{stream, ss_} {
        iota_kernel<<<blocks_for(plan_.item_cap, 256), 256, 0, stream>>>(item_ids_.get(), plan_.item_cap);
        CZ_CHECK_LAUNCH();
        cuda_event allocated;
        CZ_CHECK(cudaEventRecord(allocated.e, stream));
        CZ_CHECK(cudaStreamWaitEvent(ss_, allocated.e, 0));
        prof_.mark();
    }
    pippenger_sum(const pippenger_sum&) = delete;
    pippenger_sum& operator=(const pippenger_sum&) = delete;

    // Adds sum_i k_idx[i] P_idx[i] for i < n (idx indexes bases and scalars). Work queued on
    // the MSM stream before the call has made bases, scalars and idx; the sort stream, which
    // reads scalars and idx, also waits for `inputs_ready` where it is set.
    void add(const affine_t<F>* bases, const fr_t* scalars, const uint32_t* idx, uint32_t n,
             cudaEvent_t inputs_ready = nullptr) {
        if (n == 0) return;
        if (n > plan_.n) throw cz_error(CZ_INTERNAL, "pippenger_sum::add: more points than its plan holds");
        if (inputs_ready) CZ_CHECK(cudaStreamWaitEvent(ss_, inputs_ready, 0));
        for (int w = 0; w < plan_.nwin; w++, windows_run_++) {
            window_state<F>& ws = *states_[windows_run_ % states_.size()];
            throw_if_cancelled(cancel_);
            if (windows_run_ >= states_.size()) {
                if (cancel_) wait_event(ws.consumed.e, cancel_);  // stay two windows ahead, so a cancel stops soon
                CZ_CHECK(cudaStreamWaitEvent(ss_, ws.consumed.e, 0));
            }
            prepare_window<F>(plan_, ws, scalars, idx, n, w, item_ids_.get(), ss_, prof_);
            accumulate_window<F>(plan_, ws, bases, w, buckets_.get(), written_, stream_, prof_);
        }
        written_ = true;
        points_ += n;
    }

    // The sum of every point added: the window sums (reduce_windows), then Horner's rule on the host.
    xyzz_t<F> finish() {
        if (!written_) return xyzz_t<F>::identity();
        std::vector<xyzz_t<F>> wins = reduce_windows<F>(plan_, buckets_.get(), stream_);
        prof_.mark();
        wait_stream(stream_, cancel_);
        auto t0 = std::chrono::steady_clock::now();
        xyzz_t<F> acc = horner<F>(wins, plan_.c);
        prof_.report(points_, plan_.c, (int)windows_run_, ms_since(t0));
        return acc;
    }

  private:
    static std::vector<std::unique_ptr<window_state<F>>> make_states(const pippenger_plan& p, cudaStream_t s,
                                                                     int count) {
        std::vector<std::unique_ptr<window_state<F>>> states;
        for (int k = 0; k < count; k++) states.push_back(std::make_unique<window_state<F>>(p, s));
        return states;
    }
    // The sort stream takes the MSM stream's priority (see cz_context_create); none when profiling.
    static std::unique_ptr<cuda_stream> make_sorter(cudaStream_t stream, bool pipelined) {
        if (!pipelined) return nullptr;
        int priority = 0;
        CZ_CHECK(cudaStreamGetPriority(stream, &priority));
        return std::make_unique<cuda_stream>(priority);
    }

    cudaStream_t stream_;
    const cz_cancel_flag* cancel_;
    const pippenger_plan plan_;
    phase_profile prof_;
    dev_buf<uint32_t> item_ids_;
    dev_buf<xyzz_t<F>> buckets_;
    std::vector<std::unique_ptr<window_state<F>>> states_;
    std::unique_ptr<cuda_stream> sorter_;
    cudaStream_t ss_;  // the sort stream (the MSM stream when profiling)
    // Declared after the buffers: on destruction, also after an error, the MSM stream waits for
    // the sort stream before they are freed in its order.
    stream_join join_;
    size_t windows_run_ = 0;  // over every add(): picks a window's state, and when it is reused
    size_t points_ = 0;
    bool written_ = false;  // an add() has written every bucket
};

// sum_i k_idx[i] P_idx[i] for i < n: a resident MSM's Pippenger, one add().
template <class F>
xyzz_t<F> pippenger(cudaStream_t stream, const affine_t<F>* bases, const fr_t* scalars, const uint32_t* idx,
                    uint32_t n, int c, bool profile, const cz_cancel_flag* cancel) {
    if (n == 0) return xyzz_t<F>::identity();
    pippenger_sum<F> sum(stream, n, c, profile, cancel);
    sum.add(bases, scalars, idx, n);
    return sum.finish();
}

}  // namespace

namespace {
__global__ void count_large_kernel(const fr_t* __restrict__ s, size_t n, unsigned long long* count) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    bool big = i < n && scalar_kind(s[i]) == 2;
    unsigned votes = __ballot_sync(0xffffffffu, big);  // every lane reaches it: no early return
    if ((threadIdx.x & 31) == 0 && votes) atomicAdd(count, (unsigned long long)__popc(votes));
}
}  // namespace

size_t count_large_scalars(cudaStream_t stream, const fr_t* scalars, size_t n) {
    if (n == 0) return 0;
    dev_buf<unsigned long long> count(1, stream);
    CZ_CHECK(cudaMemsetAsync(count.get(), 0, sizeof(unsigned long long), stream));
    count_large_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(scalars, n, count.get());
    CZ_CHECK_LAUNCH();
    unsigned long long host = 0;
    CZ_CHECK(cudaMemcpyAsync(&host, count.get(), sizeof host, cudaMemcpyDeviceToHost, stream));
    CZ_CHECK(cudaStreamSynchronize(stream));
    return (size_t)host;
}

size_t msm_scratch_bytes(size_t count, size_t large, size_t point_bytes) {
    const int c = msm_default_window(large);
    const size_t windows = (256 + c - 1) / c, buckets = (size_t(1) << (c - 1)) + 1;
    const size_t xyzz_bytes = point_bytes * 2;  // X, Y, ZZ, ZZZ: twice the affine x, y
    return 10 * count + 40 * large + windows * buckets * xyzz_bytes + (size_t(64) << 20);
}

int msm_streamed_window(size_t large, size_t chunk) {
    return std::min(msm_default_window(large), msm_default_window(chunk));
}

size_t msm_streamed_scratch_bytes(size_t count, size_t large, size_t point_bytes, size_t chunk) {
    if (count == 0) return 0;
    const size_t k = std::min(std::max<size_t>(chunk, 1), count);  // points a chunk
    const size_t sets = count > k ? 2 : 1;                           // chunk buffers and classes
    const size_t xyzz_bytes = point_bytes * 2;                       // X, Y, ZZ, ZZZ: twice the affine x, y
    size_t bytes = sets * k * point_bytes;                           // the chunks' points
    bytes += sets * 8 * k + 16 + 2 * k;                              // indices, both counts; flags
    bytes += ones_threads(k) * xyzz_bytes;                           // the running sum of ones
    large = std::min(large, count);
    if (large) {
        const int c = msm_streamed_window(large, k);
        const size_t nwin = (256 + c - 1) / c, nb = size_t(1) << (c - 1);
        const size_t m = std::min(k, large);  // large scalars a chunk, at most
        const size_t items = pippenger_plan::items_most(m, (uint32_t)nb);
        // A window state: keys and values in and out (16 B a point), bucket ranges and item
        // counts (16 B a bucket), four arrays of items and their partial sums, and the sorts'
        // scratch: CUB's own copy of the keys and values (8 B a point or item) and its lookback
        // tile states (under 1 B an item).
        const size_t state = 16 * m + 16 * (nb + 2) + items * (16 + xyzz_bytes) + 9 * std::max(m, items);
        bytes += nwin * (nb + 1) * xyzz_bytes + 4 * items + 2 * state;  // buckets, item ids, two states
        bytes += nwin * reduction_segments((int)nwin, (uint32_t)nb) * xyzz_bytes;  // the window sums
    }
    return bytes + kStreamedMargin;
}

int msm_default_window(size_t count) {
    // Measured on the H200 (bench/cuda-kernels-2026-12-02.md): c = 20 is fastest at 2^24 points,
    // 22 at 2^27. Only c = 16, 20, 22, 24 leave the top window most of its bits (c W - 255
    // small); with c = 18 or 21 the top window holds 3-4 bits, a handful of buckets gets every
    // point, and merging their items serially makes those windows about 2x slower.
    if (count >= (1u << 20) && count < (1u << 23)) return 16;
    if (count >= (3u << 25)) return 22;
    if (count >= (1u << 23)) return 20;
    // Below 2^20, a cost model: windows * (points + 2 bucket additions a bucket).
    int best = 4;
    double best_cost = 1e300;
    for (int c = 4; c <= 22; c++) {
        int nwin = (256 + c - 1) / c;
        double cost = nwin * ((double)count + 2.0 * (double)(1u << (c - 1)));
        if (cost < best_cost) {
            best_cost = cost;
            best = c;
        }
    }
    return best;
}

namespace {
void require_window_bits(const msm_options& opt) {
    CZ_REQUIRE(opt.window_bits == 0 || (opt.window_bits >= 2 && opt.window_bits <= 24),
               "MSM window must be 0 (chosen by size) or 2 .. 24 bits, got " + std::to_string(opt.window_bits));
}
}  // namespace

template <class F>
xyzz_t<F> msm_device(cz_context& ctx, cudaStream_t stream, const affine_t<F>* bases, const fr_t* scalars, size_t n,
                     const msm_options& opt) {
    (void)ctx;
    CZ_REQUIRE(n < kSignBit, "MSM larger than 2^31 points");
    require_window_bits(opt);
    if (n == 0) return xyzz_t<F>::identity();
    scalar_classes classes(n, stream);
    classify_scratch scratch(n, stream);
    classify_scalars(stream, scalars, n, scratch, classes);
    uint32_t host_counts[2];
    CZ_CHECK(cudaMemcpyAsync(host_counts, classes.counts.get(), sizeof host_counts, cudaMemcpyDeviceToHost, stream));
    wait_stream(stream, opt.cancel);

    auto t_ones = std::chrono::steady_clock::now();
    xyzz_t<F> ones = sum_ones<F>(stream, bases, classes.one_idx.get(), classes.counts.get(), host_counts[0]);
    if (opt.profile)
        std::fprintf(stderr, "msm profile: n=%zu ones=%u large=%u | sum of ones %.2f ms\n", n, host_counts[0],
                     host_counts[1], ms_since(t_ones));
    int c = opt.window_bits ? opt.window_bits : msm_default_window(host_counts[1]);
    throw_if_cancelled(opt.cancel);
    xyzz_t<F> big =
        pippenger<F>(stream, bases, scalars, classes.big_idx.get(), host_counts[1], c, opt.profile, opt.cancel);
    return big.add(ones);
}

template <class F>
xyzz_t<F> msm_streamed(cz_context& ctx, cudaStream_t stream, const affine_t<F>* host, size_t chunk,
                       const fr_t* scalars, size_t n, const msm_options& opt) {
    (void)ctx;
    require_window_bits(opt);
    if (n == 0) return xyzz_t<F>::identity();
    chunk = std::min(std::max<size_t>(chunk, 1), n);
    CZ_REQUIRE(chunk < kSignBit, "MSM chunk larger than 2^31 points");  // indices within a chunk
    const size_t nchunks = (n + chunk - 1) / chunk, sets = nchunks > 1 ? 2 : 1;
    // The window from the whole vector's large scalars (a pass over them and a synchronisation,
    // unless the caller counted them).
    const size_t large =
        opt.large != msm_options::kLargeUncounted ? opt.large : count_large_scalars(stream, scalars, n);
    const int c = opt.window_bits ? opt.window_bits : msm_streamed_window(large, chunk);

    // Chunk i's points (copied on `copier`) and its scalars' classes (made on `classifier`) are
    // set i % 2: chunk i + 1 is copied and classified while chunk i is summed.
    dev_buf<affine_t<F>> points[2] = {dev_buf<affine_t<F>>(chunk, stream),
                                      dev_buf<affine_t<F>>(sets > 1 ? chunk : 0, stream)};
    scalar_classes classes[2] = {scalar_classes(chunk, stream), scalar_classes(sets > 1 ? chunk : 0, stream)};
    classify_scratch scratch(chunk, stream);
    // The running sum of ones: partial sums, all zero bytes (the identity, curve.cuh) to start.
    const uint32_t ones_n = ones_threads(chunk);
    dev_buf<xyzz_t<F>> ones(ones_n, stream);
    CZ_CHECK(cudaMemsetAsync(ones.get(), 0, ones.bytes(), stream));
    int priority = 0;
    CZ_CHECK(cudaStreamGetPriority(stream, &priority));
    cuda_stream copier(priority), classifier(priority);
    // Declared after the buffers: on scope exit, also after an error or a cancel, `stream` waits
    // for both side streams before the buffers are freed in its order.
    stream_join join_copier{stream, copier.s}, join_classifier{stream, classifier.s};
    // summed[i % 2]: recorded on `stream` once chunk i's sum of ones and the bucket loops of all
    // its windows are queued; each of them waited there for the sorts of its window (which read
    // the chunk's indices), so the event's completion means nothing reads set i % 2 any more.
    cuda_event allocated, copied[2], classified[2], summed[2];
    // Declared last: destroyed first, its sort stream joined into `stream` before the sets it
    // reads are freed.
    std::optional<pippenger_sum<F>> large_sum;
    if (large) large_sum.emplace(stream, (uint32_t)std::min(chunk, large), c, opt.profile, opt.cancel);
    CZ_CHECK(cudaEventRecord(allocated.e, stream));
    CZ_CHECK(cudaStreamWaitEvent(copier.s, allocated.e, 0));
    CZ_CHECK(cudaStreamWaitEvent(classifier.s, allocated.e, 0));

    auto copy = [&](size_t i) {  // into set i % 2, once chunk i - 2 is summed
        const size_t off = i * chunk, cnt = std::min(chunk, n - off);
        if (i >= 2) CZ_CHECK(cudaStreamWaitEvent(copier.s, summed[i % 2].e, 0));
        CZ_CHECK(cudaMemcpyAsync(points[i % 2].get(), host + off, cnt * sizeof(affine_t<F>), cudaMemcpyHostToDevice,
                                 copier.s));
        CZ_CHECK(cudaEventRecord(copied[i % 2].e, copier.s));
    };
    auto classify = [&](size_t i) {  // into set i % 2, once chunk i - 2 is summed
        const size_t off = i * chunk, cnt = std::min(chunk, n - off);
        if (i >= 2) CZ_CHECK(cudaStreamWaitEvent(classifier.s, summed[i % 2].e, 0));
        classify_scalars(classifier.s, scalars + off, cnt, scratch, classes[i % 2]);
        CZ_CHECK(cudaEventRecord(classified[i % 2].e, classifier.s));
    };
    copy(0);
    classify(0);
    for (size_t i = 0; i < nchunks; i++) {
        const size_t b = i % 2, off = i * chunk;
        throw_if_cancelled(opt.cancel);
        // The chunk's counts, its Pippenger's launch sizes: the one host wait a chunk. It waits
        // for chunk i - 2's sums (the classification's turn for the set), not chunk i - 1's, and
        // the classifier holds nothing after it yet, so the copy returns at once.
        wait_event(classified[b].e, opt.cancel);
        uint32_t counts[2];
        CZ_CHECK(cudaMemcpyAsync(counts, classes[b].counts.get(), sizeof counts, cudaMemcpyDeviceToHost,
                                 classifier.s));
        CZ_CHECK(cudaStreamSynchronize(classifier.s));
        if (i + 1 < nchunks) {
            copy(i + 1);
            classify(i + 1);
        }
        CZ_CHECK(cudaStreamWaitEvent(stream, copied[b].e, 0));
        CZ_CHECK(cudaStreamWaitEvent(stream, classified[b].e, 0));
        if (counts[0]) {
            sum_selected_kernel<F, true><<<blocks_for(ones_n, 128), 128, 0, stream>>>(
                points[b].get(), classes[b].one_idx.get(), classes[b].counts.get(), ones.get(), ones_n);
            CZ_CHECK_LAUNCH();
        }
        if (large_sum) large_sum->add(points[b].get(), scalars + off, classes[b].big_idx.get(), counts[1],
                                      classified[b].e);
        CZ_CHECK(cudaEventRecord(summed[b].e, stream));
    }
    fold_rows<F>(stream, ones.get(), 1, ones_n);
    const xyzz_t<F> big = large_sum ? large_sum->finish() : xyzz_t<F>::identity();
    wait_stream(stream, opt.cancel);
    xyzz_t<F> ones_sum;  // `stream` is idle: the copy returns at once
    CZ_CHECK(cudaMemcpyAsync(&ones_sum, ones.get(), sizeof ones_sum, cudaMemcpyDeviceToHost, stream));
    CZ_CHECK(cudaStreamSynchronize(stream));
    return big.add(ones_sum);
}

template <class F>
void affine_to_montgomery(cudaStream_t stream, affine_t<F>* pts, size_t n) {
    if (n == 0) return;
    to_mont_affine_kernel<F><<<blocks_for(n, 256), 256, 0, stream>>>(pts, n);
    CZ_CHECK_LAUNCH();
}

template xyzz_t<fq_t> msm_streamed<fq_t>(cz_context&, cudaStream_t, const affine_t<fq_t>*, size_t, const fr_t*,
                                         size_t, const msm_options&);
template xyzz_t<fq2_t> msm_streamed<fq2_t>(cz_context&, cudaStream_t, const affine_t<fq2_t>*, size_t, const fr_t*,
                                           size_t, const msm_options&);
template xyzz_t<fq_t> msm_device<fq_t>(cz_context&, cudaStream_t, const affine_t<fq_t>*, const fr_t*, size_t,
                                       const msm_options&);
template xyzz_t<fq2_t> msm_device<fq2_t>(cz_context&, cudaStream_t, const affine_t<fq2_t>*, const fr_t*, size_t,
                                         const msm_options&);
template void affine_to_montgomery<fq_t>(cudaStream_t, affine_t<fq_t>*, size_t);
template void affine_to_montgomery<fq2_t>(cudaStream_t, affine_t<fq2_t>*, size_t);
