// Where a proving key's points live: resident in device memory, or in page-locked host memory
// (cz_host_srs, one copy a host) streamed through the device in chunks during each MSM
// (msm_streamed, msm.cu). Raw Filecoin encodings are converted and checked on the device a
// chunk at a time, so a key never has to fit the device to be read.
#include <algorithm>
#include <string>

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

// Converts raw encodings to Montgomery affine points and checks every point is on its curve
// (the subgroup check is skipped, as production readers do), a chunk at a time through the
// device: into `dev_out` (device memory for n points), or, when it is null, through a device
// chunk into `host_out` (page-locked host memory for n points). A bad point is a CZ_BAD_POINT
// error naming `what`[index].
template <class P>
void convert_points(cz_context& ctx, const char* what, const uint8_t* raw, size_t n, size_t width, P* dev_out,
                    P* host_out) {
    if (n == 0) return;
    const size_t chunk = 1u << 20;
    cudaStream_t s = ctx.stream;
    dev_buf<uint8_t> staging(std::min(n, chunk) * width, s);
    dev_buf<P> converted(dev_out ? 0 : std::min(n, chunk), s);
    dev_buf<unsigned long long> first_bad(1, s);
    CZ_CHECK(cudaMemsetAsync(first_bad.get(), 0xff, sizeof(unsigned long long), s));
    for (size_t off = 0; off < n; off += chunk) {
        const size_t cnt = std::min(chunk, n - off);
        P* dst = dev_out ? dev_out + off : converted.get();
        CZ_CHECK(cudaMemcpyAsync(staging.get(), raw + off * width, cnt * width, cudaMemcpyHostToDevice, s));
        if (width == 96)
            g1_from_raw_kernel<<<blocks_for(cnt, 256), 256, 0, s>>>(staging.get(), cnt,
                                                                    reinterpret_cast<g1_affine_t*>(dst));
        else
            g2_from_raw_kernel<<<blocks_for(cnt, 256), 256, 0, s>>>(staging.get(), cnt,
                                                                    reinterpret_cast<g2_affine_t*>(dst));
        CZ_CHECK_LAUNCH();
        off_curve_kernel<P><<<blocks_for(cnt, 128), 128, 0, s>>>(dst, cnt, off, first_bad.get());
        CZ_CHECK_LAUNCH();
        if (!dev_out) CZ_CHECK(cudaMemcpyAsync(host_out + off, dst, cnt * sizeof(P), cudaMemcpyDeviceToHost, s));
    }
    unsigned long long bad = 0;
    CZ_CHECK(cudaMemcpyAsync(&bad, first_bad.get(), sizeof bad, cudaMemcpyDeviceToHost, s));
    CZ_CHECK(cudaStreamSynchronize(s));
    if (bad != ~0ull) throw cz_error(CZ_BAD_POINT, std::string(what) + "[" + std::to_string(bad) + "]: not on the curve");
}

// A new device array of raw encodings converted and checked (convert_points); nothing is left
// allocated on an error.
template <class P>
P* upload_points(cz_context& ctx, const char* what, const uint8_t* raw, size_t n, size_t width, size_t& nbytes) {
    P* out = nullptr;
    if (n == 0) return out;
    CZ_DEVICE_ALLOC(&out, n * sizeof(P));
    try {
        convert_points<P>(ctx, what, raw, n, width, out, nullptr);
    } catch (...) {
        device_free(out);
        throw;
    }
    nbytes += n * sizeof(P);
    return out;
}

const char* const kVectorNames[kSrsVectors] = {"h", "l", "a", "b_g1", "b_g2"};

size_t point_bytes(int which) { return which == kSrsBG2 ? sizeof(g2_affine_t) : sizeof(g1_affine_t); }

// The vector's device and host pointers in a key, by index (h, l, a, b_g1 as G1; b_g2 as G2).
struct vector_slot {
    void** dev;
    const void** host;
    size_t n;
};

vector_slot slot_of(cz_srs& srs, int which) {
    switch (which) {
        case kSrsH: return {reinterpret_cast<void**>(&srs.h), reinterpret_cast<const void**>(&srs.host_h), srs.n_h};
        case kSrsL: return {reinterpret_cast<void**>(&srs.l), reinterpret_cast<const void**>(&srs.host_l), srs.n_l};
        case kSrsA: return {reinterpret_cast<void**>(&srs.a), reinterpret_cast<const void**>(&srs.host_a), srs.n_a};
        case kSrsBG1:
            return {reinterpret_cast<void**>(&srs.b_g1), reinterpret_cast<const void**>(&srs.host_b_g1), srs.n_b_g1};
        default:
            return {reinterpret_cast<void**>(&srs.b_g2), reinterpret_cast<const void**>(&srs.host_b_g2), srs.n_b_g2};
    }
}

}  // namespace

cz_host_srs::~cz_host_srs() {
    for (void* p : vec)
        if (p) cudaFreeHost(p);
}

cz_srs::~cz_srs() {
    cudaSetDevice(device);
    for (void* p : owned) device_free(p);
}

uint32_t cz_srs::resident_mask() const {
    uint32_t mask = 0;
    const void* dev[kSrsVectors] = {h, l, a, b_g1, b_g2};
    const size_t n[kSrsVectors] = {n_h, n_l, n_a, n_b_g1, n_b_g2};
    for (int i = 0; i < kSrsVectors; i++)
        if (dev[i] || n[i] == 0) mask |= 1u << i;
    return mask;
}

