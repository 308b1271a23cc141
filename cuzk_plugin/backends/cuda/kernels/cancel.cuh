// Cancelling a proof in flight (cz_prove_cancel): the host thread that runs it checks a flag
// before each stage and while it waits for the device, and throws CZ_CANCELLED. Kernels are
// never interrupted; what is already queued (at most a stage, or two MSM windows) finishes on
// the device before the buffers it reads are freed.
#pragma once
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "check.cuh"

using cz_cancel_flag = std::atomic<bool>;

// How often a waiting host thread looks at the flag and the device.
constexpr std::chrono::microseconds kCancelPoll{100};

inline bool cancel_requested(const cz_cancel_flag* cancel) {
    return cancel && cancel->load(std::memory_order_relaxed);
}

inline void throw_if_cancelled(const cz_cancel_flag* cancel) {
    if (cancel_requested(cancel)) throw cz_error(CZ_CANCELLED, "proof cancelled (cz_prove_cancel)");
}

// sync() (a blocking CUDA wait), or with a cancel flag query() polled until done, throwing
// CZ_CANCELLED once cancelled (the awaited work goes on).
template <class Query, class Sync>
inline void wait_unless_cancelled(Query query, Sync sync, const cz_cancel_flag* cancel) {
    if (!cancel) {
        CZ_CHECK(sync());
        return;
    }
    for (;;) {
        cudaError_t err = query();
        if (err == cudaSuccess) return;
        if (err != cudaErrorNotReady) CZ_CHECK(err);
        throw_if_cancelled(cancel);
        std::this_thread::sleep_for(kCancelPoll);
    }
}

// cudaEventSynchronize, unless cancelled while waiting (then CZ_CANCELLED; the event's work goes on).
inline void wait_event(cudaEvent_t e, const cz_cancel_flag* cancel) {
    wait_unless_cancelled([e] { return cudaEventQuery(e); }, [e] { return cudaEventSynchronize(e); }, cancel);
}

// cudaStreamSynchronize, unless cancelled while waiting (as wait_event).
inline void wait_stream(cudaStream_t s, const cz_cancel_flag* cancel) {
    wait_unless_cancelled([s] { return cudaStreamQuery(s); }, [s] { return cudaStreamSynchronize(s); }, cancel);
}

// A lock on `m`, unless cancelled while waiting for it (partitions queue on the context's locks).
inline std::unique_lock<std::mutex> lock_unless_cancelled(std::mutex& m, const cz_cancel_flag* cancel) {
    if (!cancel) return std::unique_lock<std::mutex>(m);
    std::unique_lock<std::mutex> lock(m, std::try_to_lock);
    while (!lock.owns_lock()) {
        throw_if_cancelled(cancel);
        std::this_thread::sleep_for(kCancelPoll);
        lock.try_lock();
    }
    return lock;
}
