// Per-device state every host routine works in (the stream, cached NTT tables) and a
// stream-ordered device buffer. The Python side creates one context per device it uses and
// passes it explicitly: no hidden globals.
#pragma once
#include <map>
#include <utility>

#include "check.cuh"
#include "field.cuh"

struct cz_context {
    int device = 0;
    cudaStream_t stream = nullptr;      // main work: uploads, NTTs, G1 MSMs
    cudaStream_t g2_stream = nullptr;   // the G2 MSM of B, overlapped with the G1 work
    // Twiddle tables: (log_n, inverse) -> w^e for e < N/2, Montgomery form.
    std::map<std::pair<int, bool>, fr_t*> twiddles;
    int sm_count = 0;
};

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
        if (n) CZ_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&ptr), n * sizeof(T), s));
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

inline unsigned blocks_for(size_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }
