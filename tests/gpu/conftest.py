"""Fixtures for the CUDA backend tests: one backend for the session (the library built first
where nvcc exists), skipped only where it cannot be built or no GPU is present."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.backends.cuda import CudaBackend
from tests.cuda_support import built_library_or_skip


@pytest.fixture(scope="session")
def cuda() -> CudaBackend:
    built_library_or_skip()
    why = CudaBackend.probe()
    if why is not None:
        pytest.skip(why)  # no GPU (or no driver for one) here
    backend = CudaBackend()
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def cpu() -> CpuBackend:
    return CpuBackend()


@pytest.fixture()
def rng(request) -> np.random.Generator:
    # A fresh seed per test (printed on failure through the test id), never a fixed dataset.
    seed = np.random.SeedSequence().entropy % (1 << 32)
    request.node.user_properties.append(("seed", seed))
    return np.random.default_rng(seed)
