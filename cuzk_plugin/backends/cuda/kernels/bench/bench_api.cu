// The bench library's C ABI (libcuzk_cuda_bench.so: the production objects plus this
// directory): benchmarks on inputs made on the device, and host-only checks of the field and
// curve code. Nothing here is linked into libcuzk_cuda.so.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "abi.cuh"
#include "event_pair.cuh"
#include "gen.cuh"
#include "instance.cuh"
#include "ntt.cuh"
#include "mapped_gather.cuh"
#include "point_adds.cuh"
#include "r1cs.cuh"
#include "upload.cuh"

namespace {

template <class F>
void bench_msm(cz_context* ctx, int log_n, int repeat, uint64_t seed, double frac_bits, const msm_options& opt,
               double* times_ms, int* check_ok) {
    cudaStream_t s = ctx->stream;
    size_t n = 1ull << log_n;
    dev_buf<affine_t<F>> bases(n, s);
    dev_buf<fr_t> scalars(n, s), dlog(n, s);
    random_bases<F>(s, bases.get(), n, seed, dlog.get());
    random_scalars(s, scalars.get(), n, seed + 7, frac_bits);
    fr_t e = dot_mod_r(s, scalars.get(), dlog.get(), n);
    dlog = dev_buf<fr_t>();  // free before timing
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

// Page-locked host memory, freed on scope exit once `stream` is idle (a streamed MSM's copies
// out of it are joined into its stream, also after an error or a cancel).
struct pinned_buffer {
    void* p = nullptr;
    cudaStream_t stream = nullptr;
    ~pinned_buffer() {
        if (!p) return;
        cudaStreamSynchronize(stream);
        cudaFreeHost(p);
    }
};

// msm_streamed on host inputs (see cz_bench_msm_streamed): the bases converted to Montgomery
// form on the device into page-locked host memory, the scalars uploaded; then the MSM, with the
// pool's high-water mark of device memory reset before it.
template <class F>
void msm_streamed_host(cz_context* ctx, const uint64_t* bases, const uint64_t* scalars, size_t n, size_t chunk,
                       const msm_options& opt, uint64_t* out, uint64_t* peak_bytes, uint64_t* bound_bytes) {
    cudaStream_t s = ctx->stream;
    pinned_buffer host{nullptr, s};
    dev_buf<fr_t> d_scalars(n, s);
    if (n) {
        CZ_CHECK(cudaHostAlloc(&host.p, n * sizeof(affine_t<F>), cudaHostAllocPortable));
        dev_buf<affine_t<F>> staging(n, s);
        CZ_CHECK(cudaMemcpyAsync(staging.get(), bases, n * sizeof(affine_t<F>), cudaMemcpyHostToDevice, s));
        affine_to_montgomery<F>(s, staging.get(), n);
        CZ_CHECK(cudaMemcpyAsync(host.p, staging.get(), n * sizeof(affine_t<F>), cudaMemcpyDeviceToHost, s));
        CZ_CHECK(cudaMemcpyAsync(d_scalars.get(), scalars, n * sizeof(fr_t), cudaMemcpyHostToDevice, s));
    }
    const size_t large = count_large_scalars(s, d_scalars.get(), n);  // synchronises s
    *bound_bytes = opt.window_bits ? 0 : msm_streamed_scratch_bytes(n, large, sizeof(affine_t<F>), chunk);
    cudaMemPool_t pool;
    CZ_CHECK(cudaDeviceGetDefaultMemPool(&pool, ctx->device));
    uint64_t before = 0, high = 0;
    CZ_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high));  // only 0 resets it
    CZ_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &before));
    xyzz_t<F> sum = msm_streamed<F>(*ctx, s, static_cast<const affine_t<F>*>(host.p), chunk, d_scalars.get(), n, opt);
    CZ_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high));
    *peak_bytes = high > before ? high - before : 0;
    write_affine<F>(sum, out);
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

// A benchmark partition's witness in pageable host memory (canonical limbs), made on the device.
struct host_witness {
    std::vector<uint64_t> a, b, c, inputs, aux;
};

}  // namespace

