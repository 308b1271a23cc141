"""Fixtures for the CUDA backend tests: one backend for the session, skipped cleanly where
the library is not built or no GPU is present."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk_plugin.backends.cpu import CpuBackend
from cuzk_plugin.backends.cuda import CudaBackend


@pytest.fixture(scope="session")
def cuda() -> CudaBackend:
    why = CudaBackend.probe()
    if why is not None:
        pytest.skip(f"CUDA backend unavailable: {why}")
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
