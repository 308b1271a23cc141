// The library's C ABI: plain pointers, counts and flags in; a cz_status {code, message} out.
// Host arrays use the package's boundary layout (canonical little-endian limbs, which are
// byte-identical to our 32-bit limb structs). Results are affine canonical limbs; the
// identity is all zeros. Benchmark entry points live in the bench library (kernels/bench/).
#include <algorithm>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>

#include "abi.cuh"
#include "keygen.cuh"
#include "ntt.cuh"
#include "upload.cuh"

#ifndef CZ_BUILT_ARCHES  // set by build.py: the architectures of this build
#define CZ_BUILT_ARCHES "unknown architectures"
#endif

namespace {

// Loaded only to ask the runtime whether this build has code the device can run.
__global__ void arch_probe_kernel() {}

// CZ_NO_DEVICE naming the card and its compute capability when no kernel image of this
// library fits it (the CUDA runtime picks the matching sm_XX code of the fat binary at load,
// or JIT-compiles the PTX for a later GPU).
void require_kernel_image(int device) {
    CZ_CHECK(cudaSetDevice(device));
    cudaFuncAttributes attr;
    cudaError_t err = cudaFuncGetAttributes(&attr, arch_probe_kernel);
    if (err == cudaErrorNoKernelImageForDevice || err == cudaErrorInvalidDeviceFunction ||
        err == cudaErrorUnsupportedPtxVersion || err == cudaErrorInvalidPtx) {
        cudaGetLastError();  // clear it: the context stays usable for the message below
        cudaDeviceProp prop;
        CZ_CHECK(cudaGetDeviceProperties(&prop, device));
        throw cz_error(CZ_NO_DEVICE, "no kernel image for GPU " + std::to_string(device) + " (" + prop.name +
                                         ", compute capability " + std::to_string(prop.major) + "." +
                                         std::to_string(prop.minor) + "): this library holds " CZ_BUILT_ARCHES
                                         "; rebuild with python -m cuzk_plugin.backends.cuda.build --arch " +
                                         std::to_string(prop.major * 10 + prop.minor) + " (or --arch all)");
    }
    CZ_CHECK(err);
}

// An MSM of host bases and scalars on the context's device (the caller holds its compute lock:
// on_device).
template <class F>
void msm_host(cz_context* ctx, const uint64_t* bases, const uint64_t* scalars, size_t n, uint64_t* out,
              int window_bits) {
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

// A z, B z, C z on the device (z: n_z = inputs + aux values, canonical; the caller holds the
// compute lock: on_device), then use(stream, a, b, c, m) on the device results before they are freed.
template <class Use>
void with_r1cs_evaluated(cz_context* ctx, const cz_circuit* circuit, const uint64_t* z, size_t n_z, Use use) {
    CZ_REQUIRE(circuit->device == ctx->device, "the circuit is resident on another device");
    CZ_REQUIRE(n_z == circuit->num_inputs + circuit->num_aux, "z must hold the circuit's inputs and aux values");
    cudaStream_t s = ctx->stream;
    const size_t m = circuit->m;
    dev_buf<fr_t> dz(std::max<size_t>(n_z, 1), s), da(m, s), db(m, s), dc(m, s);
    CZ_CHECK(cudaMemcpyAsync(dz.get(), z, n_z * sizeof(fr_t), cudaMemcpyHostToDevice, s));
    r1cs_evaluate(s, *circuit, dz.get(), da.get(), db.get(), dc.get(), m);
    use(s, da.get(), db.get(), dc.get(), m);
}

}  // namespace

// A proof in flight: the host thread that runs it, what it returns, and its cancel flag.
struct cz_pending {
    std::future<proof_sums> result;
    prove_timings timings;
    cz_cancel_flag cancel{false};
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

// Page-locks [p, p + n) of this process's memory for every device (a recycled shared-memory
// block the engine keeps mapped): uploads from it skip the staging copy. p page aligned.
cz_status cz_host_register(void* p, size_t n) {
    return cz_guard([&] {
        CZ_REQUIRE(p != nullptr && n > 0, "cz_host_register needs a non-empty range");
        CZ_CHECK(cudaHostRegister(p, n, cudaHostRegisterPortable));
    });
}

// Undoes cz_host_register(p, ...) (before the memory is unmapped; nothing may be uploading from it).
cz_status cz_host_unregister(void* p) {
    return cz_guard([&] { CZ_CHECK(cudaHostUnregister(p)); });
}

// CZ_NO_DEVICE, naming the card's compute capability, when this build has no code for it.
cz_status cz_device_check(int device) {
    return cz_guard([&] { require_kernel_image(device); });
}

cz_status cz_context_create(int device, cz_context** out) {
    return cz_guard([&] {
        require_kernel_image(device);
        auto ctx = std::make_unique<cz_context>();
        ctx->device = device;
        CZ_CHECK(cudaSetDevice(device));
        // The main stream carries the prove's longest chain (H, then the H MSM): it gets the
        // device's highest priority and the side streams (B in G2, L, A, B in G1) the lowest,
        // so side work fills what the chain leaves idle instead of delaying it.
        int least = 0, greatest = 0;
        CZ_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        CZ_CHECK(cudaStreamCreateWithPriority(&ctx->stream, cudaStreamNonBlocking, greatest));
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
        size_t free_bytes = 0, total_bytes = 0;
        CZ_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
        ctx->baseline_used = total_bytes - free_bytes;
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
    return on_device(ctx, [&] {
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
    return on_device(ctx, [&] {
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
    return on_device(ctx, [&] { msm_host<fq_t>(ctx, bases, scalars, n, out, window_bits); });
}

// bases (n, 2, 2, 6); out (2, 2, 6).
cz_status cz_msm_g2(cz_context* ctx, const uint64_t* bases, const uint64_t* scalars, size_t n, uint64_t* out,
                    int window_bits) {
    return on_device(ctx, [&] { msm_host<fq2_t>(ctx, bases, scalars, n, out, window_bits); });
}

cz_status cz_srs_load(cz_context* ctx, const uint8_t* h, size_t n_h, const uint8_t* l, size_t n_l,
                      const uint8_t* a, size_t n_a, const uint8_t* b_g1, size_t n_b_g1, const uint8_t* b_g2,
                      size_t n_b_g2, cz_srs** out, uint64_t* nbytes) {
    return on_device(ctx, [&] {
        auto srs = srs_load(*ctx, h, n_h, l, n_l, a, n_a, b_g1, n_b_g1, b_g2, n_b_g2);
        *nbytes = srs->nbytes;
        *out = srs.release();
    });
}

// The device's free and total memory, as the driver reports them.
cz_status cz_device_memory(int device, uint64_t* free_bytes, uint64_t* total_bytes) {
    return cz_guard([&] {
        CZ_CHECK(cudaSetDevice(device));
        size_t f = 0, t = 0;
        CZ_CHECK(cudaMemGetInfo(&f, &t));
        *free_bytes = f, *total_bytes = t;
    });
}

// Host -> device bytes a second from page-locked memory on the context's device (link_bytes_per_s,
// upload.cu). Holds the upload lock, not the compute lock (on_device): a partition with one in
// flight holds the upload lock while it waits for the compute lock, so taking both could deadlock.
cz_status cz_link_bandwidth(cz_context* ctx, int samples, double* bytes_per_s) {
    return cz_guard([&] {
        std::lock_guard<std::mutex> lock(ctx->upload_lock);
        CZ_CHECK(cudaSetDevice(ctx->device));
        *bytes_per_s = link_bytes_per_s(*ctx, samples);
    });
}

// The most device memory this process may use on the context's device (0: no limit): proofs
// keep their transient work under it (usable_device_bytes), e.g. running the MSMs in turn.
cz_status cz_context_set_memory_limit(cz_context* ctx, uint64_t limit_bytes) {
    return cz_guard([&] { ctx->memory_limit = (size_t)limit_bytes; });
}

// Partitions on the device at once (cz_context::partitions_in_flight): 1 or 2.
cz_status cz_context_set_partitions_in_flight(cz_context* ctx, uint32_t count) {
    return cz_guard([&] {
        CZ_REQUIRE(count == 1 || count == 2, "partitions in flight must be 1 or 2");
        ctx->partitions_in_flight = (int)count;  // read by each partition as it goes: a change is safe mid-proof
    });
}

// A host copy (page-locked, shared by every device) of a key from its raw encodings, converted
// and checked through ctx's device a chunk at a time; nbytes: its host bytes.
cz_status cz_host_srs_from_raw(cz_context* ctx, const uint8_t* h, size_t n_h, const uint8_t* l, size_t n_l,
                               const uint8_t* a, size_t n_a, const uint8_t* b_g1, size_t n_b_g1, const uint8_t* b_g2,
                               size_t n_b_g2, cz_host_srs** out, uint64_t* nbytes) {
    return on_device(ctx, [&] {
        const uint8_t* raw[kSrsVectors] = {h, l, a, b_g1, b_g2};
        const size_t n[kSrsVectors] = {n_h, n_l, n_a, n_b_g1, n_b_g2};
        auto host = host_srs_from_raw(*ctx, raw, n);
        *nbytes = host->nbytes;
        *out = host.release();
    });
}

// A host copy of a device key (one made on the device), for other devices or for streaming.
cz_status cz_host_srs_from_device(const cz_srs* srs, cz_host_srs** out, uint64_t* nbytes) {
    return cz_guard([&] {
        auto host = host_srs_from_device(*srs);
        *nbytes = host->nbytes;
        *out = host.release();
    });
}

// The host copy of a key made into host memory (cz_srs_generate's to_host), handed over: the key
// keeps pointing at it but no longer frees it (release the key first, then the copy).
cz_status cz_srs_take_host(cz_srs* srs, cz_host_srs** out, uint64_t* nbytes) {
    return cz_guard([&] {
        CZ_REQUIRE(srs->own_host != nullptr, "the key owns no host copy (it was not made into host memory)");
        *nbytes = srs->own_host->nbytes;
        *out = srs->own_host.release();
    });
}

// No device key attached to it may be in use.
cz_status cz_host_srs_free(cz_host_srs* host) {
    return cz_guard([&] { delete host; });
}

// A key for ctx's device over a host copy: the vectors with their bit (1 h, 2 l, 4 a, 8 b_g1,
// 16 b_g2) set in resident_mask copied to the device, the others streamed from `host` in
// chunks of stream_chunk points; `host` must outlive the key. nbytes: its device bytes.
cz_status cz_srs_attach(cz_context* ctx, const cz_host_srs* host, uint32_t resident_mask, uint64_t stream_chunk,
                        cz_srs** out, uint64_t* nbytes) {
    return on_device(ctx, [&] {
        auto srs = srs_attach(*ctx, *host, resident_mask, (size_t)stream_chunk);
        *nbytes = srs->nbytes;
        *out = srs.release();
    });
}

// Which of the key's vectors are resident (bits as cz_srs_attach's mask).
cz_status cz_srs_resident_mask(const cz_srs* srs, uint32_t* mask) {
    return cz_guard([&] { *mask = srs->resident_mask(); });
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
        pending->result = start_proof(ctx, srs, host, &pending->timings, &pending->cancel);
        *out = pending.release();
    });
}

// A pre-compiled circuit to the device (r1cs.cuh): m rows, coeffs (n_coeffs, 4) canonical,
// for each of A, B, C its row_ptr (m + 1), cols and coefficient indices (nnz each), the
// densities as in cz_prove_start. The caller has checked the CSR arrays' bounds. The library
// holds the matrices in a compact form of chunk_rows (>= 1) rows a chunk (r1cs.cuh); streamed:
// they go to page-locked host memory instead, copied to the device a chunk at a time at each
// evaluation. nbytes: its device bytes; host_bytes: its page-locked bytes.
cz_status cz_circuit_load(cz_context* ctx, size_t m, size_t num_inputs, size_t num_aux, const uint64_t* coeffs,
                          size_t n_coeffs, const uint64_t* a_row_ptr, const uint32_t* a_cols,
                          const uint32_t* a_coeff, size_t a_nnz, const uint64_t* b_row_ptr, const uint32_t* b_cols,
                          const uint32_t* b_coeff, size_t b_nnz, const uint64_t* c_row_ptr, const uint32_t* c_cols,
                          const uint32_t* c_coeff, size_t c_nnz, const uint8_t* a_aux_density,
                          const uint8_t* b_input_density, const uint8_t* b_aux_density, int streamed,
                          size_t chunk_rows, cz_circuit** out, uint64_t* nbytes, uint64_t* host_bytes) {
    return on_device(ctx, [&] {
        const csr_host mats[3] = {{a_row_ptr, a_cols, a_coeff, a_nnz}, {b_row_ptr, b_cols, b_coeff, b_nnz},
                                  {c_row_ptr, c_cols, c_coeff, c_nnz}};
        auto circuit = circuit_load(*ctx, m, num_inputs, num_aux, coeffs, n_coeffs, mats, a_aux_density,
                                    b_input_density, b_aux_density, streamed != 0, chunk_rows);
        *nbytes = circuit->nbytes;
        *host_bytes = circuit->host_bytes;
        *out = circuit.release();
    });
}

cz_status cz_circuit_free(cz_circuit* circuit) {
    return cz_guard([&] { delete circuit; });
}

// a, b, c (m rows each, canonical) = A z, B z, C z.
cz_status cz_evaluate_r1cs(cz_context* ctx, const cz_circuit* circuit, const uint64_t* z, size_t n_z, uint64_t* a,
                           uint64_t* b, uint64_t* c) {
    return on_device(ctx, [&] {
        with_r1cs_evaluated(ctx, circuit, z, n_z, [&](cudaStream_t s, const fr_t* da, const fr_t* db, const fr_t* dc,
                                                      size_t m) {
            uint64_t* dst[3] = {a, b, c};
            const fr_t* src[3] = {da, db, dc};
            for (int i = 0; i < 3; i++)
                CZ_CHECK(cudaMemcpyAsync(dst[i], src[i], m * sizeof(fr_t), cudaMemcpyDeviceToHost, s));
            CZ_CHECK(cudaStreamSynchronize(s));
        });
    });
}

// Rows of A z * B z = C z that fail for z: how many, and the first (UINT64_MAX when none);
// a, b, c never leave the device.
cz_status cz_check_r1cs(cz_context* ctx, const cz_circuit* circuit, const uint64_t* z, size_t n_z, uint64_t* count,
                        uint64_t* first) {
    return on_device(ctx, [&] {
        with_r1cs_evaluated(ctx, circuit, z, n_z, [&](cudaStream_t s, const fr_t* da, const fr_t* db, const fr_t* dc,
                                                      size_t m) {
            const r1cs_violations v = r1cs_check(s, da, db, dc, m);
            *count = v.count;
            *first = v.first;
        });
    });
}

// cz_prove_start for a witness partition: a, b, c evaluated on the device from the circuit,
// resident or streamed (straight into H), the densities the circuit's. inputs and aux stay
// alive until cz_prove_finish.
cz_status cz_prove_start_witness(cz_context* ctx, const cz_srs* srs, const cz_circuit* circuit, const uint64_t* inputs,
                                 size_t n_inputs, const uint64_t* aux, size_t n_aux, cz_pending** out) {
    return cz_guard([&] {
        CZ_REQUIRE(circuit->device == ctx->device, "the circuit is resident on another device");
        CZ_REQUIRE(n_inputs == circuit->num_inputs && n_aux == circuit->num_aux,
                   "the assignment does not match the circuit's inputs and aux counts");
        partition_host host;
        host.m = circuit->m;
        host.inputs = inputs, host.n_inputs = n_inputs, host.aux = aux, host.n_aux = n_aux;
        host.circuit = circuit;
        auto pending = std::make_unique<cz_pending>();
        pending->result = start_proof(ctx, srs, host, &pending->timings, &pending->cancel);
        *out = pending.release();
    });
}

// out: h, l, a, b_g1 as (2, 6) each, then b_g2 (2, 2, 6): 72 uint64. timings_ms
// (prove_timings::kCount, 15): h, g1 msm, g2 wait, total (device work), upload, queue (waiting
// for the partition computing), r1cs (a witness partition's evaluation), msm_in_turn (1: the
// MSMs ran one after another for want of device memory), msm_paired (pairs of them that still
// shared the device), h_lean (1: H made in two buffers, C evaluated within h), upload_handed_on
// (one partition in flight: 1, the next one uploaded into this one's room after its G1 MSMs;
// 2, into room of its own beside its H MSM), abc_alloc, release, upload_wait (waiting for the
// upload lock), h_msm (the part of g1 msm until the H MSM ended). Frees the pending proof.
cz_status cz_prove_finish(cz_pending* pending, uint64_t* out, double* timings_ms) {
    return cz_guard([&] {
        std::unique_ptr<cz_pending> own(pending);
        write_sums(pending->result.get(), out);
        pending->timings.write(timings_ms);
    });
}

// Asks the proof to stop at its next check (before each stage, between upload chunks and MSM
// windows, while it waits for the context's locks): cz_prove_finish then returns CZ_CANCELLED
// once the work already queued on the device is done, and the context stays usable. Returns at
// once; may be called from any thread, any number of times, until cz_prove_finish.
cz_status cz_prove_cancel(cz_pending* pending) {
    return cz_guard([&] { pending->cancel.store(true, std::memory_order_relaxed); });
}

// Blocks until the proof's library thread has returned (done, failed or cancelled), without
// freeing it: cz_prove_cancel stays valid meanwhile; cz_prove_finish then returns at once.
cz_status cz_prove_wait(cz_pending* pending) {
    return cz_guard([&] { pending->result.wait(); });
}

// A TEST proving key of a resident `circuit` made on its device (keygen.cuh) from secrets (5 x 4
// uint64 canonical: tau, alpha, beta, gamma, delta, each in [1, r)). input_sums (num_inputs x 3
// x 4 uint64) receives u, v, w at tau of each input column, canonical, for the verifying key.
// timings_ms (10): lagrange, A columns, a, B columns, b_g1, b_g2, C columns, l, h, total;
// memory_bytes (2): device memory in use before and at the peak. Both may be null. to_host: each
// vector moved to page-locked host memory as soon as it is made (the key streams them in chunks of
// stream_chunk points; nbytes, its device bytes, is then 0).
cz_status cz_srs_generate(cz_context* ctx, const cz_circuit* circuit, const uint64_t* secrets, int to_host,
                          uint64_t stream_chunk, cz_srs** out, uint64_t* nbytes, uint64_t* input_sums,
                          double* timings_ms, uint64_t* memory_bytes) {
    return on_device(ctx, [&] {
        CZ_REQUIRE(circuit->device == ctx->device, "the circuit is resident on another device");
        keygen_report report;
        auto srs = srs_generate(*ctx, *circuit, secrets_from_canonical(secrets), input_sums, &report, to_host != 0,
                                (size_t)stream_chunk);
        if (timings_ms) std::copy(report.ms, report.ms + keygen_report::kStages, timings_ms);
        if (memory_bytes) memory_bytes[0] = report.used_before, memory_bytes[1] = report.used_peak;
        *nbytes = srs->nbytes;
        *out = srs.release();
    });
}

// Points of a key's vector (0 h, 1 l, 2 a, 3 b_g1, 4 b_g2), start .. start + count, to `out` as
// affine canonical limbs (G1 (count, 2, 6), G2 (count, 2, 2, 6)), the identity as zeros. Tests.
cz_status cz_srs_read(const cz_srs* srs, int which, size_t start, size_t count, uint64_t* out) {
    return cz_guard([&] { srs_read(*srs, which, start, count, out); });
}

// The key's vector lengths: h, l, a, b_g1, b_g2.
cz_status cz_srs_counts(const cz_srs* srs, uint64_t* out) {
    return cz_guard([&] {
        const size_t n[5] = {srs->n_h, srs->n_l, srs->n_a, srs->n_b_g1, srs->n_b_g2};
        std::copy(n, n + 5, out);
    });
}

}  // extern "C"
