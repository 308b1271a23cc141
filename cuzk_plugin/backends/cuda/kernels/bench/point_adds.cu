// G1 addition throughput, mixed XYZZ against batch-affine (see point_adds.cuh).
#include <string>
#include <vector>

#include "affine_batch.cuh"
#include "event_pair.cuh"
#include "gen.cuh"
#include "ntt.cuh"
#include "point_adds.cuh"

namespace {

constexpr unsigned kThreads = 128;
constexpr size_t kAccumulators = size_t(1) << 17;  // threads of each kernel: ~1000 an SM

// Accumulator t sums points i = s T + t (s < steps), by mixed XYZZ additions.
__global__ void adds_xyzz_kernel(const g1_affine_t* __restrict__ pts, uint64_t mask, uint64_t steps,
                                 g1_xyzz_t* out) {
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, T = (uint64_t)gridDim.x * blockDim.x;
    g1_xyzz_t acc = g1_xyzz_t::identity();
#pragma unroll 1
    for (uint64_t s = 0; s < steps; s++) acc = acc.add_affine_inline(pts[(s * T + t) & mask]);
    out[t] = acc;
}

// Thread t keeps K affine accumulators; step s adds point (s K + k) T + t to accumulator k, the
// K additions sharing one inversion. The thread's sum, as XYZZ, goes to out[t].
template <int K>
__global__ void adds_batch_kernel(const g1_affine_t* __restrict__ pts, uint64_t mask, uint64_t steps,
                                  g1_xyzz_t* out) {
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, T = (uint64_t)gridDim.x * blockDim.x;
    g1_affine_t acc[K];
    fq_t prefix[K];
    for (int k = 0; k < K; k++) acc[k] = {fq_t::zero(), fq_t::zero()};
#pragma unroll 1
    for (uint64_t s = 0; s < steps; s++)
        affine_batch_add<fq_t, K>(acc, [&](int k) { return pts[((s * K + k) * T + t) & mask]; }, prefix);
    g1_xyzz_t sum = g1_xyzz_t::identity();
    for (int k = 0; k < K; k++) sum = sum.add_affine_inline(acc[k]);
    out[t] = sum;
}

// out[i] += out[i + half] for i < half.
__global__ void fold_kernel(g1_xyzz_t* out, size_t half) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < half) out[i] = out[i].add(out[i + half]);
}

void launch(int batch, cudaStream_t s, const g1_affine_t* pts, uint64_t mask, uint64_t adds, g1_xyzz_t* out) {
    const unsigned blocks = (unsigned)(kAccumulators / kThreads);
    const uint64_t per_thread = adds / kAccumulators;
    switch (batch) {
        case 0: adds_xyzz_kernel<<<blocks, kThreads, 0, s>>>(pts, mask, per_thread, out); break;
        case 8: adds_batch_kernel<8><<<blocks, kThreads, 0, s>>>(pts, mask, per_thread / 8, out); break;
        case 16: adds_batch_kernel<16><<<blocks, kThreads, 0, s>>>(pts, mask, per_thread / 16, out); break;
        case 32: adds_batch_kernel<32><<<blocks, kThreads, 0, s>>>(pts, mask, per_thread / 32, out); break;
        case 64: adds_batch_kernel<64><<<blocks, kThreads, 0, s>>>(pts, mask, per_thread / 64, out); break;
        default: CZ_REQUIRE(false, "point adds: batch must be 0, 8, 16, 32 or 64");
    }
    CZ_CHECK_LAUNCH();
}

}  // namespace

