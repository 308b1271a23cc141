// Partition proving on the device (see prove.cuh).
#include <cub/cub.cuh>

#include <chrono>
#include <future>
#include <thread>

#include "ntt.cuh"
#include "prove.cuh"

namespace {

// Big-endian 48-byte field element (flag bits cleared when `flags`) -> little-endian limbs.
__device__ fq_t fq_from_be(const uint8_t* p, bool flags) {
    fq_t x;
#pragma unroll
    for (int j = 0; j < 12; j++) {
        const uint8_t* q = p + 44 - 4 * j;
        x.v[j] = ((uint32_t)q[0] << 24) | ((uint32_t)q[1] << 16) | ((uint32_t)q[2] << 8) | q[3];
    }
    if (flags) x.v[11] &= 0x1fffffffu;  // compressed / infinity / sign bits
    return x.to_mont();
}

__global__ void g1_from_raw_kernel(const uint8_t* raw, size_t n, g1_affine_t* out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint8_t* p = raw + i * 96;
    out[i] = {fq_from_be(p, true), fq_from_be(p + 48, false)};
}

__global__ void g2_from_raw_kernel(const uint8_t* raw, size_t n, g2_affine_t* out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint8_t* p = raw + i * 192;
    out[i] = {{fq_from_be(p + 48, false), fq_from_be(p, true)}, {fq_from_be(p + 144, false), fq_from_be(p + 96, false)}};
}

// first_bad = min index (plus `offset`) of a point neither the identity nor on its curve.
template <class P>
__global__ void off_curve_kernel(const P* pts, size_t n, size_t offset, unsigned long long* first_bad) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (!pts[i].is_on_curve()) atomicMin(first_bad, (unsigned long long)(offset + i));
}

// Converts raw encodings to Montgomery affine points in a new device array and checks every
// point is on its curve (the subgroup check is skipped, as production readers do); a bad
// point is a CZ_BAD_POINT error naming `what`[index], with nothing left allocated.
template <class P>
P* upload_points(cz_context& ctx, const char* what, const uint8_t* raw, size_t n, size_t width, size_t& nbytes) {
    P* out = nullptr;
    if (n == 0) return out;
    CZ_CHECK(cudaMalloc(reinterpret_cast<void**>(&out), n * sizeof(P)));
    try {
        const size_t chunk = 1u << 20;
        dev_buf<uint8_t> staging(std::min(n, chunk) * width, ctx.stream);
        dev_buf<unsigned long long> first_bad(1, ctx.stream);
        CZ_CHECK(cudaMemsetAsync(first_bad.get(), 0xff, sizeof(unsigned long long), ctx.stream));
        for (size_t off = 0; off < n; off += chunk) {
            size_t cnt = std::min(chunk, n - off);
            CZ_CHECK(cudaMemcpyAsync(staging.get(), raw + off * width, cnt * width, cudaMemcpyHostToDevice,
                                     ctx.stream));
            if (width == 96)
                g1_from_raw_kernel<<<blocks_for(cnt, 256), 256, 0, ctx.stream>>>(
                    staging.get(), cnt, reinterpret_cast<g1_affine_t*>(out) + off);
            else
                g2_from_raw_kernel<<<blocks_for(cnt, 256), 256, 0, ctx.stream>>>(
                    staging.get(), cnt, reinterpret_cast<g2_affine_t*>(out) + off);
            CZ_CHECK_LAUNCH();
            off_curve_kernel<P><<<blocks_for(cnt, 128), 128, 0, ctx.stream>>>(out + off, cnt, off, first_bad.get());
            CZ_CHECK_LAUNCH();
        }
        unsigned long long bad = 0;
        CZ_CHECK(cudaMemcpyAsync(&bad, first_bad.get(), sizeof bad, cudaMemcpyDeviceToHost, ctx.stream));
        CZ_CHECK(cudaStreamSynchronize(ctx.stream));
        if (bad != ~0ull) throw cz_error(CZ_BAD_POINT, std::string(what) + "[" + std::to_string(bad) + "]: not on the curve");
    } catch (...) {
        cudaFree(out);
        throw;
    }
    nbytes += n * sizeof(P);
    return out;
}

// An MSM on `stream` from a host thread of its own (msm_device synchronises its stream).
template <class F>
std::future<xyzz_t<F>> msm_async(cz_context& ctx, cudaStream_t stream, const affine_t<F>* bases, const fr_t* scalars,
                                 size_t n, const msm_options& opt) {
    return std::async(std::launch::async, [&ctx, stream, bases, scalars, n, opt]() {
        CZ_CHECK(cudaSetDevice(ctx.device));
        return msm_device<F>(ctx, stream, bases, scalars, n, opt);
    });
}