extern "C" {

// Benchmarks on inputs made on the device. times_ms gets `repeat` wall times (host clock
// around a synchronous call, so host-side steps such as the final Horner are included).
// window_bits: 0 chooses by size; profile: phase timings of every run on stderr (the phases
// then run in turn, not overlapped as in production); frac_bits: the share of scalars in
// {0, 1} (a Filecoin witness's mix), the rest random below r.
cz_status cz_bench_msm(cz_context* ctx, int g2, int log_n, int repeat, uint64_t seed, int window_bits, int profile,
                       double frac_bits, double* times_ms, int* check_ok) {
    return on_device(ctx, [&] {
        msm_options opt;
        opt.window_bits = window_bits;
        opt.profile = profile != 0;
        if (g2)
            bench_msm<fq2_t>(ctx, log_n, repeat, seed, frac_bits, opt, times_ms, check_ok);
        else
            bench_msm<fq_t>(ctx, log_n, repeat, seed, frac_bits, opt, times_ms, check_ok);
    });
}

// sum_i k_i P_i by msm_streamed (the points in page-locked host memory, copied in chunks of
// `chunk`), for the tests' comparison with the CPU: bases (n, 2, 6) / (n, 2, 2, 6) uint64 affine
// canonical (G2 when g2), scalars (n, 4) canonical below r; out: the sum, affine canonical (the
// identity as zeros). window_bits: 0 chooses by size (msm_streamed_window). cancel: 0 runs
// without a cancel flag, 1 with one never set, 2 with one set before the call (CZ_CANCELLED).
// peak_bytes: the device bytes the pool held at the MSM's peak beyond what it held before;
// bound_bytes: msm_streamed_scratch_bytes for the call (0 where window_bits is set).
cz_status cz_bench_msm_streamed(cz_context* ctx, int g2, const uint64_t* bases, const uint64_t* scalars, size_t n,
                                uint64_t chunk, int window_bits, int cancel, uint64_t* out, uint64_t* peak_bytes,
                                uint64_t* bound_bytes) {
    return on_device(ctx, [&] {
        cz_cancel_flag flag{cancel == 2};
        msm_options opt;
        opt.window_bits = window_bits;
        opt.cancel = cancel ? &flag : nullptr;
        if (g2)
            msm_streamed_host<fq2_t>(ctx, bases, scalars, n, (size_t)chunk, opt, out, peak_bytes, bound_bytes);
        else
            msm_streamed_host<fq_t>(ctx, bases, scalars, n, (size_t)chunk, opt, out, peak_bytes, bound_bytes);
    });
}

// NTT of 2^log_n device-resident elements (Montgomery, natural order in, bit-reversed out for
// the plain forward transform as in the anchors). check_ok: inverse(forward(x)) == x with the
// natural-order wrappers.
cz_status cz_bench_ntt(cz_context* ctx, int log_n, int repeat, int inverse, int coset, double* times_ms,
                       int* check_ok) {
    return on_device(ctx, [&] {
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
            if (r >= 0) times_ms[r] = ev.ms();
        }
    });
}

