// Throughput of G1 point additions as a bucket loop makes them, to decide whether a
// batch-affine bucket loop can beat the mixed XYZZ one on a device (issue 27), before any
// MSM is rewritten: the same 2^log_adds additions over 2^log_n random points, summed by mixed
// XYZZ additions (one accumulator a thread) or by affine additions in batches of `batch`
// accumulators a thread sharing one inversion (affine_batch.cuh).
#pragma once
#include <cstdint>

#include "context.cuh"

// Batches cz_bench_point_adds times (accumulators a thread); 0 is the XYZZ loop.
constexpr int kPointAddBatches[] = {0, 8, 16, 32, 64};

// Event-timed milliseconds of `repeat` runs of 2^log_adds additions (after one warm-up), with
// `batch` = 0 (XYZZ) or one of kPointAddBatches; *check_ok: whether the warm-up's sum equals
// (sum of the points' discrete logarithms taken as often as added) G.
void bench_point_adds(cz_context& ctx, int batch, int log_n, int log_adds, int repeat, double* times_ms, int* check_ok);

// Host-only check of affine_batch_add against mixed XYZZ additions of the same sequences,
// through copies, additions, doublings, P + (-P) and identities. Returns how many checks ran;
// throws naming the first mismatch.
uint64_t affine_batch_selftest_host();
