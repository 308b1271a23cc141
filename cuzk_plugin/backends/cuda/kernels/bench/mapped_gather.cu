// Gathering selected records through the mapped address of page-locked host memory against a
// bulk copy (see mapped_gather.cuh).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "event_pair.cuh"
#include "gen.cuh"
#include "mapped_gather.cuh"
#include "msm.cuh"

namespace {

constexpr unsigned kWords = 6;  // a 96-byte record as six 16-byte words

// out[i] = records[idx[i]], one 16-byte word a thread, so that a warp reads whole records.
__global__ void gather_kernel(const uint4* __restrict__ records, const uint32_t* __restrict__ idx, uint64_t count,
                              uint4* __restrict__ out) {
    const uint64_t g = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= count * kWords) return;
    const uint64_t i = g / kWords, w = g - i * kWords;
    out[g] = records[(uint64_t)idx[i] * kWords + w];
}

// `count` T in page-locked host memory, mapped (with unified addressing the device reads it at
// the same address; cudaHostGetDevicePointer says so explicitly).
template <class T>
struct mapped_host {
    T* ptr = nullptr;
    T* device = nullptr;
    explicit mapped_host(size_t count) {
        CZ_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&ptr), count * sizeof(T), cudaHostAllocMapped));
        CZ_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device), ptr, 0));
    }
    ~mapped_host() { cudaFreeHost(ptr); }
    mapped_host(const mapped_host&) = delete;
    mapped_host& operator=(const mapped_host&) = delete;
};

}  // namespace

void bench_mapped_gather(cz_context& ctx, int log_n, int permille, int repeat, double* copy_ms, double* gather_ms,
                         uint64_t* selected, int* check_ok) {
    CZ_REQUIRE(log_n >= 10 && log_n <= 25, "mapped gather: log_n must be 10..25");
    CZ_REQUIRE(permille >= 1 && permille <= 1000, "mapped gather: permille must be 1..1000");
    cudaStream_t s = ctx.stream;
    const size_t n = size_t(1) << log_n, words = n * kWords;
    mapped_host<uint4> host(words);
    uint64_t* raw = reinterpret_cast<uint64_t*>(host.ptr);
    for (size_t i = 0; i < 2 * words; i++) raw[i] = splitmix64(i);
    std::vector<uint32_t> idx;
    idx.reserve(n);
    for (uint32_t i = 0; i < n; i++)
        if (splitmix64(i ^ (0xa5a5a5a5ull << 32)) % 1000 < (uint64_t)permille) idx.push_back(i);
    *selected = idx.size();
    const size_t m = idx.size();
    dev_buf<uint4> whole(words, s), gathered(m * kWords + 1, s);
    dev_buf<uint32_t> d_idx(m + 1, s);
    CZ_CHECK(cudaMemcpyAsync(d_idx.get(), idx.data(), m * sizeof(uint32_t), cudaMemcpyHostToDevice, s));
    auto copy = [&] {
        CZ_CHECK(cudaMemcpyAsync(whole.get(), host.ptr, words * sizeof(uint4), cudaMemcpyHostToDevice, s));
    };
    auto gather = [&] {
        if (!m) return;
        gather_kernel<<<blocks_for(m * kWords, 256), 256, 0, s>>>(host.device, d_idx.get(), m, gathered.get());
        CZ_CHECK_LAUNCH();
    };
    copy();
    gather();
    std::vector<uint4> got(m * kWords);
    CZ_CHECK(cudaMemcpyAsync(got.data(), gathered.get(), got.size() * sizeof(uint4), cudaMemcpyDeviceToHost, s));
    CZ_CHECK(cudaStreamSynchronize(s));
    bool ok = true;
    for (size_t i = 0; i < m && ok; i++)
        ok = std::memcmp(&got[i * kWords], &host.ptr[(size_t)idx[i] * kWords], kWords * sizeof(uint4)) == 0;
    *check_ok = ok;
    event_pair ev;
    for (int r = 0; r < repeat; r++) {
        CZ_CHECK(cudaEventRecord(ev.start, s));
        copy();
        CZ_CHECK(cudaEventRecord(ev.stop, s));
        CZ_CHECK(cudaEventSynchronize(ev.stop));
        copy_ms[r] = ev.ms();
        CZ_CHECK(cudaEventRecord(ev.start, s));
        gather();
        CZ_CHECK(cudaEventRecord(ev.stop, s));
        CZ_CHECK(cudaEventSynchronize(ev.stop));
        gather_ms[r] = ev.ms();
    }
}

void bench_msm_mapped(cz_context& ctx, int log_n, double frac_bits, int repeat, double* resident_ms,
                      double* streamed_ms, double* mapped_ms, int* check_ok) {
    CZ_REQUIRE(log_n >= 10 && log_n <= 27, "mapped msm: log_n must be 10..27");
    CZ_REQUIRE(frac_bits >= 0 && frac_bits <= 1, "mapped msm: frac_bits must be 0..1");
    cudaStream_t s = ctx.stream;
    const size_t n = size_t(1) << log_n, chunk = std::min(n, size_t(1) << 24);
    dev_buf<g1_affine_t> bases(n, s);
    dev_buf<fr_t> scalars(n, s);
    fr_t e;
    {
        dev_buf<fr_t> dlog(n, s);
        random_bases<fq_t>(s, bases.get(), n, 21, dlog.get());
        random_scalars(s, scalars.get(), n, 28, frac_bits);
        e = dot_mod_r(s, scalars.get(), dlog.get(), n);
    }
    const g1_affine_t want = mul_generator_host<fq_t>(e).to_affine();
    mapped_host<g1_affine_t> host(n);
    CZ_CHECK(cudaMemcpyAsync(host.ptr, bases.get(), n * sizeof(g1_affine_t), cudaMemcpyDeviceToHost, s));
    const msm_options opt;
    bool ok = true;
    auto run = [&](int way) {
        g1_xyzz_t got = way == 0   ? msm_device<fq_t>(ctx, s, bases.get(), scalars.get(), n, opt)
                        : way == 1 ? msm_streamed<fq_t>(ctx, s, host.ptr, chunk, scalars.get(), n, opt)
                                   : msm_device<fq_t>(ctx, s, host.device, scalars.get(), n, opt);
        CZ_CHECK(cudaStreamSynchronize(s));
        return got;
    };
    double* out[3] = {resident_ms, streamed_ms, mapped_ms};
    for (int way = 0; way < 3; way++) {
        if (way == 1) bases = dev_buf<g1_affine_t>();  // the streamed and mapped ways hold no device copy
        const g1_affine_t have = run(way).to_affine();
        ok = ok && have.x == want.x && have.y == want.y;
        for (int r = 0; r < repeat; r++) {
            auto t0 = std::chrono::steady_clock::now();
            run(way);
            out[way][r] = ms_since(t0);
        }
    }
    *check_ok = ok;
}