// Whole partitions of 2^log_n constraints on the device: the instance of instance.cuh with a
// key made from `secrets` (tau, alpha, beta, gamma, delta: canonical, 4 uint64 each), one
// fresh witness a run (aux values bits with probability frac_bits). times_ms: `repeat` totals
// of prove_device (after one warm-up); stages_ms: h, g1 msm, g2 wait, total, msm_in_turn and
// msm_paired (prove_timings) of the last run.
// For each run, so the host can assemble and verify the proof: sums_out (72 uint64 as
// cz_prove_finish's out), inputs_out (n_inputs values, 4 uint64 each, x_0 = 1) and w_one_out
// (w(ONE) at tau, 4 uint64).
cz_status cz_bench_prove(cz_context* ctx, int log_n, int repeat, double frac_bits, int n_inputs,
                         const uint64_t* secrets, uint32_t resident_mask, uint64_t stream_chunk, double* times_ms,
                         double* stages_ms, uint64_t* sums_out, uint64_t* inputs_out, uint64_t* w_one_out) {
    return on_device(ctx, [&] {
        CZ_REQUIRE(n_inputs >= 1, "the benchmark needs at least the ONE input");
        bench_secrets k{fr_from_canonical(secrets), fr_from_canonical(secrets + 4), fr_from_canonical(secrets + 8),
                        fr_from_canonical(secrets + 12), fr_from_canonical(secrets + 16)};
        bench_instance inst(*ctx, log_n, (size_t)n_inputs, k);
        // Vectors outside resident_mask stream from a host copy of the key (the device copy goes).
        std::unique_ptr<cz_host_srs> host;
        std::unique_ptr<cz_srs> attached;
        if ((resident_mask & 31u) != 31u) {
            host = host_srs_from_device(inst.key());
            inst.release_key();
            attached = srs_attach(*ctx, *host, resident_mask, (size_t)stream_chunk);
        }
        const cz_srs& key = attached ? *attached : inst.key();
        for (int r = -1; r < repeat; r++) {
            partition_buffers w;
            fr_t w_one = inst.make_witness(frac_bits, 1000 + 10 * (uint64_t)(r + 1), w);
            prove_timings t;
            proof_sums sums = prove_device(*ctx, key, w.part, &t);
            if (r < 0) continue;
            times_ms[r] = t.total_ms;
            stages_ms[0] = t.h_ms, stages_ms[1] = t.g1_msm_ms, stages_ms[2] = t.g2_wait_ms, stages_ms[3] = t.total_ms;
            stages_ms[4] = t.msm_in_turn, stages_ms[5] = t.msm_paired;
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
// per_part_ms: 7 per partition, as cz_prove_finish's timings_ms.
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

// R1CS evaluation of a resident circuit (cz_circuit_load of this library) on z uploaded once:
// times_ms gets `repeat` event times of r1cs_evaluate alone (after one warm-up), a, b, c left
// on the device; rows_out (n_rows indices) gets those rows of a, b, c (canonical, 12 uint64 a
// row: a, b, c) for the caller to check.
cz_status cz_bench_r1cs(cz_context* ctx, const cz_circuit* circuit, const uint64_t* z, size_t n_z, int repeat,
                        double* times_ms, const uint64_t* rows, size_t n_rows, uint64_t* rows_out) {
    return on_device(ctx, [&] {
        CZ_REQUIRE(n_z == circuit->num_inputs + circuit->num_aux, "z must hold the circuit's inputs and aux values");
        cudaStream_t s = ctx->stream;
        const size_t m = circuit->m;
        dev_buf<fr_t> dz(std::max<size_t>(n_z, 1), s), out(3 * m, s);
        CZ_CHECK(cudaMemcpyAsync(dz.get(), z, n_z * sizeof(fr_t), cudaMemcpyHostToDevice, s));
        event_pair ev;
        for (int r = -1; r < repeat; r++) {  // r = -1: warm-up
            CZ_CHECK(cudaEventRecord(ev.start, s));
            r1cs_evaluate(s, *circuit, dz.get(), out.get(), out.get() + m, out.get() + 2 * m, m);
            CZ_CHECK(cudaEventRecord(ev.stop, s));
            CZ_CHECK(cudaEventSynchronize(ev.stop));
            if (r >= 0) times_ms[r] = ev.ms();
        }
        for (size_t i = 0; i < n_rows; i++) {
            CZ_REQUIRE(rows[i] < m, "bench_r1cs: row index outside the circuit");
            for (int k = 0; k < 3; k++)
                CZ_CHECK(cudaMemcpy(rows_out + 12 * i + 4 * k, out.get() + k * m + rows[i], sizeof(fr_t),
                                    cudaMemcpyDeviceToHost));
        }
    });
}

// G1 additions as a bucket loop makes them (point_adds.cuh): event-timed milliseconds of
// `repeat` runs of 2^log_adds additions over 2^log_n random points, by the mixed XYZZ loop
// (batch 0) or affine additions in batches of 8, 16, 32 or 64 sharing one inversion;
// *check_ok: whether the sum was right.
cz_status cz_bench_point_adds(cz_context* ctx, int batch, int log_n, int log_adds, int repeat, double* times_ms,
                              int* check_ok) {
    return on_device(ctx, [&] { bench_point_adds(*ctx, batch, log_n, log_adds, repeat, times_ms, check_ok); });
}

// Selected 96-byte records read through the mapped address of page-locked host memory against a
// bulk copy of all of them (mapped_gather.cuh): event-timed milliseconds of each, `repeat` times.
cz_status cz_bench_mapped_gather(cz_context* ctx, int log_n, int permille, int repeat, double* copy_ms,
                                 double* gather_ms, uint64_t* selected, int* check_ok) {
    return on_device(ctx, [&] {
        bench_mapped_gather(*ctx, log_n, permille, repeat, copy_ms, gather_ms, selected, check_ok);
    });
}

// One G1 MSM three ways (mapped_gather.cuh): the points resident, streamed in chunks, and read
// by msm_device through the mapped address of their page-locked copy; milliseconds of each.
cz_status cz_bench_msm_mapped(cz_context* ctx, int log_n, double frac_bits, int repeat, double* resident_ms,
                              double* streamed_ms, double* mapped_ms, int* check_ok) {
    return on_device(
        ctx, [&] { bench_msm_mapped(*ctx, log_n, frac_bits, repeat, resident_ms, streamed_ms, mapped_ms, check_ok); });
}

// Host-only check of the batch-affine additions against mixed XYZZ ones (point_adds.cuh);
// *checks: how many ran.
cz_status cz_host_affine_batch_selftest(uint64_t* checks) {
    return cz_guard([&] { *checks = affine_batch_selftest_host(); });
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
