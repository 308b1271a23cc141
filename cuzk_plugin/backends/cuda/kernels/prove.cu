// Partition proving on the device (see prove.cuh).
#include <cub/cub.cuh>

#include <chrono>
#include <future>
#include <optional>
#include <thread>

#include "ntt.cuh"
#include "prove.cuh"

namespace {

// The fewest points a resident MSM run in pieces takes at a time.
constexpr size_t kMinMsmPiece = size_t(1) << 18;

// Points of a resident vector's MSM to run at a time so that its scratch fits what the device
// has left now: all n where it fits, else the largest power of two that does.
size_t resident_msm_piece(cz_context& ctx, size_t n, size_t point_bytes) {
    const size_t usable = usable_device_bytes(ctx);
    auto fits = [&](size_t k) { return msm_scratch_bytes(k, k, point_bytes) + kRoomMargin <= usable; };
    if (fits(n)) return n;
    size_t piece = size_t(1) << (63 - __builtin_clzll(n));  // below n: n did not fit
    while (piece > kMinMsmPiece && !fits(piece)) piece >>= 1;
    return piece;
}

// An MSM's peak (`large` of its `count` scalars Pippenger's): its scratch, or where its points
// stream in chunks of `chunk`, the streamed MSM's (its two chunk buffers included).
size_t msm_peak_bytes(size_t count, size_t large, size_t point, size_t chunk, bool streamed) {
    return streamed ? msm_streamed_scratch_bytes(count, large, point, chunk) : msm_scratch_bytes(count, large, point);
}

// The most device memory a streamed vector's MSM takes (every scalar large).
size_t streamed_msm_bytes(const cz_srs& srs) {
    const size_t g1 = sizeof(affine_t<fq_t>), g2 = sizeof(affine_t<fq2_t>);
    const std::pair<const void*, std::pair<size_t, size_t>> vectors[] = {
        {srs.h, {srs.n_h, g1}}, {srs.l, {srs.n_l, g1}}, {srs.a, {srs.n_a, g1}}, {srs.b_g1, {srs.n_b_g1, g1}},
        {srs.b_g2, {srs.n_b_g2, g2}}};
    size_t most = 0;
    for (const auto& [dev, v] : vectors) {
        const auto [count, point] = v;
        if (!dev && count) most = std::max(most, msm_peak_bytes(count, count, point, srs.stream_chunk, true));
    }
    return most;
}

// An MSM over a key vector: resident (`dev`), or streamed from `host` in chunks. `in_pieces`:
// the MSMs run in turn on a device short of memory, so a resident vector's MSM whose scratch
// does not fit runs in pieces (resident_msm_piece), the sums added on the host.
template <class F>
xyzz_t<F> msm_key(cz_context& ctx, cudaStream_t stream, const affine_t<F>* dev, const affine_t<F>* host, size_t chunk,
                  const fr_t* scalars, size_t n, const msm_options& opt, bool in_pieces = false) {
    if (n == 0) return xyzz_t<F>::identity();
    if (!dev) return msm_streamed<F>(ctx, stream, host, chunk, scalars, n, opt);
    const size_t piece = in_pieces ? resident_msm_piece(ctx, n, sizeof(affine_t<F>)) : n;
    xyzz_t<F> acc = xyzz_t<F>::identity();
    for (size_t off = 0; off < n; off += piece)
        acc = acc.add(msm_device<F>(ctx, stream, dev + off, scalars + off, std::min(piece, n - off), opt));
    return acc;
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
    CZ_REQUIRE(srs.n_a >= part.n_inputs, "the key's A vector is shorter than the inputs");

    // Scalars of the A and B queries: selected by density, inputs first (as a_scalars(), b_scalars()).
    dev_buf<fr_t> a_scalars, b_scalars;
    size_t na = 0, nb = 0;
    auto select_scalars = [&] {
        a_scalars = dev_buf<fr_t>(srs.n_a, s);
        b_scalars = dev_buf<fr_t>(srs.n_b_g1, s);
        CZ_CHECK(cudaMemcpyAsync(a_scalars.get(), part.inputs, part.n_inputs * sizeof(fr_t), cudaMemcpyDeviceToDevice,
                                 s));
        na = part.n_inputs + select_flagged(s, part.aux, part.a_aux_density, part.n_aux, a_scalars.get() + part.n_inputs);
        CZ_REQUIRE(na == srs.n_a, "A density does not match the key's A vector");
        size_t nb_in = select_flagged(s, part.inputs, part.b_input_density, part.n_inputs, b_scalars.get());
        CZ_REQUIRE(nb_in <= srs.n_b_g1, "B density does not match the key's B vectors");
        nb = nb_in + select_flagged(s, part.aux, part.b_aux_density, part.n_aux, b_scalars.get() + nb_in);
        CZ_REQUIRE(nb == srs.n_b_g1 && nb == srs.n_b_g2, "B density does not match the key's B vectors");
    };
    // A device with room for the dense scalars beside a, b, c and the transforms' twiddles
    // selects them first, so that B in G2, L and A can overlap H. A small one computes H first
    // (a and c freed after it, the twiddles too), runs the H MSM, then selects the scalars in
    // the room H leaves and runs the other MSMs in turn, a resident vector's MSM in pieces where
    // its scratch does not fit.
    const size_t g1 = sizeof(affine_t<fq_t>), g2_bytes = sizeof(affine_t<fq2_t>);
    const size_t chunk = srs.stream_chunk;
    const bool lean = static_cast<bool>(part.evaluate_c);  // H in two buffers: the device is short
    const size_t twiddle_bytes = lean || twiddles_cached(ctx, part.log_n) ? 0 : n * sizeof(fr_t);  // N/2 each way
    // Roomy: the scalars and twiddles beside a, b, c, and afterwards, with a and c freed, a
    // streamed MSM's two chunks and scratch beside them.
    const size_t streamed_msm = streamed_msm_bytes(srs), freed_after_h = 2 * n * sizeof(fr_t);
    const bool roomy = !lean && usable_device_bytes(ctx) >= (srs.n_a + srs.n_b_g1) * sizeof(fr_t) + twiddle_bytes +
                                                                kRoomMargin +
                                                                (streamed_msm > freed_after_h ? streamed_msm - freed_after_h : 0);
    bool selected = roomy;
    if (selected) select_scalars();
    CZ_CHECK(cudaStreamSynchronize(s));
    throw_if_cancelled(cancel);

    // B in G2, L and A overlap H and the other MSMs, B in G1 the H MSM: each on its own stream
    // and host thread (an MSM synchronises its stream between phases), so their small kernels,
    // sorts and tails fill what the others leave idle; the main stream (H, then the H MSM: the
    // longest chain) has the highest priority. Where the device lacks the memory for all five at
    // once (a 73 GB WindowPoSt key beside a 2^27 partition, any small card), they run after H,
    // one at a time on the main stream, except where a pair fits (pair_fits below).
    const auto msm_bytes = [chunk](size_t count, size_t large, size_t point, bool streamed) {
        return msm_peak_bytes(count, large, point, chunk, streamed);
    };
    // Scalars other than 0 and 1 of L's, A's and B's MSMs, each counted once (a pass over them
    // and a synchronisation; the scalars selected again after H are the same values).
    std::optional<size_t> aux_large, a_large, b_large;
    const auto large_of = [&](std::optional<size_t>& memo, const fr_t* scalars, size_t count) {
        if (!memo) memo = count_large_scalars(s, scalars, count);
        return *memo;
    };
    const auto l_bytes = [&] { return msm_bytes(part.n_aux, large_of(aux_large, part.aux, part.n_aux), g1, !srs.l); };
    const auto a_bytes = [&] { return msm_bytes(na, large_of(a_large, a_scalars.get(), na), g1, !srs.a); };
    const auto b_bytes = [&](size_t point, bool streamed) {
        return msm_bytes(nb, large_of(b_large, b_scalars.get(), nb), point, streamed);
    };
    bool side_by_side = false;
    if (roomy) {
        const size_t side_by_side_bytes = b_bytes(g2_bytes, !srs.b_g2) + b_bytes(g1, !srs.b_g1) + l_bytes() +
                                          a_bytes() + msm_bytes(srs.n_h, srs.n_h, g1, !srs.h) +
                                          twiddle_bytes;  // H: every value large
        side_by_side = side_by_side_bytes + kRoomMargin <= usable_device_bytes(ctx);  // as pair_fits
    }
    if (selected && !side_by_side) {  // in turn, nothing reads them before the H MSM ends: their
        a_scalars = dev_buf<fr_t>();  // room goes to the MSMs paired beside it, and they are
        b_scalars = dev_buf<fr_t>();  // selected again after it, as on a short device
        selected = false;
    }
    msm_options opt;
    opt.cancel = cancel;
    // A streamed MSM takes the count made for the plan instead of counting again.
    const auto counted = [&opt](const std::optional<size_t>& large) {
        msm_options o = opt;
        if (large) o.large = *large;
        return o;
    };
    std::future<xyzz_t<fq2_t>> g2;
    std::future<xyzz_t<fq_t>> l, a, b1;
    // In turn, two MSMs still share the device where their peaks fit what it has left now beside
    // the next partition's upload where one may land meanwhile: a streamed vector's MSM
    // is bound by the link where its scalars are mostly bits (L, A, B) and by the SMs where they
    // are not (H) or its points are in G2, so L's copies run under the H MSM and B in G2's
    // arithmetic under A's and B in G1's copies. Both then run whole (not in pieces).
    const auto pair_fits_in = [&](size_t first, size_t second, size_t usable) {
        return first + second + part.next_upload_bytes + kRoomMargin <= usable;
    };
    const auto pair_fits = [&](size_t first, size_t second) {
        return pair_fits_in(first, second, usable_device_bytes(ctx));
    };
    int pairs = 0;
    // Nothing reads the assignment and densities any more: they are freed, the next partition
    // may take their room (assignment_done, set with one partition in flight).
    const auto assignment_read = [&] {
        part.inputs = nullptr, part.aux = nullptr;
        part.a_aux_density = part.b_input_density = part.b_aux_density = nullptr;
        part.assignment_done();
        part.assignment_done = nullptr;
    };
    bool handed_on_early = false;

    proof_sums out;
    try {
        if (side_by_side) {  // inside the try: a thread that fails to start leaves the others waited for
            g2 = msm_async<fq2_t>(ctx, ctx.g2_stream, srs.b_g2, srs.host_b_g2, chunk, b_scalars.get(), nb, counted(b_large));
            l = msm_async<fq_t>(ctx, ctx.side_streams[0], srs.l, srs.host_l, chunk, part.aux, part.n_aux, counted(aux_large));
            a = msm_async<fq_t>(ctx, ctx.side_streams[1], srs.a, srs.host_a, chunk, a_scalars.get(), na, counted(a_large));
        }
        auto th = std::chrono::steady_clock::now();
        const fr_t* h = part.b;  // H is made in b's buffer
        if (lean)
            quotient_h_lean(ctx, part.a, part.b, part.evaluate_c, part.log_n);
        else
            quotient_h_device(ctx, part.a, part.b, part.c, part.b, part.log_n);  // canonical in and out
        part.release(0);  // the MSMs below have their room
        part.release(2);
        if (!roomy) twiddles_release(ctx);
        wait_stream(s, cancel);
        if (timings) timings->h_ms = ms_since(th);
        if (side_by_side) {
            b1 = msm_async<fq_t>(ctx, ctx.side_streams[2], srs.b_g1, srs.host_b_g1, chunk, b_scalars.get(), nb, counted(b_large));
        } else {
            // Both choices from one reading of what is free: the next upload may allocate as
            // soon as it is handed on.
            const size_t h_bytes = msm_bytes(srs.n_h, srs.n_h, g1, !srs.h), usable = usable_device_bytes(ctx);
            const bool pair = pair_fits_in(h_bytes, l_bytes(), usable);
            handed_on_early = pair && part.hand_on_upload &&
                              h_bytes + l_bytes() + part.upload_bytes + kRoomMargin <= usable;
            if (pair) {
                l = msm_async<fq_t>(ctx, ctx.side_streams[0], srs.l, srs.host_l, chunk, part.aux, part.n_aux, counted(aux_large));
                pairs++;
            }
            if (handed_on_early) {
                part.hand_on_upload(part.upload_bytes);
                if (timings) timings->upload_handed_on = 2;
            }
        }
        out.h = msm_key<fq_t>(ctx, s, srs.h, srs.host_h, chunk, h, srs.n_h, opt, !side_by_side && !l.valid());
        if (!side_by_side && l.valid()) out.l = l.get();  // it ran beside the H MSM
        if (timings) timings->h_msm_ms = ms_since(th) - timings->h_ms;
        part.release(1);
        if (!selected) select_scalars();  // in the room H leaves
        if (handed_on_early) assignment_read();  // L ran beside the H MSM: the G2 choice below sees the room
        if (side_by_side) {
            out.b_g1 = b1.get();
            out.l = l.get();
            out.a = a.get();
        } else {
            const bool l_done = pairs > 0;
            const size_t g1_most = std::max({b_bytes(g1, !srs.b_g1), a_bytes(), l_done ? 0 : l_bytes()});
            if (pair_fits(b_bytes(g2_bytes, !srs.b_g2), g1_most)) {
                g2 = msm_async<fq2_t>(ctx, ctx.g2_stream, srs.b_g2, srs.host_b_g2, chunk, b_scalars.get(), nb, counted(b_large));
                pairs++;
            }
            const bool in_pieces = !g2.valid();
            out.b_g1 = msm_key<fq_t>(ctx, s, srs.b_g1, srs.host_b_g1, chunk, b_scalars.get(), nb, counted(b_large), in_pieces);
            if (!l_done) out.l = msm_key<fq_t>(ctx, s, srs.l, srs.host_l, chunk, part.aux, part.n_aux, counted(aux_large), in_pieces);
            out.a = msm_key<fq_t>(ctx, s, srs.a, srs.host_a, chunk, a_scalars.get(), na, counted(a_large), in_pieces);
        }
        if (timings) timings->g1_msm_ms = ms_since(th) - timings->h_ms;
        // B in G2 reads only its own scalars; a resident one run in pieces later sizes them from
        // what is free then, which the next upload would change: that case keeps the room.
        if (part.assignment_done && (g2.valid() || !srs.b_g2)) {
            assignment_read();
            if (timings) timings->upload_handed_on = 1;
        }
    } catch (...) {
        // a_scalars and b_scalars must outlive the side work; the first error is the one reported.
        if (g2.valid()) g2.wait();
        for (auto* f : {&l, &a, &b1})
            if (f->valid()) f->wait();
        sync_compute_streams(ctx);
        throw;
    }
    if (timings) {
        timings->msm_in_turn = side_by_side ? 0 : 1;
        timings->msm_paired = pairs;
        timings->h_lean = lean ? 1 : 0;
    }
    auto tw = std::chrono::steady_clock::now();
    try {
        out.b_g2 = g2.valid() ? g2.get()
                              : msm_key<fq2_t>(ctx, s, srs.b_g2, srs.host_b_g2, chunk, b_scalars.get(), nb, counted(b_large), true);
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
