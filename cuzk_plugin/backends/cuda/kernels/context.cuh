// Per-device state every host routine works in (the streams, cached NTT tables, pinned
// staging buffers, the locks that let partitions overlap safely) and a stream-ordered device
// buffer. The Python side creates one context per device it uses and passes it explicitly:
// no hidden globals.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <utility>

#include "check.cuh"
#include "field.cuh"

// Pinned host buffers that partition uploads go through (upload.cu), allocated on first use:
// the CPU fills one while the copy engine drains the other.
struct cz_staging {
    static constexpr int kBuffers = 2;
    static constexpr size_t kBytes = 64ull << 20;
    void* host[kBuffers] = {};
    cudaEvent_t drained[kBuffers] = {};  // the last device copy out of host[i] has finished
    bool ready = false;
    int next = 0;
};

struct cz_context {
    int device = 0;
    cudaStream_t stream = nullptr;         // main work: NTTs, G1 MSMs, key uploads
    cudaStream_t g2_stream = nullptr;      // the G2 MSM of B, overlapped with the G1 work
    cudaStream_t side_streams[3] = {};     // the L, A and B_G1 MSMs, overlapped with H and the H MSM
    cudaStream_t upload_stream = nullptr;  // partition uploads, overlapped with the previous partition's work
    // Twiddle tables: (log_n, inverse) -> w^e for e < N/2, Montgomery form.
    std::map<std::pair<int, bool>, fr_t*> twiddles;
    int sm_count = 0;
    // Device bytes in use by others (and the context itself) when it was created, and the most
    // this process may use on the device (0: no limit; [gpus] device_memory_limit):
    // usable_device_bytes() keeps transient work under both.
    size_t baseline_used = 0;
    size_t memory_limit = 0;
    // Partitions on the device at once: 2 (one computes while the next uploads), or 1 on a
    // device too small for a second partition's assignment (the next uploads once this one's
    // buffers are freed). Atomic, not under a lock: a partition holds upload_lock for its whole
    // proof when it is 1, and the setter (a key released on the daemon's event loop) never waits.
    std::atomic<int> partitions_in_flight{2};
    // Device bytes held back for the next partition's upload, handed on beside a computing
    // partition's H MSM before it has allocated them (prove_device with one partition in
    // flight): usable_device_bytes leaves them out until that upload has its buffers.
    std::atomic<size_t> upload_reserved{0};
    cz_staging staging;
    // Partitions started together run on library threads: `upload_lock` gives one of them
    // upload_stream and the staging buffers, `compute_lock` gives one caller at a time
    // stream, g2_stream, side_streams and the twiddle cache (every entry point that computes
    // holds it).
    std::mutex upload_lock;
    std::mutex compute_lock;

    // Every stream a partition's device work (prove_device) runs on.
    std::array<cudaStream_t, 5> compute_streams() const {
        return {stream, g2_stream, side_streams[0], side_streams[1], side_streams[2]};
    }
};

// cz_guard around `fn` run on the context's device, holding its compute lock: the opening of
// every entry point that computes (cz_context::compute_lock).
template <class Fn>
cz_status on_device(cz_context* ctx, Fn&& fn) {
    return cz_guard([&] {
        std::lock_guard<std::mutex> lock(ctx->compute_lock);
        CZ_CHECK(cudaSetDevice(ctx->device));
        fn();
    });
}

// The device's pool keeps freed blocks for the next proof (release threshold: everything).
// Where an allocation finds the device full, those idle blocks go back to the driver (once
// every stream's frees have completed) and the allocation is tried once more, so that memory
// the process itself keeps idle never fails a plan that fits the device.
inline void release_idle_pool() {
    (void)cudaGetLastError();  // the failed allocation's error is not sticky: clear it
    int device = 0;
    CZ_CHECK(cudaGetDevice(&device));
    CZ_CHECK(cudaDeviceSynchronize());
    cudaMemPool_t pool;
    CZ_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
    CZ_CHECK(cudaMemPoolTrimTo(pool, 0));
}

// `alloc()`, and once more after release_idle_pool where the device was full; throws on failure.
template <class Alloc>
void alloc_or_throw(Alloc alloc, const char* what, const char* file, int line) {
    cudaError_t err = alloc();
    if (err == cudaErrorMemoryAllocation) {
        release_idle_pool();
        err = alloc();
    }
    if (err != cudaSuccess) cz_throw_cuda(err, what, file, line);
}