size_t usable_device_bytes(const cz_context& ctx) {
    size_t free_bytes = 0, total_bytes = 0;
    CZ_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    cudaMemPool_t pool;
    CZ_CHECK(cudaDeviceGetDefaultMemPool(&pool, ctx.device));
    uint64_t reserved = 0, used = 0;
    CZ_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
    CZ_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
    const size_t cached = reserved > used ? (size_t)(reserved - used) : 0;
    size_t usable = free_bytes + cached;
    if (ctx.memory_limit) {
        // What this process holds: the pool's blocks in use and its own cudaMalloc blocks, plus
        // what the device's use grew by since the context was made beyond those (kernels' local
        // memory, lazily loaded modules), up to kUntrackedBytes. Growth past that is another
        // process's (a card shared with other work started after the daemon): counting it as
        // ours ran every partition in the narrowest plan (H in two buffers, no MSM pairs) while
        // the daemon held less than its limit. The device's free memory bounds it instead.
        const size_t in_use = total_bytes - free_bytes;
        const size_t grown = in_use > ctx.baseline_used + cached ? in_use - ctx.baseline_used - cached : 0;
        const size_t tracked = (size_t)used + device_alloc_bytes(ctx.device);
        const size_t ours = tracked + (grown > tracked ? std::min(grown - tracked, kUntrackedBytes) : 0);
        usable = std::min(usable, ctx.memory_limit > ours ? ctx.memory_limit - ours : 0);
    }
    const size_t held_back = ctx.upload_reserved.load();  // for an upload handed on early
    return usable > held_back ? usable - held_back : 0;
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

std::unique_ptr<cz_host_srs> host_srs_from_raw(cz_context& ctx, const uint8_t* const raw[kSrsVectors],
                                               const size_t n[kSrsVectors]) {
    auto host = std::make_unique<cz_host_srs>();
    for (int i = 0; i < kSrsVectors; i++) {
        host->n[i] = n[i];
        if (n[i] == 0) continue;
        const size_t bytes = n[i] * point_bytes(i);
        CZ_CHECK(cudaHostAlloc(&host->vec[i], bytes, cudaHostAllocPortable));
        host->nbytes += bytes;
        if (i == kSrsBG2)
            convert_points<g2_affine_t>(ctx, kVectorNames[i], raw[i], n[i], 192, nullptr,
                                        static_cast<g2_affine_t*>(host->vec[i]));
        else
            convert_points<g1_affine_t>(ctx, kVectorNames[i], raw[i], n[i], 96, nullptr,
                                        static_cast<g1_affine_t*>(host->vec[i]));
    }
    return host;
}

std::unique_ptr<cz_host_srs> host_srs_from_device(const cz_srs& srs) {
    CZ_CHECK(cudaSetDevice(srs.device));
    auto host = std::make_unique<cz_host_srs>();
    cz_srs& key = const_cast<cz_srs&>(srs);  // read only: slot_of gives both pointers
    for (int i = 0; i < kSrsVectors; i++) {
        const vector_slot v = slot_of(key, i);
        host->n[i] = v.n;
        if (v.n == 0) continue;
        const size_t bytes = v.n * point_bytes(i);
        CZ_CHECK(cudaHostAlloc(&host->vec[i], bytes, cudaHostAllocPortable));
        host->nbytes += bytes;
        CZ_CHECK(cudaMemcpy(host->vec[i], *v.dev ? *v.dev : *v.host, bytes, cudaMemcpyDefault));
    }
    return host;
}

std::unique_ptr<cz_srs> srs_attach(cz_context& ctx, const cz_host_srs& host, uint32_t resident_mask,
                                   size_t stream_chunk) {
    CZ_REQUIRE(stream_chunk >= 1 || resident_mask == (1u << kSrsVectors) - 1,
               "a key with streamed vectors needs a chunk of at least one point");
    auto srs = std::make_unique<cz_srs>();
    srs->device = ctx.device;
    srs->n_h = host.n[kSrsH], srs->n_l = host.n[kSrsL], srs->n_a = host.n[kSrsA];
    srs->n_b_g1 = host.n[kSrsBG1], srs->n_b_g2 = host.n[kSrsBG2];
    srs->stream_chunk = stream_chunk;
    // The key's allocations are plain cudaMalloc: give the pool's idle blocks back first.
    cudaMemPool_t pool;
    CZ_CHECK(cudaDeviceGetDefaultMemPool(&pool, ctx.device));
    CZ_CHECK(cudaStreamSynchronize(ctx.stream));
    CZ_CHECK(cudaMemPoolTrimTo(pool, 0));
    for (int i = 0; i < kSrsVectors; i++) {
        const vector_slot v = slot_of(*srs, i);
        if (v.n == 0) continue;
        if (!(resident_mask & (1u << i))) {
            *v.host = host.vec[i];
            continue;
        }
        const size_t bytes = v.n * point_bytes(i);
        void* p = nullptr;
        CZ_DEVICE_ALLOC(&p, bytes);
        srs->owned.push_back(p);
        srs->nbytes += bytes;
        *v.dev = p;
        CZ_CHECK(cudaMemcpy(p, host.vec[i], bytes, cudaMemcpyHostToDevice));
    }
    return srs;
}