// After an error or a cancel cut the MSM threads short: the device work they had queued
// (a few windows) ends before the scalars it reads are freed (in stream s's order only).
void sync_compute_streams(cz_context& ctx) {
    for (cudaStream_t st : ctx.compute_streams()) cudaStreamSynchronize(st);
}

}  // namespace

size_t select_flagged(cudaStream_t stream, const fr_t* in, const uint8_t* flags, size_t n, fr_t* out) {
    if (n == 0) return 0;
    dev_buf<uint64_t> count(1, stream);
    size_t bytes = 0;
    CZ_CHECK(cub::DeviceSelect::Flagged(nullptr, bytes, in, flags, out, count.get(), n, stream));
    dev_buf<uint8_t> temp(bytes, stream);
    CZ_CHECK(cub::DeviceSelect::Flagged(temp.get(), bytes, in, flags, out, count.get(), n, stream));
    uint64_t k = 0;
    CZ_CHECK(cudaMemcpyAsync(&k, count.get(), sizeof k, cudaMemcpyDeviceToHost, stream));
    CZ_CHECK(cudaStreamSynchronize(stream));
    return (size_t)k;
}

cz_srs::~cz_srs() {
    cudaSetDevice(device);
    for (void* p : owned) cudaFree(p);
}

std::unique_ptr<cz_srs> srs_load(cz_context& ctx, const uint8_t* h, size_t n_h, const uint8_t* l, size_t n_l,
                                 const uint8_t* a, size_t n_a, const uint8_t* b_g1, size_t n_b_g1,
                                 const uint8_t* b_g2, size_t n_b_g2) {
    auto srs = std::make_unique<cz_srs>();
    srs->device = ctx.device;
    srs->n_h = n_h, srs->n_l = n_l, srs->n_a = n_a, srs->n_b_g1 = n_b_g1, srs->n_b_g2 = n_b_g2;
    auto own = [&](auto* p) {
        if (p) srs->owned.push_back(p);
        return p;
    };
    srs->h = own(upload_points<g1_affine_t>(ctx, "h", h, n_h, 96, srs->nbytes));
    srs->l = own(upload_points<g1_affine_t>(ctx, "l", l, n_l, 96, srs->nbytes));
    srs->a = own(upload_points<g1_affine_t>(ctx, "a", a, n_a, 96, srs->nbytes));
    srs->b_g1 = own(upload_points<g1_affine_t>(ctx, "b_g1", b_g1, n_b_g1, 96, srs->nbytes));
    srs->b_g2 = own(upload_points<g2_affine_t>(ctx, "b_g2", b_g2, n_b_g2, 192, srs->nbytes));
    return srs;
}

