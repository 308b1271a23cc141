// Partition proving on the device (see prove.cuh).
#include <cub/cub.cuh>

#include <chrono>
#include <future>
#include <thread>

#include "ntt.cuh"
#include "prove.cuh"

namespace {

// An MSM over a key vector: resident (`dev`), or streamed from `host` in chunks.
template <class F>
xyzz_t<F> msm_key(cz_context& ctx, cudaStream_t stream, const affine_t<F>* dev, const affine_t<F>* host, size_t chunk,
                  const fr_t* scalars, size_t n, const msm_options& opt) {
    if (dev || n == 0) return msm_device<F>(ctx, stream, dev, scalars, n, opt);
    return msm_streamed<F>(ctx, stream, host, chunk, scalars, n, opt);
}

// msm_key on `stream` from a host thread of its own (an MSM synchronises its stream).
template <class F>
std::future<xyzz_t<F>> msm_async(cz_context& ctx, cudaStream_t stream, const affine_t<F>* dev, const affine_t<F>* host,
                                 size_t chunk, const fr_t* scalars, size_t n, const msm_options& opt) {
    return std::async(std::launch::async, [&ctx, stream, dev, host, chunk, scalars, n, opt]() {
        CZ_CHECK(cudaSetDevice(ctx.device));
        return msm_key<F>(ctx, stream, dev, host, chunk, scalars, n, opt);
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
    // longest chain) has the highest priority. Everything they read is on the device now, but for
    // key vectors streamed from the host copy (msm_streamed).
    // Where the device lacks the memory for all five at once (a 73 GB WindowPoSt key beside a
    // 2^27 partition), they run one after another on the main stream instead, after H.
    CZ_CHECK(cudaStreamSynchronize(s));
    throw_if_cancelled(cancel);
    const size_t free_bytes = usable_device_bytes(ctx);
    const size_t g1 = sizeof(affine_t<fq_t>), g2_bytes = sizeof(affine_t<fq2_t>);
    const size_t chunk = srs.stream_chunk;
    // An MSM's peak: its scratch, or a chunk's scratch and two chunks of points where streamed.
    auto msm_bytes = [chunk](size_t count, size_t large, size_t point, bool streamed) {
        if (!streamed || count <= chunk) return msm_scratch_bytes(count, large, point) + (streamed ? count * point : 0);
        return msm_scratch_bytes(chunk, std::min(large, chunk), point) + 2 * chunk * point;
    };
    const size_t b_large = count_large_scalars(s, b_scalars.get(), nb);
    const size_t side_by_side_bytes =
        msm_bytes(nb, b_large, g2_bytes, !srs.b_g2) + msm_bytes(nb, b_large, g1, !srs.b_g1) +
        msm_bytes(part.n_aux, count_large_scalars(s, part.aux, part.n_aux), g1, !srs.l) +
        msm_bytes(na, count_large_scalars(s, a_scalars.get(), na), g1, !srs.a) +
        msm_bytes(srs.n_h, srs.n_h, g1, !srs.h) + 2 * n * sizeof(fr_t);  // H: every value large
    const bool side_by_side = side_by_side_bytes <= free_bytes;
    if (timings) timings->msm_in_turn = side_by_side ? 0 : 1;
    msm_options opt;
    opt.cancel = cancel;
    const fr_t* b_ptr = b_scalars.get();
    const fr_t* a_ptr = a_scalars.get();
    std::future<xyzz_t<fq2_t>> g2;
    std::future<xyzz_t<fq_t>> l, a, b1;
    if (side_by_side) {
        g2 = msm_async<fq2_t>(ctx, ctx.g2_stream, srs.b_g2, srs.host_b_g2, chunk, b_ptr, nb, opt);
        l = msm_async<fq_t>(ctx, ctx.side_streams[0], srs.l, srs.host_l, chunk, part.aux, part.n_aux, opt);
        a = msm_async<fq_t>(ctx, ctx.side_streams[1], srs.a, srs.host_a, chunk, a_ptr, na, opt);
    }

    proof_sums out;
    try {
        auto th = std::chrono::steady_clock::now();
        {
            dev_buf<fr_t> hbuf(n, s);
            quotient_h_device(ctx, part.a, part.b, part.c, hbuf.get(), part.log_n);  // canonical in and out
            if (part.release_abc) {  // the MSMs below have their room
                part.release_abc();
                part.a = part.b = part.c = nullptr;
            }
            wait_stream(s, cancel);
            if (timings) timings->h_ms = ms_since(th);
            if (side_by_side) b1 = msm_async<fq_t>(ctx, ctx.side_streams[2], srs.b_g1, srs.host_b_g1, chunk, b_ptr, nb, opt);
            out.h = msm_key<fq_t>(ctx, s, srs.h, srs.host_h, chunk, hbuf.get(), srs.n_h, opt);
        }
        if (side_by_side) {
            out.b_g1 = b1.get();
            out.l = l.get();
            out.a = a.get();
        } else {
            out.b_g1 = msm_key<fq_t>(ctx, s, srs.b_g1, srs.host_b_g1, chunk, b_ptr, nb, opt);
            out.l = msm_key<fq_t>(ctx, s, srs.l, srs.host_l, chunk, part.aux, part.n_aux, opt);
            out.a = msm_key<fq_t>(ctx, s, srs.a, srs.host_a, chunk, a_ptr, na, opt);
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
        out.b_g2 = side_by_side ? g2.get() : msm_key<fq2_t>(ctx, s, srs.b_g2, srs.host_b_g2, chunk, b_ptr, nb, opt);
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