// Stream-ordered allocation from the pool (a large request its idle blocks of other sizes
// cannot serve may need them released).
inline void pool_alloc(void** p, size_t bytes, cudaStream_t s, const char* what, const char* file, int line) {
    alloc_or_throw([&] { return cudaMallocAsync(p, bytes, s); }, what, file, line);
}
#define CZ_POOL_ALLOC(ptr, bytes, stream) \
    pool_alloc(reinterpret_cast<void**>(ptr), (bytes), (stream), "cudaMallocAsync(" #ptr ", " #bytes ")", __FILE__, __LINE__)

// The bytes this process holds through device_alloc on each device (keys, circuits), so that a
// memory limit counts what the process holds even where another process's memory went away
// after the context was made (usable_device_bytes).
struct device_allocations {
    std::mutex lock;
    std::map<void*, std::pair<int, size_t>> blocks;  // pointer -> (device, bytes)
    static device_allocations& get() {
        static device_allocations all;
        return all;
    }
};

// Memory held beyond one call (a key's vectors, a circuit): cudaMalloc, outside the pool, which
// may be holding the room idle. Freed with device_free.
inline void device_alloc(void** p, size_t bytes, const char* what, const char* file, int line) {
    alloc_or_throw([&] { return cudaMalloc(p, bytes); }, what, file, line);
    try {
        int device = 0;
        CZ_CHECK(cudaGetDevice(&device));
        auto& all = device_allocations::get();
        std::lock_guard<std::mutex> guard(all.lock);
        all.blocks[*p] = {device, bytes};
    } catch (...) {
        cudaFree(*p);  // not registered: nobody else frees it
        *p = nullptr;
        throw;
    }
}
#define CZ_DEVICE_ALLOC(ptr, bytes) \
    device_alloc(reinterpret_cast<void**>(ptr), (bytes), "cudaMalloc(" #ptr ", " #bytes ")", __FILE__, __LINE__)

// cudaFree of a device_alloc block (the current device must be its device).
inline cudaError_t device_free(void* p) {
    if (!p) return cudaSuccess;
    {
        auto& all = device_allocations::get();
        std::lock_guard<std::mutex> guard(all.lock);
        all.blocks.erase(p);
    }
    return cudaFree(p);
}

// Bytes this process holds on `device` through device_alloc (a key's vectors and a circuit's
// arrays: tens of blocks).
inline size_t device_alloc_bytes(int device) {
    auto& all = device_allocations::get();
    std::lock_guard<std::mutex> guard(all.lock);
    size_t held = 0;
    for (const auto& [ptr, block] : all.blocks)
        if (block.first == device) held += block.second;
    return held;
}

// Device memory owned for the life of a scope, allocated and freed in stream order
// (cudaMallocAsync keeps freed blocks in the device's pool, so repeated proofs do not pay
// for cudaMalloc each time).
template <class T>
struct dev_buf {
    T* ptr = nullptr;
    size_t count = 0;
    cudaStream_t stream = nullptr;

    dev_buf() = default;
    dev_buf(size_t n, cudaStream_t s) : count(n), stream(s) {
        if (n) CZ_POOL_ALLOC(&ptr, n * sizeof(T), s);
    }
    dev_buf(const dev_buf&) = delete;
    dev_buf& operator=(const dev_buf&) = delete;
    dev_buf(dev_buf&& o) noexcept : ptr(o.ptr), count(o.count), stream(o.stream) { o.ptr = nullptr; }
    dev_buf& operator=(dev_buf&& o) noexcept {
        std::swap(ptr, o.ptr);
        std::swap(count, o.count);
        std::swap(stream, o.stream);
        return *this;
    }
    ~dev_buf() {
        if (ptr) cudaFreeAsync(ptr, stream);  // a destructor cannot throw; errors resurface at the next check
    }
    size_t bytes() const { return count * sizeof(T); }
    T* get() const { return ptr; }
};

// An event for ordering streams (no timing), owned for a scope.
struct cuda_event {
    cudaEvent_t e = nullptr;
    cuda_event() { CZ_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming)); }
    ~cuda_event() { cudaEventDestroy(e); }
    cuda_event(const cuda_event&) = delete;
    cuda_event& operator=(const cuda_event&) = delete;
};

// A non-blocking stream owned for a scope. Destroying it with work still queued is allowed:
// CUDA releases it once that work is done.
struct cuda_stream {
    cudaStream_t s = nullptr;
    explicit cuda_stream(int priority) { CZ_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority)); }
    ~cuda_stream() { cudaStreamDestroy(s); }
    cuda_stream(const cuda_stream&) = delete;
    cuda_stream& operator=(const cuda_stream&) = delete;
};

inline unsigned blocks_for(size_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }

// Smallest k with 2^k >= n (n >= 1): the NTT domain of n constraints.
inline int log2_ceil(size_t n) {
    int k = 0;
    while ((1ull << k) < n) k++;
    return k;
}

inline double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Bytes a new transient allocation may take on ctx's device now: the driver's free memory plus
// what the stream-ordered pool holds unused, and no more than what the context's memory limit
// leaves beside what this process already holds there.
size_t usable_device_bytes(const cz_context& ctx);
// The most of the device's growth in use beyond this process's tracked allocations that a
// memory limit counts as this process's (usable_device_bytes): its untracked memory (kernels'
// local memory, modules) stays under it; more is another process's.
constexpr size_t kUntrackedBytes = size_t(1) << 30;