void bench_point_adds(cz_context& ctx, int batch, int log_n, int log_adds, int repeat, double* times_ms,
                      int* check_ok) {
    CZ_REQUIRE(log_n >= 10 && log_n <= 26, "point adds: log_n must be 10..26");
    CZ_REQUIRE(log_adds >= log_n && (size_t(1) << log_adds) >= kAccumulators * 64 && log_adds <= 34,
               "point adds: log_adds must be at least log_n and 23, at most 34");
    cudaStream_t s = ctx.stream;
    const size_t n = size_t(1) << log_n;
    const uint64_t adds = uint64_t(1) << log_adds;
    dev_buf<g1_affine_t> pts(n, s);
    dev_buf<fr_t> dlog(n, s);
    dev_buf<g1_xyzz_t> out(kAccumulators, s);
    random_bases<fq_t>(s, pts.get(), n, 11, dlog.get());
    // Each point is added adds / n times: the sum is (adds / n) (sum_i k_i) G.
    std::vector<fr_t> k(n);
    CZ_CHECK(cudaMemcpyAsync(k.data(), dlog.get(), dlog.bytes(), cudaMemcpyDeviceToHost, s));
    CZ_CHECK(cudaStreamSynchronize(s));
    fr_t sum = fr_t::zero();
    for (const fr_t& x : k) sum = sum + x;
    const fr_t want_k = sum * fr_from_u64(adds >> log_n);
    launch(batch, s, pts.get(), n - 1, adds, out.get());  // warm-up, checked
    for (size_t half = kAccumulators / 2; half >= 1; half /= 2) {
        fold_kernel<<<blocks_for(half, 256), 256, 0, s>>>(out.get(), half);
        CZ_CHECK_LAUNCH();
    }
    g1_xyzz_t got;
    CZ_CHECK(cudaMemcpyAsync(&got, out.get(), sizeof got, cudaMemcpyDeviceToHost, s));
    CZ_CHECK(cudaStreamSynchronize(s));
    const g1_affine_t have = got.to_affine(), want = mul_generator_host<fq_t>(want_k).to_affine();
    *check_ok = have.x == want.x && have.y == want.y;
    event_pair ev;
    for (int r = 0; r < repeat; r++) {
        CZ_CHECK(cudaEventRecord(ev.start, s));
        launch(batch, s, pts.get(), n - 1, adds, out.get());
        CZ_CHECK(cudaEventRecord(ev.stop, s));
        CZ_CHECK(cudaEventSynchronize(ev.stop));
        times_ms[r] = ev.ms();
    }
}

uint64_t affine_batch_selftest_host() {
    constexpr int K = 6, kSteps = 7;
    auto g1 = [](int64_t k) {
        g1_affine_t p = mul_generator_host<fq_t>(fr_t::raw_u32((uint32_t)(k < 0 ? -k : k)).to_mont()).to_affine();
        return k < 0 ? p.neg() : p;
    };
    const g1_affine_t O = {fq_t::zero(), fq_t::zero()};
    // Accumulator k's points, step by step (0 below stands for the identity): a doubling (3G +
    // 3G), P + (-P) then a copy into the emptied accumulator, identities first and between,
    // plain additions, and a doubling reached after additions (1 + 2 = 3, then + 3).
    const int64_t seq[K][kSteps] = {
        {3, 3, 5, 7, 11, 13, 17},  {4, -4, 9, 2, 0, 6, 1},    {0, 0, 8, 8, 16, 0, 32},
        {1, 2, 3, 0, 6, 12, 24},   {21, 22, 23, 24, 25, 26, 27}, {5, -5, -5, 5, 10, -10, 0},
    };
    uint64_t checks = 0;
    g1_affine_t acc[K];
    fq_t prefix[K];
    g1_xyzz_t want[K];
    for (int k = 0; k < K; k++) acc[k] = O, want[k] = g1_xyzz_t::identity();
    for (int s = 0; s < kSteps; s++) {
        affine_batch_add<fq_t, K>(acc, [&](int k) { return seq[k][s] == 0 ? O : g1(seq[k][s]); }, prefix);
        for (int k = 0; k < K; k++) {
            want[k] = want[k].add_affine_inline(seq[k][s] == 0 ? O : g1(seq[k][s]));
            const g1_affine_t w = want[k].to_affine();
            checks++;
            if (!(w.x == acc[k].x && w.y == acc[k].y))
                throw cz_error(CZ_INTERNAL, "affine batch self-test: accumulator " + std::to_string(k) + " after step " +
                                                std::to_string(s) + " differs from the XYZZ sum");
        }
    }
    return checks;
}
