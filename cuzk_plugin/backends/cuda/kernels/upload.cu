// Partition uploads through pinned staging buffers (see upload.cuh). A cudaMemcpyAsync from
// pageable memory is staged by the driver and blocks the calling thread; doing the staging
// here, double-buffered, keeps the copy engine busy while the CPU fills the other buffer.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "ntt.cuh"
#include "upload.cuh"

namespace {

void staging_ensure(cz_context& ctx) {
    cz_staging& st = ctx.staging;
    if (st.ready) return;
    for (int i = 0; i < cz_staging::kBuffers; i++) {
        if (!st.host[i]) CZ_CHECK(cudaHostAlloc(&st.host[i], cz_staging::kBytes, cudaHostAllocDefault));
        if (!st.drained[i]) CZ_CHECK(cudaEventCreateWithFlags(&st.drained[i], cudaEventDisableTiming));
    }
    st.ready = true;  // only once every buffer exists; a partial failure is retried next time
}

// memcpy split over a few threads: one thread copies pageable -> pinned at ~4 GB/s on the H200
// host (measured: 2.0 s for a 2^26 partition's 8 GB), well under what the copy engine takes.
void parallel_memcpy(void* dst, const void* src, size_t len) {
    constexpr size_t kMinPart = 4u << 20;
    unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    size_t parts = std::min<size_t>({8, std::max(1u, hw / 2), (len + kMinPart - 1) / kMinPart});
    if (parts <= 1) {
        std::memcpy(dst, src, len);
        return;
    }
    size_t step = (len + parts - 1) / parts;
    std::vector<std::thread> workers;
    for (size_t k = 1; k < parts; k++) {
        size_t off = k * step;
        if (off >= len) break;
        workers.emplace_back([=] {
            std::memcpy(static_cast<uint8_t*>(dst) + off, static_cast<const uint8_t*>(src) + off, std::min(step, len - off));
        });
    }
    std::memcpy(dst, src, std::min(step, len));
    for (auto& w : workers) w.join();
}

// Every value of z (any 256-bit value) reduced below r in place: 2^256 < 3r, so two
// conditional subtractions of r do (fr_t::reduce_once works on the words, whatever their
// form). The MSMs' signed windows need k < r; checking this on the host read all of a
// partition's 4.2 GB (0.8 s at 32 GiB, first touch of the shared pages included).
__global__ void reduce_below_r_kernel(fr_t* z, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const fr_t x = z[i];
    fr_t y = fr_t::reduce_once(x.v, 0);
    y = fr_t::reduce_once(y.v, 0);
    if (y != x) z[i] = y;
}

// Whether [p, p + bytes) lies in host memory registered with CUDA (cz_host_register): its
// pages are locked, so the copy engine reads them directly (0.076 s for 4.17 GB on the H200
// host, against 0.55 s through the staging buffers). Both ends are asked: a range that only
// starts in a registered block goes through the staging buffers.
bool host_registered(const void* p, size_t bytes) {
    for (const void* q : {p, static_cast<const void*>(static_cast<const uint8_t*>(p) + bytes - 1)}) {
        cudaPointerAttributes attr;
        if (cudaPointerGetAttributes(&attr, q) != cudaSuccess) {
            cudaGetLastError();  // not a CUDA pointer at all (older runtimes say so by an error)
            return false;
        }
        if (attr.type != cudaMemoryTypeHost) return false;
    }
    return true;
}

// Registered source: direct copies a chunk at a time (cancel checked between chunks), then a
// wait for them, so that like the staged path it returns once `src` has been read.
void upload_registered(cz_context& ctx, uint8_t* d, const uint8_t* h, size_t bytes, const cz_cancel_flag* cancel) {
    constexpr size_t kChunk = 256ull << 20;
    cudaEvent_t done;
    CZ_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    try {
        for (size_t off = 0; off < bytes; off += kChunk) {
            throw_if_cancelled(cancel);
            CZ_CHECK(cudaMemcpyAsync(d + off, h + off, std::min(kChunk, bytes - off), cudaMemcpyHostToDevice,
                                     ctx.upload_stream));
        }
        CZ_CHECK(cudaEventRecord(done, ctx.upload_stream));
        wait_event(done, cancel);
    } catch (...) {
        cudaEventSynchronize(done);  // queued copies still read `src`: never return before they end
        cudaEventDestroy(done);
        throw;
    }
    CZ_CHECK(cudaEventDestroy(done));
}

}  // namespace