proof_sums prove_device(cz_context& ctx, const cz_srs& srs, partition_device& part, prove_timings* timings,
                        const cz_cancel_flag* cancel) {
    throw_if_cancelled(cancel);
    auto t0 = std::chrono::steady_clock::now();
    cudaStream_t s = ctx.stream;
    const size_t n = 1ull << part.log_n;
    CZ_REQUIRE(srs.n_h + 1 == n || (n == 1 && srs.n_h == 0), "the key's H vector does not match the domain");
    CZ_REQUIRE(srs.n_l == part.n_aux, "the key's L vector does not match the aux count");

    // Scalars of the A and B queries: selected by density, inputs first (as a_scalars(), b_scalars()).
    dev_buf<fr_t> a_scalars(srs.n_a, s), b_scalars(srs.n_b_g1, s);
    CZ_REQUIRE(srs.n_a >= part.n_inputs, "the key's A vector is shorter than the inputs");
    CZ_CHECK(cudaMemcpyAsync(a_scalars.get(), part.inputs, part.n_inputs * sizeof(fr_t), cudaMemcpyDeviceToDevice, s));
    size_t na = part.n_inputs + select_flagged(s, part.aux, part.a_aux_density, part.n_aux, a_scalars.get() + part.n_inputs);
    CZ_REQUIRE(na == srs.n_a, "A density does not match the key's A vector");
    size_t nb_in = select_flagged(s, part.inputs, part.b_input_density, part.n_inputs, b_scalars.get());
    CZ_REQUIRE(nb_in <= srs.n_b_g1, "B density does not match the key's B vectors");
    size_t nb = nb_in + select_flagged(s, part.aux, part.b_aux_density, part.n_aux, b_scalars.get() + nb_in);
    CZ_REQUIRE(nb == srs.n_b_g1 && nb == srs.n_b_g2, "B density does not match the key's B vectors");

    // B in G2, L and A overlap H and the other MSMs, B in G1 the H MSM: each on its own stream
    // and host thread (an MSM synchronises its stream between phases), so their small kernels,
    // sorts and tails fill what the others leave idle; the main stream (H, then the H MSM: the
    // longest chain) has the highest priority. Everything they read is on the device now.
    // Where the device lacks the memory for all five at once (a 73 GB WindowPoSt key beside a
    // 2^27 partition), they run one after another on the main stream instead, after H.
    CZ_CHECK(cudaStreamSynchronize(s));
    throw_if_cancelled(cancel);
    size_t free_bytes = 0, total_bytes = 0;
    CZ_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const size_t g1 = sizeof(affine_t<fq_t>), g2_bytes = sizeof(affine_t<fq2_t>);
    const size_t b_large = count_large_scalars(s, b_scalars.get(), nb);
    const size_t side_by_side_bytes =
        msm_scratch_bytes(nb, b_large, g2_bytes) + msm_scratch_bytes(nb, b_large, g1) +
        msm_scratch_bytes(part.n_aux, count_large_scalars(s, part.aux, part.n_aux), g1) +
        msm_scratch_bytes(na, count_large_scalars(s, a_scalars.get(), na), g1) +
        msm_scratch_bytes(srs.n_h, srs.n_h, g1) + 2 * n * sizeof(fr_t);  // H: every value large
    const bool side_by_side = side_by_side_bytes <= free_bytes;
    if (timings) timings->msm_in_turn = side_by_side ? 0 : 1;
    msm_options opt;
    opt.cancel = cancel;
    const fr_t* b_ptr = b_scalars.get();
    const fr_t* a_ptr = a_scalars.get();
    std::future<xyzz_t<fq2_t>> g2;
    std::future<xyzz_t<fq_t>> l, a, b1;
    if (side_by_side) {
        g2 = msm_async<fq2_t>(ctx, ctx.g2_stream, srs.b_g2, b_ptr, nb, opt);
        l = msm_async<fq_t>(ctx, ctx.side_streams[0], srs.l, part.aux, part.n_aux, opt);
        a = msm_async<fq_t>(ctx, ctx.side_streams[1], srs.a, a_ptr, na, opt);
    }

    proof_sums out;
    try {
        auto th = std::chrono::steady_clock::now();
        {
            dev_buf<fr_t> hbuf(n, s);
            quotient_h_device(ctx, part.a, part.b, part.c, hbuf.get(), part.log_n);  // canonical in and out
            wait_stream(s, cancel);
            if (timings) timings->h_ms = ms_since(th);
            if (side_by_side) b1 = msm_async<fq_t>(ctx, ctx.side_streams[2], srs.b_g1, b_ptr, nb, opt);
            out.h = msm_device<fq_t>(ctx, s, srs.h, hbuf.get(), srs.n_h, opt);
        }
        if (side_by_side) {
            out.b_g1 = b1.get();
            out.l = l.get();
            out.a = a.get();
        } else {
            out.b_g1 = msm_device<fq_t>(ctx, s, srs.b_g1, b_ptr, nb, opt);
            out.l = msm_device<fq_t>(ctx, s, srs.l, part.aux, part.n_aux, opt);
            out.a = msm_device<fq_t>(ctx, s, srs.a, a_ptr, na, opt);
        }
        if (timings) timings->g1_msm_ms = ms_since(th) - timings->h_ms;
    } catch (...) {
        // a_scalars and b_scalars must outlive the side work; the first error is the one reported.
        if (g2.valid()) g2.wait();
        for (auto* f : {&l, &a, &b1})
            if (f->valid()) f->wait();
        sync_compute_streams(ctx);
        throw;
    }
    auto tw = std::chrono::steady_clock::now();
    try {
        out.b_g2 = side_by_side ? g2.get() : msm_device<fq2_t>(ctx, s, srs.b_g2, b_ptr, nb, opt);
    } catch (...) {
        sync_compute_streams(ctx);
        throw;
    }
    if (timings) {
        timings->g2_wait_ms = ms_since(tw);
        timings->total_ms = ms_since(t0);
    }
    return out;
}
