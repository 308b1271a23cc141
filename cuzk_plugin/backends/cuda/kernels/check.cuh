// Error handling shared by every kernel file: a checked-call macro that records the failing
// expression, file:line and CUDA's own message, and the {code, message} status that crosses
// the extern "C" boundary (Python turns it into a typed exception).
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

// Status codes of the C ABI; mirrored in cuzk_plugin/backends/cuda/library.py.
enum cz_code : int {
    CZ_OK = 0,
    CZ_CUDA_ERROR = 1,      // any CUDA runtime failure
    CZ_OUT_OF_MEMORY = 2,   // cudaErrorMemoryAllocation: the engine may retry elsewhere
    CZ_INVALID_ARGUMENT = 3,
    CZ_NO_DEVICE = 4,       // no usable device or driver (cudaErrorNoDevice, InsufficientDriver)
    CZ_INTERNAL = 5,
    CZ_BAD_POINT = 6,       // a key point off its curve (named in the message)
    CZ_CANCELLED = 7,       // cz_prove_cancel stopped the proof (nothing half-done is left)
};

extern "C" struct cz_status {
    int code;
    char message[480];
};

// Thrown inside the library; converted to cz_status at the ABI boundary.
struct cz_error : std::runtime_error {
    int code;
    cz_error(int c, const std::string& what) : std::runtime_error(what), code(c) {}
};

inline int cz_code_of(cudaError_t err) {
    switch (err) {
        case cudaErrorMemoryAllocation: return CZ_OUT_OF_MEMORY;
        case cudaErrorNoDevice:
        case cudaErrorInsufficientDriver:
        case cudaErrorInvalidDevice: return CZ_NO_DEVICE;
        default: return CZ_CUDA_ERROR;
    }
}

inline void cz_throw_cuda(cudaError_t err, const char* expr, const char* file, int line) {
    // The runtime also keeps a failed call's error as this thread's last error: cleared here, a
    // non-sticky one (a cudaHostUnregister of an unknown range) cannot resurface at the next
    // CZ_CHECK_LAUNCH of an unrelated call.
    cudaGetLastError();
    char buf[400];
    std::snprintf(buf, sizeof buf, "%s failed at %s:%d: %s (%s, %d)", expr, file, line,
                  cudaGetErrorString(err), cudaGetErrorName(err), static_cast<int>(err));
    throw cz_error(cz_code_of(err), buf);
}

// Every CUDA runtime call goes through CZ_CHECK.
#define CZ_CHECK(expr)                                                          \
    do {                                                                        \
        cudaError_t cz_err_ = (expr);                                           \
        if (cz_err_ != cudaSuccess) cz_throw_cuda(cz_err_, #expr, __FILE__, __LINE__); \
    } while (0)

// After each kernel launch: launch-configuration errors surface here.
#define CZ_CHECK_LAUNCH() CZ_CHECK(cudaGetLastError())

#define CZ_REQUIRE(cond, msg)                                                   \
    do {                                                                        \
        if (!(cond)) throw cz_error(CZ_INVALID_ARGUMENT, std::string(msg));     \
    } while (0)

// Runs fn, turning any exception into a status (used by every extern "C" entry point).
template <class Fn>
cz_status cz_guard(Fn&& fn) {
    cz_status st{CZ_OK, {0}};
    try {
        fn();
    } catch (const cz_error& e) {
        st.code = e.code;
        std::strncpy(st.message, e.what(), sizeof st.message - 1);
    } catch (const std::bad_alloc&) {
        st.code = CZ_OUT_OF_MEMORY;
        std::strncpy(st.message, "host allocation failed", sizeof st.message - 1);
    } catch (const std::exception& e) {
        st.code = CZ_INTERNAL;
        std::strncpy(st.message, e.what(), sizeof st.message - 1);
    }
    return st;
}
