// Timing events for the benchmarks: a start and a stop event owned for a scope.
#pragma once
#include "check.cuh"

struct event_pair {
    cudaEvent_t start = nullptr, stop = nullptr;
    event_pair() {
        CZ_CHECK(cudaEventCreate(&start));
        CZ_CHECK(cudaEventCreate(&stop));
    }
    ~event_pair() {
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
    }
    event_pair(const event_pair&) = delete;
    event_pair& operator=(const event_pair&) = delete;
    // Milliseconds from start to stop (both recorded, stop completed).
    double ms() const {
        float t = 0;
        CZ_CHECK(cudaEventElapsedTime(&t, start, stop));
        return t;
    }
};