void upload_async(cz_context& ctx, void* dst, const void* src, size_t bytes, const cz_cancel_flag* cancel) {
    if (bytes == 0) return;
    if (host_registered(src, bytes)) {
        upload_registered(ctx, static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), bytes, cancel);
        return;
    }
    staging_ensure(ctx);
    cz_staging& st = ctx.staging;
    auto* d = static_cast<uint8_t*>(dst);
    const auto* h = static_cast<const uint8_t*>(src);
    for (size_t off = 0; off < bytes; off += cz_staging::kBytes) {
        throw_if_cancelled(cancel);
        size_t len = std::min(cz_staging::kBytes, bytes - off);
        int i = st.next;
        st.next = (i + 1) % cz_staging::kBuffers;
        wait_event(st.drained[i], cancel);  // its previous chunk has reached the device
        parallel_memcpy(st.host[i], h + off, len);
        CZ_CHECK(cudaMemcpyAsync(d + off, st.host[i], len, cudaMemcpyHostToDevice, ctx.upload_stream));
        CZ_CHECK(cudaEventRecord(st.drained[i], ctx.upload_stream));
    }
}

double link_bytes_per_s(cz_context& ctx, int samples) {
    // The staging buffers are borrowed: a lane whose uploads all come from registered blocks
    // never makes them, so a measure that made them frees them again (128 MiB pinned a lane).
    const bool borrowed = !ctx.staging.ready;
    staging_ensure(ctx);
    double best = 0;
    try {
        // A sample copies both staging buffers twice: 256 MiB, ~5 ms on PCIe 5.0 x16, so the host
        // clock's microseconds are noise. The best sample: the first may wait on earlier copies.
        constexpr int kCopies = 2 * cz_staging::kBuffers;
        dev_buf<uint8_t> d(cz_staging::kBytes, ctx.upload_stream);
        for (int r = 0; r < std::max(1, samples); r++) {
            CZ_CHECK(cudaStreamSynchronize(ctx.upload_stream));
            auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < kCopies; i++)
                CZ_CHECK(cudaMemcpyAsync(d.get(), ctx.staging.host[i % cz_staging::kBuffers], cz_staging::kBytes,
                                         cudaMemcpyHostToDevice, ctx.upload_stream));
            CZ_CHECK(cudaStreamSynchronize(ctx.upload_stream));
            best = std::max(best, double(kCopies) * double(cz_staging::kBytes) / (ms_since(t0) / 1e3));
        }
    } catch (...) {
        cudaStreamSynchronize(ctx.upload_stream);  // the copies read the buffers until they end
        if (borrowed) try { staging_free(ctx); } catch (...) {}  // the measure's own error is the one to report
        throw;
    }
    if (borrowed) staging_free(ctx);
    return best;
}

void staging_free(cz_context& ctx) {
    cz_staging& st = ctx.staging;
    for (int i = 0; i < cz_staging::kBuffers; i++) {
        if (st.drained[i]) CZ_CHECK(cudaEventSynchronize(st.drained[i]));
        if (st.host[i]) CZ_CHECK(cudaFreeHost(st.host[i]));
        if (st.drained[i]) CZ_CHECK(cudaEventDestroy(st.drained[i]));
        st.host[i] = nullptr, st.drained[i] = nullptr;
    }
    st.ready = false;
}

