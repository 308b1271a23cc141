"""ctypes binding of ``libcuzk_cuda.so`` (and of ``libcuzk_cuda_bench.so``, the same plus the
benchmark entry points): finds a library, declares its C ABI, and turns each returned
``cz_status`` into a Python exception (:mod:`cuzk_plugin.errors`)."""

from __future__ import annotations

import ctypes
import os
from ctypes import (
    POINTER,
    c_char,
    c_char_p,
    c_double,
    c_int,
    c_size_t,
    c_uint8,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path

from cuzk_plugin.backends.cuda.paths import (
    BENCH_LIBRARY_NAME,
    LIBRARY_NAME,
    library_path,
)
from cuzk_plugin.errors import (
    BackendError,
    BackendUnavailable,
    DeviceOutOfMemory,
    EncodingError,
    ProveCancelled,
)

# Status codes, as in kernels/check.cuh.
CZ_OK = 0
CZ_CUDA_ERROR = 1
CZ_OUT_OF_MEMORY = 2
CZ_INVALID_ARGUMENT = 3
CZ_NO_DEVICE = 4
CZ_INTERNAL = 5
CZ_BAD_POINT = 6
CZ_CANCELLED = 7

BUILD_HINT = "build it with: python -m cuzk_plugin.backends.cuda.build"


class CzStatus(ctypes.Structure):
    _fields_ = [("code", c_int), ("message", c_char * 480)]


def check(status: CzStatus, what: str) -> None:
    """Raise the exception matching a non-zero status."""
    if status.code == CZ_OK:
        return
    msg = f"{what}: {status.message.decode(errors='replace')}"
    if status.code == CZ_OUT_OF_MEMORY:
        raise DeviceOutOfMemory(msg)
    if status.code == CZ_NO_DEVICE:
        raise BackendUnavailable(msg)
    if status.code == CZ_BAD_POINT:
        raise EncodingError(msg)
    if status.code == CZ_INVALID_ARGUMENT:
        raise ValueError(msg)
    if status.code == CZ_CANCELLED:
        raise ProveCancelled(msg)
    raise BackendError(msg)


_U64P = POINTER(c_uint64)
_U32P = POINTER(c_uint32)
_U8P = POINTER(c_uint8)
_VPP = POINTER(c_void_p)

# name -> argument types (every function returns CzStatus).
_SIGNATURES = {
    "cz_device_count": [POINTER(c_int)],
    "cz_device_info": [c_int, c_char_p, c_int, _U64P, POINTER(c_int)],
    "cz_device_check": [c_int],
    "cz_host_register": [c_void_p, c_size_t],
    "cz_host_unregister": [c_void_p],
    "cz_context_create": [c_int, _VPP],
    "cz_context_destroy": [c_void_p],
    "cz_ntt": [c_void_p, _U64P, c_int, c_int, c_int],
    "cz_quotient_h": [c_void_p, _U64P, _U64P, _U64P, c_size_t, _U64P],
    "cz_msm_g1": [c_void_p, _U64P, _U64P, c_size_t, _U64P, c_int],
    "cz_msm_g2": [c_void_p, _U64P, _U64P, c_size_t, _U64P, c_int],
    "cz_srs_load": [c_void_p, _U8P, c_size_t, _U8P, c_size_t, _U8P, c_size_t, _U8P, c_size_t, _U8P, c_size_t,
                    _VPP, _U64P],
    "cz_srs_free": [c_void_p],
    "cz_device_memory": [c_int, _U64P, _U64P],
    "cz_context_set_memory_limit": [c_void_p, c_uint64],
    "cz_context_set_partitions_in_flight": [c_void_p, c_uint32],
    "cz_link_bandwidth": [c_void_p, c_int, POINTER(c_double)],
    "cz_host_srs_from_raw": [c_void_p, _U8P, c_size_t, _U8P, c_size_t, _U8P, c_size_t, _U8P, c_size_t, _U8P, c_size_t,
                             _VPP, _U64P],
    "cz_host_srs_from_device": [c_void_p, _VPP, _U64P],
    "cz_host_srs_free": [c_void_p],
    "cz_srs_take_host": [c_void_p, _VPP, _U64P],
    "cz_srs_attach": [c_void_p, c_void_p, c_uint32, c_uint64, _VPP, _U64P],
    "cz_srs_resident_mask": [c_void_p, _U32P],
    "cz_prove_start": [c_void_p, c_void_p, _U64P, _U64P, _U64P, c_size_t, _U64P, c_size_t, _U64P, c_size_t,
                       _U8P, _U8P, _U8P, _VPP],
    "cz_prove_finish": [c_void_p, _U64P, POINTER(c_double)],
    "cz_prove_cancel": [c_void_p],
    "cz_prove_wait": [c_void_p],
    "cz_circuit_load": [c_void_p, c_size_t, c_size_t, c_size_t, _U64P, c_size_t,
                        _U64P, _U32P, _U32P, c_size_t, _U64P, _U32P, _U32P, c_size_t, _U64P, _U32P, _U32P, c_size_t,
                        _U8P, _U8P, _U8P, c_int, c_size_t, _VPP, _U64P, _U64P],
    "cz_circuit_free": [c_void_p],
    "cz_evaluate_r1cs": [c_void_p, c_void_p, _U64P, c_size_t, _U64P, _U64P, _U64P],
    "cz_check_r1cs": [c_void_p, c_void_p, _U64P, c_size_t, _U64P, _U64P],
    "cz_prove_start_witness": [c_void_p, c_void_p, c_void_p, _U64P, c_size_t, _U64P, c_size_t, _VPP],
    "cz_srs_generate": [c_void_p, c_void_p, _U64P, c_int, c_uint64, _VPP, _U64P, _U64P, POINTER(c_double), _U64P],
    "cz_srs_read": [c_void_p, c_int, c_size_t, c_size_t, _U64P],
    "cz_srs_counts": [c_void_p, _U64P],
}

# The bench library's entry points besides the production ones.
_BENCH_SIGNATURES = {
    "cz_bench_msm": [c_void_p, c_int, c_int, c_int, c_uint64, c_int, c_int, c_double, POINTER(c_double),
                     POINTER(c_int)],
    "cz_bench_msm_streamed": [c_void_p, c_int, _U64P, _U64P, c_size_t, c_uint64, c_int, c_int, _U64P, _U64P, _U64P],
    "cz_bench_ntt": [c_void_p, c_int, c_int, c_int, c_int, POINTER(c_double), POINTER(c_int)],
    "cz_bench_prove": [c_void_p, c_int, c_int, c_double, c_int, _U64P, c_uint32, c_uint64, POINTER(c_double),
                       POINTER(c_double), _U64P,
                       _U64P, _U64P],
    "cz_bench_pipeline": [c_void_p, c_int, c_int, c_double, c_int, POINTER(c_double), POINTER(c_double)],
    "cz_bench_r1cs": [c_void_p, c_void_p, _U64P, c_size_t, c_int, POINTER(c_double), _U64P, c_size_t, _U64P],
    "cz_host_mul_generator": [c_int, _U64P, _U64P],
    "cz_host_curve_selftest": [_U64P],
    "cz_bench_point_adds": [c_void_p, c_int, c_int, c_int, c_int, POINTER(c_double), POINTER(c_int)],
    "cz_host_affine_batch_selftest": [_U64P],
    "cz_bench_mapped_gather": [c_void_p, c_int, c_int, c_int, POINTER(c_double), POINTER(c_double), _U64P,
                               POINTER(c_int)],
    "cz_bench_msm_mapped": [c_void_p, c_int, c_double, c_int, POINTER(c_double), POINTER(c_double),
                            POINTER(c_double), POINTER(c_int)],
}


def candidate_paths() -> list[Path]:
    """Where the library may be: ``CUZK_CUDA_LIBRARY``, then the build directory."""
    paths = []
    if os.environ.get("CUZK_CUDA_LIBRARY"):
        paths.append(Path(os.environ["CUZK_CUDA_LIBRARY"]))
    paths.append(library_path())
    return paths


def bench_candidate_paths() -> list[Path]:
    """The bench library beside each place the production library may be."""
    return [p.with_name(BENCH_LIBRARY_NAME) for p in candidate_paths()]


_LIB: ctypes.CDLL | None = None
_BENCH_LIB: ctypes.CDLL | None = None


def _open(paths: list[Path], name: str, signatures: dict) -> ctypes.CDLL:
    found = [p for p in paths if p.exists()]
    if not found:
        raise BackendUnavailable(f"{name} not found (looked in {', '.join(map(str, paths))}); {BUILD_HINT}")
    try:
        lib = ctypes.CDLL(str(found[0]))
    except OSError as exc:
        raise BackendUnavailable(f"cannot load {found[0]}: {exc}; {BUILD_HINT}") from exc
    for fname, argtypes in signatures.items():
        try:
            fn = getattr(lib, fname)
        except AttributeError:  # a library built from older sources
            raise BackendUnavailable(f"{found[0]} lacks {fname} (stale build); {BUILD_HINT}") from None
        fn.argtypes = argtypes
        fn.restype = CzStatus
    return lib


def load_library() -> ctypes.CDLL:
    """The production library (cached); BackendUnavailable if it is not built or does not load."""
    global _LIB
    if _LIB is None:
        _LIB = _open(candidate_paths(), LIBRARY_NAME, _SIGNATURES)
    return _LIB


def load_bench_library() -> ctypes.CDLL:
    """The bench library (cached): its own copy of the production code, used through contexts it
    creates itself (a context of one library is never passed to the other)."""
    global _BENCH_LIB
    if _BENCH_LIB is None:
        _BENCH_LIB = _open(bench_candidate_paths(), BENCH_LIBRARY_NAME, {**_SIGNATURES, **_BENCH_SIGNATURES})
    return _BENCH_LIB


def call(name: str, *args, lib: ctypes.CDLL | None = None) -> None:
    """Call ``name`` (in ``lib``, by default the production library) and raise on a non-zero status."""
    check(getattr(lib or load_library(), name)(*args), name)


def u64_ptr(arr):
    return arr.ctypes.data_as(_U64P)


def u32_ptr(arr):
    return arr.ctypes.data_as(_U32P)


def u8_ptr(arr):
    return arr.ctypes.data_as(_U8P)
