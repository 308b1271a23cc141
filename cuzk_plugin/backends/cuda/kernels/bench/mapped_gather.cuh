// Whether a streamed MSM should read only the points of its non-zero scalars straight from the
// page-locked key (the device gathering through the mapped address) instead of copying whole
// chunks: a 32 GiB PoRep partition's L, A and B scalars are ~51 % zeros, and at a 24 GiB device
// limit those MSMs are bound by the link. Measures, on 2^log_n random 96-byte records (a G1
// affine point's size) in page-locked host memory, the bulk copy of all of them against a
// kernel that reads the selected ones (each kept with probability permille / 1000, independently,
// as the data's zeros are) into device memory.
#pragma once
#include <cstdint>

#include "context.cuh"

// Event-timed milliseconds of `repeat` bulk copies of the 2^log_n records (copy_ms) and of
// `repeat` gathers of the selected ones (gather_ms), after one warm-up of each; *selected: how
// many were kept; *check_ok: whether the warm-up's gathered records equal the host's.
void bench_mapped_gather(cz_context& ctx, int log_n, int permille, int repeat, double* copy_ms, double* gather_ms,
                         uint64_t* selected, int* check_ok);

// The G1 MSM of 2^log_n random points with Filecoin-like scalars (frac_bits of them 0 or 1, half
// each; a 32 GiB PoRep partition's L, A and B: ~0.987), three ways, each timed `repeat` times
// after a warm-up whose sum is checked against (sum k_i d_i) G: the points resident on the device
// (msm_device), streamed from page-locked host memory in chunks of 2^24 (msm_streamed, the
// streamed path), and read by msm_device through the page-locked copy's mapped address (no copy:
// only the points of non-zero scalars cross the link). *check_ok: all three right.
void bench_msm_mapped(cz_context& ctx, int log_n, double frac_bits, int repeat, double* resident_ms,
                      double* streamed_ms, double* mapped_ms, int* check_ok);
