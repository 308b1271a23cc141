// The library's C ABI: plain pointers, counts and flags in; a cz_status {code, message} out.
// Host arrays use the package's boundary layout (canonical little-endian limbs, which are
// byte-identical to our 32-bit limb structs). Results are affine canonical limbs; the
// identity is all zeros.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "gen.cuh"
#include "instance.cuh"
#include "ntt.cuh"
#include "prove.cuh"
#include "upload.cuh"

namespace {

template <class F>
void write_affine(const xyzz_t<F>& p, uint64_t* out) {
    affine_t<F> a = p.to_affine();
    affine_t<F> canon = {a.x.from_mont(), a.y.from_mont()};
    if (p.is_identity()) canon = {F::zero(), F::zero()};
    std::memcpy(out, &canon, sizeof canon);
}

template <class F>
void msm_host(cz_context* ctx, const uint64_t* bases, const uint64_t* scalars, size_t n, uint64_t* out,
              int window_bits) {
    std::lock_guard<std::mutex> lock(ctx->compute_lock);
    CZ_CHECK(cudaSetDevice(ctx->device));
    cudaStream_t s = ctx->stream;
    dev_buf<affine_t<F>> d_bases(n, s);
    dev_buf<fr_t> d_scalars(n, s);
    if (n) {
        CZ_CHECK(cudaMemcpyAsync(d_bases.get(), bases, n * sizeof(affine_t<F>), cudaMemcpyHostToDevice, s));
        CZ_CHECK(cudaMemcpyAsync(d_scalars.get(), scalars, n * sizeof(fr_t), cudaMemcpyHostToDevice, s));
    }
    affine_to_montgomery<F>(s, d_bases.get(), n);
    msm_options opt;
    opt.window_bits = window_bits;
    write_affine<F>(msm_device<F>(*ctx, s, d_bases.get(), d_scalars.get(), n, opt), out);
}

// h, l, a, b_g1 as (2, 6) uint64 each, then b_g2 as (2, 2, 6): 72 in all.
void write_sums(const proof_sums& sums, uint64_t* out) {
    write_affine<fq_t>(sums.h, out);
    write_affine<fq_t>(sums.l, out + 12);
    write_affine<fq_t>(sums.a, out + 24);
    write_affine<fq_t>(sums.b_g1, out + 36);
    write_affine<fq2_t>(sums.b_g2, out + 48);
}

double event_ms(cudaEvent_t a, cudaEvent_t b) {
    float ms = 0;
    CZ_CHECK(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

struct event_pair {
    cudaEvent_t start = nullptr, stop = nullptr;
    event_pair() {
        CZ_CHECK(cudaEventCreate(&start));
        CZ_CHECK(cudaEventCreate(&stop));
    }
    ~event_pair() {
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
    }
};

template <class F>
void bench_msm(cz_context* ctx, int log_n, int repeat, uint64_t seed, int window_bits, double* times_ms,
               int* check_ok) {
    cudaStream_t s = ctx->stream;
    size_t n = 1ull << log_n;
    dev_buf<affine_t<F>> bases(n, s);
    dev_buf<fr_t> scalars(n, s), dlog(n, s);
    random_bases<F>(s, bases.get(), n, seed, dlog.get());
    random_scalars(s, scalars.get(), n, seed + 7, 0.0);
    fr_t e = dot_mod_r(s, scalars.get(), dlog.get(), n);
    dlog = dev_buf<fr_t>();  // free before timing
    msm_options opt;
    opt.window_bits = window_bits;
    xyzz_t<F> got = msm_device<F>(*ctx, s, bases.get(), scalars.get(), n, opt);  // warm-up + check
    affine_t<F> want = mul_generator_host<F>(e).to_affine(), have = got.to_affine();
    *check_ok = want.x == have.x && want.y == have.y;
    for (int r = 0; r < repeat; r++) {
        CZ_CHECK(cudaStreamSynchronize(s));
        auto t0 = std::chrono::steady_clock::now();
        msm_device<F>(*ctx, s, bases.get(), scalars.get(), n, opt);
        times_ms[r] = ms_since(t0);
    }
}

// Secrets of the pipeline benchmark's key (its proofs are not checked): small fixed values.
bench_secrets fixed_secrets() {
    return {fr_from_u64(0x1234567), fr_from_u64(11), fr_from_u64(13), fr_from_u64(17), fr_from_u64(19)};
}

fr_t fr_from_canonical(const uint64_t* limbs) {
    fr_t k;
    std::memcpy(&k, limbs, sizeof k);
    return k.to_mont();
}

// A partition's buffers are freed in upload_stream order: make that stream wait for all the
// work queued so far on the compute streams, which read them.
void free_after_compute(cz_context& ctx) {
    for (cudaStream_t s : ctx.compute_streams()) {
        cuda_event done;
        CZ_CHECK(cudaEventRecord(done.e, s));
        CZ_CHECK(cudaStreamWaitEvent(ctx.upload_stream, done.e, 0));
    }
}

// Uploads a partition from host memory and proves it: the upload under upload_lock, the
// device work under compute_lock. The upload lock is handed on only once this partition holds
// the compute lock, so partition k+1 uploads while k computes, partitions compute in the
// order they uploaded, and at most one uploaded partition waits for the device (device memory
// stays bounded however many are started).
proof_sums prove_host(cz_context& ctx, const cz_srs& srs, const partition_host& host, prove_timings& t) {
    CZ_CHECK(cudaSetDevice(ctx.device));
    partition_buffers up;  // destroyed after the locks are released; its frees are stream-ordered
    cuda_event uploaded;
    auto t0 = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> upload_lock(ctx.upload_lock);
    double waited_ms = ms_since(t0);
    auto tu = std::chrono::steady_clock::now();
    upload_partition(ctx, host, up);
    CZ_CHECK(cudaEventRecord(uploaded.e, ctx.upload_stream));
    CZ_CHECK(cudaEventSynchronize(uploaded.e));  // upload_ms: until the data is on the device
    t.upload_ms = ms_since(tu);
    auto tq = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> compute_lock(ctx.compute_lock);
    upload_lock.unlock();
    t.queue_ms = waited_ms + ms_since(tq);
    CZ_CHECK(cudaStreamWaitEvent(ctx.stream, uploaded.e, 0));
    proof_sums sums;
    try {
        sums = prove_device(ctx, srs, up.part, &t);
    } catch (...) {
        // Let nothing still queued read `up` after it is freed; the first error is the one reported.
        for (cudaStream_t s : ctx.compute_streams()) cudaStreamSynchronize(s);
        throw;
    }
    free_after_compute(ctx);
    return sums;
}

// The task behind cz_prove_start (and the pipeline benchmark): prove_host on a library thread.
std::future<proof_sums> start_proof(cz_context* ctx, const cz_srs* srs, const partition_host& host,
                                    prove_timings* t) {
    return std::async(std::launch::async, [ctx, srs, host, t]() { return prove_host(*ctx, *srs, host, *t); });
}

// A benchmark partition's witness in pageable host memory (canonical limbs), made on the device.
struct host_witness {
    std::vector<uint64_t> a, b, c, inputs, aux;
};

}  // namespace

// A proof in flight: the host thread that runs it and what it returns.
struct cz_pending {
    std::future<proof_sums> result;
    prove_timings timings;
};

extern "C" {

cz_status cz_device_count(int* out) {
    return cz_guard([&] {
        *out = 0;
        CZ_CHECK(cudaGetDeviceCount(out));
    });
}

cz_status cz_device_info(int device, char* name, int name_len, uint64_t* memory_bytes, int* sm_count) {
    return cz_guard([&] {
        cudaDeviceProp prop;
        CZ_CHECK(cudaGetDeviceProperties(&prop, device));
        std::snprintf(name, name_len, "%s (sm_%d%d)", prop.name, prop.major, prop.minor);
        *memory_bytes = prop.totalGlobalMem;
        *sm_count = prop.multiProcessorCount;
    });
}

cz_status cz_context_create(int device, cz_context** out) {
    return cz_guard([&] {
        auto ctx = std::make_unique<cz_context>();
        ctx->device = device;
        CZ_CHECK(cudaSetDevice(device));
        // The main stream carries the prove's longest chain (H, then the H MSM); with
        // CZ_STREAM_PRIORITY=critical (default) it gets the device's highest priority and the
        // side streams (B in G2, L, A, B in G1) the lowest, so side work fills what the chain
        // leaves idle instead of delaying it; "flat": all streams equal.
        int least = 0, greatest = 0;
        CZ_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        const char* env = std::getenv("CZ_STREAM_PRIORITY");
        const bool flat = env && std::strcmp(env, "flat") == 0;
        CZ_REQUIRE(!env || !*env || flat || std::strcmp(env, "critical") == 0,
                   std::string("CZ_STREAM_PRIORITY: unknown setting ") + env);
        const int main_priority = flat ? least : greatest;
        CZ_CHECK(cudaStreamCreateWithPriority(&ctx->stream, cudaStreamNonBlocking, main_priority));
        CZ_CHECK(cudaStreamCreateWithPriority(&ctx->g2_stream, cudaStreamNonBlocking, least));
        for (cudaStream_t& side : ctx->side_streams)
            CZ_CHECK(cudaStreamCreateWithPriority(&side, cudaStreamNonBlocking, least));
        CZ_CHECK(cudaStreamCreateWithFlags(&ctx->upload_stream, cudaStreamNonBlocking));
        CZ_CHECK(cudaDeviceGetAttribute(&ctx->sm_count, cudaDevAttrMultiProcessorCount, device));
        // Keep freed pool memory: repeated proofs reuse it instead of returning it to the driver.
        cudaMemPool_t pool;
        CZ_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
        uint64_t keep = ~0ull;
        CZ_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
        *out = ctx.release();
    });
}

// No proof may be in flight on the context.
cz_status cz_context_destroy(cz_context* ctx) {
    return cz_guard([&] {
        if (!ctx) return;
        std::unique_ptr<cz_context> own(ctx);
        CZ_CHECK(cudaSetDevice(ctx->device));
        CZ_CHECK(cudaDeviceSynchronize());
        for (auto& kv : ctx->twiddles) CZ_CHECK(cudaFree(kv.second));
        staging_free(*ctx);
        CZ_CHECK(cudaStreamDestroy(ctx->stream));
        CZ_CHECK(cudaStreamDestroy(ctx->g2_stream));
        for (cudaStream_t side : ctx->side_streams) CZ_CHECK(cudaStreamDestroy(side));
        CZ_CHECK(cudaStreamDestroy(ctx->upload_stream));
    });
}

// In place on host data: (2^log_n, 4) uint64 canonical Fr.
cz_status cz_ntt(cz_context* ctx, uint64_t* data, int log_n, int inverse, int coset) {
    return cz_guard([&] {
        std::lock_guard<std::mutex> lock(ctx->compute_lock);
        CZ_CHECK(cudaSetDevice(ctx->device));
        CZ_REQUIRE(log_n >= 0 && log_n <= 32, "NTT size must be 2^0 .. 2^32");
        size_t n = 1ull << log_n;
        dev_buf<fr_t> d(n, ctx->stream);
        CZ_CHECK(cudaMemcpyAsync(d.get(), data, n * sizeof(fr_t), cudaMemcpyHostToDevice, ctx->stream));
        ntt_natural(*ctx, d.get(), log_n, inverse != 0, coset != 0);
        CZ_CHECK(cudaMemcpyAsync(data, d.get(), n * sizeof(fr_t), cudaMemcpyDeviceToHost, ctx->stream));
        CZ_CHECK(cudaStreamSynchronize(ctx->stream));
    });
}

// a, b, c: m rows each; h_out: N - 1 rows (N = next power of two >= m).
cz_status cz_quotient_h(cz_context* ctx, const uint64_t* a, const uint64_t* b, const uint64_t* c, size_t m,
                        uint64_t* h_out) {
    return cz_guard([&] {
        std::lock_guard<std::mutex> lock(ctx->compute_lock);
        CZ_CHECK(cudaSetDevice(ctx->device));
        CZ_REQUIRE(m >= 1, "quotient_h needs at least one constraint");
        const int log_n = log2_ceil(m);
        const size_t n = 1ull << log_n;
        cudaStream_t s = ctx->stream;
        dev_buf<fr_t> da(n, s), db(n, s), dc(n, s), dh(n, s);
        const uint64_t* src[3] = {a, b, c};
        fr_t* dst[3] = {da.get(), db.get(), dc.get()};
        for (int i = 0; i < 3; i++) {
            CZ_CHECK(cudaMemsetAsync(dst[i], 0, n * sizeof(fr_t), s));
            CZ_CHECK(cudaMemcpyAsync(dst[i], src[i], m * sizeof(fr_t), cudaMemcpyHostToDevice, s));
        }
        quotient_h_device(*ctx, da.get(), db.get(), dc.get(), dh.get(), log_n);
        if (n > 1) CZ_CHECK(cudaMemcpyAsync(h_out, dh.get(), (n - 1) * sizeof(fr_t), cudaMemcpyDeviceToHost, s));
        CZ_CHECK(cudaStreamSynchronize(s));
    });
}

// bases (n, 2, 6) canonical affine; scalars (n, 4) canonical < r; out (2, 6).
cz_status cz_msm_g1(cz_context* ctx, const uint64_t* bases, const uint64_t* scalars, size_t n, uint64_t* out,
                    int window_bits) {
    return cz_guard([&] { msm_host<fq_t>(ctx, bases, scalars, n, out, window_bits); });
}

// bases (n, 2, 2, 6); out (2, 2, 6).
cz_status cz_msm_g2(cz_context* ctx, const uint64_t* bases, const uint64_t* scalars, size_t n, uint64_t* out,
                    int window_bits) {
    return cz_guard([&] { msm_host<fq2_t>(ctx, bases, scalars, n, out, window_bits); });
}

cz_status cz_srs_load(cz_context* ctx, const uint8_t* h, size_t n_h, const uint8_t* l, size_t n_l,
                      const uint8_t* a, size_t n_a, const uint8_t* b_g1, size_t n_b_g1, const uint8_t* b_g2,
                      size_t n_b_g2, cz_srs** out, uint64_t* nbytes) {
    return cz_guard([&] {
        std::lock_guard<std::mutex> lock(ctx->compute_lock);
        CZ_CHECK(cudaSetDevice(ctx->device));
        auto srs = srs_load(*ctx, h, n_h, l, n_l, a, n_a, b_g1, n_b_g1, b_g2, n_b_g2);
        *nbytes = srs->nbytes;
        *out = srs.release();
    });
}

cz_status cz_srs_free(cz_srs* srs) {
    return cz_guard([&] { delete srs; });
}

// Starts the partition on a library thread (upload, then device work; see prove_host) and
// returns at once; host arrays must stay alive until cz_prove_finish. Partitions started
// back to back upload while the one before them computes.
cz_status cz_prove_start(cz_context* ctx, const cz_srs* srs, const uint64_t* a, const uint64_t* b,
                         const uint64_t* c, size_t m, const uint64_t* inputs, size_t n_inputs, const uint64_t* aux,
                         size_t n_aux, const uint8_t* a_aux_density, const uint8_t* b_input_density,
                         const uint8_t* b_aux_density, cz_pending** out) {
    return cz_guard([&] {
        CZ_REQUIRE(m >= 1, "a partition needs at least one constraint");
        partition_host host{a, b, c, m, inputs, n_inputs, aux, n_aux, a_aux_density, b_input_density, b_aux_density};
        auto pending = std::make_unique<cz_pending>();
        pending->result = start_proof(ctx, srs, host, &pending->timings);
        *out = pending.release();
    });
}

// out: h, l, a, b_g1 as (2, 6) each, then b_g2 (2, 2, 6): 72 uint64. timings_ms: h, g1 msm,
// g2 wait, total (device work), upload, queue (waiting for partitions ahead). Frees the
// pending proof.
cz_status cz_prove_finish(cz_pending* pending, uint64_t* out, double* timings_ms) {
    return cz_guard([&] {
        std::unique_ptr<cz_pending> own(pending);
        write_sums(pending->result.get(), out);
        pending->timings.write(timings_ms);
    });
}

// Benchmarks on inputs made on the device. times_ms gets `repeat` wall times (host clock
// around a synchronous call, so host-side steps such as the final Horner are included).
cz_status cz_bench_msm(cz_context* ctx, int g2, int log_n, int repeat, uint64_t seed, int window_bits,
                       double* times_ms, int* check_ok) {
    return cz_guard([&] {
        std::lock_guard<std::mutex> lock(ctx->compute_lock);
        CZ_CHECK(cudaSetDevice(ctx->device));
        if (g2)
            bench_msm<fq2_t>(ctx, log_n, repeat, seed, window_bits, times_ms, check_ok);
        else
            bench_msm<fq_t>(ctx, log_n, repeat, seed, window_bits, times_ms, check_ok);
    });
}

// NTT of 2^log_n device-resident elements (Montgomery, natural order in, bit-reversed out for
// the plain forward transform as in the anchors). check_ok: inverse(forward(x)) == x with the
// natural-order wrappers.
cz_status cz_bench_ntt(cz_context* ctx, int log_n, int repeat, int inverse, int coset, double* times_ms,
                       int* check_ok) {
    return cz_guard([&] {
        std::lock_guard<std::mutex> lock(ctx->compute_lock);
        CZ_CHECK(cudaSetDevice(ctx->device));
        cudaStream_t s = ctx->stream;
        size_t n = 1ull << log_n;
        dev_buf<fr_t> x(n, s), y(n, s);
        random_scalars(s, x.get(), n, 99, 0.0);
        CZ_CHECK(cudaMemcpyAsync(y.get(), x.get(), x.bytes(), cudaMemcpyDeviceToDevice, s));
        ntt_natural(*ctx, y.get(), log_n, false, coset != 0);
        ntt_natural(*ctx, y.get(), log_n, true, coset != 0);
        std::vector<fr_t> hx(n), hy(n);
        CZ_CHECK(cudaMemcpyAsync(hx.data(), x.get(), x.bytes(), cudaMemcpyDeviceToHost, s));
        CZ_CHECK(cudaMemcpyAsync(hy.data(), y.get(), y.bytes(), cudaMemcpyDeviceToHost, s));
        CZ_CHECK(cudaStreamSynchronize(s));
        *check_ok = std::memcmp(hx.data(), hy.data(), x.bytes()) == 0;
        to_montgomery(*ctx, x.get(), n);
        event_pair ev;
        fr_t g = fr_coset_shift();
        for (int r = -1; r < repeat; r++) {  // r = -1: warm-up
            CZ_CHECK(cudaEventRecord(ev.start, s));
            if (coset) scale_by_powers(*ctx, x.get(), log_n, g, fr_t::one(), false);
            ntt_dif(*ctx, x.get(), log_n, inverse != 0);
            CZ_CHECK(cudaEventRecord(ev.stop, s));
            CZ_CHECK(cudaEventSynchronize(ev.stop));
            if (r >= 0) times_ms[r] = event_ms(ev.start, ev.stop);
        }
    });
}

// Whole partitions of 2^log_n constraints on the device: the instance of instance.cuh with a
// key made from `secrets` (tau, alpha, beta, gamma, delta: canonical, 4 uint64 each), one
// fresh witness a run (aux values bits with probability frac_bits). times_ms: `repeat` totals
// of prove_device (after one warm-up); stages_ms: h, g1 msm, g2 wait, total of the last run.
// For each run, so the host can assemble and verify the proof: sums_out (72 uint64 as
// cz_prove_finish's out), inputs_out (n_inputs values, 4 uint64 each, x_0 = 1) and w_one_out
// (w(ONE) at tau, 4 uint64).
cz_status cz_bench_prove(cz_context* ctx, int log_n, int repeat, double frac_bits, int n_inputs,
                         const uint64_t* secrets, double* times_ms, double* stages_ms, uint64_t* sums_out,
                         uint64_t* inputs_out, uint64_t* w_one_out) {
    return cz_guard([&] {
        std::lock_guard<std::mutex> lock(ctx->compute_lock);
        CZ_CHECK(cudaSetDevice(ctx->device));
        CZ_REQUIRE(n_inputs >= 1, "the benchmark needs at least the ONE input");
        bench_secrets k{fr_from_canonical(secrets), fr_from_canonical(secrets + 4), fr_from_canonical(secrets + 8),
                        fr_from_canonical(secrets + 12), fr_from_canonical(secrets + 16)};
        bench_instance inst(*ctx, log_n, (size_t)n_inputs, k);
        for (int r = -1; r < repeat; r++) {
            partition_buffers w;
            fr_t w_one = inst.make_witness(frac_bits, 1000 + 10 * (uint64_t)(r + 1), w);
            prove_timings t;
            proof_sums sums = prove_device(*ctx, inst.key(), w.part, &t);
            if (r < 0) continue;
            times_ms[r] = t.total_ms;
            stages_ms[0] = t.h_ms, stages_ms[1] = t.g1_msm_ms, stages_ms[2] = t.g2_wait_ms, stages_ms[3] = t.total_ms;
            write_sums(sums, sums_out + 72 * r);
            CZ_CHECK(cudaMemcpy(inputs_out + 4 * n_inputs * r, w.part.inputs, n_inputs * sizeof(fr_t),
                                cudaMemcpyDeviceToHost));
            fr_t canon = w_one.from_mont();
            std::memcpy(w_one_out + 4 * r, &canon, sizeof canon);
        }
    });
}

// `parts` partitions like cz_bench_prove's, proved from pageable host memory through the
// cz_prove_start path, so the timed region includes real host -> device uploads. overlap = 1
// starts them all, then finishes them in order (partition k+1 uploads while k computes);
// overlap = 0 starts and finishes one at a time. One untimed partition first warms the
// twiddle cache, the memory pool and the staging buffers. total_ms: wall time of the parts;
// per_part_ms: 6 per partition, as cz_prove_finish's timings_ms.
cz_status cz_bench_pipeline(cz_context* ctx, int log_n, int parts, double frac_bits, int overlap, double* total_ms,
                            double* per_part_ms) {
    return cz_guard([&] {
        CZ_REQUIRE(log_n >= 5 && log_n <= 31, "pipeline benchmark sizes are 2^5 .. 2^31");
        CZ_REQUIRE(parts >= 1, "the pipeline benchmark needs at least one partition");
        CZ_CHECK(cudaSetDevice(ctx->device));
        const size_t n = 1ull << log_n, n_inputs = 16, n_aux = n - n_inputs;
        std::unique_ptr<bench_instance> inst;
        std::vector<host_witness> w(parts);
        {
            std::lock_guard<std::mutex> lock(ctx->compute_lock);  // released before proving
            inst = std::make_unique<bench_instance>(*ctx, log_n, n_inputs, fixed_secrets());
            for (int p = 0; p < parts; p++) {
                partition_buffers dw;
                inst->make_witness(frac_bits, 5000 + 10 * (uint64_t)p, dw);
                const partition_device& d = dw.part;
                auto download = [](std::vector<uint64_t>& dst, const fr_t* src, size_t count) {
                    dst.resize(count * (sizeof(fr_t) / sizeof(uint64_t)));
                    CZ_CHECK(cudaMemcpy(dst.data(), src, count * sizeof(fr_t), cudaMemcpyDeviceToHost));
                };
                download(w[p].a, d.a, n);
                download(w[p].b, d.b, n);
                download(w[p].c, d.c, n);
                download(w[p].inputs, d.inputs, n_inputs);
                download(w[p].aux, d.aux, n_aux);
            }
        }
        std::vector<uint8_t> all(n_aux, 1), none(n_inputs, 0);  // densities as the instance's
        std::vector<partition_host> hosts(parts);
        for (int p = 0; p < parts; p++)
            hosts[p] = {w[p].a.data(), w[p].b.data(), w[p].c.data(), n, w[p].inputs.data(), n_inputs,
                        w[p].aux.data(), n_aux, all.data(), none.data(), all.data()};
        const cz_srs* srs = &inst->key();
        prove_timings warm;
        start_proof(ctx, srs, hosts[0], &warm).get();
        std::vector<prove_timings> t(parts);
        auto t0 = std::chrono::steady_clock::now();
        if (overlap) {
            std::vector<std::future<proof_sums>> running;
            for (int p = 0; p < parts; p++) running.push_back(start_proof(ctx, srs, hosts[p], &t[p]));
            for (auto& r : running) r.get();
        } else {
            for (int p = 0; p < parts; p++) start_proof(ctx, srs, hosts[p], &t[p]).get();
        }
        *total_ms = ms_since(t0);
        for (int p = 0; p < parts; p++) t[p].write(per_part_ms + prove_timings::kCount * p);
    });
}

// Host-only arithmetic checks (no GPU needed): k * G with the same field and curve code the
// kernels use, so a machine without a GPU can still test the math. out: affine canonical.
cz_status cz_host_mul_generator(int g2, const uint64_t* k_canonical, uint64_t* out) {
    return cz_guard([&] {
        fr_t k;
        std::memcpy(&k, k_canonical, sizeof k);
        if (g2)
            write_affine<fq2_t>(mul_generator_host<fq2_t>(k.to_mont()), out);
        else
            write_affine<fq_t>(mul_generator_host<fq_t>(k.to_mont()), out);
    });
}

// Host-only check of the curve code: affine_t::is_on_curve (the equation load_srs checks key
// points against) on G1 and G2 points on and off their curves, and XYZZ mixed additions through
// a doubling, P + (-P) and the identity, against k G made by the generator multiplication.
// *checks: how many ran; the first mismatch is an error naming it.
cz_status cz_host_curve_selftest(uint64_t* checks) {
    return cz_guard([&] {
        uint64_t n = 0;
        auto expect = [&](bool ok, const char* what) {
            n++;
            if (!ok) throw cz_error(CZ_INTERNAL, std::string("curve self-test: ") + what + " failed");
        };
        auto g1 = [](uint32_t k) { return mul_generator_host<fq_t>(fr_t::raw_u32(k).to_mont()).to_affine(); };
        affine_t<fq2_t> g2 = mul_generator_host<fq2_t>(fr_t::raw_u32(5).to_mont()).to_affine();
        affine_t<fq_t> p3 = g1(3), off = {p3.x, p3.y + fq_t::one()};
        affine_t<fq2_t> off2 = {g2.x, g2.y + fq2_t::one()};
        expect(p3.is_on_curve() && g2.is_on_curve() && affine_t<fq_t>{fq_t::zero(), fq_t::zero()}.is_on_curve(),
               "curve equation (points on the curve)");
        expect(!off.is_on_curve() && !off2.is_on_curve(), "curve equation (points off the curve)");
        // 1G + 1G (doubling) + 5G + identity - 5G + 7G = 9G.
        xyzz_t<fq_t> acc = xyzz_t<fq_t>::identity();
        for (const affine_t<fq_t>& q : {g1(1), g1(1), g1(5), affine_t<fq_t>{fq_t::zero(), fq_t::zero()}, g1(5).neg(), g1(7)})
            acc = acc.add_affine_inline(q);
        affine_t<fq_t> got = acc.to_affine(), want = g1(9);
        expect(got.x == want.x && got.y == want.y, "XYZZ mixed additions");
        expect(xyzz_t<fq_t>::identity().add_affine_inline(g1(10)).add_affine_inline(g1(10).neg()).is_identity(),
               "P + (-P)");
        *checks = n;
    });
}

}  // extern "C"
