// Multi-scalar multiplication sum_i k_i P_i on the device, for G1 (F = fq_t) and G2 (fq2_t).
#pragma once
#include "cancel.cuh"
#include "context.cuh"
#include "curve.cuh"

struct msm_options {
    int window_bits = 0;   // 0: chosen from the size of the large-scalar tail (msm_default_window,
                           // msm_streamed_window for msm_streamed)
    bool profile = false;  // phase timings on stderr, the phases run in turn (benchmarks)
    // Checked between phases and windows (the host then stays at most two windows ahead of the
    // device): CZ_CANCELLED once set, with the queued windows left to finish.
    const cz_cancel_flag* cancel = nullptr;
    // msm_streamed: the scalars other than 0 and 1, where the caller has counted them already
    // (count_large_scalars over the same scalars: it sizes buffers, so exact), saving a pass
    // over them and a synchronisation; kLargeUncounted: counted by the MSM.
    static constexpr size_t kLargeUncounted = ~size_t(0);
    size_t large = kLargeUncounted;
};

// bases: affine, Montgomery, on the device; scalars: canonical Fr limbs (< r) on the device.
// Scalars equal to 0 are skipped, scalars equal to 1 are summed directly (batch addition:
// most Filecoin witness values are bits), the rest go through Pippenger with signed
// windows and digits sorted by bucket. Runs on `stream`; returns the sum (XYZZ, Montgomery)
// on the host once the device work is done.
template <class F>
xyzz_t<F> msm_device(cz_context& ctx, cudaStream_t stream, const affine_t<F>* bases, const fr_t* scalars,
                     size_t n, const msm_options& opt = {});

// sum_i k_i P_i with the points in page-locked host memory (affine, Montgomery; `host` must
// outlive the call) and the scalars on the device: the points are copied to the device in
// chunks of `chunk` on a stream of their own (chunk i + 1 while chunk i is summed), and all
// chunks feed one Pippenger: one bucket array, the window sums and Horner once at the end; the
// points whose scalar is 1 are summed on the device across chunks. Cancel (opt.cancel) is
// checked between chunks and windows, as in msm_device. Runs on `stream`; returns the sum
// (XYZZ, Montgomery) on the host once the device work is done.
template <class F>
xyzz_t<F> msm_streamed(cz_context& ctx, cudaStream_t stream, const affine_t<F>* host, size_t chunk,
                       const fr_t* scalars, size_t n, const msm_options& opt);

// Window bits used for a Pippenger tail of `count` scalars.
int msm_default_window(size_t count);

// Window bits of a streamed MSM in chunks of `chunk` points whose scalars hold `large` other
// than 0 and 1 in all: msm_default_window(large), at most the window of a chunk's own MSM
// (msm_default_window(chunk)), so that its buckets take no more room than a chunk's MSM did:
// 20 bits at 2^23-2^24 points a chunk (1.3 GB of buckets in G1, 2.6 GB in G2), 16 at 2^20-2^22
// (0.1 and 0.2 GB), where the whole vector's 2^27 scalars alone would choose 22 (4.8 GB in G1).
int msm_streamed_window(size_t large, size_t chunk);

// Scalars of `scalars[0..n)` other than 0 and 1: the ones Pippenger sorts into buckets (a
// Filecoin witness is mostly bits). Synchronises the stream.
size_t count_large_scalars(cudaStream_t stream, const fr_t* scalars, size_t n);

// An upper bound of the device memory an MSM of `count` points, `large` of them with scalars
// other than 0 and 1, holds at its peak (`point_bytes`: the affine size, 96 in G1, 192 in G2):
// the classification (10 bytes a point), two window states of the large ones (keys, values
// and the sort's scratch: 40 bytes a point in all) and the buckets of every window.
size_t msm_scratch_bytes(size_t count, size_t large, size_t point_bytes);

// An upper bound of the device memory msm_streamed holds at its peak over `count` points,
// `large` of them with scalars other than 0 and 1, in chunks of `chunk` points (`point_bytes`
// as above; the default window, msm_streamed_window(large, chunk)): the two chunk buffers of points
// (one where a chunk holds them all) and the classifications of two chunks (indices, counts,
// one set of flags), the running sum of ones, the buckets of every window, two window states
// sized for a chunk's large scalars (keys, values, items, their partial sums, the sorts'
// scratch), the window sums' segments, and 128 MiB for CUB's histograms and tile states and
// the pool's rounding.
size_t msm_streamed_scratch_bytes(size_t count, size_t large, size_t point_bytes, size_t chunk);

// Converts canonical affine limbs to Montgomery in place (host layout (n, 2, 6) / (n, 2, 2, 6)).
template <class F>
void affine_to_montgomery(cudaStream_t stream, affine_t<F>* pts, size_t n);