void upload_partition(cz_context& ctx, const partition_host& host, partition_buffers& out,
                      const cz_cancel_flag* cancel) {
    CZ_REQUIRE(host.m >= 1, "a partition needs at least one constraint");
    cudaStream_t s = ctx.upload_stream;
    const int log_n = log2_ceil(host.m);
    const size_t n = 1ull << log_n;
    if (!host.circuit) {  // a witness partition's a, b, c are made at compute time (prove_host)
        for (const uint64_t* v : {host.a, host.b, host.c}) {
            out.abc.emplace_back(n, s);
            fr_t* d = out.abc.back().get();
            if (n > host.m) CZ_CHECK(cudaMemsetAsync(d + host.m, 0, (n - host.m) * sizeof(fr_t), s));
            upload_async(ctx, d, v, host.m * sizeof(fr_t), cancel);
        }
    }
    // z = inputs then aux, as the circuit's columns number them (one element at least:
    // prove_device reads the pointers).
    out.fr_bufs.emplace_back(std::max<size_t>(host.n_inputs + host.n_aux, 1), s);
    fr_t* z = out.fr_bufs.back().get();
    upload_async(ctx, z, host.inputs, host.n_inputs * sizeof(fr_t), cancel);
    upload_async(ctx, z + host.n_inputs, host.aux, host.n_aux * sizeof(fr_t), cancel);
    if (size_t nz = host.n_inputs + host.n_aux) {
        reduce_below_r_kernel<<<blocks_for(nz, 256), 256, 0, s>>>(z, nz);
        CZ_CHECK_LAUNCH();
    }
    partition_device& part = out.part;
    part.log_n = log_n;
    if (!host.circuit) part.a = out.abc[0].get(), part.b = out.abc[1].get(), part.c = out.abc[2].get();
    part.inputs = z, part.n_inputs = host.n_inputs;
    part.aux = z + host.n_inputs, part.n_aux = host.n_aux;
    if (host.circuit) {
        part.a_aux_density = host.circuit->a_aux_density;
        part.b_input_density = host.circuit->b_input_density;
        part.b_aux_density = host.circuit->b_aux_density;
        return;
    }
    auto upload_flags = [&](const uint8_t* src, size_t count) {
        out.flag_bufs.emplace_back(std::max<size_t>(count, 1), s);
        upload_async(ctx, out.flag_bufs.back().get(), src, count, cancel);
        return out.flag_bufs.back().get();
    };
    part.a_aux_density = upload_flags(host.a_aux_density, host.n_aux);
    part.b_input_density = upload_flags(host.b_input_density, host.n_inputs);
    part.b_aux_density = upload_flags(host.b_aux_density, host.n_aux);
}

