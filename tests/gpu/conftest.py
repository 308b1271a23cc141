"""Fixtures for the CUDA backend tests: one backend for the session (the library built first
where nvcc exists), skipped only where it cannot be built or no GPU is present."""

from __future__ import annotations

import ctypes
import secrets
from collections.abc import Iterator

import numpy as np
import pytest

from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.backends.cuda import CudaBackend
from cuzk_plugin.backends.cuda.library import CZ_NO_DEVICE, CZ_OK, check
from tests.cuda_support import built_library_or_skip


@pytest.fixture(scope="session")
def cuda() -> Iterator[CudaBackend]:
    lib = built_library_or_skip()
    # Skip only when the driver reports no device (CZ_NO_DEVICE, or a count of zero); any other
    # failure of the freshly built library is an error of ours and fails the tests.
    count = ctypes.c_int(0)
    status = lib.cz_device_count(ctypes.byref(count))
    if status.code == CZ_NO_DEVICE or (status.code == CZ_OK and count.value == 0):
        pytest.skip(f"no CUDA device here: {status.message.decode(errors='replace') or 'count 0'}")
    check(status, "cz_device_count")
    backend = CudaBackend()
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def cpu() -> CpuBackend:
    return CpuBackend()


@pytest.fixture()
def rng(request) -> np.random.Generator:
    # A fresh seed per test (printed on failure through the test id), never a fixed dataset.
    seed = secrets.randbits(32)
    request.node.user_properties.append(("seed", seed))
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def cuda_bench(cuda):
    """The bench library's entry points (libcuzk_cuda_bench.so, built with the production one)."""
    from cuzk_plugin.backends.cuda.bench import CudaBench

    bench = CudaBench()
    yield bench
    bench.close()