namespace {

// A partition's buffers are freed in the main compute stream's order, after the work queued
// so far on the other compute streams (which read them too). Not on upload_stream: there the
// frees would queue behind the next partition's upload (begun when this one took the compute
// lock), and the next partition's allocations on the main stream that reuse the memory would
// wait for that whole upload before its H could start.
void free_after_compute(cz_context& ctx, partition_buffers& up) {
    for (cudaStream_t s : ctx.compute_streams()) {
        if (s == ctx.stream) continue;
        cuda_event done;
        CZ_CHECK(cudaEventRecord(done.e, s));
        CZ_CHECK(cudaStreamWaitEvent(ctx.stream, done.e, 0));
    }
    for (auto& b : up.fr_bufs) b.stream = ctx.stream;
    for (auto& b : up.flag_bufs) b.stream = ctx.stream;
    for (auto& b : up.abc) b.stream = ctx.stream;
}

// The device bytes of `up`'s upload, which the next partition's takes too (partitions of a key
// are alike): its assignment and densities, and its a, b, c where they came from the host (not
// a witness partition's, made at compute time).
size_t upload_bytes(const partition_buffers& up, bool witness) {
    size_t bytes = 0;
    for (const auto& b : up.fr_bufs) bytes += b.bytes();
    for (const auto& b : up.flag_bufs) bytes += b.bytes();
    if (!witness)
        for (const auto& b : up.abc) bytes += b.bytes();
    return bytes;
}

// The room the next partition's upload may take while `up` computes: the size of `up`'s own
// where two partitions are in flight (its upload lock is handed on as `up` starts computing).
size_t next_upload_bytes(const cz_context& ctx, const partition_buffers& up, bool witness) {
    return ctx.partitions_in_flight.load() <= 1 ? 0 : upload_bytes(up, witness);
}

// Whether the witness partition of `up` (uploaded) can make H in three buffers of N beside the
// transforms' N-entry twiddle tables (made at its first transform where not cached), with room
// to spare. Asked before the next partition may start its upload: where two are in flight, its
// upload (the size of this one's) is kept room for, so that the answer does not depend on
// which thread allocates first.
bool abc_fit(cz_context& ctx, const partition_buffers& up) {
    const size_t n = 1ull << up.part.log_n;
    const size_t twiddle_bytes = twiddles_cached(ctx, up.part.log_n) ? 0 : n * sizeof(fr_t);
    return 3 * n * sizeof(fr_t) + twiddle_bytes + next_upload_bytes(ctx, up, true) + kRoomMargin <=
           usable_device_bytes(ctx);
}

// a, b, c of `up` allocated on the main stream (a witness partition: the circuit fills them),
// and freed there once H no longer needs them. `lean`: only a and b; c is made in b's room
// during H (partition_device::evaluate_c, quotient_h_lean).
void own_abc(cz_context& ctx, partition_buffers& up, bool lean) {
    const size_t n = 1ull << up.part.log_n;
    if (up.abc.empty())
        for (int i = 0; i < (lean ? 2 : 3); i++) up.abc.emplace_back(n, ctx.stream);
    up.part.a = up.abc[0].get(), up.part.b = up.abc[1].get();
    up.part.c = up.abc.size() > 2 ? up.abc[2].get() : nullptr;
    up.part.release_abc = [&ctx, &up](int which) {
        if (which >= (int)up.abc.size()) return;
        dev_buf<fr_t> gone = std::move(up.abc[which]);
        gone.stream = ctx.stream;  // freed here, in the main stream's order, after the kernels reading it
    };
}

// Clears cz_context::upload_reserved on every way out of its scope: an upload's (the room held
// back for it is allocated, or never will be) and a computing partition's (no choice of its
// own needs the room it held back any more; only the partition computing holds any).
struct reservation_cleared {
    cz_context& ctx;
    ~reservation_cleared() { ctx.upload_reserved.store(0); }
};

// Uploads a partition from host memory and proves it: the upload under upload_lock, the
// device work under compute_lock. The upload lock is handed on only once this partition holds
// the compute lock, so partition k+1 uploads while k computes, partitions compute in the
// order they uploaded, and at most one uploaded partition waits for the device (device memory
// stays bounded however many are started). With one partition in flight it is handed on once
// this partition no longer reads its assignment (partition_device::assignment_done), into
// whose room the next one uploads, or earlier, beside its H MSM, where the next upload fits
// beside it too (partition_device::hand_on_upload). A cancel is seen while waiting for either
// lock, between upload chunks and between the device stages (prove_device).
proof_sums prove_host(cz_context& ctx, const cz_srs& srs, const partition_host& host, prove_timings& t,
                      const cz_cancel_flag* cancel) {
    CZ_CHECK(cudaSetDevice(ctx.device));
    partition_buffers up;  // destroyed after the locks are released; its frees are stream-ordered
    cuda_event uploaded;
    auto t0 = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> upload_lock = lock_unless_cancelled(ctx.upload_lock, cancel);
    t.upload_wait_ms = ms_since(t0);
    auto tu = std::chrono::steady_clock::now();
    {
        reservation_cleared cleared{ctx};
        upload_partition(ctx, host, up, cancel);  // a cancel here: the copies queued so far finish before `up` is freed
    }
    CZ_CHECK(cudaEventRecord(uploaded.e, ctx.upload_stream));
    wait_event(uploaded.e, cancel);  // upload_ms: until the data is on the device
    t.upload_ms = ms_since(tu);
    auto tq = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> compute_lock = lock_unless_cancelled(ctx.compute_lock, cancel);
    // A witness partition's a, b, c go straight into H's buffers; on a device without room for
    // three of them and the twiddle tables, C waits for B's room (quotient_h_lean).
    const bool lean = host.circuit && !abc_fit(ctx, up);
    if (ctx.partitions_in_flight > 1) {
        upload_lock.unlock();
    } else {  // the next partition uploads into this one's room once its assignment is read
        up.part.upload_bytes = upload_bytes(up, host.circuit != nullptr);
        up.part.hand_on_upload = [&ctx, &upload_lock](size_t bytes) {
            ctx.upload_reserved.store(bytes);
            upload_lock.unlock();
        };
        up.part.assignment_done = [&ctx, &up, &upload_lock] {
            // Freed in the main stream's order, after every kernel that read them; not through
            // free_after_compute, which would also wait for B in G2 on its own stream.
            for (auto& b : up.fr_bufs) b.stream = ctx.stream;
            for (auto& b : up.flag_bufs) b.stream = ctx.stream;
            up.fr_bufs.clear(), up.flag_bufs.clear();
            CZ_CHECK(cudaStreamSynchronize(ctx.stream));  // freed before the next upload allocates
            if (upload_lock.owns_lock()) upload_lock.unlock();
        };
    }
    t.queue_ms = ms_since(tq);
    CZ_CHECK(cudaStreamWaitEvent(ctx.stream, uploaded.e, 0));
    proof_sums sums;
    {
        reservation_cleared cleared{ctx};
        try {
            auto ta = std::chrono::steady_clock::now();
            if (lean) twiddles_release(ctx);  // N entries a direction that the lean transforms do without
            own_abc(ctx, up, lean);
            t.abc_alloc_ms = ms_since(ta);
            if (const cz_circuit* circuit = host.circuit) {
                const size_t n = 1ull << up.part.log_n;
                auto tr = std::chrono::steady_clock::now();
                r1cs_evaluate(ctx.stream, *circuit, up.part.inputs, up.part.a, up.part.b, up.part.c, n,
                              matrix_range{0, lean ? 2 : 3});
                if (lean) {
                    const fr_t* z = up.part.inputs;
                    cudaStream_t s = ctx.stream;
                    up.part.evaluate_c = [circuit, z, s, n](fr_t* c) {
                        r1cs_evaluate(s, *circuit, z, nullptr, nullptr, c, n, matrix_range{2, 1});
                    };
                }
                wait_stream(ctx.stream, cancel);
                t.r1cs_ms = ms_since(tr);
            }
            up.part.next_upload_bytes = next_upload_bytes(ctx, up, host.circuit != nullptr);
            sums = prove_device(ctx, srs, up.part, &t, cancel);
        } catch (...) {
            // Let nothing still queued read `up` after it is freed; the first error is the one reported.
            for (cudaStream_t s : ctx.compute_streams()) cudaStreamSynchronize(s);
            throw;
        }
    }
    auto tf = std::chrono::steady_clock::now();
    free_after_compute(ctx, up);
    if (ctx.partitions_in_flight <= 1) {  // the next partition uploads into this one's room
        up.fr_bufs.clear(), up.flag_bufs.clear(), up.abc.clear();
        CZ_CHECK(cudaStreamSynchronize(ctx.stream));
    }
    t.release_ms = ms_since(tf);
    return sums;
}

}  // namespace

std::future<proof_sums> start_proof(cz_context* ctx, const cz_srs* srs, const partition_host& host,
                                    prove_timings* t, const cz_cancel_flag* cancel) {
    return std::async(std::launch::async,
                      [ctx, srs, host, t, cancel]() { return prove_host(*ctx, *srs, host, *t, cancel); });
}
